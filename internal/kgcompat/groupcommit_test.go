package kgcompat

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
)

// TestConcurrentCallersAtomicEach: SQLite's writer commits the callers that
// queued up meanwhile as one transaction (group commit); each caller's
// write is still atomic on its own. Concurrent create_entities calls, one
// in three carrying a card number the gate refuses after the call's first
// entity was written, and concurrent plain writes: every refused call
// leaves nothing (not even its first entity) and is audited once, every
// other caller's write is committed whole, and the audit chain verifies.
func TestConcurrentCallersAtomicEach(t *testing.T) {
	s, ps := kgService(t, func(p *gate.Policy) { p.PII.Action = gate.PIIReject })
	ctx, p := context.Background(), ps["std"]
	before := auditCount(t, s)
	const callers = 24
	errs := make([]error, callers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-start
			obs := []string{fmt.Sprintf("works on project %d", i)}
			if i%3 == 0 {
				obs = append(obs, "Card 4111 1111 1111 1111")
			}
			ents := []Entity{
				{Name: fmt.Sprintf("first %d", i), EntityType: "person", Observations: []string{fmt.Sprintf("lives in town %d", i)}},
				{Name: fmt.Sprintf("second %d", i), EntityType: "person", Observations: obs},
			}
			if _, errs[i] = s.CreateEntities(ctx, p, ents); errs[i] != nil {
				return
			}
			_, errs[i] = s.svc.Write(ctx, p, core.WriteRequest{Type: memory.Belief, Content: fmt.Sprintf("caller %d kept its word %s", i, memory.NewID())})
		})
	}
	close(start)
	wg.Wait()
	refused := 0
	for i, err := range errs {
		g := mustGraph(t)(s.OpenNodes(ctx, p, []string{fmt.Sprintf("first %d", i), fmt.Sprintf("second %d", i)}))
		if i%3 == 0 {
			refused++
			if !fault.Is(err, fault.GateRejected) {
				t.Errorf("caller %d (card number): %v, want gate_rejected", i, err)
			}
			if len(g.Entities) != 0 {
				t.Errorf("refused caller %d left %+v", i, g.Entities)
			}
			continue
		}
		if err != nil {
			t.Errorf("caller %d failed beside refused callers: %v", i, err)
		}
		if len(g.Entities) != 2 || len(g.Entities[0].Observations) != 1 || len(g.Entities[1].Observations) != 1 {
			t.Errorf("caller %d: stored %+v, want both entities with their observation", i, g.Entities)
		}
	}
	entries, err := s.svc.Store().ListAudit(ctx, p.Workspace, before, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	rejections := 0
	for _, e := range entries {
		var payload map[string]any
		if e.Event == "record.write" && json.Unmarshal(e.Payload, &payload) == nil && payload["decision"] == string(memory.DecisionRejected) {
			rejections++
		}
	}
	if rejections != refused {
		t.Errorf("%d rejections audited, want %d", rejections, refused)
	}
	rep, err := s.svc.VerifyAudit(ctx, p.Workspace)
	if err != nil || !rep.OK {
		t.Fatalf("audit chain after concurrent callers: %+v %v", rep, err)
	}
}
