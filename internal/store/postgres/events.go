package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/store"
)

// Events are collected as a transaction writes and inserted right before
// its commit, under the change-log lock (changes.go), so an event's seq
// is visible only once every lower seq is.

func (t *tx) AppendEvent(ctx context.Context, e store.Event) error {
	if _, err := jsonObject("subject", e.Subject); err != nil {
		return err
	}
	t.events = append(t.events, e)
	return nil
}

// queueEvents adds the pending events to the commit batch b.
func (t *tx) queueEvents(b *pgx.Batch) error {
	n := len(t.events)
	if n == 0 {
		return nil
	}
	ids, ws, kinds, subjects := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	at := make([]time.Time, n)
	for i, e := range t.events {
		subject, err := jsonObject("subject", e.Subject)
		if err != nil {
			return err
		}
		ids[i], ws[i], kinds[i], at[i], subjects[i] = e.ID, e.Workspace, e.Kind, e.At, subject
	}
	b.Queue(`INSERT INTO events (id, workspace_id, kind, at, subject)
		SELECT id, w, k, a, s::json FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[])
		WITH ORDINALITY AS e (id, w, k, a, s, n) ORDER BY n`, ids, ws, kinds, at, subjects)
	return nil
}

func (c *conn) ListEvents(ctx context.Context, ws string, after int64, limit int) ([]store.Event, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	q, args := "SELECT seq, id, workspace_id, kind, at, subject::text FROM events WHERE seq > $1", []any{after}
	if ws != "" {
		q, args = q+" AND workspace_id = $2", append(args, ws)
	}
	args = append(args, limit)
	rows, err := c.q.Query(ctx, q+" ORDER BY seq LIMIT $"+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, mapErr("postgres: list events", err)
	}
	defer rows.Close()
	out := []store.Event{}
	for rows.Next() {
		var (
			e       store.Event
			subject string
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.Workspace, &e.Kind, &e.At, &subject); err != nil {
			return nil, mapErr("postgres: list events", err)
		}
		e.At, e.Subject = utc(e.At), json.RawMessage(subject)
		out = append(out, e)
	}
	return out, mapErr("postgres: list events", rows.Err())
}

func (c *conn) EventHead(ctx context.Context) (int64, error) {
	var seq *int64
	if err := c.q.QueryRow(ctx, "SELECT max(seq) FROM events").Scan(&seq); err != nil {
		return 0, mapErr("postgres: event head", err)
	}
	if seq == nil {
		return 0, nil
	}
	return *seq, nil
}

const webhookCols = "workspace_id, id, url, secret, kinds, created_at, created_by, cursor, attempts, next_at, lease_owner, lease_until"

func scanWebhook(row pgx.Row) (store.Webhook, error) {
	var w store.Webhook
	err := row.Scan(&w.Workspace, &w.ID, &w.URL, &w.Secret, &w.Kinds, &w.CreatedAt, &w.CreatedBy, &w.Cursor, &w.Attempts, &w.NextAt,
		&w.LeaseOwner, &w.LeaseUntil)
	if err != nil {
		return store.Webhook{}, err
	}
	w.CreatedAt, w.NextAt, w.LeaseUntil = utc(w.CreatedAt), utc(w.NextAt), utcPtr(w.LeaseUntil)
	if w.Kinds == nil {
		w.Kinds = []string{}
	}
	return w, nil
}

func (t *tx) InsertWebhook(ctx context.Context, w store.Webhook) error {
	_, err := t.q.Exec(ctx, "INSERT INTO webhooks ("+webhookCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '', NULL)",
		w.Workspace, w.ID, w.URL, w.Secret, list(w.Kinds), w.CreatedAt, w.CreatedBy, w.Cursor, w.Attempts, w.NextAt)
	return mapErr("postgres: insert webhook", err)
}

func (t *tx) DeleteWebhook(ctx context.Context, ws, id string) error {
	if _, err := t.q.Exec(ctx, "DELETE FROM webhook_deliveries WHERE workspace_id = $1 AND webhook_id = $2", ws, id); err != nil {
		return mapErr("postgres: delete webhook", err)
	}
	tag, err := t.q.Exec(ctx, "DELETE FROM webhooks WHERE workspace_id = $1 AND id = $2", ws, id)
	if err != nil {
		return mapErr("postgres: delete webhook", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("postgres: delete webhook %s: %w", id, store.ErrNotFound)
	}
	return nil
}

func (c *conn) GetWebhook(ctx context.Context, ws, id string) (store.Webhook, error) {
	w, err := scanWebhook(c.q.QueryRow(ctx, "SELECT "+webhookCols+" FROM webhooks WHERE workspace_id = $1 AND id = $2", ws, id))
	return w, mapErr("postgres: webhook "+id, err)
}

func (c *conn) ListWebhooks(ctx context.Context, ws string) ([]store.Webhook, error) {
	q, args := "SELECT "+webhookCols+" FROM webhooks", []any{}
	if ws != "" {
		q, args = q+" WHERE workspace_id = $1", append(args, ws)
	}
	rows, err := c.q.Query(ctx, q+" ORDER BY id", args...)
	if err != nil {
		return nil, mapErr("postgres: list webhooks", err)
	}
	defer rows.Close()
	out := []store.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, mapErr("postgres: list webhooks", err)
		}
		out = append(out, w)
	}
	return out, mapErr("postgres: list webhooks", rows.Err())
}

