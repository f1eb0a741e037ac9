package core

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Webhook endpoints and the event stream, operators only. An endpoint's
// signing secret is made here, shown once in the creation answer and
// never again: listings, the audit log, logs and exports leave it out.

// WebhookRequest registers an endpoint.
type WebhookRequest struct {
	URL string `json:"url"`
	// Kinds selects event kinds; empty means every kind.
	Kinds []string `json:"kinds,omitempty"`
}

// WebhookView is an endpoint as the API shows it: never its secret.
type WebhookView struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Kinds     []string  `json:"kinds"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
	// Cursor is the seq of the last event handled; FailedAttempts counts failed
	// attempts at the next one, retried from NextAttemptAt.
	Cursor         int64     `json:"cursor"`
	FailedAttempts int       `json:"failed_attempts"`
	NextAttemptAt  time.Time `json:"next_attempt_at"`
}

// WebhookCreated answers a registration: the secret, shown this once.
type WebhookCreated struct {
	Webhook WebhookView `json:"webhook"`
	Secret  string      `json:"secret"`
}

func viewWebhook(w store.Webhook) WebhookView {
	k := w.Kinds
	if k == nil {
		k = []string{}
	}
	return WebhookView{ID: w.ID, URL: w.URL, Kinds: k, CreatedAt: w.CreatedAt, CreatedBy: w.CreatedBy, Cursor: w.Cursor,
		FailedAttempts: w.Attempts, NextAttemptAt: w.NextAt}
}

// maxWebhooks bounds the endpoints of one workspace.
const maxWebhooks = 50

// CreateWebhook registers an endpoint that receives the workspace's
// events from now on. The registration is audited (its id, host and
// kinds: not the URL's path or query, which may hold a receiver's token).
func (s *Service) CreateWebhook(ctx context.Context, by memory.Principal, req WebhookRequest) (WebhookCreated, error) {
	if err := requireOperator(by); err != nil {
		return WebhookCreated{}, err
	}
	u, err := checkWebhookURL(req.URL)
	if err != nil {
		return WebhookCreated{}, err
	}
	kinds := slices.Clone(req.Kinds)
	for _, k := range kinds {
		if !slices.Contains(events.Kinds, k) {
			return WebhookCreated{}, fault.Field("kinds", "must each be one of "+strings.Join(events.Kinds, ", "))
		}
	}
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	secret := newWebhookSecret()
	now := s.clock()
	w := store.Webhook{ID: memory.NewID(), Workspace: by.Workspace, URL: req.URL, Secret: secret, Kinds: kinds,
		CreatedAt: now, CreatedBy: by.ID, NextAt: now}
	err = s.tx(ctx, "webhook", func(tx store.Tx) error {
		have, err := tx.ListWebhooks(ctx, by.Workspace)
		if err != nil {
			return err
		}
		if len(have) >= maxWebhooks {
			return fault.New(fault.Conflict, "a workspace holds at most 50 webhooks")
		}
		// Delivery starts after the events already committed.
		if w.Cursor, err = tx.EventHead(ctx); err != nil {
			return err
		}
		if err := tx.InsertWebhook(ctx, w); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, by.Workspace, by, "", "webhook.create", now, map[string]any{
			"webhook_id": w.ID, "host": u.Host, "kinds": kinds})
		return err
	})
	if err != nil {
		return WebhookCreated{}, err
	}
	return WebhookCreated{Webhook: viewWebhook(w), Secret: secret}, nil
}

func checkWebhookURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, fault.Field("url", "is required")
	}
	if len(raw) > 2048 {
		return nil, fault.Field("url", "at most 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fault.Field("url", "must be an absolute http or https URL")
	}
	if u.User != nil {
		return nil, fault.Field("url", "must not hold credentials (user:password@); deliveries are signed instead")
	}
	if u.Fragment != "" {
		return nil, fault.Field("url", "must not have a fragment")
	}
	return u, nil
}

// newWebhookSecret returns 32 random bytes, base64url, with a prefix that
// makes a leaked one recognisable.
func newWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b)
}

// ListWebhooks lists the workspace's endpoints.
func (s *Service) ListWebhooks(ctx context.Context, by memory.Principal) ([]WebhookView, error) {
	if err := requireOperator(by); err != nil {
		return nil, err
	}
	ws, err := s.store.ListWebhooks(ctx, by.Workspace)
	if err != nil {
		return nil, storeErr(err, "webhooks")
	}
	out := make([]WebhookView, 0, len(ws))
	for _, w := range ws {
		out = append(out, viewWebhook(w))
	}
	return out, nil
}

// DeleteWebhook removes an endpoint and its delivery log (audited).
func (s *Service) DeleteWebhook(ctx context.Context, by memory.Principal, id string) error {
	if err := requireOperator(by); err != nil {
		return err
	}
	if !memory.ValidID(id) {
		return fault.New(fault.NotFound, "webhook not found")
	}
	now := s.clock()
	return s.tx(ctx, "webhook", func(tx store.Tx) error {
		if err := tx.DeleteWebhook(ctx, by.Workspace, id); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, by.Workspace, by, "", "webhook.delete", now, map[string]any{"webhook_id": id})
		return err
	})
}

// DeliveryView is one entry of the delivery log.
type DeliveryView struct {
	ID         string    `json:"id"`
	WebhookID  string    `json:"webhook_id"`
	EventID    string    `json:"event_id"`
	EventSeq   int64     `json:"event_seq"`
	EventType  string    `json:"event_type"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	Outcome    string    `json:"outcome"`
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS float64   `json:"duration_ms"`
}

