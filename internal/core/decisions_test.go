package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// TestDecisionsScanCapResumes: a filter matching little in a long audit
// log answers short pages within the scan bound and its cursor resumes
// where the scan stopped, until every match (and every gatekeeper row)
// was listed exactly once.
func TestDecisionsScanCapResumes(t *testing.T) {
	s, st, clk := newPortableService(t, true)
	ctx := t.Context()
	defer func(n int) { decisionScanCap = n }(decisionScanCap)
	decisionScanCap = 7
	op := LocalOperator(memory.DefaultWorkspace)
	var quarantined []string
	for i := range 30 {
		content := fmt.Sprintf("plain fact number %d w%dx", i, i)
		if i%10 == 3 {
			content = fmt.Sprintf("mail dana%d@example.com about it", i)
		}
		res, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision == memory.DecisionQuarantined {
			quarantined = append(quarantined, res.Record.ID)
		}
		clk.Advance(time.Second)
	}
	var gk []string
	if err := st.Tx(ctx, func(tx store.Tx) error {
		for i := range 3 {
			e := store.GatekeeperEntry{ID: memory.NewID(), Workspace: memory.DefaultWorkspace, JobID: memory.NewID(), MessageID: memory.NewID(),
				Decision: "skip", Reason: "no pattern matched", CreatedAt: clk.Now().Add(time.Duration(i) * time.Second)}
			gk = append(gk, e.ID)
			if err := tx.InsertGatekeeper(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(quarantined) != 3 {
		t.Fatalf("quarantined %d writes, want 3", len(quarantined))
	}
	for _, q := range []DecisionQuery{{Decision: memory.DecisionQuarantined}, {Decision: "skip"}, {}} {
		seen := map[string]int{}
		pages := 0
		for {
			page, err := s.ListDecisions(ctx, op, q)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, d := range page.Decisions {
				seen[d.ID]++
				if q.Decision != "" && d.Decision != q.Decision {
					t.Fatalf("%+v: got %+v", q, d)
				}
			}
			if page.NextCursor == "" || pages > 100 {
				break
			}
			q.Cursor = page.NextCursor
		}
		want := 0
		switch q.Decision {
		case memory.DecisionQuarantined:
			want = 3
		case "skip":
			want = 3
		default:
			want = 30 + 3 // every write's decision and every gatekeeper row
		}
		if len(seen) != want || pages < 2 {
			t.Errorf("%+v: %d distinct decisions over %d pages, want %d over several", q, len(seen), pages, want)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%+v: %s listed %d times", q, id, n)
			}
		}
	}
	if _, err := s.ListDecisions(ctx, memory.Principal{Kind: memory.KindAgent, Workspace: memory.DefaultWorkspace}, DecisionQuery{}); err == nil {
		t.Fatal("an agent listed decisions")
	}
}
