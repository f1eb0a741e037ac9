package sqlite

import (
	"context"
	"strings"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/store"
)

func (c *conn) ListJobs(ctx context.Context, ws string, q store.JobQuery) ([]store.Job, error) {
	ctx = c.detach(ctx)
	where, args := []string{"workspace_id = ?"}, []any{ws}
	if q.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(q.Status))
	}
	if q.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, q.Kind)
	}
	if q.Before != "" {
		where, args = append(where, "id < ?"), append(args, q.Before)
	}
	rows, err := c.db.QueryContext(ctx, "SELECT "+jobCols+" FROM jobs WHERE "+strings.Join(where, " AND ")+" ORDER BY id DESC LIMIT ?",
		append(args, pageLimit(q.Limit))...)
	if err != nil {
		return nil, mapErr("sqlite: list jobs", err)
	}
	defer rows.Close()
	out := []store.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, mapErr("sqlite: list jobs", err)
		}
		out = append(out, j)
	}
	return out, mapErr("sqlite: list jobs", rows.Err())
}

func (c *conn) ListAuditWhere(ctx context.Context, ws string, q store.AuditQuery) ([]audit.Entry, error) {
	ctx = c.detach(ctx)
	where, args := []string{"workspace_id = ?", "seq > ?"}, []any{ws, q.AfterSeq}
	if q.ActorID != "" {
		where, args = append(where, "actor_id = ?"), append(args, q.ActorID)
	}
	if q.ActorKind != "" {
		where, args = append(where, "actor_kind = ?"), append(args, q.ActorKind)
	}
	if q.Event != "" {
		where, args = append(where, "event = ?"), append(args, q.Event)
	}
	if q.EventPrefix != "" {
		// substr, not LIKE: an event name may hold '_', a LIKE wildcard.
		where, args = append(where, "substr(event, 1, ?) = ?"), append(args, len(q.EventPrefix), q.EventPrefix)
	}
	rows, err := c.db.QueryContext(ctx, "SELECT "+auditCols+" FROM audit_log WHERE "+strings.Join(where, " AND ")+" ORDER BY seq LIMIT ?",
		append(args, pageLimit(q.Limit))...)
	if err != nil {
		return nil, mapErr("sqlite: list audit", err)
	}
	return scanAudit(rows)
}
