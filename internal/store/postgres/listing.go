package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/store"
)

// conds builds a WHERE clause of numbered parameters.
type conds struct {
	where []string
	args  []any
}

func (c *conds) add(expr string, arg any) {
	c.args = append(c.args, arg)
	c.where = append(c.where, strings.ReplaceAll(expr, "$?", "$"+strconv.Itoa(len(c.args))))
}

func (c *conds) limit(n int) string {
	c.args = append(c.args, n)
	return " LIMIT $" + strconv.Itoa(len(c.args))
}

func (c *conn) ListJobs(ctx context.Context, ws string, q store.JobQuery) ([]store.Job, error) {
	var w conds
	w.add("workspace_id = $?", ws)
	if q.Status != "" {
		w.add("status = $?", string(q.Status))
	}
	if q.Kind != "" {
		w.add("kind = $?", q.Kind)
	}
	if q.Before != "" {
		w.add("id < $?", q.Before)
	}
	sql := "SELECT " + jobCols + " FROM jobs WHERE " + strings.Join(w.where, " AND ") + " ORDER BY id DESC"
	sql += w.limit(pageLimit(q.Limit))
	rows, err := c.q.Query(ctx, sql, w.args...)
	if err != nil {
		return nil, mapErr("postgres: list jobs", err)
	}
	defer rows.Close()
	out := []store.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, mapErr("postgres: list jobs", err)
		}
		out = append(out, j)
	}
	return out, mapErr("postgres: list jobs", rows.Err())
}

func (c *conn) ListAuditWhere(ctx context.Context, ws string, q store.AuditQuery) ([]audit.Entry, error) {
	var w conds
	w.add("workspace_id = $?", ws)
	w.add("seq > $?", q.AfterSeq)
	if q.ActorID != "" {
		w.add("actor_id = $?", q.ActorID)
	}
	if q.ActorKind != "" {
		w.add("actor_kind = $?", q.ActorKind)
	}
	if q.Event != "" {
		w.add("event = $?", q.Event)
	}
	if q.EventPrefix != "" {
		// starts_with, not LIKE: an event name may hold '_', a LIKE wildcard.
		w.add("starts_with(event, $?)", q.EventPrefix)
	}
	sql := "SELECT id, seq, ts, actor_kind, actor_id, event, payload, prev_hash, hash FROM audit_log WHERE " +
		strings.Join(w.where, " AND ") + " ORDER BY seq"
	sql += w.limit(pageLimit(q.Limit))
	rows, err := c.q.Query(ctx, sql, w.args...)
	if err != nil {
		return nil, mapErr("postgres: list audit", err)
	}
	return scanAudit(rows)
}
