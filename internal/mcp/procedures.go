package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/memory"
)

type outcomeIn struct {
	ID      string  `json:"id" jsonschema:"the skill record (procedure) that was used"`
	Outcome float64 `json:"outcome" jsonschema:"how it went: 1 success, 0 failure, or a fraction for partial success"`
}

type outcomeOut struct {
	Record    recordOut        `json:"record"`
	Procedure memory.Procedure `json:"procedure" jsonschema:"the procedure's trigger, steps, updated success_rate and use_count"`
	Citation  string           `json:"citation"`
}

func (s *server) addProcedureTools(srv *sdk.Server) {
	add(srv, &sdk.Tool{
		Name:  "procedure_outcome",
		Title: "Report a procedure's outcome",
		Description: "After following a procedure (a skill memory with a trigger and steps), report how it went: outcome 1 for success, 0 for " +
			"failure. Its success_rate becomes 0.7*old + 0.3*outcome and its use_count grows by one; searches rank procedures that keep " +
			"failing lower.",
		InputSchema: schemaFor[outcomeIn](true, nil),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, handler(s, "procedure_outcome", func(ctx context.Context, p memory.Principal, in outcomeIn) (outcomeOut, error) {
		res, err := s.svc.ReportOutcome(ctx, p, in.ID, in.Outcome)
		if err != nil {
			return outcomeOut{}, err
		}
		return outcomeOut{Record: viewRecord(res.Record), Procedure: res.Procedure, Citation: res.Citation}, nil
	}))
}
