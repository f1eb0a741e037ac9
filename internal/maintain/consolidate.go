package maintain

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/extract"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Consolidation turns repetition into belief, and never on its own
// authority:
//
//   - promotion: at least maintenance.consolidate_min active episodes
//     that state the same claim (same subject, predicate, polarity and
//     object, as extract.ParseClaim reads them) in the same scope and
//     access become one provisional belief, category "consolidated", on
//     the slow path, with evidence links to every episode and an approval
//     item (pending_write, reason "consolidation") for an operator. It is
//     never active until an operator approves it.
//   - merge: active records of one type, scope and access that say the
//     same thing in other words (the same normalised statement) are
//     near-duplicates; the oldest survives as a new version carrying the
//     evidence of all of them, and the others are superseded by it.
//
// The work list is a query over the current state: promoted groups are
// marked in the database settings (by a hash, in the transaction that
// proposes them), merged records are no longer active, so a second run
// finds nothing to do and a killed run's next run does the rest.

// Category of the beliefs consolidation proposes.
const CategoryConsolidated = "consolidated"

// ReasonConsolidation is the approval reason of a proposed belief.
const ReasonConsolidation = "consolidation"

// Consolidate runs promotion then merging over every workspace.
func (m *Maintainer) Consolidate(ctx context.Context) (Report, error) {
	rep := Report{Job: JobConsolidate, DryRun: m.o.DryRun}
	wss, err := m.svc.Store().ListWorkspaces(ctx)
	if err != nil {
		return rep, fault.Wrap(fault.Unavailable, err, "listing workspaces")
	}
	for _, w := range wss {
		if err := m.consolidateWorkspace(ctx, w.ID, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// groupKey says which records state the same thing to whom.
type groupKey struct {
	typ    memory.Type
	scope  memory.Scope
	access memory.Access
	owner  string // the writer, for access "agent" (only its writer reads it)
	claim  string
}

func keyOf(r memory.Record, claim string) groupKey {
	k := groupKey{typ: r.Type, scope: r.Scope, access: r.Access, claim: claim}
	if r.Access == memory.AgentOnly {
		k.owner = r.Source.PrincipalID
	}
	return k
}

// hash is a content-free name for a group: settings never hold text.
func (k groupKey) hash(ws string) string {
	return memory.SHA256Hex(strings.Join([]string{ws, string(k.typ), k.scope.UserID, k.scope.AgentID, k.scope.AppID,
		k.scope.ProjectID, k.scope.SessionID, string(k.access), k.owner, k.claim}, "\x1f"))
}

func claimKey(c extract.Claim) string {
	if c.Predicate == "" || c.Subject == "" || c.Object == "" {
		return ""
	}
	pol := "+"
	if c.Negated != c.Antonym {
		pol = "-"
	}
	return c.Subject + "\x1f" + c.Predicate + "\x1f" + pol + "\x1f" + c.Object
}

func (m *Maintainer) consolidateWorkspace(ctx context.Context, ws string, rep *Report) error {
	pol := m.svc.Policy()
	minN := pol.Maintenance.ConsolidateMin
	maxEv := pol.Limits.MaxEvidence
	var episodes = map[groupKey][]memory.Record{}
	var stated = map[groupKey][]memory.Record{}
	believed := map[groupKey]bool{}
	err := m.scan(ctx, ws, []memory.Status{memory.Active}, func(r memory.Record) {
		rep.Scanned++
		if r.InvalidatedAt != nil {
			return
		}
		switch {
		case r.Type == memory.Episode:
			if k := claimKey(extract.ParseClaim(r.Content)); k != "" {
				g := keyOf(r, k)
				episodes[g] = append(episodes[g], r)
			}
		case mergeable(r.Type) && !slices.Contains(pol.Duplicates.IgnoreTypes, r.Type):
			c := extract.ParseClaim(r.Content)
			if c.Norm != "" {
				g := keyOf(r, c.Norm)
				stated[g] = append(stated[g], r)
			}
			if r.Type == memory.Belief {
				if k := claimKey(c); k != "" {
					g := keyOf(r, k)
					g.typ = memory.Episode
					believed[g] = true
				}
			}
		}
	})
	if err != nil {
		return err
	}

	// Promotion, in a stable order.
	for _, g := range sortedKeys(episodes) {
		eps := episodes[g]
		if len(eps) < minN || believed[g] {
			continue
		}
		mark := "maintenance.consolidated." + g.hash(ws)
		if done, err := m.svc.MaintenanceCursor(ctx, mark); err != nil {
			return err
		} else if done != "" {
			continue
		}
		if m.o.DryRun {
			rep.Inserted++
			rep.Reviews++
			continue
		}
		b := core.MaintenanceBatch{Workspace: ws, Job: JobConsolidate, Origin: memory.OriginConsolidation,
			Inserts: []core.MaintenanceInsert{propose(eps, maxEv)}}
		b.Settings = map[string]string{mark: b.Inserts[0].Record.ID}
		if err := m.apply(ctx, b, rep); err != nil {
			return err
		}
	}

	// Merging near-duplicates.
	for _, g := range sortedKeys(stated) {
		rs := stated[g]
		if len(rs) < 2 {
			continue
		}
		if m.o.DryRun {
			rep.Changed += len(rs)
			continue
		}
		b := merge(rs, maxEv)
		b.Workspace = ws
		if err := m.apply(ctx, b, rep); err != nil {
			return err
		}
	}
	return nil
}

func (m *Maintainer) apply(ctx context.Context, b core.MaintenanceBatch, rep *Report) error {
	res, err := m.svc.ApplyMaintenance(ctx, b)
	if err != nil {
		return err
	}
	rep.Changed += res.Changed
	rep.Inserted += res.Inserted
	rep.Skipped += res.Skipped
	rep.Reviews += len(res.ApprovalIDs)
	rep.Approval = append(rep.Approval, res.ApprovalIDs...)
	if m.o.Progress != nil {
		m.o.Progress(Progress{Job: rep.Job, Scanned: rep.Scanned, Total: rep.Scanned,
			Changed: rep.Changed + rep.Inserted + rep.Reviews})
	}
	return nil
}

// mergeable types hold statements that can repeat each other; episodes
// are events (the same words twice are two events), entities and
// resources are not statements.
func mergeable(t memory.Type) bool {
	switch t {
	case memory.Belief, memory.Preference, memory.Decision, memory.Reflection, memory.Skill:
		return true
	}
	return false
}

// propose builds the provisional belief for a group of confirming
// episodes: the newest episode's words, their entities, evidence links
// to every episode (the newest maxEv when there are more than a record
// may carry).
func propose(eps []memory.Record, maxEv int) core.MaintenanceInsert {
	sort.Slice(eps, func(i, j int) bool { return eps[i].ID > eps[j].ID }) // newest first
	newest := eps[0]
	ev := make([]string, 0, len(eps))
	var ents []string
	for _, e := range eps {
		if len(ev) < maxEv {
			ev = append(ev, e.ID)
		}
		for _, x := range e.Entities {
			if !slices.Contains(ents, x) {
				ents = append(ents, x)
			}
		}
	}
	if ents == nil {
		ents = []string{}
	}
	conf := min(0.95, 0.6+0.05*float64(len(eps)))
	r := memory.Record{
		ID: memory.NewID(), Type: memory.Belief, Category: CategoryConsolidated, Content: newest.Content,
		Metadata: json.RawMessage(`{}`), Entities: ents, Status: memory.Provisional,
		Source: memory.Source{Agent: "memgate", PrincipalID: "system", Kind: memory.Inferred, Confidence: conf, Evidence: ev},
		Scope:  newest.Scope, Access: newest.Access, Classification: newest.Classification,
		DecayScore: 1, Path: memory.PathSlow,
	}
	if newest.Access == memory.AgentOnly {
		// Only the episodes' writer may read them; so the belief.
		r.Source.PrincipalID = newest.Source.PrincipalID
	}
	return core.MaintenanceInsert{Record: r, ApprovalKind: memory.ApprovalPending, Reason: ReasonConsolidation,
		Event: "record.consolidate", Payload: map[string]any{"episodes": len(eps), "evidence": ev}}
}

// merge keeps the oldest record of a group of near-duplicates, with the
// evidence of all of them, and supersedes the others by it.
func merge(rs []memory.Record, maxEv int) core.MaintenanceBatch {
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID }) // oldest first
	keep := rs[0]
	next := keep
	ev := slices.Clone(keep.Source.Evidence)
	ids := make([]string, 0, len(rs)-1)
	for _, r := range rs[1:] {
		ids = append(ids, r.ID)
		for _, e := range append([]string{r.ID}, r.Source.Evidence...) {
			if e != keep.ID && !slices.Contains(ev, e) && len(ev) < maxEv {
				ev = append(ev, e)
			}
		}
	}
	next.Source.Evidence, next.Path = ev, memory.PathSlow
	b := core.MaintenanceBatch{Origin: memory.OriginConsolidation, Job: JobConsolidate}
	b.Changes = append(b.Changes, core.MaintenanceChange{Next: next, ExpectedVersion: keep.Version,
		Event: "record.merge", Payload: map[string]any{"merged": ids}})
	for _, r := range rs[1:] {
		old := r
		old.Status = memory.Superseded
		id := keep.ID
		old.SupersededBy = &id
		b.Changes = append(b.Changes, core.MaintenanceChange{Next: old, ExpectedVersion: r.Version,
			Event: "record.merge", Payload: map[string]any{"superseded_by": keep.ID}})
	}
	return b
}

func sortedKeys(m map[groupKey][]memory.Record) []groupKey {
	keys := make([]groupKey, 0, len(m))
	for k, rs := range m {
		if len(rs) > 0 {
			keys = append(keys, k)
		}
	}
	// By the oldest record of each group: stable for the same state.
	first := func(k groupKey) string {
		f := m[k][0].ID
		for _, r := range m[k] {
			f = min(f, r.ID)
		}
		return f
	}
	sort.Slice(keys, func(i, j int) bool { return first(keys[i]) < first(keys[j]) })
	return keys
}

// scan calls fn for every record of statuses in ws, in pages, the
// invalidated included (callers that want what memgate believes skip
// them).
func (m *Maintainer) scan(ctx context.Context, ws string, statuses []memory.Status, fn func(memory.Record)) error {
	before := ""
	for {
		rs, err := m.svc.Store().ListRecords(ctx, ws, store.RecordQuery{
			Statuses: statuses, Access: allAccess, IncludeInvalidated: true, Before: before, Limit: m.o.Batch,
		})
		if err != nil {
			return fault.Wrap(fault.Unavailable, err, "listing records")
		}
		for _, r := range rs {
			fn(r)
		}
		if len(rs) < m.o.Batch {
			return nil
		}
		before = rs[len(rs)-1].ID
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