func (t *tx) ClaimWebhook(ctx context.Context, ws, id, owner string, now time.Time, lease time.Duration) (store.Webhook, bool, error) {
	w, err := scanWebhook(t.q.QueryRow(ctx, `UPDATE webhooks SET lease_owner = $1, lease_until = $2
		WHERE workspace_id = $3 AND id = $4 AND next_at <= $5 AND (lease_until IS NULL OR lease_until <= $5)
		RETURNING `+webhookCols, owner, now.Add(lease), ws, id, now))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Webhook{}, false, nil
	}
	if err != nil {
		return store.Webhook{}, false, mapErr("postgres: claim webhook", err)
	}
	return w, true, nil
}

func (t *tx) AdvanceWebhook(ctx context.Context, ws, id, owner string, u store.WebhookUpdate) error {
	tag, err := t.q.Exec(ctx, `UPDATE webhooks SET cursor = $1, attempts = $2, next_at = $3, lease_until = $4
		WHERE workspace_id = $5 AND id = $6 AND lease_owner = $7 AND lease_until IS NOT NULL`,
		u.Cursor, u.Attempts, u.NextAt, u.LeaseUntil, ws, id, owner)
	if err != nil {
		return mapErr("postgres: advance webhook", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("postgres: advance webhook %s: lease not held: %w", id, store.ErrVersionConflict)
	}
	return nil
}

func (t *tx) ReleaseWebhook(ctx context.Context, ws, id, owner string) error {
	_, err := t.q.Exec(ctx, `UPDATE webhooks SET lease_owner = '', lease_until = NULL
		WHERE workspace_id = $1 AND id = $2 AND lease_owner = $3`, ws, id, owner)
	return mapErr("postgres: release webhook", err)
}

func (t *tx) InsertDelivery(ctx context.Context, d store.Delivery) error {
	_, err := t.q.Exec(ctx, `INSERT INTO webhook_deliveries (workspace_id, id, webhook_id, event_id, event_seq, event_kind,
		attempt, at, outcome, status_code, error, duration_us) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		d.Workspace, d.ID, d.WebhookID, d.EventID, d.EventSeq, d.EventKind, d.Attempt, d.At, d.Outcome, d.StatusCode,
		d.Error, d.Duration.Microseconds())
	return mapErr("postgres: insert delivery", err)
}

func (c *conn) ListDeliveries(ctx context.Context, ws, webhookID, before string, limit int) ([]store.Delivery, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	where, args := []string{"workspace_id = $1"}, []any{ws}
	if webhookID != "" {
		args = append(args, webhookID)
		where = append(where, "webhook_id = $"+strconv.Itoa(len(args)))
	}
	if before != "" {
		args = append(args, before)
		where = append(where, "id < $"+strconv.Itoa(len(args)))
	}
	args = append(args, limit)
	rows, err := c.q.Query(ctx, `SELECT workspace_id, id, webhook_id, event_id, event_seq, event_kind, attempt, at, outcome,
		status_code, error, duration_us FROM webhook_deliveries WHERE `+strings.Join(where, " AND ")+
		" ORDER BY id DESC LIMIT $"+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, mapErr("postgres: list deliveries", err)
	}
	defer rows.Close()
	out := []store.Delivery{}
	for rows.Next() {
		var (
			d  store.Delivery
			us int64
		)
		if err := rows.Scan(&d.Workspace, &d.ID, &d.WebhookID, &d.EventID, &d.EventSeq, &d.EventKind, &d.Attempt, &d.At, &d.Outcome,
			&d.StatusCode, &d.Error, &us); err != nil {
			return nil, mapErr("postgres: list deliveries", err)
		}
		d.At, d.Duration = utc(d.At), time.Duration(us)*time.Microsecond
		out = append(out, d)
	}
	return out, mapErr("postgres: list deliveries", rows.Err())
}

func (c *conn) countBy(ctx context.Context, op, q string) (map[string]int, error) {
	rows, err := c.q.Query(ctx, q)
	if err != nil {
		return nil, mapErr(op, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, mapErr(op, err)
		}
		out[k] = n
	}
	return out, mapErr(op, rows.Err())
}

func (c *conn) CountOpenApprovals(ctx context.Context) (map[string]int, error) {
	return c.countBy(ctx, "postgres: count approvals", "SELECT kind, count(*)::int FROM approvals WHERE status = 'pending' GROUP BY kind")
}

func (c *conn) CountJobs(ctx context.Context) (map[string]int, error) {
	return c.countBy(ctx, "postgres: count jobs", "SELECT status, count(*)::int FROM jobs GROUP BY status")
}
