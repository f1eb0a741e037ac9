// Package tracing is memgate's OpenTelemetry tracing: Setup builds the
// tracer provider (an OTLP/HTTP exporter, off unless an endpoint is
// configured), and Start opens a span under the one in a context, so code
// below the transports (gate, store, retrieval) traces without holding a
// provider of its own: a context without a span, or with the no-op
// provider, makes every span a no-op. Spans carry ids, routes, counts and
// durations, never content, queries or secrets (docs/observability.md).
package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of memgate's spans.
const Name = "github.com/memgate/memgate"

// Start opens a span named name as a child of the span in ctx, using that
// span's tracer provider.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	tp := trace.SpanFromContext(ctx).TracerProvider()
	return tp.Tracer(Name).Start(ctx, name, trace.WithAttributes(attrs...))
}

// Provider returns tp, or the no-op provider when tp is nil.
func Provider(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return noop.NewTracerProvider()
	}
	return tp
}

// Fail marks span as failed with err's class, not its message (which may
// name what a request held).
func Fail(span trace.Span, code string) {
	span.SetAttributes(attribute.String("memgate.error_code", code))
	span.SetStatus(codes.Error, code)
}
