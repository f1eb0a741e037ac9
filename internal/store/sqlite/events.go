package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/store"
)

// SQLite has one writer, so an AUTOINCREMENT seq drawn inside a write
// transaction is already in commit order: no reader can see seq N before
// every lower seq committed or rolled back.

func (t *tx) AppendEvent(ctx context.Context, e store.Event) error {
	ctx = t.detach(ctx)
	subject, err := jsonObject("subject", e.Subject)
	if err != nil {
		return err
	}
	_, err = t.db.ExecContext(ctx, "INSERT INTO events (id, workspace_id, kind, at, subject) VALUES (?, ?, ?, ?, ?)",
		e.ID, e.Workspace, e.Kind, micros(e.At), subject)
	return mapErr("sqlite: append event", err)
}

func (c *conn) ListEvents(ctx context.Context, ws string, after int64, limit int) ([]store.Event, error) {
	ctx = c.detach(ctx)
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	q, args := "SELECT seq, id, workspace_id, kind, at, subject FROM events WHERE seq > ?", []any{after}
	if ws != "" {
		q, args = q+" AND workspace_id = ?", append(args, ws)
	}
	rows, err := c.db.QueryContext(ctx, q+" ORDER BY seq LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, mapErr("sqlite: list events", err)
	}
	defer rows.Close()
	out := []store.Event{}
	for rows.Next() {
		var (
			e       store.Event
			at      int64
			subject string
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.Workspace, &e.Kind, &at, &subject); err != nil {
			return nil, mapErr("sqlite: list events", err)
		}
		e.At, e.Subject = fromMicros(at), json.RawMessage(subject)
		out = append(out, e)
	}
	return out, mapErr("sqlite: list events", rows.Err())
}

func (c *conn) EventHead(ctx context.Context) (int64, error) {
	ctx = c.detach(ctx)
	var seq sql.NullInt64
	err := c.db.QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&seq)
	return seq.Int64, mapErr("sqlite: event head", err)
}

const webhookCols = "workspace_id, id, url, secret, kinds, created_at, created_by, cursor, attempts, next_at, lease_owner, lease_until"

func scanWebhook(sc scanner) (store.Webhook, error) {
	var (
		w             store.Webhook
		kinds         string
		created, next int64
		until         sql.NullInt64
	)
	err := sc.Scan(&w.Workspace, &w.ID, &w.URL, &w.Secret, &kinds, &created, &w.CreatedBy, &w.Cursor, &w.Attempts, &next, &w.LeaseOwner, &until)
	if err != nil {
		return store.Webhook{}, err
	}
	if err := json.Unmarshal([]byte(kinds), &w.Kinds); err != nil {
		return store.Webhook{}, fmt.Errorf("webhook %s: kinds: %w", w.ID, err)
	}
	w.CreatedAt, w.NextAt = fromMicros(created), fromMicros(next)
	if until.Valid {
		u := fromMicros(until.Int64)
		w.LeaseUntil = &u
	}
	return w, nil
}

func (t *tx) InsertWebhook(ctx context.Context, w store.Webhook) error {
	ctx = t.detach(ctx)
	kinds, err := json.Marshal(nonNil(w.Kinds))
	if err != nil {
		return err
	}
	_, err = t.db.ExecContext(ctx, "INSERT INTO webhooks ("+webhookCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', NULL)",
		w.Workspace, w.ID, w.URL, w.Secret, string(kinds), micros(w.CreatedAt), w.CreatedBy, w.Cursor, w.Attempts, micros(w.NextAt))
	return mapErr("sqlite: insert webhook", err)
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func (t *tx) DeleteWebhook(ctx context.Context, ws, id string) error {
	ctx = t.detach(ctx)
	if _, err := t.db.ExecContext(ctx, "DELETE FROM webhook_deliveries WHERE workspace_id = ? AND webhook_id = ?", ws, id); err != nil {
		return mapErr("sqlite: delete webhook", err)
	}
	res, err := t.db.ExecContext(ctx, "DELETE FROM webhooks WHERE workspace_id = ? AND id = ?", ws, id)
	return oneRow(res, err, "sqlite: delete webhook "+id, store.ErrNotFound)
}

// oneRow maps a statement's result to nil when it changed one row and to
// sentinel when it changed none.
func oneRow(res sql.Result, err error, op string, sentinel error) error {
	if err != nil {
		return mapErr(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(op, err)
	}
	if n != 1 {
		return fmt.Errorf("%s: %w", op, sentinel)
	}
	return nil
}

func (c *conn) GetWebhook(ctx context.Context, ws, id string) (store.Webhook, error) {
	ctx = c.detach(ctx)
	w, err := scanWebhook(c.db.QueryRowContext(ctx, "SELECT "+webhookCols+" FROM webhooks WHERE workspace_id = ? AND id = ?", ws, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Webhook{}, fmt.Errorf("sqlite: webhook %s: %w", id, store.ErrNotFound)
	}
	return w, mapErr("sqlite: get webhook", err)
}

func (c *conn) ListWebhooks(ctx context.Context, ws string) ([]store.Webhook, error) {
	ctx = c.detach(ctx)
	q, args := "SELECT "+webhookCols+" FROM webhooks", []any{}
	if ws != "" {
		q, args = q+" WHERE workspace_id = ?", append(args, ws)
	}
	rows, err := c.db.QueryContext(ctx, q+" ORDER BY id", args...)
	if err != nil {
		return nil, mapErr("sqlite: list webhooks", err)
	}
	defer rows.Close()
	out := []store.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, mapErr("sqlite: list webhooks", err)
		}
		out = append(out, w)
	}
	return out, mapErr("sqlite: list webhooks", rows.Err())
}

func (t *tx) ClaimWebhook(ctx context.Context, ws, id, owner string, now time.Time, lease time.Duration) (store.Webhook, bool, error) {
	ctx = t.detach(ctx)
	res, err := t.db.ExecContext(ctx, `UPDATE webhooks SET lease_owner = ?, lease_until = ?
		WHERE workspace_id = ? AND id = ? AND next_at <= ? AND (lease_until IS NULL OR lease_until <= ?)`,
		owner, micros(now.Add(lease)), ws, id, micros(now), micros(now))
	if err := oneRow(res, err, "sqlite: claim webhook", store.ErrNotFound); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Webhook{}, false, nil
		}
		return store.Webhook{}, false, err
	}
	w, err := t.GetWebhook(ctx, ws, id)
	return w, err == nil, err
}

