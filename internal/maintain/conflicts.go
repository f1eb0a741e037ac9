package maintain

import (
	"context"
	"slices"
	"sort"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/extract"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// The conflicts sweep finds contradictions between active records that
// the write-time check could not see (written before the check, by
// paths without it, or too far apart in wording for it) and puts each to
// an operator: the newer record gets a new version that names the older
// in supersedes, and a review item of kind conflict, reason
// conflict_sweep, which lists both sides with their provenance.
// Approving keeps the newer and supersedes the older; rejecting
// invalidates the newer and the older stands; an item left to expire
// clears the claim, and the next sweep asks again.
//
// Two records contradict when they are of a type in conflicts.types, in
// the same scope and access, and extract.Contradicts reads them as the
// same subject and predicate with a reversed polarity or a changed
// value. The work list is the current state: a record already naming
// what it supersedes, or invalidated, is not asked about again.

// ReasonConflictSweep is the approval reason of a swept conflict.
const ReasonConflictSweep = "conflict_sweep"

// maxConflictGroup bounds the pairwise comparison within one subject and
// predicate; larger groups are compared in their newest records only.
const maxConflictGroup = 200

// Conflicts runs the sweep over every workspace.
func (m *Maintainer) Conflicts(ctx context.Context) (Report, error) {
	rep := Report{Job: JobConflicts, DryRun: m.o.DryRun}
	wss, err := m.svc.Store().ListWorkspaces(ctx)
	if err != nil {
		return rep, fault.Wrap(fault.Unavailable, err, "listing workspaces")
	}
	types := m.svc.Policy().Conflicts.Types
	for _, w := range wss {
		groups := map[groupKey][]memory.Record{}
		err := m.scan(ctx, w.ID, []memory.Status{memory.Active}, func(r memory.Record) {
			rep.Scanned++
			if r.InvalidatedAt != nil || !slices.Contains(types, r.Type) {
				return
			}
			c := extract.ParseClaim(r.Content)
			if c.Subject == "" || c.Predicate == "" {
				return
			}
			g := keyOf(r, c.Subject+"\x1f"+c.Predicate)
			groups[g] = append(groups[g], r)
		})
		if err != nil {
			return rep, err
		}
		for _, g := range sortedKeys(groups) {
			rs := groups[g]
			if len(rs) < 2 {
				continue
			}
			sort.Slice(rs, func(i, j int) bool { return rs[i].ID > rs[j].ID }) // newest first
			rs = rs[:min(len(rs), maxConflictGroup)]
			claimed := map[string]bool{}
			for i, newer := range rs {
				if newer.Supersedes != nil || claimed[newer.ID] {
					continue
				}
				for _, older := range rs[i+1:] {
					if !extract.Contradicts(older.Content, newer.Content) {
						continue
					}
					claimed[newer.ID] = true
					if m.o.DryRun {
						rep.Changed++
						rep.Reviews++
						break
					}
					next := newer
					id := older.ID
					next.Supersedes = &id
					b := core.MaintenanceBatch{Workspace: w.ID, Job: JobConflicts, Origin: memory.OriginMaintenance,
						Changes: []core.MaintenanceChange{{Next: next, ExpectedVersion: newer.Version, Event: "record.conflict",
							Payload: map[string]any{"conflicts_with": older.ID}}},
						Approvals: []memory.Approval{{RecordID: newer.ID, Kind: memory.ApprovalConflict, Reason: ReasonConflictSweep}}}
					if err := m.apply(ctx, b, &rep); err != nil {
						return rep, err
					}
					break
				}
			}
		}
	}
	return rep, nil
}
