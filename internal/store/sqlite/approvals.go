package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func scanApproval(sc scanner) (memory.Approval, error) {
	var (
		a                memory.Approval
		kind, status     string
		created, expires int64
		decided          sql.NullInt64
		subjects         string
	)
	err := sc.Scan(&a.ID, &a.Workspace, &a.RecordID, &kind, &a.Reason, &status,
		&created, &expires, &decided, &a.DecidedBy, &a.DecisionReason, &subjects)
	if err != nil {
		return memory.Approval{}, err
	}
	if a.ReasonSubjects, err = parseStringList("reason_subjects", subjects); err != nil {
		return memory.Approval{}, err
	}
	a.Kind = memory.ApprovalKind(kind)
	a.Status = memory.ApprovalStatus(status)
	a.CreatedAt = fromMicros(created)
	a.ExpiresAt = fromMicros(expires)
	a.DecidedAt = fromNullMicros(decided)
	return a, nil
}

func scanApprovals(rows *sql.Rows, err error) ([]memory.Approval, error) {
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
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// pageLimit is the row limit of the list methods other than ListRecords:
// store.DefaultLimit when n <= 0, else n. It is deliberately not capped at
// store.MaxLimit, since callers page until a short page and a silent cap
// would end their walk early.
func pageLimit(n int) int {
	if n <= 0 {
		return store.DefaultLimit
	}
	return n
}

func (c *conn) GetApproval(ctx context.Context, ws, id string) (memory.Approval, error) {
	ctx = c.detach(ctx)
	a, err := scanApproval(c.stmt(ctx, stGetApproval).QueryRowContext(ctx, ws, id))
	if err != nil {
		return memory.Approval{}, mapErr("sqlite: get approval "+id, err)
	}
	return a, nil
}

func (c *conn) ListApprovals(ctx context.Context, ws string, status memory.ApprovalStatus, after string, limit int) ([]memory.Approval, error) {
	ctx = c.detach(ctx)
	limit = pageLimit(limit)
	var (
		rows *sql.Rows
		err  error
	)
	if status == "" {
		rows, err = c.stmt(ctx, stListApprovals).QueryContext(ctx, ws, after, limit)
	} else {
		rows, err = c.stmt(ctx, stListApprovalsStatus).QueryContext(ctx, ws, string(status), after, limit)
	}
	out, err := scanApprovals(rows, err)
	if err != nil {
		return nil, mapErr("sqlite: list approvals", err)
	}
	return out, nil
}

// ListExpiredApprovals reads every workspace: the expiry job is the one
// caller and works across them.
func (c *conn) ListExpiredApprovals(ctx context.Context, now time.Time, limit int) ([]memory.Approval, error) {
	ctx = c.detach(ctx)
	rows, err := c.stmt(ctx, stListExpiredApprovals).QueryContext(ctx, string(memory.ApprovalOpen), micros(now), pageLimit(limit))
	out, err := scanApprovals(rows, err)
	if err != nil {
		return nil, mapErr("sqlite: list expired approvals", err)
	}
	return out, nil
}

func (t *tx) InsertApproval(ctx context.Context, a memory.Approval) error {
	ctx = t.detach(ctx)
	subjects, err := stringList(a.ReasonSubjects)
	if err != nil {
		return fmt.Errorf("sqlite: insert approval %s: %w", a.ID, err)
	}
	_, err = t.stmt(ctx, stInsertApproval).ExecContext(ctx,
		a.ID, a.Workspace, a.RecordID, string(a.Kind), a.Reason, string(a.Status),
		micros(a.CreatedAt), micros(a.ExpiresAt), nullMicros(a.DecidedAt), a.DecidedBy, a.DecisionReason, subjects)
	return mapErr("sqlite: insert approval "+a.ID, err)
}

func (t *tx) UpdateApproval(ctx context.Context, a memory.Approval) error {
	ctx = t.detach(ctx)
	op := "sqlite: update approval " + a.ID
	subjects, err := stringList(a.ReasonSubjects)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	res, err := t.stmt(ctx, stUpdateApproval).ExecContext(ctx,
		string(a.Status), nullMicros(a.DecidedAt), a.DecidedBy, a.DecisionReason, subjects, a.Workspace, a.ID)
	if err != nil {
		return mapErr(op, err)
	}
	return requireOne(op, res)
}

// EraseApprovalReasons matches a subject by its quoted hash inside the
// JSON array: hex holds no LIKE wildcard.
func (t *tx) EraseApprovalReasons(ctx context.Context, ws string, e store.ReasonErasure) (int, error) {
	ctx = t.detach(ctx)
	if e.RecordID == "" && e.SubjectSHA256 == "" {
		return 0, nil
	}
	subject := "-"
	if e.SubjectSHA256 != "" {
		subject = `%"` + e.SubjectSHA256 + `"%`
	}
	res, err := t.db.ExecContext(ctx, `UPDATE approvals SET decision_reason = '', reason_subjects = '[]'
		WHERE workspace_id = ? AND (decision_reason <> '' OR reason_subjects <> '[]')
		AND (record_id = ? OR reason_subjects LIKE ?)`, ws, e.RecordID, subject)
	if err != nil {
		return 0, mapErr("sqlite: erase approval reasons", err)
	}
	n, err := res.RowsAffected()
	return int(n), mapErr("sqlite: erase approval reasons", err)
}
