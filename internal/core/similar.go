package core

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode"

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
}

// checkSimilar looks for a near-duplicate or a contradicted record among
// the live records of the same type and exact scope (SPEC §4 step 5).
// Similarity is over words, so the check never waits on an embedder. It
// reads through rd, normally the read pool before the write transaction
// begins, so the single writer is not held while candidates are compared;
// the write re-verifies a hit inside its transaction (recheck).
func (s *Service) checkSimilar(ctx context.Context, rd store.Reader, ws string, p memory.Principal, r memory.Record) (similarity, error) {
	pol := s.policy
	near := pol.Duplicates.Near && !slices.Contains(pol.Duplicates.IgnoreTypes, r.Type)
	conflicts := pol.Conflicts.Detect && r.Supersedes == nil && slices.Contains(pol.Conflicts.Types, r.Type)
	if s.index == nil || (!near && !conflicts) {
		return similarity{}, nil
	}
	af := accessFilter(p, true)
	f := retrieve.Filter{Workspace: ws, Types: []memory.Type{r.Type}, Statuses: []memory.Status{memory.Active},
		Scope: r.Scope, Access: af.Levels, OwnAgent: af.OwnAgent}
	ids := s.index.Candidates(f, r.Content, 3)
	if len(ids) == 0 {
		return similarity{}, nil
	}
	mine := termSet(r.Content)
	var out similarity
	for _, id := range ids {
		c, err := rd.GetRecord(ctx, ws, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return similarity{}, err
		}
		if c.Status != memory.Active || c.Scope != r.Scope || c.Type != r.Type {
			continue
		}
		theirs := termSet(c.Content)
		shared, onlyMine, onlyTheirs := overlap(mine, theirs)
		union := shared + onlyMine + onlyTheirs
		if union == 0 {
			continue
		}
		jac := float64(shared) / float64(union)
		if near && jac >= pol.Duplicates.NearThreshold {
			out.duplicate = &c
			return out, nil
		}
		if out.conflict == nil && conflicts && jac >= pol.Conflicts.MinSimilarity && onlyMine > 0 && onlyTheirs > 0 &&
			onlyMine <= pol.Conflicts.MaxChangedTerms && onlyTheirs <= pol.Conflicts.MaxChangedTerms &&
			sameEntities(r.Entities, c.Entities) {
			out.conflict = &c
		}
	}
	return out, nil
}

// termSet is the set of lowercased words of text. Similarity here asks
// "is this nearly the same sentence", so nothing is dropped or stemmed:
// "turn a" and "turn b" differ.
func termSet(text string) map[string]bool {
	set := map[string]bool{}
	for _, t := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		set[t] = true
	}
	return set
}

func overlap(a, b map[string]bool) (shared, onlyA, onlyB int) {
	for t := range a {
		if b[t] {
			shared++
		} else {
			onlyA++
		}
	}
	return shared, onlyA, len(b) - shared
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

// recheck confirms, inside the write transaction, that the records found
// by checkSimilar are still live at the version seen; a hit that changed
// meanwhile is dropped (the write then proceeds as new).
func recheck(ctx context.Context, tx store.Tx, ws string, sim similarity) (similarity, error) {
	for _, pp := range []**memory.Record{&sim.duplicate, &sim.conflict} {
		if *pp == nil {
			continue
		}
		cur, err := tx.GetRecord(ctx, ws, (*pp).ID)
		if errors.Is(err, store.ErrNotFound) {
			*pp = nil
			continue
		}
		if err != nil {
			return similarity{}, err
		}
		if cur.Version != (*pp).Version || cur.Status != memory.Active {
			*pp = nil
			continue
		}
		*pp = &cur
	}
	return sim, nil
}
