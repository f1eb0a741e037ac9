package mcp_test

import (
	"math"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// TestProcedureOutcomeTool: an agent reports outcomes over MCP; the rate
// follows 0.7*old + 0.3*outcome; bad input and other types are refused.
func TestProcedureOutcomeTool(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	var w writeResult
	ok(t, cs, "memory_write", map[string]any{"type": "skill", "content": "bisect the failing test with git bisect run",
		"metadata": map[string]any{"trigger": "a test started failing", "steps": []string{"find a good commit", "git bisect run"}}}, &w)
	var out struct {
		Procedure memory.Procedure `json:"procedure"`
	}
	ok(t, cs, "procedure_outcome", map[string]any{"id": w.Record.ID, "outcome": 0}, &out)
	if r := out.Procedure.SuccessRate; r == nil || math.Abs(*r-0.35) > 1e-9 || out.Procedure.UseCount != 1 ||
		out.Procedure.Trigger != "a test started failing" || len(out.Procedure.Steps) != 2 {
		t.Fatalf("outcome %+v", out.Procedure)
	}
	fails(t, cs, "procedure_outcome", map[string]any{"id": w.Record.ID, "outcome": -1}, "invalid_argument")
	var b writeResult
	ok(t, cs, "memory_write", map[string]any{"type": "belief", "content": "bisect is fast here"}, &b)
	fails(t, cs, "procedure_outcome", map[string]any{"id": b.Record.ID, "outcome": 1}, "conflict")
	fails(t, cs, "procedure_outcome", map[string]any{"id": memory.NewID(), "outcome": 1}, "not_found")
}