func (t *tx) AdvanceWebhook(ctx context.Context, ws, id, owner string, u store.WebhookUpdate) error {
	ctx = t.detach(ctx)
	res, err := t.db.ExecContext(ctx, `UPDATE webhooks SET cursor = ?, attempts = ?, next_at = ?, lease_until = ?
		WHERE workspace_id = ? AND id = ? AND lease_owner = ? AND lease_until IS NOT NULL`,
		u.Cursor, u.Attempts, micros(u.NextAt), micros(u.LeaseUntil), ws, id, owner)
	return oneRow(res, err, "sqlite: advance webhook "+id+": lease not held", store.ErrVersionConflict)
}

func (t *tx) ReleaseWebhook(ctx context.Context, ws, id, owner string) error {
	ctx = t.detach(ctx)
	_, err := t.db.ExecContext(ctx, `UPDATE webhooks SET lease_owner = '', lease_until = NULL
		WHERE workspace_id = ? AND id = ? AND lease_owner = ?`, ws, id, owner)
	return mapErr("sqlite: release webhook", err)
}

func (t *tx) InsertDelivery(ctx context.Context, d store.Delivery) error {
	ctx = t.detach(ctx)
	_, err := t.db.ExecContext(ctx, `INSERT INTO webhook_deliveries (workspace_id, id, webhook_id, event_id, event_seq, event_kind,
		attempt, at, outcome, status_code, error, duration_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.Workspace, d.ID, d.WebhookID, d.EventID, d.EventSeq, d.EventKind, d.Attempt, micros(d.At), d.Outcome, d.StatusCode,
		d.Error, d.Duration.Microseconds())
	return mapErr("sqlite: insert delivery", err)
}

func (c *conn) ListDeliveries(ctx context.Context, ws, webhookID, before string, limit int) ([]store.Delivery, error) {
	ctx = c.detach(ctx)
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	var where []string
	args := []any{ws}
	where = append(where, "workspace_id = ?")
	if webhookID != "" {
		where, args = append(where, "webhook_id = ?"), append(args, webhookID)
	}
	if before != "" {
		where, args = append(where, "id < ?"), append(args, before)
	}
	rows, err := c.db.QueryContext(ctx, `SELECT workspace_id, id, webhook_id, event_id, event_seq, event_kind, attempt, at, outcome,
		status_code, error, duration_us FROM webhook_deliveries WHERE `+strings.Join(where, " AND ")+" ORDER BY id DESC LIMIT ?",
		append(args, limit)...)
	if err != nil {
		return nil, mapErr("sqlite: list deliveries", err)
	}
	defer rows.Close()
	out := []store.Delivery{}
	for rows.Next() {
		var (
			d      store.Delivery
			at, us int64
		)
		if err := rows.Scan(&d.Workspace, &d.ID, &d.WebhookID, &d.EventID, &d.EventSeq, &d.EventKind, &d.Attempt, &at, &d.Outcome,
			&d.StatusCode, &d.Error, &us); err != nil {
			return nil, mapErr("sqlite: list deliveries", err)
		}
		d.At, d.Duration = fromMicros(at), time.Duration(us)*time.Microsecond
		out = append(out, d)
	}
	return out, mapErr("sqlite: list deliveries", rows.Err())
}

func (c *conn) countBy(ctx context.Context, op, q string) (map[string]int, error) {
	ctx = c.detach(ctx)
	rows, err := c.db.QueryContext(ctx, q)
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
	return c.countBy(ctx, "sqlite: count approvals", "SELECT kind, count(*) FROM approvals WHERE status = 'pending' GROUP BY kind")
}

func (c *conn) CountJobs(ctx context.Context) (map[string]int, error) {
	return c.countBy(ctx, "sqlite: count jobs", "SELECT status, count(*) FROM jobs GROUP BY status")
}
