package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/memgate/memgate/internal/memory"
)

// The event outbox: what matters to people and integrations (an approval
// waiting, a quarantined record, a dead job), appended by the transaction
// that causes it so an event exists exactly when its change committed.
// Events carry ids, never content (internal/events documents the kinds).
// Webhook endpoints read the outbox by seq with a cursor of their own;
// GET /v1/events streams it.

// Event is one entry of the outbox. Seq orders events by commit, as the
// change log does: a reader that has seen seq N never misses a lower one.
type Event struct {
	Seq       int64
	ID        string
	Workspace string
	Kind      string
	At        time.Time
	// Subject holds the ids the event is about, a JSON object whose
	// values are ids, kinds and counts only.
	Subject json.RawMessage
}

// EventJobDead is the kind of the event ClaimJob appends when it gives up
// on a job whose worker died during its last attempt (internal/events
// holds the other kinds).
const EventJobDead = "job.dead"

// Webhook is an endpoint events are delivered to. Secret signs every
// delivery; it is stored because signing needs it, and never returned by
// the API after creation.
type Webhook struct {
	ID        string
	Workspace string
	URL       string
	Secret    string
	// Kinds selects the event kinds delivered; empty means every kind.
	Kinds     []string
	CreatedAt time.Time
	CreatedBy string
	// Cursor is the seq of the last event handled (delivered, skipped or
	// given up on); delivery resumes after it.
	Cursor int64
	// Attempts counts the failed attempts at the event after Cursor.
	Attempts int
	// NextAt is when the next attempt may start (backoff).
	NextAt     time.Time
	LeaseOwner string
	LeaseUntil *time.Time
}

// WebhookUpdate records progress on a leased webhook: its cursor and
// backoff, and the lease renewed until LeaseUntil.
type WebhookUpdate struct {
	Cursor     int64
	Attempts   int
	NextAt     time.Time
	LeaseUntil time.Time
}

// Delivery is one entry of the delivery log: one attempt at one event.
type Delivery struct {
	ID        string
	Workspace string
	WebhookID string
	EventID   string
	EventSeq  int64
	EventKind string
	Attempt   int
	At        time.Time
	// Outcome is delivered, failed (retried later) or dead (given up).
	Outcome    string
	StatusCode int
	// Error says why an attempt failed, never with a response body.
	Error    string
	Duration time.Duration
}

// Delivery outcomes.
const (
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
	DeliveryDead      = "dead"
)

// EventReader is the outbox's read half; Reader embeds it.
type EventReader interface {
	// ListEvents returns events with seq > after, ascending, of one
	// workspace ("" for every workspace).
	ListEvents(ctx context.Context, ws string, after int64, limit int) ([]Event, error)
	// EventHead returns the highest event seq (0 when there is none).
	EventHead(ctx context.Context) (int64, error)
	// GetWebhook returns one endpoint; ErrNotFound if absent.
	GetWebhook(ctx context.Context, ws, id string) (Webhook, error)
	// ListWebhooks lists the endpoints of a workspace ("" for every
	// workspace), by id.
	ListWebhooks(ctx context.Context, ws string) ([]Webhook, error)
	// ListDeliveries returns the delivery log of a workspace, newest
	// first, optionally of one webhook, with ids below before.
	ListDeliveries(ctx context.Context, ws, webhookID, before string, limit int) ([]Delivery, error)

	// CountOpenApprovals counts the open approval items of every
	// workspace by kind (for metrics).
	CountOpenApprovals(ctx context.Context) (map[string]int, error)
	// CountJobs counts the durable jobs of every workspace by status
	// (for metrics).
	CountJobs(ctx context.Context) (map[string]int, error)
}

// EventWriter is the outbox's write half; Tx embeds it.
type EventWriter interface {
	// AppendEvent appends e to the outbox; the backend assigns Seq at
	// commit, in commit order.
	AppendEvent(ctx context.Context, e Event) error
	// InsertWebhook registers an endpoint; ErrExists if its id is taken.
	InsertWebhook(ctx context.Context, w Webhook) error
	// DeleteWebhook removes an endpoint and its delivery log;
	// ErrNotFound if absent.
	DeleteWebhook(ctx context.Context, ws, id string) error
	// ClaimWebhook leases endpoint id to owner until now+lease when its
	// NextAt has come and no other lease holds it; ok is false otherwise.
	ClaimWebhook(ctx context.Context, ws, id, owner string, now time.Time, lease time.Duration) (w Webhook, ok bool, err error)
	// AdvanceWebhook records progress under owner's lease, renewing it
	// until u.LeaseUntil; ErrVersionConflict, writing nothing, when owner no longer
	// holds it.
	AdvanceWebhook(ctx context.Context, ws, id, owner string, u WebhookUpdate) error
	// ReleaseWebhook ends owner's lease, if it still holds it.
	ReleaseWebhook(ctx context.Context, ws, id, owner string) error
	// InsertDelivery appends a delivery log entry.
	InsertDelivery(ctx context.Context, d Delivery) error
}

// JobDeadEvent is the event of job j dead at time at.
func JobDeadEvent(j Job, at time.Time) Event {
	subject, _ := json.Marshal(map[string]any{"job_id": j.ID, "job_kind": j.Kind, "attempts": j.Attempts})
	return Event{ID: memory.NewID(), Workspace: j.Workspace, Kind: EventJobDead, At: at, Subject: subject}
}
