package core

import (
	"context"
	"errors"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Maintenance jobs (internal/maintain) decide; the service writes. This
// file is the gated write path their decisions take: each batch is one
// transaction that checks the schema, stamps the gate origin
// (maintenance or consolidation), audits every change as the system
// principal, stores the job's resume cursor with the effects it covers,
// and then has the search index read the new heads from the change log.

// MaintenanceChange is one new head a maintenance job decided. The
// service sets Version, UpdatedAt, ModifiedBy and Gate.
type MaintenanceChange struct {
	Next            memory.Record
	ExpectedVersion int
	// Event names the audit entry (record.archive, record.consolidate...).
	Event string
	// Payload holds ids, counts and reasons only: never content.
	Payload map[string]any
	// Decision is the gate decision recorded on the version; "" is
	// accepted (rescreen records quarantined).
	Decision string
}

// MaintenanceInsert is a new record a maintenance job proposes, with the
// approval item that holds it for review (ApprovalKind "" for none).
type MaintenanceInsert struct {
	Record       memory.Record
	ApprovalKind memory.ApprovalKind
	Reason       string
	Event        string
	Payload      map[string]any
}

// MaintenanceBatch is the unit of one maintenance transaction.
type MaintenanceBatch struct {
	Workspace string
	Job       string // decay, archive, consolidate, conflicts, rescreen
	Origin    string // memory.OriginMaintenance or memory.OriginConsolidation
	// Decay sets decay_score on heads (bookkeeping: no version).
	Decay   map[string]float64
	Changes []MaintenanceChange
	Inserts []MaintenanceInsert
	// Approvals are review items on existing records (conflicts); one
	// whose record's change was skipped is not opened.
	Approvals []memory.Approval
	// Settings are database settings stored with the batch (the marks
	// that make a job idempotent, such as the groups consolidation has
	// proposed). Keys and values must hold no content: ids and hashes.
	Settings map[string]string
	// CursorKey, when set, stores Cursor as that database setting in the
	// same transaction: a job killed after this batch resumes after it.
	CursorKey, Cursor string
}

// MaintenanceResult says what a batch wrote.
type MaintenanceResult struct {
	Decayed, Changed, Inserted, Skipped int
	// ApprovalIDs are the review items opened, in insert order then
	// approval order.
	ApprovalIDs []string
}

// ApplyMaintenance writes one batch in one transaction. A change whose
// record moved on since the job read it (another version, forgotten) is
// skipped, not failed: the job's next run decides on the new state.
func (s *Service) ApplyMaintenance(ctx context.Context, b MaintenanceBatch) (MaintenanceResult, error) {
	if b.Origin != memory.OriginMaintenance && b.Origin != memory.OriginConsolidation {
		return MaintenanceResult{}, fault.Field("origin", "must be maintenance or consolidation")
	}
	if b.Workspace == "" {
		return MaintenanceResult{}, fault.Field("workspace", "is required")
	}
	m := maintenanceTx{s: s, b: &b, now: s.clock(), sys: systemPrincipal(b.Workspace)}
	var res MaintenanceResult
	err := s.tx(ctx, "record", func(tx store.Tx) error {
		var err error
		res, err = m.apply(ctx, tx)
		return err
	})
	if err != nil {
		return MaintenanceResult{}, err
	}
	s.logMoved(ctx)
	return res, nil
}

// maintenanceTx is one maintenance batch being written: the batch, the
// system principal it is audited as, and the time it is stamped with.
type maintenanceTx struct {
	s   *Service
	b   *MaintenanceBatch
	sys memory.Principal
	now time.Time
}

// apply writes the batch in tx: the decay scores, the changes, the
// inserts, the review items, the settings and the resume cursor.
func (m maintenanceTx) apply(ctx context.Context, tx store.Tx) (MaintenanceResult, error) {
	b := m.b
	var res MaintenanceResult
	if len(b.Decay) > 0 {
		if err := tx.SetDecayScores(ctx, b.Workspace, b.Decay); err != nil {
			return res, err
		}
		res.Decayed = len(b.Decay)
		if _, err := appendAudit(ctx, tx, b.Workspace, m.sys, "", "maintenance.decay", m.now, map[string]any{
			"job": b.Job, "origin": b.Origin, "records": len(b.Decay)}); err != nil {
			return res, err
		}
	}
	skipped := map[string]bool{}
	for _, c := range b.Changes {
		ok, err := m.change(ctx, tx, c)
		if err != nil {
			return res, err
		}
		if !ok {
			res.Skipped++
			skipped[c.Next.ID] = true
			continue
		}
		res.Changed++
	}
	for _, in := range b.Inserts {
		approvalID, err := m.insert(ctx, tx, in)
		if err != nil {
			return res, err
		}
		if approvalID != "" {
			res.ApprovalIDs = append(res.ApprovalIDs, approvalID)
		}
		res.Inserted++
	}
	for _, a := range b.Approvals {
		if skipped[a.RecordID] {
			continue // its record moved on; the next run decides again
		}
		id, err := m.s.openReview(ctx, tx, b.Workspace, a.RecordID, a.Kind, a.Reason, m.now)
		if err != nil {
			return res, err
		}
		res.ApprovalIDs = append(res.ApprovalIDs, id)
		if _, err := appendAudit(ctx, tx, b.Workspace, m.sys, "", "maintenance.review", m.now, map[string]any{
			"job": b.Job, "origin": b.Origin, "record_id": a.RecordID, "approval_id": id,
			"kind": string(a.Kind), "reason": a.Reason}); err != nil {
			return res, err
		}
	}
	for k, v := range b.Settings {
		if err := tx.PutSetting(ctx, k, v); err != nil {
			return res, err
		}
	}
	if b.CursorKey != "" {
		return res, tx.PutSetting(ctx, b.CursorKey, b.Cursor)
	}
	return res, nil
}

// change writes one new head, gated and audited; false when its record
// moved on (gone, another version, forgotten) and it was skipped.
func (m maintenanceTx) change(ctx context.Context, tx store.Tx, c MaintenanceChange) (bool, error) {
	b := m.b
	head, err := tx.GetRecord(ctx, b.Workspace, c.Next.ID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if head.Version != c.ExpectedVersion || head.Status == memory.Forgotten {
		return false, nil
	}
	next := c.Next
	decisionID := memory.NewID()
	next.Version, next.UpdatedAt, next.ModifiedBy = head.Version+1, m.now, m.sys.ID
	next.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionAccepted, Origin: b.Origin}
	if c.Decision != "" {
		next.Gate.Decision = c.Decision
	}
	if err := m.s.policy.CheckSchema(next); err != nil {
		return false, err
	}
	if next.Status == memory.Quarantined && head.Status != memory.Quarantined {
		// A queued record found to hold PII: its pending item must not
		// activate it; the quarantine item replaces it.
		if err := closeApprovals(ctx, tx, m.sys, next.ID, memory.ApprovalRejected, m.now); err != nil {
			return false, err
		}
	}
	if err := tx.UpdateRecord(ctx, b.Workspace, next, head.Version); err != nil {
		return false, err
	}
	payload := map[string]any{"job": b.Job, "origin": b.Origin, "record_id": next.ID, "version": next.Version,
		"from_status": string(head.Status), "status": string(next.Status), "decision": next.Gate.Decision}
	for k, v := range c.Payload {
		payload[k] = v
	}
	_, err = appendAudit(ctx, tx, b.Workspace, m.sys, decisionID, c.Event, m.now, payload)
	return err == nil, err
}

// insert writes one proposed record, gated and audited, with its review
// item when it has one (whose id it returns).
func (m maintenanceTx) insert(ctx context.Context, tx store.Tx, in MaintenanceInsert) (string, error) {
	b := m.b
	r := in.Record
	decisionID := memory.NewID()
	r.Version, r.CreatedAt, r.UpdatedAt, r.IngestedAt, r.ModifiedBy = 1, m.now, m.now, m.now, m.sys.ID
	r.ContentSHA256 = memory.SHA256Hex(r.Content)
	r.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionProvisional, Origin: b.Origin}
	if r.Status == memory.Active {
		r.Gate.Decision = memory.DecisionAccepted
	}
	if err := m.s.policy.CheckSchema(r); err != nil {
		return "", err
	}
	if err := tx.InsertRecord(ctx, b.Workspace, r); err != nil {
		return "", err
	}
	payload := map[string]any{"job": b.Job, "origin": b.Origin, "record_id": r.ID, "version": 1,
		"type": string(r.Type), "status": string(r.Status), "content_sha256": r.ContentSHA256}
	for k, v := range in.Payload {
		payload[k] = v
	}
	var approvalID string
	if in.ApprovalKind != "" {
		id, err := m.s.openReview(ctx, tx, b.Workspace, r.ID, in.ApprovalKind, in.Reason, m.now)
		if err != nil {
			return "", err
		}
		approvalID = id
		payload["approval_id"] = id
	}
	_, err := appendAudit(ctx, tx, b.Workspace, m.sys, decisionID, in.Event, m.now, payload)
	return approvalID, err
}

