package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/extract"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
)

// How a flush attempt spends its time (docs/extraction.md): the model
// calls get a budget inside the attempt; what the patterns found, the
// reconciliation by rules and the commit never depend on the model
// answering in time.

// defaultLLMBudget bounds the model calls of an attempt that has no
// deadline of its own (the job queue always sets one).
const defaultLLMBudget = time.Minute

// llmBudget returns the context the model calls of one flush attempt run
// under: ExtractionOptions.LLMBudget, at most half the time ctx has left.
func (s *Service) llmBudget(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	budget := s.extract.LLMBudget
	if dl, ok := ctx.Deadline(); ok {
		if half := time.Until(dl) / 2; budget <= 0 || budget > half {
			budget = max(half, time.Millisecond)
		}
	}
	if budget <= 0 {
		budget = defaultLLMBudget
	}
	c, cancel := context.WithTimeout(ctx, budget)
	return c, cancel, budget
}

// llmFailure says why the model calls failed, for the job's last error
// and the logs: a budget that ran out is a timeout, whatever the client
// was doing at the time.
func llmFailure(err error, llmCtx context.Context, budget time.Duration) string {
	if errors.Is(llmCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("timed out: the model did not answer within the attempt's %v budget", budget.Round(time.Millisecond))
	}
	return err.Error()
}

// pendingPrefix marks a reconciliation target that is an earlier fact
// of the same flush, not yet written.
const pendingPrefix = "flush-fact-"

func pendingRef(i int) string { return pendingPrefix + strconv.Itoa(i) }

func pendingIndex(id string) (int, bool) {
	n, ok := strings.CutPrefix(id, pendingPrefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return i, err == nil
}

// planFacts reconciles a flush's facts in message order, each against
// the user's stored facts and the earlier facts of the same flush: the
// latest statement wins. A stored fact an earlier fact of the flush
// replaces or negates is no longer a candidate for the later ones, which
// reconcile against its replacement instead. The model reconciles (under
// llmCtx) when useLLM, else the rules do.
func (s *Service) planFacts(ctx, llmCtx context.Context, useLLM bool, p memory.Principal, cv store.Conversation, facts []plannedFact) error {
	retired := map[string]bool{} // stored facts an earlier fact replaces or negates
	var live []int               // earlier facts of the flush still standing
	for i := range facts {
		f := facts[i].fact
		stored, err := s.similarFacts(ctx, p, cv, f.Content)
		if err != nil {
			return err
		}
		stored = slices.DeleteFunc(stored, func(e extract.Existing) bool { return retired[e.ID] })
		existing := append(flushCandidates(facts, live, f), stored...)
		rec := s.reconcile(llmCtx, useLLM, f, existing)
		facts[i].rec = rec
		switch rec.Action {
		case extract.ActionAdd:
			live = append(live, i)
		case extract.ActionUpdate, extract.ActionInvalidate:
			if k, ok := pendingIndex(rec.TargetID); ok {
				live = slices.DeleteFunc(live, func(x int) bool { return x == k })
			} else {
				retired[rec.TargetID] = true
			}
			if rec.Action == extract.ActionUpdate {
				live = append(live, i)
			}
		}
	}
	return nil
}

// flushCandidates are the earlier standing facts of the flush that share
// words with f, at most 5, the most words in common first and, among
// equals, the latest first.
func flushCandidates(facts []plannedFact, live []int, f extract.Fact) []extract.Existing {
	words := retrieve.WordSet(f.Content)
	type cand struct{ i, shared int }
	var cs []cand
	for _, k := range live {
		if n := sharedWords(words, retrieve.WordSet(facts[k].fact.Content)); n > 0 {
			cs = append(cs, cand{k, n})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(b.shared-a.shared, b.i-a.i) })
	out := make([]extract.Existing, 0, min(len(cs), 5))
	for _, c := range cs[:min(len(cs), 5)] {
		g := facts[c.i].fact
		out = append(out, extract.Existing{ID: pendingRef(c.i), Type: g.Type, Content: g.Content, Entities: g.Entities})
	}
	return out
}

// sharedWords counts the words two sorted word sets have in common.
func sharedWords(a, b []uint32) int {
	n := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

// reconcile decides what a candidate fact does to the existing ones: the
// model decides when useLLM and it answers within ctx, else the
// deterministic rules do. A model's no-op against a fact that differs in
// negation, a number, a date or time or a name would lose what the user
// said (docs/duplicates.md): the rules decide instead.
func (s *Service) reconcile(ctx context.Context, useLLM bool, f extract.Fact, existing []extract.Existing) extract.Reconciliation {
	if len(existing) == 0 {
		return extract.Reconciliation{Action: extract.ActionAdd, Reason: "no similar fact"}
	}
	if l := s.extract.LLM; l != nil && useLLM && ctx.Err() == nil {
		if r, err := l.Reconcile(ctx, f, existing); err == nil {
			i := slices.IndexFunc(existing, func(e extract.Existing) bool { return e.ID == r.TargetID })
			if r.Action != extract.ActionNoop || i < 0 || !gate.MeaningDiffers(f.Content, existing[i].Content) {
				return r
			}
		}
	}
	return extract.ReconcileRules(f, existing)
}
