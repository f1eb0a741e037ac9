package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/store"
)

const messageCols = "workspace_id, id, user_id, app_id, project_id, session_id, sender_id, role, ts, content, content_sha256, record_id, job_id, created_at"

func scanMessage(row pgx.Row) (store.Message, error) {
	var m store.Message
	err := row.Scan(&m.Workspace, &m.ID, &m.UserID, &m.AppID, &m.ProjectID, &m.SessionID, &m.SenderID, &m.Role,
		&m.Timestamp, &m.Content, &m.ContentSHA256, &m.RecordID, &m.JobID, &m.CreatedAt)
	m.CreatedAt = utc(m.CreatedAt)
	return m, err
}

func (c *conn) FindMessage(ctx context.Context, ws string, m store.Message) (store.Message, error) {
	row := c.q.QueryRow(ctx, "SELECT "+messageCols+` FROM messages WHERE workspace_id = $1 AND user_id = $2 AND app_id = $3
		AND project_id = $4 AND session_id = $5 AND sender_id = $6 AND ts = $7 AND content_sha256 = $8`,
		ws, m.UserID, m.AppID, m.ProjectID, m.SessionID, m.SenderID, m.Timestamp, m.ContentSHA256)
	out, err := scanMessage(row)
	if err != nil {
		return store.Message{}, mapErr("postgres: find message", err)
	}
	return out, nil
}

func (c *conn) ListJobMessages(ctx context.Context, ws, jobID string) ([]store.Message, error) {
	rows, err := c.q.Query(ctx, "SELECT "+messageCols+" FROM messages WHERE workspace_id = $1 AND job_id = $2 ORDER BY ts, id", ws, jobID)
	if err != nil {
		return nil, mapErr("postgres: job messages", err)
	}
	defer rows.Close()
	out := []store.Message{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, mapErr("postgres: job messages", err)
		}
		out = append(out, m)
	}
	return out, mapErr("postgres: job messages", rows.Err())
}

