package core

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/tracing"
)

// decide runs the gate on in inside a "gate.decide" span that records the
// decision and its reason code (never the record's content).
func (s *Service) decide(ctx context.Context, in gate.Input) (gate.Outcome, error) {
	_, span := tracing.Start(ctx, "gate.decide", attribute.String("memgate.record.type", string(in.Record.Type)))
	defer span.End()
	out, err := s.policy.Decide(in)
	if err != nil {
		tracing.Fail(span, "rejected")
		return out, err
	}
	span.SetAttributes(attribute.String("memgate.gate.decision", string(out.Decision)), attribute.String("memgate.gate.reason", out.Reason))
	return out, nil
}
