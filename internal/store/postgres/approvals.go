package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

const approvalCols = "id, workspace_id, record_id, kind, reason, status, created_at, expires_at, decided_at, decided_by, decision_reason, reason_subjects"

func scanApproval(row pgx.Row) (memory.Approval, error) {
	var (
		a            memory.Approval
		kind, status string
		subjects     string
	)
	err := row.Scan(&a.ID, &a.Workspace, &a.RecordID, &kind, &a.Reason, &status,
		&a.CreatedAt, &a.ExpiresAt, &a.DecidedAt, &a.DecidedBy, &a.DecisionReason, &subjects)
	if err != nil {
		return memory.Approval{}, err
	}
	a.ReasonSubjects = []string{}
	if err := json.Unmarshal([]byte(subjects), &a.ReasonSubjects); err != nil {
		return memory.Approval{}, fmt.Errorf("reason_subjects: %w", err)
	}
	if a.ReasonSubjects == nil {
		a.ReasonSubjects = []string{}
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
	_, err := t.q.Exec(ctx, `INSERT INTO approvals (`+approvalCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		a.ID, a.Workspace, a.RecordID, string(a.Kind), a.Reason, string(a.Status),
		a.CreatedAt, a.ExpiresAt, a.DecidedAt, a.DecidedBy, a.DecisionReason, subjectList(a.ReasonSubjects))
	return mapErr("postgres: insert approval "+a.ID, err)
}

func (t *tx) UpdateApproval(ctx context.Context, a memory.Approval) error {
	tag, err := t.q.Exec(ctx, `UPDATE approvals SET status = $1, decided_at = $2, decided_by = $3, decision_reason = $4, reason_subjects = $5
		WHERE workspace_id = $6 AND id = $7`, string(a.Status), a.DecidedAt, a.DecidedBy, a.DecisionReason, subjectList(a.ReasonSubjects), a.Workspace, a.ID)
	return affectedOne("postgres: update approval "+a.ID, tag, err)
}

// subjectList is the stored form of Approval.ReasonSubjects: a JSON
// array of hex hashes ("[]" when none).
func subjectList(list []string) string {
	if len(list) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(list) // strings always marshal
	return string(b)
}

// EraseApprovalReasons matches a subject by its quoted hash inside the
// JSON array: hex holds no LIKE wildcard.
func (t *tx) EraseApprovalReasons(ctx context.Context, ws string, e store.ReasonErasure) (int, error) {
	if e.RecordID == "" && e.SubjectSHA256 == "" {
		return 0, nil
	}
	subject := "-"
	if e.SubjectSHA256 != "" {
		subject = `%"` + e.SubjectSHA256 + `"%`
	}
	tag, err := t.q.Exec(ctx, `UPDATE approvals SET decision_reason = '', reason_subjects = '[]'
		WHERE workspace_id = $1 AND (decision_reason <> '' OR reason_subjects <> '[]')
		AND (record_id = $2 OR reason_subjects LIKE $3)`, ws, e.RecordID, subject)
	if err != nil {
		return 0, mapErr("postgres: erase approval reasons", err)
	}
	return int(tag.RowsAffected()), nil
}
