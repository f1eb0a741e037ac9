package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/memgate/memgate/internal/tracing"
)

// traced opens a span for every MCP request the server receives: "mcp
// tools/call memory_search", a child of the HTTP request's span when
// there is one (MCP over HTTP), else a root of the service's provider
// (stdio). Arguments are never recorded: only the method and tool name.
func traced(tp trace.TracerProvider) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			name := "mcp " + method
			attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
			if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok && p != nil {
				name += " " + p.Name
				attrs = append(attrs, attribute.String("gen_ai.tool.name", p.Name))
			}
			var span trace.Span
			if trace.SpanFromContext(ctx).SpanContext().IsValid() {
				ctx, span = tracing.Start(ctx, name, attrs...)
			} else {
				ctx, span = tp.Tracer(tracing.Name).Start(ctx, name, trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindServer))
			}
			defer span.End()
			res, err := next(ctx, method, req)
			if err != nil {
				tracing.Fail(span, "protocol_error")
			} else if r, ok := res.(*sdk.CallToolResult); ok && r != nil && r.IsError {
				tracing.Fail(span, "tool_error")
			}
			return res, err
		}
	}
}
