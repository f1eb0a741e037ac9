package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

const approvalCols = "id, workspace_id, record_id, kind, reason, status, created_at, expires_at, decided_at, decided_by"

func scanApproval(row pgx.Row) (memory.Approval, error) {
	var (
		a            memory.Approval
		kind, status string
	)
	err := row.Scan(&a.ID, &a.Workspace, &a.RecordID, &kind, &a.Reason, &status,
		&a.CreatedAt, &a.ExpiresAt, &a.DecidedAt, &a.DecidedBy)
	if err != nil {
		return memory.Approval{}, err
	}
	a.Kind = memory.ApprovalKind(kind)
	a.Status = memory.ApprovalStatus(status)
	a.CreatedAt = utc(a.CreatedAt)
	a.ExpiresAt = utc(a.ExpiresAt)
	a.DecidedAt = utcPtr(a.DecidedAt)
	return a, nil
}

func scanApprovals(rows pgx.Rows, err error) ([]memory.Approval, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []memory.Approval{}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// pageLimit is the row limit of the list methods other than ListRecords:
// store.DefaultLimit when n <= 0, else n, deliberately not capped at
// store.MaxLimit (callers page until a short page).
func pageLimit(n int) int {
	if n <= 0 {
		return store.DefaultLimit
	}
	return n
}

func (c *conn) GetApproval(ctx context.Context, ws, id string) (memory.Approval, error) {
	a, err := scanApproval(c.q.QueryRow(ctx, `SELECT `+approvalCols+` FROM approvals WHERE workspace_id = $1 AND id = $2`, ws, id))
	if err != nil {
		return memory.Approval{}, mapErr("postgres: get approval "+id, err)
	}
	return a, nil
}

func (c *conn) ListApprovals(ctx context.Context, ws string, status memory.ApprovalStatus, after string, limit int) ([]memory.Approval, error) {
	rows, err := c.q.Query(ctx, `SELECT `+approvalCols+` FROM approvals
		WHERE workspace_id = $1 AND ($2 = '' OR status = $2) AND id > $3 ORDER BY id LIMIT $4`,
		ws, string(status), after, pageLimit(limit))
	out, err := scanApprovals(rows, err)
	if err != nil {
		return nil, mapErr("postgres: list approvals", err)
	}
	return out, nil
}

// ListExpiredApprovals reads every workspace: the expiry job is the one
// caller and works across them.
func (c *conn) ListExpiredApprovals(ctx context.Context, now time.Time, limit int) ([]memory.Approval, error) {
	rows, err := c.q.Query(ctx, `SELECT `+approvalCols+` FROM approvals
		WHERE status = $1 AND expires_at <= $2 ORDER BY expires_at, id LIMIT $3`,
		string(memory.ApprovalOpen), now, pageLimit(limit))
	out, err := scanApprovals(rows, err)
	if err != nil {
		return nil, mapErr("postgres: list expired approvals", err)
	}
	return out, nil
}

func (t *tx) InsertApproval(ctx context.Context, a memory.Approval) error {
	_, err := t.q.Exec(ctx, `INSERT INTO approvals (`+approvalCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		a.ID, a.Workspace, a.RecordID, string(a.Kind), a.Reason, string(a.Status),
		a.CreatedAt, a.ExpiresAt, a.DecidedAt, a.DecidedBy)
	return mapErr("postgres: insert approval "+a.ID, err)
}

func (t *tx) UpdateApproval(ctx context.Context, a memory.Approval) error {
	tag, err := t.q.Exec(ctx, `UPDATE approvals SET status = $1, decided_at = $2, decided_by = $3
		WHERE workspace_id = $4 AND id = $5`, string(a.Status), a.DecidedAt, a.DecidedBy, a.Workspace, a.ID)
	return affectedOne("postgres: update approval "+a.ID, tag, err)
}
