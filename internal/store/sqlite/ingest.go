package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/store"
)

const messageCols = "workspace_id, id, user_id, app_id, project_id, session_id, sender_id, role, ts, content, content_sha256, record_id, job_id, created_at"

func scanMessage(sc scanner) (store.Message, error) {
	var (
		m       store.Message
		created int64
	)
	err := sc.Scan(&m.Workspace, &m.ID, &m.UserID, &m.AppID, &m.ProjectID, &m.SessionID, &m.SenderID, &m.Role,
		&m.Timestamp, &m.Content, &m.ContentSHA256, &m.RecordID, &m.JobID, &created)
	m.CreatedAt = fromMicros(created)
	return m, err
}

func (c *conn) FindMessage(ctx context.Context, ws string, m store.Message) (store.Message, error) {
	ctx = c.detach(ctx)
	row := c.db.QueryRowContext(ctx, "SELECT "+messageCols+` FROM messages WHERE workspace_id = ? AND user_id = ? AND app_id = ?
		AND project_id = ? AND session_id = ? AND sender_id = ? AND ts = ? AND content_sha256 = ?`,
		ws, m.UserID, m.AppID, m.ProjectID, m.SessionID, m.SenderID, m.Timestamp, m.ContentSHA256)
	out, err := scanMessage(row)
	if err != nil {
		return store.Message{}, mapErr("sqlite: find message", err)
	}
	return out, nil
}

func (c *conn) ListJobMessages(ctx context.Context, ws, jobID string) ([]store.Message, error) {
	ctx = c.detach(ctx)
	rows, err := c.db.QueryContext(ctx, "SELECT "+messageCols+" FROM messages WHERE workspace_id = ? AND job_id = ? ORDER BY ts, id", ws, jobID)
	if err != nil {
		return nil, mapErr("sqlite: job messages", err)
	}
	defer rows.Close()
	out := []store.Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, mapErr("sqlite: job messages", err)
		}
		out = append(out, m)
	}
	return out, mapErr("sqlite: job messages", rows.Err())
}

func (t *tx) InsertMessage(ctx context.Context, m store.Message) error {
	ctx = t.detach(ctx)
	_, err := t.db.ExecContext(ctx, "INSERT INTO messages ("+messageCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		m.Workspace, m.ID, m.UserID, m.AppID, m.ProjectID, m.SessionID, m.SenderID, m.Role,
		m.Timestamp, m.Content, m.ContentSHA256, m.RecordID, m.JobID, micros(m.CreatedAt))
	return mapErr("sqlite: insert message", err)
}

func (t *tx) TakeMessages(ctx context.Context, ws string, cv store.Conversation, jobID string) (int, error) {
	ctx = t.detach(ctx)
	res, err := t.db.ExecContext(ctx, `UPDATE messages SET job_id = ? WHERE workspace_id = ? AND user_id = ? AND app_id = ?
		AND project_id = ? AND session_id = ? AND job_id = ''`, jobID, ws, cv.UserID, cv.AppID, cv.ProjectID, cv.SessionID)
	if err != nil {
		return 0, mapErr("sqlite: take messages", err)
	}
	n, err := res.RowsAffected()
	return int(n), mapErr("sqlite: take messages", err)
}

const jobCols = "workspace_id, id, kind, payload, status, attempts, max_attempts, run_after, lease_owner, lease_until, last_error, result, created_at, updated_at"

func scanJob(sc scanner) (store.Job, error) {
	var (
		j                        store.Job
		payload, status, result  string
		runAfter, created, updat int64
		lease                    sql.NullInt64
	)
	if err := sc.Scan(&j.Workspace, &j.ID, &j.Kind, &payload, &status, &j.Attempts, &j.MaxAttempts, &runAfter,
		&j.LeaseOwner, &lease, &j.LastError, &result, &created, &updat); err != nil {
		return store.Job{}, err
	}
	j.Payload, j.Result = []byte(payload), []byte(result)
	j.Status = store.JobStatus(status)
	j.RunAfter, j.CreatedAt, j.UpdatedAt = fromMicros(runAfter), fromMicros(created), fromMicros(updat)
	j.LeaseUntil = fromNullMicros(lease)
	return j, nil
}