func (s *Service) openReview(ctx context.Context, tx store.Tx, ws, recordID string, kind memory.ApprovalKind, reason string, now time.Time) (string, error) {
	a := memory.Approval{ID: memory.NewID(), Workspace: ws, RecordID: recordID, Kind: kind, Reason: reason,
		Status: memory.ApprovalOpen, CreatedAt: now, ExpiresAt: now.Add(s.policy.Approvals.TTL.D())}
	return a.ID, insertApproval(ctx, tx, a)
}

// PutMaintenanceCursor stores (or, with "", clears) a job's resume
// cursor outside a batch: at the start and end of a run.
func (s *Service) PutMaintenanceCursor(ctx context.Context, key, value string) error {
	return s.tx(ctx, "setting", func(tx store.Tx) error { return tx.PutSetting(ctx, key, value) })
}

// MaintenanceCursor returns a job's resume cursor ("" when none).
func (s *Service) MaintenanceCursor(ctx context.Context, key string) (string, error) {
	v, err := s.store.GetSetting(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return v, storeErr(err, "setting")
}

// Restore makes an archived record active again, as a new version: an
// operator's decision, audited. Restoring an active record is a no-op.
func (s *Service) Restore(ctx context.Context, p memory.Principal, id string) (memory.Record, error) {
	if err := requireOperator(p); err != nil {
		return memory.Record{}, err
	}
	if !memory.ValidID(id) {
		return memory.Record{}, fault.New(fault.NotFound, "record not found")
	}
	now := s.clock()
	var out memory.Record
	changed := false
	err := s.tx(ctx, "record", func(tx store.Tx) error {
		head, err := tx.GetRecord(ctx, p.Workspace, id)
		if err != nil {
			return err
		}
		switch head.Status {
		case memory.Active:
			out = head
			return nil
		case memory.Archived:
		default:
			return fault.New(fault.Conflict, "only an archived record can be restored; this one is "+string(head.Status))
		}
		next := head
		decisionID := memory.NewID()
		next.Status, next.Version, next.UpdatedAt, next.ModifiedBy = memory.Active, head.Version+1, now, p.ID
		// A restored record starts fresh: it decays from now on.
		next.DecayScore, next.LastRetrievedAt = 1, &now
		next.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionAccepted, Origin: memory.OriginExternal}
		if err := tx.UpdateRecord(ctx, p.Workspace, next, head.Version); err != nil {
			return err
		}
		if _, err := appendAudit(ctx, tx, p.Workspace, p, decisionID, "record.restore", now, map[string]any{
			"record_id": id, "version": next.Version, "from_status": string(head.Status), "status": string(next.Status)}); err != nil {
			return err
		}
		out, changed = next, true
		return nil
	})
	if err != nil {
		return memory.Record{}, err
	}
	if changed {
		s.logMoved(ctx)
	}
	return out, nil
}
