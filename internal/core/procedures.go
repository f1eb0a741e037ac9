package core

import (
	"context"
	"errors"
	"math"
	"sort"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Procedures are skill records with typed fields (memory.Procedure):
// trigger, steps, success rate and use count. Agents report how a
// procedure went; search surfaces procedures whose trigger matches the
// query with their rate, and ranks failing ones lower.

// OutcomeResult is the answer to an outcome report.
type OutcomeResult struct {
	Record    memory.Record    `json:"record"`
	Procedure memory.Procedure `json:"procedure"`
	Citation  string           `json:"citation"`
}

// ReportOutcome records one use of a procedure and how it went (outcome
// in [0, 1]: 1 success, 0 failure): a new version of the skill whose
// success_rate is 0.7*old + 0.3*outcome (0.5 before the first report) and
// whose use_count grows by one, through the gate and audited
// (record.outcome). Any principal that may read the skill and may write
// may report; read_only agents may not.
func (s *Service) ReportOutcome(ctx context.Context, p memory.Principal, id string, outcome float64) (OutcomeResult, error) {
	if math.IsNaN(outcome) || outcome < 0 || outcome > 1 {
		return OutcomeResult{}, fault.Field("outcome", "must be a number between 0 (failure) and 1 (success)")
	}
	if p.Kind == memory.KindAgent && p.Trust == memory.ReadOnly {
		return OutcomeResult{}, fault.New(fault.PermissionDenied, "read_only agents may not report outcomes")
	}
	if !memory.ValidID(id) {
		return OutcomeResult{}, fault.New(fault.NotFound, "record not found")
	}
	if err := s.rateLimit(p); err != nil {
		return OutcomeResult{}, err
	}
	var out OutcomeResult
	var err error
	// Concurrent reports race for the next version; the loser reads the
	// new head and applies its outcome to it.
	for range 5 {
		out, err = s.reportOutcome(ctx, p, id, outcome)
		if fault.CodeOf(err) != fault.VersionConflict {
			break
		}
	}
	if err != nil {
		return OutcomeResult{}, err
	}
	s.logMoved(ctx)
	return out, nil
}

func (s *Service) reportOutcome(ctx context.Context, p memory.Principal, id string, outcome float64) (OutcomeResult, error) {
	now := s.clock()
	var out OutcomeResult
	err := s.tx(ctx, "record", func(tx store.Tx) error {
		head, err := tx.GetRecord(ctx, p.Workspace, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err != nil || !canRead(p, head, true) {
			return fault.New(fault.NotFound, "record not found")
		}
		if head.Type != memory.Skill {
			return fault.New(fault.Conflict, "only a skill record (a procedure) takes outcomes, this one is a "+string(head.Type))
		}
		if head.Status != memory.Active {
			return fault.New(fault.Conflict, "only an active procedure takes outcomes, this one is "+string(head.Status))
		}
		proc, _ := memory.ProcedureOf(head)
		meta, proc, err := memory.WithOutcome(head.Metadata, proc, outcome)
		if err != nil {
			return fault.Wrap(fault.Conflict, err, "the skill's metadata is not a JSON object")
		}
		next := head
		decisionID := memory.NewID()
		next.Metadata, next.Version, next.UpdatedAt, next.ModifiedBy = meta, head.Version+1, now, p.ID
		next.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionAccepted, Origin: memory.OriginExternal}
		if err := s.policy.CheckSchema(next); err != nil {
			return err
		}
		if err := tx.UpdateRecord(ctx, p.Workspace, next, head.Version); err != nil {
			return err
		}
		out = OutcomeResult{Record: next, Procedure: proc, Citation: next.Citation()}
		_, err = appendAudit(ctx, tx, p.Workspace, p, decisionID, "record.outcome", now, map[string]any{
			"record_id": id, "version": next.Version, "outcome": outcome, "success_rate": *proc.SuccessRate, "use_count": proc.UseCount})
		return err
	})
	return out, err
}

// rankProcedures attaches the procedure of each skill hit and weighs its
// score by its success rate: x(0.5 + rate), so a procedure that always
// works ranks 1.5 times higher, one that always fails half as high, and
// one never reported is unchanged. The sort is stable.
func rankProcedures(hits []SearchHit) {
	moved := false
	for i := range hits {
		proc, ok := memory.ProcedureOf(hits[i].Record)
		if !ok {
			continue
		}
		hits[i].Procedure = &proc
		if proc.SuccessRate != nil {
			hits[i].Score *= 0.5 + *proc.SuccessRate
			moved = true
		}
	}
	if moved {
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	}
}