func (c *conn) GetJob(ctx context.Context, ws, id string) (store.Job, error) {
	ctx = c.detach(ctx)
	j, err := scanJob(c.db.QueryRowContext(ctx, "SELECT "+jobCols+" FROM jobs WHERE workspace_id = ? AND id = ?", ws, id))
	if err != nil {
		return store.Job{}, mapErr("sqlite: get job", err)
	}
	return j, nil
}

func (t *tx) InsertJob(ctx context.Context, j store.Job) error {
	ctx = t.detach(ctx)
	payload, err := jsonObject("payload", j.Payload)
	if err != nil {
		return err
	}
	result, err := jsonObject("result", j.Result)
	if err != nil {
		return err
	}
	_, err = t.db.ExecContext(ctx, "INSERT INTO jobs ("+jobCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		j.Workspace, j.ID, j.Kind, payload, string(store.JobQueued), 0, j.MaxAttempts, micros(j.RunAfter),
		"", nil, "", result, micros(j.CreatedAt), micros(j.UpdatedAt))
	return mapErr("sqlite: insert job", err)
}

// claimJobSQL is ClaimJob's query for n kinds. Its first term repeats the
// jobs_claim index's condition: SQLite does not infer it from the OR that
// follows and would otherwise scan every job ever run — a claim, made by
// every idle worker each poll, cost more with every flush (issue 14).
func claimJobSQL(n int) string {
	return "SELECT " + jobCols + ` FROM jobs WHERE status IN ('queued', 'running')
		AND ((status = 'queued' AND run_after <= ?) OR (status = 'running' AND lease_until <= ?))
		AND kind IN (?` + strings.Repeat(", ?", n-1) + ") ORDER BY run_after, id LIMIT 1"
}

func (t *tx) ClaimJob(ctx context.Context, kinds []string, owner string, now time.Time, lease time.Duration) (store.Job, bool, error) {
	ctx = t.detach(ctx)
	if len(kinds) == 0 {
		return store.Job{}, false, nil
	}
	args := []any{micros(now), micros(now)}
	for _, k := range kinds {
		args = append(args, k)
	}
	q := claimJobSQL(len(kinds))
	for {
		j, err := scanJob(t.db.QueryRowContext(ctx, q, args...))
		if errors.Is(err, sql.ErrNoRows) {
			return store.Job{}, false, nil
		}
		if err != nil {
			return store.Job{}, false, mapErr("sqlite: claim job", err)
		}
		if j.Status == store.JobRunning && j.Attempts >= j.MaxAttempts {
			// Its worker died during the last allowed attempt: give up on
			// it rather than crash-loop.
			_, err := t.db.ExecContext(ctx, `UPDATE jobs SET status = 'dead', lease_owner = '', lease_until = NULL,
				last_error = 'worker lost during the last attempt (lease expired)', updated_at = ? WHERE id = ?`, micros(now), j.ID)
			if err != nil {
				return store.Job{}, false, mapErr("sqlite: claim job", err)
			}
			if err := t.AppendEvent(ctx, store.JobDeadEvent(j, now)); err != nil {
				return store.Job{}, false, err
			}
			continue
		}
		until := now.Add(lease)
		_, err = t.db.ExecContext(ctx, `UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_owner = ?,
			lease_until = ?, updated_at = ? WHERE id = ?`, owner, micros(until), micros(now), j.ID)
		if err != nil {
			return store.Job{}, false, mapErr("sqlite: claim job", err)
		}
		j.Status, j.Attempts, j.LeaseOwner, j.LeaseUntil, j.UpdatedAt = store.JobRunning, j.Attempts+1, owner, &until, now
		return j, true, nil
	}
}

