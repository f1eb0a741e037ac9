package core

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The two sources of the decisions listing. Both are read where they are
// already kept: gate decisions are audit entries whose payload carries a
// decision, extraction decisions are rows of the gatekeeper log.
const (
	DecisionSourceGate       = "gate"
	DecisionSourceExtraction = "extraction"
	// EventExtraction is the event name given to gatekeeper log rows.
	EventExtraction = "extraction.gatekeeper"
)

// decisionScanCap bounds the audit entries one listing request reads, so
// a filter that matches nothing in a long log still answers promptly;
// the cursor then resumes where the scan stopped.
var decisionScanCap = 5000

// Decision is one gate or extraction decision with its reason, as the
// answer to "why was this (not) remembered?".
type Decision struct {
	Source    string    `json:"source"`
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Event     string    `json:"event"`
	Decision  string    `json:"decision"`
	Reason    string    `json:"reason"`
	ActorKind string    `json:"actor_kind,omitempty"`
	ActorID   string    `json:"actor_id,omitempty"`
	Seq       int64     `json:"seq,omitempty"`
	RecordID  string    `json:"record_id,omitempty"`
	Type      string    `json:"type,omitempty"`
	Code      string    `json:"code,omitempty"`
	Field     string    `json:"field,omitempty"`
	JobID     string    `json:"job_id,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	Pattern   string    `json:"pattern,omitempty"`
	Facts     int       `json:"facts,omitempty"`
}

// DecisionQuery filters the decisions listing; empty fields do not filter.
type DecisionQuery struct {
	Source   string
	RecordID string
	Event    string
	Decision string
	JobID    string
	Since    *time.Time
	Cursor   string
	Limit    int
}

// DecisionPage is one page of decisions, oldest first.
type DecisionPage struct {
	Decisions  []Decision `json:"decisions"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// decisionCursor is where each source's stream stands: the last audit
// seq and the last gatekeeper row id consumed. It travels as "seq.id".
type decisionCursor struct {
	seq int64
	gk  string
}

func (c decisionCursor) String() string { return strconv.FormatInt(c.seq, 10) + "." + c.gk }

func parseDecisionCursor(s string) (decisionCursor, error) {
	if s == "" {
		return decisionCursor{}, nil
	}
	seq, gk, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n < 0 || (gk != "" && !memory.ValidID(gk)) {
		return decisionCursor{}, fault.Field("cursor", "must be a next_cursor from a previous page")
	}
	return decisionCursor{seq: n, gk: gk}, nil
}

// ListDecisions lists the workspace's gate and extraction decisions,
// merged in time order (gate first on ties). Operators only.
func (s *Service) ListDecisions(ctx context.Context, by memory.Principal, q DecisionQuery) (DecisionPage, error) {
	if err := requireOperator(by); err != nil {
		return DecisionPage{}, err
	}
	if q.Limit == 0 {
		q.Limit = store.DefaultLimit
	}
	if q.Limit < 1 || q.Limit > store.MaxLimit {
		return DecisionPage{}, fault.Field("limit", "must be between 1 and 500")
	}
	switch q.Source {
	case "", DecisionSourceGate, DecisionSourceExtraction:
	default:
		return DecisionPage{}, fault.Field("source", "must be gate or extraction")
	}
	if q.RecordID != "" && !memory.ValidID(q.RecordID) {
		return DecisionPage{}, fault.Field("record_id", "must be a record id")
	}
	if q.JobID != "" && !memory.ValidID(q.JobID) {
		return DecisionPage{}, fault.Field("job_id", "must be a job id")
	}
	if len(q.Event) > 100 || len(q.Decision) > 100 {
		return DecisionPage{}, fault.Field("event", "event and decision must be at most 100 bytes")
	}
	cur, err := parseDecisionCursor(q.Cursor)
	if err != nil {
		return DecisionPage{}, err
	}
	// A filter only one source can satisfy leaves the other out.
	wantGate := q.Source != DecisionSourceExtraction && q.Event != EventExtraction
	wantGK := q.Source != DecisionSourceGate && q.RecordID == "" && (q.Event == "" || q.Event == EventExtraction)

	var gate []Decision
	gateEnd, gateDone := cur.seq, true
	if wantGate {
		gate, gateEnd, gateDone, err = s.gateDecisions(ctx, by.Workspace, q, cur.seq)
		if err != nil {
			return DecisionPage{}, err
		}
	}
	var gk []Decision
	gkEnd, gkDone := cur.gk, true
	if wantGK {
		gq := store.GatekeeperQuery{JobID: q.JobID, Decision: q.Decision, After: cur.gk, Limit: q.Limit}
		if q.Since != nil {
			gq.Since = *q.Since
		}
		rows, err := s.store.ListGatekeeperLog(ctx, by.Workspace, gq)
		if err != nil {
			return DecisionPage{}, storeErr(err, "gatekeeper log")
		}
		for _, e := range rows {
			gk = append(gk, Decision{Source: DecisionSourceExtraction, ID: e.ID, At: e.CreatedAt, Event: EventExtraction,
				Decision: e.Decision, Reason: e.Reason, JobID: e.JobID, MessageID: e.MessageID, Pattern: e.Pattern, Facts: e.Facts})
		}
		if len(rows) > 0 {
			gkEnd = rows[len(rows)-1].ID
		}
		gkDone = len(rows) < q.Limit
	}

	// Merge, then move each stream's cursor past what was consumed: to
	// the end of its scan when all of it was, else to the last item used.
	page := DecisionPage{Decisions: make([]Decision, 0, q.Limit)}
	i, j := 0, 0
	for len(page.Decisions) < q.Limit && (i < len(gate) || j < len(gk)) {
		if j == len(gk) || (i < len(gate) && !gk[j].At.Before(gate[i].At)) {
			page.Decisions = append(page.Decisions, gate[i])
			i++
		} else {
			page.Decisions = append(page.Decisions, gk[j])
			j++
		}
	}
	next := decisionCursor{seq: gateEnd, gk: gkEnd}
	if i < len(gate) {
		next.seq, gateDone = cur.seq, false
		if i > 0 {
			next.seq = gate[i-1].Seq
		}
	}
	if j < len(gk) {
		next.gk, gkDone = cur.gk, false
		if j > 0 {
			next.gk = gk[j-1].ID
		}
	}
	if !gateDone || !gkDone {
		page.NextCursor = next.String()
	}
	return page, nil
}

// gateDecisions scans the audit log after seq for entries carrying a
// decision that match q, up to q.Limit matches or decisionScanCap
// entries. It returns the seq the scan reached and whether the log ended.
func (s *Service) gateDecisions(ctx context.Context, ws string, q DecisionQuery, after int64) ([]Decision, int64, bool, error) {
	var out []Decision
	scanned := 0
	for {
		es, err := s.store.ListAudit(ctx, ws, after, store.MaxLimit)
		if err != nil {
			return nil, after, false, storeErr(err, "audit log")
		}
		for _, e := range es {
			after = e.Seq
			scanned++
			if d, ok := gateDecision(e); ok && d.matches(q) {
				out = append(out, d)
				if len(out) == q.Limit {
					return out, after, false, nil
				}
			}
			if scanned >= decisionScanCap {
				return out, after, false, nil
			}
		}
		if len(es) < store.MaxLimit {
			return out, after, true, nil
		}
	}
}

// gateDecision reads the decision an audit entry records, if it records
// one.
func gateDecision(e audit.Entry) (Decision, bool) {
	var p struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
		RecordID string `json:"record_id"`
		Type     string `json:"type"`
		Code     string `json:"code"`
		Field    string `json:"field"`
		JobID    string `json:"job_id"`
	}
	if json.Unmarshal(e.Payload, &p) != nil || p.Decision == "" {
		return Decision{}, false
	}
	if p.Reason == "" {
		// Operator decisions on the approval queue carry no gate reason:
		// the reason is the operator's act (its free text is only hashed).
		p.Reason = cmp.Or(approvalReasons[e.Event], e.Event)
	}
	return Decision{Source: DecisionSourceGate, ID: e.ID, At: e.TS, Event: e.Event, Decision: p.Decision, Reason: p.Reason,
		ActorKind: e.ActorKind, ActorID: e.ActorID, Seq: e.Seq, RecordID: p.RecordID, Type: p.Type, Code: p.Code,
		Field: p.Field, JobID: p.JobID}, true
}

var approvalReasons = map[string]string{
	"approval.approve": "approved_by_operator",
	"approval.reject":  "rejected_by_operator",
	"approval.expire":  "approval_expired",
}

func (d Decision) matches(q DecisionQuery) bool {
	return (q.RecordID == "" || d.RecordID == q.RecordID) && (q.Event == "" || d.Event == q.Event) &&
		(q.Decision == "" || d.Decision == q.Decision) && (q.JobID == "" || d.JobID == q.JobID) &&
		(q.Since == nil || !d.At.Before(*q.Since))
}
