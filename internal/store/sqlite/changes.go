package sqlite

import (
	"context"
	"database/sql"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func (t *tx) logChange(ctx context.Context, ws, id string) error {
	res, err := t.db.ExecContext(ctx, "INSERT INTO record_changes (workspace_id, record_id) VALUES (?, ?)", ws, id)
	if err != nil {
		return mapErr("sqlite: change log", err)
	}
	// seq is the table's INTEGER PRIMARY KEY, so the rowid.
	seq, err := res.LastInsertId()
	if err != nil {
		return mapErr("sqlite: change log", err)
	}
	t.lastChange, t.lastWrite, t.lastWritten = seq, memory.Record{}, false
	return nil
}

func (c *conn) ListChanges(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	ctx = c.detach(ctx)
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	rows, err := c.db.QueryContext(ctx, "SELECT seq, workspace_id, record_id FROM record_changes WHERE seq > ? ORDER BY seq LIMIT ?", after, limit)
	if err != nil {
		return nil, mapErr("sqlite: changes", err)
	}
	defer rows.Close()
	var out []store.Change
	for rows.Next() {
		var ch store.Change
		if err := rows.Scan(&ch.Seq, &ch.Workspace, &ch.RecordID); err != nil {
			return nil, mapErr("sqlite: changes", err)
		}
		out = append(out, ch)
	}
	return out, mapErr("sqlite: changes", rows.Err())
}

func (c *conn) ChangeHead(ctx context.Context) (int64, error) {
	ctx = c.detach(ctx)
	var seq sql.NullInt64
	err := c.db.QueryRowContext(ctx, "SELECT max(seq) FROM record_changes").Scan(&seq)
	return seq.Int64, mapErr("sqlite: change head", err)
}

func (t *tx) logGraphChange(ctx context.Context, ws string, kind store.GraphItem, id string) error {
	_, err := t.db.ExecContext(ctx, "INSERT INTO graph_changes (workspace_id, kind, item_id) VALUES (?, ?, ?)", ws, string(kind), id)
	return mapErr("sqlite: graph change log", err)
}

func (c *conn) ListGraphChanges(ctx context.Context, after int64, limit int) ([]store.GraphChange, error) {
	ctx = c.detach(ctx)
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	rows, err := c.db.QueryContext(ctx, "SELECT seq, workspace_id, kind, item_id FROM graph_changes WHERE seq > ? ORDER BY seq LIMIT ?", after, limit)
	if err != nil {
		return nil, mapErr("sqlite: graph changes", err)
	}
	defer rows.Close()
	var out []store.GraphChange
	for rows.Next() {
		var ch store.GraphChange
		var kind string
		if err := rows.Scan(&ch.Seq, &ch.Workspace, &kind, &ch.ID); err != nil {
			return nil, mapErr("sqlite: graph changes", err)
		}
		ch.Kind = store.GraphItem(kind)
		out = append(out, ch)
	}
	return out, mapErr("sqlite: graph changes", rows.Err())
}

func (c *conn) GraphChangeHead(ctx context.Context) (int64, error) {
	ctx = c.detach(ctx)
	var seq sql.NullInt64
	err := c.db.QueryRowContext(ctx, "SELECT max(seq) FROM graph_changes").Scan(&seq)
	return seq.Int64, mapErr("sqlite: graph change head", err)
}