func (t *tx) FinishJob(ctx context.Context, ws, id, owner string, u store.JobUpdate) error {
	ctx = t.detach(ctx)
	switch u.Status {
	case store.JobDone, store.JobDead, store.JobQueued:
	default:
		return fmt.Errorf("sqlite: finish job: status %q", u.Status)
	}
	result, err := jsonObject("result", u.Result)
	if err != nil {
		return err
	}
	res, err := t.db.ExecContext(ctx, `UPDATE jobs SET status = ?, run_after = ?, last_error = ?, result = ?, lease_owner = '',
		lease_until = NULL, updated_at = ? WHERE workspace_id = ? AND id = ? AND status = 'running' AND lease_owner = ?`,
		string(u.Status), micros(u.RunAfter), u.LastError, result, micros(u.At), ws, id, owner)
	if err != nil {
		return mapErr("sqlite: finish job", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err != nil {
			return mapErr("sqlite: finish job", err)
		}
		return fmt.Errorf("sqlite: finish job %s: lease not held: %w", id, store.ErrVersionConflict)
	}
	return nil
}

func (t *tx) InsertGatekeeper(ctx context.Context, e store.GatekeeperEntry) error {
	ctx = t.detach(ctx)
	_, err := t.db.ExecContext(ctx, `INSERT INTO gatekeeper_log (workspace_id, id, job_id, message_id, decision, reason, pattern, facts, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.Workspace, e.ID, e.JobID, e.MessageID, e.Decision, e.Reason, e.Pattern, e.Facts, micros(e.CreatedAt))
	return mapErr("sqlite: insert gatekeeper entry", err)
}

func (c *conn) ListGatekeeper(ctx context.Context, ws, jobID string) ([]store.GatekeeperEntry, error) {
	ctx = c.detach(ctx)
	return c.queryGatekeeper(ctx, `SELECT workspace_id, id, job_id, message_id, decision, reason, pattern, facts, created_at
		FROM gatekeeper_log WHERE workspace_id = ? AND job_id = ? ORDER BY created_at, id`, ws, jobID)
}

func (t *tx) DeleteMessages(ctx context.Context, ws, userID string, recordIDs []string) (int, error) {
	ctx = t.detach(ctx)
	n := 0
	del := func(q string, args ...any) error {
		res, err := t.db.ExecContext(ctx, q, args...)
		if err != nil {
			return mapErr("sqlite: delete messages", err)
		}
		k, err := res.RowsAffected()
		n += int(k)
		return mapErr("sqlite: delete messages", err)
	}
	if userID != "" {
		if err := del("DELETE FROM messages WHERE workspace_id = ? AND user_id = ?", ws, userID); err != nil {
			return n, err
		}
	}
	for len(recordIDs) > 0 {
		part := recordIDs[:min(len(recordIDs), 500)]
		recordIDs = recordIDs[len(part):]
		args := []any{ws}
		for _, id := range part {
			args = append(args, id)
		}
		if err := del("DELETE FROM messages WHERE workspace_id = ? AND record_id IN ("+placeholders(len(part))+")", args...); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *conn) ListGatekeeperLog(ctx context.Context, ws string, q store.GatekeeperQuery) ([]store.GatekeeperEntry, error) {
	ctx = c.detach(ctx)
	sql := `SELECT workspace_id, id, job_id, message_id, decision, reason, pattern, facts, created_at
		FROM gatekeeper_log WHERE workspace_id = ? AND id > ?`
	args := []any{ws, q.After}
	if q.JobID != "" {
		sql += ` AND job_id = ?`
		args = append(args, q.JobID)
	}
	if q.Decision != "" {
		sql += ` AND decision = ?`
		args = append(args, q.Decision)
	}
	if !q.Since.IsZero() {
		sql += ` AND created_at >= ?`
		args = append(args, micros(q.Since))
	}
	sql += ` ORDER BY id LIMIT ?`
	args = append(args, pageLimit(q.Limit))
	return c.queryGatekeeper(ctx, sql, args...)
}

// queryGatekeeper runs a query of gatekeeper_log's columns in order.
func (c *conn) queryGatekeeper(ctx context.Context, sql string, args ...any) ([]store.GatekeeperEntry, error) {
	rows, err := c.db.QueryContext(ctx, sql, args...)
	if err != nil {
		return nil, mapErr("sqlite: gatekeeper log", err)
	}
	defer rows.Close()
	out := []store.GatekeeperEntry{}
	for rows.Next() {
		var (
			e       store.GatekeeperEntry
			created int64
		)
		if err := rows.Scan(&e.Workspace, &e.ID, &e.JobID, &e.MessageID, &e.Decision, &e.Reason, &e.Pattern, &e.Facts, &created); err != nil {
			return nil, mapErr("sqlite: gatekeeper log", err)
		}
		e.CreatedAt = fromMicros(created)
		out = append(out, e)
	}
	return out, mapErr("sqlite: gatekeeper log", rows.Err())
}
