package core

import (
	"context"
	"errors"
	"slices"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
)

// Reasons for step-5 decisions.
const (
	reasonNearDuplicate = "near_duplicate"
	reasonConflict      = "conflict"
)

// similarity is the step-5 verdict on a draft against live records.
type similarity struct {
	duplicate *memory.Record // a near-identical live record
	conflict  *memory.Record // a live record the draft contradicts
	// near are the live records whose words overlap the draft's at least
	// the near-duplicate threshold, best first. recheck reads their
	// content: one that says the same is the duplicate; one that differs
	// in meaning (gate.MeaningDiffers) goes to the conflict rule instead.
	near []nearHit
}

// nearHit is a near-duplicate candidate; conflictOK says the conflict
// rule's other conditions (overlap, changed terms, entities) hold, should
// its meaning differ, and changed that words differ on both sides (a
// changed value) rather than only added or only removed.
type nearHit struct {
	rec                 *memory.Record
	conflictOK, changed bool
}

// checkSimilar looks for a near-duplicate or a contradicted record among
// the live records of the same type and exact scope (SPEC §4 step 5).
// Similarity is over words, compared in memory by the index before the
// write transaction begins, so the check never waits on an embedder nor
// holds the single writer; the write re-verifies a hit inside its
// transaction (recheck). The records it returns carry only id and version.
func (s *Service) checkSimilar(p memory.Principal, ws string, r memory.Record) similarity {
	pol := s.policy
	near := pol.Duplicates.Near && !slices.Contains(pol.Duplicates.IgnoreTypes, r.Type)
	conflicts := pol.Conflicts.Detect && r.Supersedes == nil && slices.Contains(pol.Conflicts.Types, r.Type)
	if s.index == nil || (!near && !conflicts) {
		return similarity{}
	}
	af := accessFilter(p, true)
	f := retrieve.Filter{Workspace: ws, Types: []memory.Type{r.Type}, Statuses: []memory.Status{memory.Active},
		Scope: r.Scope, Access: af.Levels, OwnAgent: af.OwnAgent, OwnUser: af.OwnUser}
	var out similarity
	for _, c := range s.index.SimilarTo(f, r.Content, retrieve.WordSet(r.Content), 3) {
		if c.Scope != r.Scope {
			continue
		}
		union := c.Shared + c.OnlyMine + c.OnlyOld
		if union == 0 {
			continue
		}
		jac := float64(c.Shared) / float64(union)
		hit := &memory.Record{ID: c.ID, Version: c.Version}
		conflictOK := conflicts && jac >= pol.Conflicts.MinSimilarity &&
			c.OnlyMine <= pol.Conflicts.MaxChangedTerms && c.OnlyOld <= pol.Conflicts.MaxChangedTerms &&
			sameEntities(r.Entities, c.Entities)
		if near && jac >= pol.Duplicates.NearThreshold {
			out.near = append(out.near, nearHit{rec: hit, conflictOK: conflictOK, changed: c.OnlyMine > 0 && c.OnlyOld > 0})
			continue
		}
		if out.conflict == nil && conflictOK && c.OnlyMine > 0 && c.OnlyOld > 0 {
			out.conflict = hit
		}
	}
	return out
}

func sameEntities(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// conflictOutcome applies the policy's conflict action to an outcome that
// would otherwise store the record.
func conflictOutcome(pol gate.Policy, out gate.Outcome) gate.Outcome {
	if pol.Conflicts.Action == gate.ConflictQueue && out.Status == memory.Active {
		out.Decision, out.Status, out.Reason, out.ApprovalKind = memory.DecisionQueued, memory.Provisional, reasonConflict, memory.ApprovalConflict
	}
	return out
}

// recheck loads, inside the write transaction, the records found by
// checkSimilar and confirms they are still live at the version seen; a
// hit that changed meanwhile is dropped (the write then proceeds as new).
// It settles the near-duplicate candidates against the draft's content:
// the first that says the same thing is the duplicate; one that differs
// in negation, a number, a date or time or a name is never merged, and
// becomes the contradicted record when the conflict rule allows — for a
// value changed on both sides, or a negation added or removed. (Words only
// added, "... with Bob", contradict nothing: both records stay.)
func recheck(ctx context.Context, tx store.Tx, ws, content string, sim similarity) (similarity, error) {
	live := func(hit *memory.Record) (*memory.Record, error) {
		cur, err := tx.GetRecord(ctx, ws, hit.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if cur.Version != hit.Version || cur.Status != memory.Active {
			return nil, nil
		}
		return &cur, nil
	}
	var out similarity
	for _, n := range sim.near {
		cur, err := live(n.rec)
		if err != nil {
			return similarity{}, err
		}
		if cur == nil {
			continue
		}
		if !gate.MeaningDiffers(content, cur.Content) {
			out.duplicate = cur
			return out, nil
		}
		if out.conflict == nil && n.conflictOK && (n.changed || gate.NegationDiffers(content, cur.Content)) {
			out.conflict = cur
		}
	}
	if out.conflict == nil && sim.conflict != nil {
		cur, err := live(sim.conflict)
		if err != nil {
			return similarity{}, err
		}
		out.conflict = cur
	}
	return out, nil
}
