// Package events is memgate's event stream: the kinds of event that matter
// to people and integrations (an approval waiting, a quarantined record, a
// broken audit chain), how core appends them to the durable outbox in the
// transaction of the change that causes them, how webhook deliveries are
// signed, and the background deliverer that sends them. Events carry ids,
// kinds and counts only, never content or secrets (docs/events.md).
package events

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Event kinds.
const (
	// ApprovalPending: an item entered the approval queue.
	ApprovalPending = "approval.pending"
	// ApprovalDecided: an item was approved, rejected or expired.
	ApprovalDecided = "approval.decided"
	// RecordQuarantined: the gate (or a re-screen) quarantined a record.
	RecordQuarantined = "record.quarantined"
	// ConflictOpened: a write contradicts a record and waits for review.
	ConflictOpened = "conflict.opened"
	// ForgetCompleted: a record or a subject was forgotten.
	ForgetCompleted = "forget.completed"
	// AuditBroken: an audit chain failed verification.
	AuditBroken = "audit.broken"
	// JobDead: a durable job gave up after its last attempt.
	JobDead = store.EventJobDead
	// MemoryFileChanged: a memory file was created, changed or deleted.
	MemoryFileChanged = "memory_file.changed"
)

// Kinds lists every event kind.
var Kinds = []string{ApprovalPending, ApprovalDecided, RecordQuarantined, ConflictOpened, ForgetCompleted, AuditBroken, JobDead, MemoryFileChanged}

// Subject is what an event is about: ids, kinds and counts only. Keys
// name what a value is (record_id, approval_id, job_id ...).
type Subject map[string]any

// New builds an outbox event of kind in workspace ws.
func New(ws, kind string, at time.Time, subject Subject) store.Event {
	raw, err := json.Marshal(subject)
	if err != nil || subject == nil {
		raw = []byte("{}")
	}
	return store.Event{ID: memory.NewID(), Workspace: ws, Kind: kind, At: at, Subject: raw}
}

// Emit appends an event to the outbox in tx, so it commits, or not, with
// the change that causes it.
func Emit(ctx context.Context, tx store.Tx, ws, kind string, at time.Time, subject Subject) error {
	return tx.AppendEvent(ctx, New(ws, kind, at, subject))
}

// Payload is an event as webhooks and the SSE stream send it.
type Payload struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Workspace string          `json:"workspace"`
	Time      time.Time       `json:"time"`
	Subject   json.RawMessage `json:"subject"`
}

// PayloadOf returns e's payload.
func PayloadOf(e store.Event) Payload {
	s := e.Subject
	if len(s) == 0 {
		s = json.RawMessage("{}")
	}
	return Payload{ID: e.ID, Seq: e.Seq, Type: e.Kind, Workspace: e.Workspace, Time: e.At, Subject: s}
}

// Headers of a webhook delivery.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>".
	SignatureHeader = "Memgate-Signature"
	// EventIDHeader is the idempotency id: the same on every retry of an
	// event to an endpoint.
	EventIDHeader = "Memgate-Event-Id"
	// EventTypeHeader names the event kind.
	EventTypeHeader = "Memgate-Event-Type"
	// DeliveryIDHeader names one attempt (the delivery log's id).
	DeliveryIDHeader = "Memgate-Delivery-Id"
)

// ReplayWindow is how old a signature's timestamp a receiver should
// accept (Verify's default).
const ReplayWindow = 5 * time.Minute

// Sign returns the signature header value of body sent at t: the
// HMAC-SHA256, keyed by secret, of "<unix seconds>.<body>".
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("signature does not match")
	ErrStale        = errors.New("signature timestamp outside the replay window")
)

// Verify checks a signature header against body, as a receiver does:
// some v1 value must match and the timestamp must be within window of
// now (0 means ReplayWindow).
func Verify(secret, header string, body []byte, now time.Time, window time.Duration) error {
	if window <= 0 {
		window = ReplayWindow
	}
	var ts string
	var sigs []string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("%w: malformed header", ErrBadSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > window || d < -window {
		return ErrStale
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}