// InsertMessage inserts with ON CONFLICT DO NOTHING, so that a message
// already stored is ErrExists without a failed statement, which in
// PostgreSQL would abort the rest of the caller's transaction.
func (t *tx) InsertMessage(ctx context.Context, m store.Message) error {
	tag, err := t.q.Exec(ctx, "INSERT INTO messages ("+messageCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		ON CONFLICT DO NOTHING`,
		m.Workspace, m.ID, m.UserID, m.AppID, m.ProjectID, m.SessionID, m.SenderID, m.Role,
		m.Timestamp, m.Content, m.ContentSHA256, m.RecordID, m.JobID, m.CreatedAt)
	if err != nil {
		return mapErr("postgres: insert message", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: insert message %s: %w", m.ID, store.ErrExists)
	}
	return nil
}

func (t *tx) TakeMessages(ctx context.Context, ws string, cv store.Conversation, jobID string) (int, error) {
	tag, err := t.q.Exec(ctx, `UPDATE messages SET job_id = $1 WHERE workspace_id = $2 AND user_id = $3 AND app_id = $4
		AND project_id = $5 AND session_id = $6 AND job_id = ''`, jobID, ws, cv.UserID, cv.AppID, cv.ProjectID, cv.SessionID)
	if err != nil {
		return 0, mapErr("postgres: take messages", err)
	}
	return int(tag.RowsAffected()), nil
}

const jobCols = "workspace_id, id, kind, payload, status, attempts, max_attempts, run_after, lease_owner, lease_until, last_error, result, created_at, updated_at"

func scanJob(row pgx.Row) (store.Job, error) {
	var (
		j                       store.Job
		payload, status, result string
	)
	if err := row.Scan(&j.Workspace, &j.ID, &j.Kind, &payload, &status, &j.Attempts, &j.MaxAttempts, &j.RunAfter,
		&j.LeaseOwner, &j.LeaseUntil, &j.LastError, &result, &j.CreatedAt, &j.UpdatedAt); err != nil {
		return store.Job{}, err
	}
	j.Payload, j.Result = []byte(payload), []byte(result)
	j.Status = store.JobStatus(status)
	j.RunAfter, j.CreatedAt, j.UpdatedAt = utc(j.RunAfter), utc(j.CreatedAt), utc(j.UpdatedAt)
	j.LeaseUntil = utcPtr(j.LeaseUntil)
	return j, nil
}

func (c *conn) GetJob(ctx context.Context, ws, id string) (store.Job, error) {
	j, err := scanJob(c.q.QueryRow(ctx, "SELECT "+jobCols+" FROM jobs WHERE workspace_id = $1 AND id = $2", ws, id))
	if err != nil {
		return store.Job{}, mapErr("postgres: get job", err)
	}
	return j, nil
}

func (t *tx) InsertJob(ctx context.Context, j store.Job) error {
	payload, err := jsonObject("payload", j.Payload)
	if err != nil {
		return err
	}
	result, err := jsonObject("result", j.Result)
	if err != nil {
		return err
	}
	_, err = t.q.Exec(ctx, "INSERT INTO jobs ("+jobCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
		j.Workspace, j.ID, j.Kind, payload, string(store.JobQueued), 0, j.MaxAttempts, j.RunAfter,
		"", nil, "", result, j.CreatedAt, j.UpdatedAt)
	return mapErr("postgres: insert job", err)
}

// ClaimJob locks the oldest claimable job with FOR UPDATE SKIP LOCKED:
// a job another transaction is claiming (or finishing) is skipped rather
// than waited for, so concurrent claimers, in this process or in other
// replicas, each take a different job at once. The lock lasts until the
// claiming transaction ends.
func (t *tx) ClaimJob(ctx context.Context, kinds []string, owner string, now time.Time, lease time.Duration) (store.Job, bool, error) {
	if len(kinds) == 0 {
		return store.Job{}, false, nil
	}
	for {
		j, err := scanJob(t.q.QueryRow(ctx, "SELECT "+jobCols+` FROM jobs
			WHERE status IN ('queued', 'running') -- the jobs_claim index's condition, stated (see the SQLite store)
			AND ((status = 'queued' AND run_after <= $1) OR (status = 'running' AND lease_until <= $1))
			AND kind = ANY($2::text[]) ORDER BY run_after, id LIMIT 1 FOR UPDATE SKIP LOCKED`, now, kinds))
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Job{}, false, nil
		}
		if err != nil {
			return store.Job{}, false, mapErr("postgres: claim job", err)
		}
		if j.Status == store.JobRunning && j.Attempts >= j.MaxAttempts {
			// Its worker died during the last allowed attempt: give up on
			// it rather than crash-loop.
			_, err := t.q.Exec(ctx, `UPDATE jobs SET status = 'dead', lease_owner = '', lease_until = NULL,
				last_error = 'worker lost during the last attempt (lease expired)', updated_at = $1 WHERE id = $2`, now, j.ID)
			if err != nil {
				return store.Job{}, false, mapErr("postgres: claim job", err)
			}
			if err := t.AppendEvent(ctx, store.JobDeadEvent(j, now)); err != nil {
				return store.Job{}, false, err
			}
			continue
		}
		until := now.Add(lease)
		_, err = t.q.Exec(ctx, `UPDATE jobs SET status = 'running', attempts = attempts + 1, lease_owner = $1,
			lease_until = $2, updated_at = $3 WHERE id = $4`, owner, until, now, j.ID)
		if err != nil {
			return store.Job{}, false, mapErr("postgres: claim job", err)
		}
		until, now = until.UTC(), now.UTC()
		j.Status, j.Attempts, j.LeaseOwner, j.LeaseUntil, j.UpdatedAt = store.JobRunning, j.Attempts+1, owner, &until, now
		return j, true, nil
	}
}

func (t *tx) FinishJob(ctx context.Context, ws, id, owner string, u store.JobUpdate) error {
	switch u.Status {
	case store.JobDone, store.JobDead, store.JobQueued:
	default:
		return fmt.Errorf("postgres: finish job: status %q", u.Status)
	}
	result, err := jsonObject("result", u.Result)
	if err != nil {
		return err
	}
	tag, err := t.q.Exec(ctx, `UPDATE jobs SET status = $1, run_after = $2, last_error = $3, result = $4, lease_owner = '',
		lease_until = NULL, updated_at = $5 WHERE workspace_id = $6 AND id = $7 AND status = 'running' AND lease_owner = $8`,
		string(u.Status), u.RunAfter, u.LastError, result, u.At, ws, id, owner)
	if err != nil {
		return mapErr("postgres: finish job", err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("postgres: finish job %s: lease not held: %w", id, store.ErrVersionConflict)
	}
	return nil
}

func (t *tx) InsertGatekeeper(ctx context.Context, e store.GatekeeperEntry) error {
	_, err := t.q.Exec(ctx, `INSERT INTO gatekeeper_log (workspace_id, id, job_id, message_id, decision, reason, pattern, facts, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, e.Workspace, e.ID, e.JobID, e.MessageID, e.Decision, e.Reason, e.Pattern, e.Facts, e.CreatedAt)
	return mapErr("postgres: insert gatekeeper entry", err)
}

func (c *conn) ListGatekeeper(ctx context.Context, ws, jobID string) ([]store.GatekeeperEntry, error) {
	return c.queryGatekeeper(ctx, `SELECT workspace_id, id, job_id, message_id, decision, reason, pattern, facts, created_at
		FROM gatekeeper_log WHERE workspace_id = $1 AND job_id = $2 ORDER BY created_at, id`, ws, jobID)
}

func (t *tx) DeleteMessages(ctx context.Context, ws, userID string, recordIDs []string) (int, error) {
	n := 0
	if userID != "" {
		tag, err := t.q.Exec(ctx, "DELETE FROM messages WHERE workspace_id = $1 AND user_id = $2", ws, userID)
		if err != nil {
			return n, mapErr("postgres: delete messages", err)
		}
		n += int(tag.RowsAffected())
	}
	if len(recordIDs) > 0 {
		tag, err := t.q.Exec(ctx, "DELETE FROM messages WHERE workspace_id = $1 AND record_id = ANY($2::text[])", ws, recordIDs)
		if err != nil {
			return n, mapErr("postgres: delete messages", err)
		}
		n += int(tag.RowsAffected())
	}
	return n, nil
}

func (c *conn) ListGatekeeperLog(ctx context.Context, ws string, q store.GatekeeperQuery) ([]store.GatekeeperEntry, error) {
	sql := `SELECT workspace_id, id, job_id, message_id, decision, reason, pattern, facts, created_at
		FROM gatekeeper_log WHERE workspace_id = $1 AND id > $2`
	args := []any{ws, q.After}
	if q.JobID != "" {
		args = append(args, q.JobID)
		sql += fmt.Sprintf(` AND job_id = $%d`, len(args))
	}
	if q.Decision != "" {
		args = append(args, q.Decision)
		sql += fmt.Sprintf(` AND decision = $%d`, len(args))
	}
	if !q.Since.IsZero() {
		args = append(args, q.Since)
		sql += fmt.Sprintf(` AND created_at >= $%d`, len(args))
	}
	args = append(args, pageLimit(q.Limit))
	sql += fmt.Sprintf(` ORDER BY id LIMIT $%d`, len(args))
	return c.queryGatekeeper(ctx, sql, args...)
}

// queryGatekeeper runs a query of gatekeeper_log's columns in order.
func (c *conn) queryGatekeeper(ctx context.Context, sql string, args ...any) ([]store.GatekeeperEntry, error) {
	rows, err := c.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, mapErr("postgres: gatekeeper log", err)
	}
	defer rows.Close()
	out := []store.GatekeeperEntry{}
	for rows.Next() {
		var e store.GatekeeperEntry
		if err := rows.Scan(&e.Workspace, &e.ID, &e.JobID, &e.MessageID, &e.Decision, &e.Reason, &e.Pattern, &e.Facts, &e.CreatedAt); err != nil {
			return nil, mapErr("postgres: gatekeeper log", err)
		}
		e.CreatedAt = utc(e.CreatedAt)
		out = append(out, e)
	}
	return out, mapErr("postgres: gatekeeper log", rows.Err())
}
