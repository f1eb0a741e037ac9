package tracing

import (
	"context"
	"fmt"
	"net/url"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// Options configure tracing.
type Options struct {
	// Endpoint is the OTLP/HTTP collector's base URL, e.g.
	// http://localhost:4318 (traces go to its /v1/traces). "" disables
	// tracing unless Getenv finds OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT, which the exporter then reads itself
	// (with OTEL_EXPORTER_OTLP_HEADERS and the other standard variables).
	Endpoint string
	// SampleRatio is the share of traces kept (parent-based): 0 is 1.
	SampleRatio float64
	Version     string
	Getenv      func(string) string
}

// Enabled reports whether o turns tracing on.
func (o Options) Enabled() bool {
	if o.Endpoint != "" {
		return true
	}
	if o.Getenv == nil {
		return false
	}
	return o.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || o.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Setup returns the tracer provider o asks for and the function that
// flushes and stops it; with tracing off, the no-op provider.
func Setup(ctx context.Context, o Options) (trace.TracerProvider, func(context.Context) error, error) {
	if !o.Enabled() {
		return Provider(nil), func(context.Context) error { return nil }, nil
	}
	var opts []otlptracehttp.Option
	if o.Endpoint != "" {
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, fmt.Errorf("otel-endpoint: must be an http or https URL")
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("otlp exporter: %w", err)
	}
	ratio := o.SampleRatio
	if ratio <= 0 || ratio > 1 {
		ratio = 1
	}
	res := resource.NewSchemaless(semconv.ServiceName("memgate"), semconv.ServiceVersion(o.Version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
	return tp, tp.Shutdown, nil
}