// DeliveryPage is a page of the delivery log, newest first.
type DeliveryPage struct {
	Deliveries []DeliveryView `json:"deliveries"`
	NextBefore string         `json:"next_before,omitempty"`
}

// ListDeliveries pages through the workspace's delivery log, optionally
// of one endpoint.
func (s *Service) ListDeliveries(ctx context.Context, by memory.Principal, webhookID, before string, limit int) (DeliveryPage, error) {
	if err := requireOperator(by); err != nil {
		return DeliveryPage{}, err
	}
	if webhookID != "" && !memory.ValidID(webhookID) {
		return DeliveryPage{}, fault.Field("webhook_id", "is not a valid id")
	}
	if before != "" && !memory.ValidID(before) {
		return DeliveryPage{}, fault.Field("before", "is not a valid id")
	}
	if limit <= 0 || limit > store.MaxLimit {
		limit = store.DefaultLimit
	}
	ds, err := s.store.ListDeliveries(ctx, by.Workspace, webhookID, before, limit)
	if err != nil {
		return DeliveryPage{}, storeErr(err, "deliveries")
	}
	page := DeliveryPage{Deliveries: make([]DeliveryView, 0, len(ds))}
	for _, d := range ds {
		page.Deliveries = append(page.Deliveries, DeliveryView{ID: d.ID, WebhookID: d.WebhookID, EventID: d.EventID, EventSeq: d.EventSeq,
			EventType: d.EventKind, Attempt: d.Attempt, At: d.At, Outcome: d.Outcome, StatusCode: d.StatusCode, Error: d.Error,
			DurationMS: float64(d.Duration.Microseconds()) / 1000})
	}
	if len(ds) == limit {
		page.NextBefore = ds[len(ds)-1].ID
	}
	return page, nil
}

// EventsAfter returns the workspace's outbox events with seq > after, ascending.
func (s *Service) EventsAfter(ctx context.Context, by memory.Principal, after int64, limit int) ([]events.Payload, error) {
	if err := requireOperator(by); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > store.MaxLimit {
		limit = store.DefaultLimit
	}
	es, err := s.store.ListEvents(ctx, by.Workspace, after, limit)
	if err != nil {
		return nil, storeErr(err, "events")
	}
	out := make([]events.Payload, 0, len(es))
	for _, e := range es {
		out = append(out, events.PayloadOf(e))
	}
	return out, nil
}

// EventHead returns the highest event seq of the database (a stream that
// starts "from now" starts after it).
func (s *Service) EventHead(ctx context.Context, by memory.Principal) (int64, error) {
	if err := requireOperator(by); err != nil {
		return 0, err
	}
	h, err := s.store.EventHead(ctx)
	return h, storeErr(err, "events")
}

// Deliverer returns the webhook deliverer Run starts (tests drive it).
func (s *Service) Deliverer() *events.Deliverer { return s.deliverer }
