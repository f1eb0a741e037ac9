package sdk

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Operations: online backups, the A2A agent card, the event stream and
// webhooks (docs/backup.md, docs/events.md). All but AgentCard are for
// operators.

// BackupManifest describes an online backup (docs/backup.md).
type BackupManifest struct {
	Format         string            `json:"format"`
	Version        int               `json:"version"`
	MemgateVersion string            `json:"memgate_version"`
	CreatedAt      time.Time         `json:"created_at"`
	Backend        string            `json:"backend"`
	SchemaVersion  int               `json:"schema_version"`
	ChangeHead     int64             `json:"change_head"`
	Workspaces     []BackupWorkspace `json:"workspaces"`
	Files          []BackupFile      `json:"files"`
	Took           string            `json:"took"`
}

// BackupWorkspace is one workspace's counts and audit head in a backup.
type BackupWorkspace struct {
	ID           string `json:"id"`
	Records      int64  `json:"records"`
	AuditEntries int64  `json:"audit_entries"`
	AuditHead    string `json:"audit_head"`
}

// BackupFile is one file of a backup with its checksum.
type BackupFile struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// BackupResult is where the server wrote a backup, and its manifest.
type BackupResult struct {
	Path     string         `json:"path"`
	Manifest BackupManifest `json:"manifest"`
}

// Backup takes an online backup into the server's backup directory under
// name ("" for the default, backup-<UTC time>): POST /v1/admin/backup.
func (c *Client) Backup(ctx context.Context, name string) (BackupResult, error) {
	var body any
	if name != "" {
		body = map[string]string{"name": name}
	}
	var res BackupResult
	err := c.do(ctx, http.MethodPost, "/v1/admin/backup", nil, body, &res)
	return res, err
}

// AgentCard reads the server's A2A agent card: GET
// /.well-known/agent-card.json. It is public; the field names are the A2A
// protocol's, so it is returned as raw JSON.
func (c *Client) AgentCard(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	err := c.do(ctx, http.MethodGet, "/.well-known/agent-card.json", nil, nil, &raw)
	return raw, err
}

// Webhook is a registered webhook endpoint; its secret is never listed.
type Webhook struct {
	ID             string    `json:"id"`
	URL            string    `json:"url"`
	Kinds          []string  `json:"kinds"`
	CreatedAt      time.Time `json:"created_at"`
	CreatedBy      string    `json:"created_by"`
	Cursor         int64     `json:"cursor"`
	FailedAttempts int       `json:"failed_attempts"`
	NextAttemptAt  time.Time `json:"next_attempt_at"`
}

// CreatedWebhook answers a registration: the signing secret, shown once.
type CreatedWebhook struct {
	Webhook Webhook `json:"webhook"`
	Secret  string  `json:"secret"`
}

// CreateWebhook registers an endpoint for the given event kinds (none: all):
// POST /v1/webhooks.
func (c *Client) CreateWebhook(ctx context.Context, endpoint string, kinds []string) (CreatedWebhook, error) {
	var res CreatedWebhook
	err := c.do(ctx, http.MethodPost, "/v1/webhooks", nil, map[string]any{"url": endpoint, "kinds": kinds}, &res)
	return res, err
}

// ListWebhooks lists the workspace's endpoints: GET /v1/webhooks.
func (c *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var env struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/webhooks", nil, nil, &env)
	return env.Webhooks, err
}

// DeleteWebhook removes an endpoint and its delivery log: DELETE
// /v1/webhooks/{id}.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	p, err := pathID("/v1/webhooks/", id, "webhook id")
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, p, nil, nil, nil)
}

// Delivery is one attempt to deliver an event to an endpoint.
type Delivery struct {
	ID         string    `json:"id"`
	WebhookID  string    `json:"webhook_id"`
	EventID    string    `json:"event_id"`
	EventSeq   int64     `json:"event_seq"`
	EventType  string    `json:"event_type"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	Outcome    string    `json:"outcome"` // delivered, failed, dead
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS float64   `json:"duration_ms"`
}

// DeliveryPage is a page of the delivery log, newest first; NextBefore
// pages on.
type DeliveryPage struct {
	Deliveries []Delivery `json:"deliveries"`
	NextBefore string     `json:"next_before,omitempty"`
}

// WebhookDeliveries pages through the delivery log, of one endpoint when
// webhookID is set: GET /v1/webhooks/deliveries.
func (c *Client) WebhookDeliveries(ctx context.Context, webhookID, before string, limit int) (DeliveryPage, error) {
	q := url.Values{}
	if webhookID != "" {
		q.Set("webhook_id", webhookID)
	}
	if before != "" {
		q.Set("before", before)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var page DeliveryPage
	err := c.do(ctx, http.MethodGet, "/v1/webhooks/deliveries", q, nil, &page)
	return page, err
}

// StreamEvent is one event of the workspace's stream: ids and counts, never
// content (docs/events.md).
type StreamEvent struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Workspace string          `json:"workspace"`
	Time      time.Time       `json:"time"`
	Subject   json.RawMessage `json:"subject"`
}

// EventStream reads GET /v1/events (Server-Sent Events). Close it when done.
type EventStream struct {
	body io.ReadCloser
	r    *bufio.Reader
	last int64
}

// Events opens the event stream after seq after (0: from the first event
// kept; a negative after: from now). With follow false the server ends the
// stream once it has caught up, and Next returns io.EOF.
func (c *Client) Events(ctx context.Context, after int64, follow bool) (*EventStream, error) {
	q := url.Values{}
	if after >= 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	if !follow {
		q.Set("follow", "false")
	}
	p := "/v1/events"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	resp, err := c.stream(ctx, http.MethodGet, p, "text/event-stream", nil)
	if err != nil {
		return nil, err
	}
	return &EventStream{body: resp.Body, r: bufio.NewReader(resp.Body), last: after}, nil
}

// Next returns the next event, io.EOF when the stream ended.
func (s *EventStream) Next() (StreamEvent, error) {
	var data strings.Builder
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && data.Len() == 0 {
				return StreamEvent{}, io.EOF
			}
			if !errors.Is(err, io.EOF) {
				return StreamEvent{}, err
			}
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && data.Len() > 0:
			var ev StreamEvent
			if jerr := json.Unmarshal([]byte(data.String()), &ev); jerr != nil {
				return StreamEvent{}, errors.New("memgate: event stream: data is not an event")
			}
			s.last = ev.Seq
			return ev, nil
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		if err != nil { // EOF inside an unfinished message
			return StreamEvent{}, io.EOF
		}
	}
}

// LastSeq is the seq of the last event returned: resume with Events(LastSeq).
func (s *EventStream) LastSeq() int64 { return s.last }

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }
