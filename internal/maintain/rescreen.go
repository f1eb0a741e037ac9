package maintain

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
)

// Rescreen applies the current PII and secret screen to stored records,
// as the gate applies it to new writes: a record whose content or
// metadata the screen now flags is quarantined (status quarantined,
// access sensitive, gate decision quarantined, a quarantine review item),
// and so, transitively, is every record that cites a quarantined record
// as evidence (reason pii_evidence), as a write citing it would be.
// Stored records are quarantined under the reject action too: memgate
// never erases an admitted record on its own; the operator decides.
//
// The scheduled sweep runs it only when the rules changed since the last
// complete rescreen (the policy's pii section or gate.ScreenVersion);
// `memgate maintain rescreen` runs it always. Quarantined records are not
// screened again, so a second run changes nothing.
func (m *Maintainer) Rescreen(ctx context.Context) (Report, error) {
	pii := m.svc.Policy().PII
	rep, err := m.walk(ctx, JobRescreen, []memory.Status{memory.Active, memory.Provisional}, func(_ string, rs []memory.Record) (core.MaintenanceBatch, error) {
		var b core.MaintenanceBatch
		if !pii.Enabled {
			return b, nil
		}
		for _, r := range rs {
			if kinds := screen(r, pii.Kinds); len(kinds) > 0 {
				if ownTurn(r) && pii.OwnTurnReadable(kinds) {
					continue // the gate would flag it again, as it is
				}
				quarantine(&b, r, gate.ReasonPII, kinds)
			}
		}
		return b, nil
	})
	if err != nil {
		return rep, err
	}
	if pii.Enabled {
		if err := m.propagate(ctx, &rep); err != nil {
			return rep, err
		}
	}
	if !m.o.DryRun {
		if err := m.svc.PutMaintenanceCursor(ctx, rulesKey, rulesFingerprint(pii)); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// JobRescreen is the rescreen job's name.
const JobRescreen = "rescreen"

// rulesKey holds the fingerprint of the rules the last complete rescreen
// ran with.
const rulesKey = "maintenance.rescreen.rules"

func rulesFingerprint(p gate.PIIPolicy) string {
	raw, _ := json.Marshal(p)
	return memory.SHA256Hex(strconv.Itoa(gate.ScreenVersion) + "\x1f" + string(raw))
}

// rescreenDue reports whether the rules changed since the last rescreen.
func (m *Maintainer) rescreenDue(ctx context.Context) (bool, error) {
	last, err := m.svc.MaintenanceCursor(ctx, rulesKey)
	if err != nil {
		return false, err
	}
	return last != rulesFingerprint(m.svc.Policy().PII), nil
}

func screen(r memory.Record, kinds []string) []string {
	seen := map[string]bool{}
	for _, f := range gate.Screen(r.Content, kinds) {
		seen[f.Kind] = true
	}
	if len(r.Metadata) > 0 {
		for _, f := range gate.Screen(string(r.Metadata), kinds) {
			seen[f.Kind] = true
		}
	}
	var out []string
	for _, k := range gate.PIIKinds {
		if seen[k] {
			out = append(out, k)
		}
	}
	return out
}

func quarantine(b *core.MaintenanceBatch, r memory.Record, reason string, kinds []string) {
	next := r
	next.Status, next.Access = memory.Quarantined, memory.Sensitive
	payload := map[string]any{"reason": reason}
	if len(kinds) > 0 {
		payload["pii_kinds"] = kinds
	}
	b.Changes = append(b.Changes, core.MaintenanceChange{Next: next, ExpectedVersion: r.Version, Event: "record.rescreen",
		Decision: memory.DecisionQuarantined, Payload: payload})
	b.Approvals = append(b.Approvals, memory.Approval{RecordID: r.ID, Kind: memory.ApprovalQuarantine, Reason: reason})
}

// maxPropagation bounds the passes of propagation: chains of evidence
// deeper than this are finished by the next run.
const maxPropagation = 8

// ownTurn reports whether r is a gateway user's own turn the gate flagged
// (docs/gate.md): readable by that user only.
func ownTurn(r memory.Record) bool {
	return r.Gate.Decision == memory.DecisionFlagged && r.Access == memory.UserOnly && r.Type == memory.Episode
}

// propagate quarantines the records that cite quarantined records as
// evidence, pass by pass, until a pass finds none. (What cites a user's
// flagged turn was quarantined when it was written: the gate's evidence
// flag.)
func (m *Maintainer) propagate(ctx context.Context, rep *Report) error {
	wss, err := m.svc.Store().ListWorkspaces(ctx)
	if err != nil {
		return err
	}
	for _, w := range wss {
		flagged := map[string]bool{}
		if err := m.scan(ctx, w.ID, []memory.Status{memory.Quarantined}, func(r memory.Record) { flagged[r.ID] = true }); err != nil {
			return err
		}

		for pass := 0; pass < maxPropagation && len(flagged) > 0; pass++ {
			var b core.MaintenanceBatch
			var found []string
			err := m.scan(ctx, w.ID, []memory.Status{memory.Active, memory.Provisional}, func(r memory.Record) {
				if slices.ContainsFunc(r.Source.Evidence, func(id string) bool { return flagged[id] }) {
					quarantine(&b, r, gate.ReasonPIIEvidence, nil)
					found = append(found, r.ID)
				}
			})
			if err != nil {
				return err
			}
			if len(found) == 0 {
				break
			}
			if m.o.DryRun {
				rep.Changed += len(b.Changes)
				rep.Reviews += len(b.Approvals)
			} else {
				b.Workspace, b.Job, b.Origin = w.ID, JobRescreen, memory.OriginMaintenance
				if err := m.apply(ctx, b, rep); err != nil {
					return err
				}
			}
			for _, id := range found {
				flagged[id] = true
			}
		}
	}
	return nil
}
