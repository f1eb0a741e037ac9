package core

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
)

// nearPair is a row of testdata/near_duplicates.json, the table of text
// pairs every write path (service, REST, gateway, MCP) runs: want is
// "duplicate" (merged), "conflict" (the second supersedes the first) or
// "new" (both kept).
type nearPair struct {
	Name           string   `json:"name"`
	First          string   `json:"first"`
	Second         string   `json:"second"`
	FirstEntities  []string `json:"first_entities"`
	SecondEntities []string `json:"second_entities"`
	Want           string   `json:"want"`
}

func loadNearPairs(t *testing.T) []nearPair {
	t.Helper()
	b, err := os.ReadFile("testdata/near_duplicates.json")
	if err != nil {
		t.Fatal(err)
	}
	var ps []nearPair
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestMeaningDiffersTable(t *testing.T) {
	for _, p := range loadNearPairs(t) {
		if got, want := gate.MeaningDiffers(p.First, p.Second), p.Want != "duplicate"; got != want {
			t.Errorf("%s: meaningDiffers = %v, want %v", p.Name, got, want)
		}
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"we never deploy on fridays", "we deploy on fridays", true},
		{"I don’t use vim", "I use vim", true},
		{"meeting moved to May", "meeting moved to June", true},
		{"The cat sat", "the cat sat", false},
		{"the build is green", "the build is green again", false},
	} {
		if got := gate.MeaningDiffers(c.a, c.b); got != c.want {
			t.Errorf("gate.MeaningDiffers(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// TestNearDuplicateTable runs the shared table through Service.Write: a
// pair that differs in negation, a number, a date or time or a name is
// never merged.
func TestNearDuplicateTable(t *testing.T) {
	s, ps := agentService(t, nil)
	ctx := t.Context()
	for i, p := range loadNearPairs(t) {
		scope := memory.Scope{UserID: fmt.Sprintf("u%d", i)}
		first, err := s.Write(ctx, ps["std"], WriteRequest{Type: memory.Belief, Content: p.First, Entities: p.FirstEntities, Scope: scope})
		if err != nil {
			t.Fatalf("%s: first: %v", p.Name, err)
		}
		second, err := s.Write(ctx, ps["std"], WriteRequest{Type: memory.Belief, Content: p.Second, Entities: p.SecondEntities, Scope: scope})
		if err != nil {
			t.Fatalf("%s: second: %v", p.Name, err)
		}
		checkNearPair(t, p, first.Record.ID, second.Decision, second.Reason, second.Record.ID, second.Record.Supersedes)
	}
}

// checkNearPair asserts the outcome of a table row's second write.
func checkNearPair(t *testing.T, p nearPair, firstID string, decision string, reason, secondID string, supersedes *string) {
	t.Helper()
	switch p.Want {
	case "duplicate":
		if decision != memory.DecisionDuplicate || secondID != firstID {
			t.Errorf("%s: want a duplicate of %s, got %s/%s %s", p.Name, firstID, decision, reason, secondID)
		}
	case "conflict":
		if decision != memory.DecisionAccepted || reason != "conflict" || supersedes == nil || *supersedes != firstID {
			t.Errorf("%s: want a conflict superseding %s, got %s/%s supersedes=%v", p.Name, firstID, decision, reason, supersedes)
		}
	case "new":
		if decision != memory.DecisionAccepted || secondID == firstID || supersedes != nil {
			t.Errorf("%s: want a new record, got %s/%s", p.Name, decision, reason)
		}
	default:
		t.Fatalf("%s: bad want %q", p.Name, p.Want)
	}
}
