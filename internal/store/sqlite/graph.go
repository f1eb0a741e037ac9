package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

const (
	nodeCols = "workspace_id, id, label, natural_key, properties, provenance, status, created_at, updated_at, access, writer, grants"
	edgeCols = "workspace_id, id, from_id, to_id, relation, weight, properties, observed_at, valid_from, valid_until, invalidated_at, created_at, updated_at, access, writer"
)

func scanNode(sc scanner) (string, memory.Node, error) {
	var (
		ws, props, prov, status, access string
		created, updated                int64
		grants                          *string
		n                               memory.Node
	)
	if err := sc.Scan(&ws, &n.ID, &n.Label, &n.NaturalKey, &props, &prov, &status, &created, &updated, &access, &n.Writer, &grants); err != nil {
		return "", memory.Node{}, err
	}
	n.Access, n.Grants = memory.Access(access), store.DecodeGrants(grants)
	n.Properties = []byte(props)
	n.Provenance, n.Status = memory.NodeProvenance(prov), memory.NodeStatus(status)
	n.CreatedAt, n.UpdatedAt = fromMicros(created), fromMicros(updated)
	return ws, n, nil
}

func scanEdge(sc scanner) (string, memory.Edge, error) {
	var (
		ws, props, access          string
		observed, created, updated int64
		from, until, inval         sql.NullInt64
		e                          memory.Edge
	)
	if err := sc.Scan(&ws, &e.ID, &e.From, &e.To, &e.Relation, &e.Weight, &props, &observed, &from, &until, &inval, &created, &updated,
		&access, &e.Writer); err != nil {
		return "", memory.Edge{}, err
	}
	e.Access = memory.Access(access)
	e.Properties = []byte(props)
	e.ObservedAt, e.CreatedAt, e.UpdatedAt = fromMicros(observed), fromMicros(created), fromMicros(updated)
	e.ValidFrom, e.ValidUntil, e.InvalidatedAt = fromNullMicros(from), fromNullMicros(until), fromNullMicros(inval)
	return ws, e, nil
}

func (c *conn) GetNode(ctx context.Context, f store.NodeFind) (memory.Node, error) {
	if err := f.Check(); err != nil {
		return memory.Node{}, err
	}
	ctx = c.detach(ctx)
	q, args := "SELECT "+nodeCols+" FROM nodes WHERE workspace_id = ? AND id = ?", []any{f.Workspace, f.ID}
	if f.ID == "" {
		q, args = "SELECT "+nodeCols+" FROM nodes WHERE workspace_id = ? AND label = ? AND natural_key = ?", []any{f.Workspace, f.Label, f.Key}
	}
	_, n, err := scanNode(c.db.QueryRowContext(ctx, q, args...))
	if err != nil {
		return memory.Node{}, mapErr("sqlite: get node", err)
	}
	return n, nil
}

func (c *conn) ListNodes(ctx context.Context, ws string, q store.NodeQuery) ([]memory.Node, error) {
	ctx = c.detach(ctx)
	sqlq := "SELECT " + nodeCols + " FROM nodes WHERE workspace_id = ? AND id > ?"
	args := []any{ws, q.After}
	if len(q.Labels) > 0 {
		sqlq += " AND label IN (" + placeholders(len(q.Labels)) + ")"
		for _, l := range q.Labels {
			args = append(args, l)
		}
	}
	if len(q.Statuses) > 0 {
		sqlq += " AND status IN (" + placeholders(len(q.Statuses)) + ")"
		for _, st := range q.Statuses {
			args = append(args, string(st))
		}
	}
	sqlq += " ORDER BY id LIMIT ?"
	args = append(args, pageLimit(q.Limit))
	rows, err := c.db.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, mapErr("sqlite: list nodes", err)
	}
	defer rows.Close()
	out := []memory.Node{}
	for rows.Next() {
		_, n, err := scanNode(rows)
		if err != nil {
			return nil, mapErr("sqlite: list nodes", err)
		}
		out = append(out, n)
	}
	return out, mapErr("sqlite: list nodes", rows.Err())
}

func (c *conn) GetEdge(ctx context.Context, ws, id string) (memory.Edge, error) {
	ctx = c.detach(ctx)
	_, e, err := scanEdge(c.db.QueryRowContext(ctx, "SELECT "+edgeCols+" FROM edges WHERE workspace_id = ? AND id = ?", ws, id))
	if err != nil {
		return memory.Edge{}, mapErr("sqlite: get edge", err)
	}
	return e, nil
}

func (c *conn) FindLiveEdge(ctx context.Context, ws, from, to, relation string) (memory.Edge, error) {
	ctx = c.detach(ctx)
	_, e, err := scanEdge(c.db.QueryRowContext(ctx, "SELECT "+edgeCols+` FROM edges WHERE workspace_id = ? AND from_id = ?
		AND to_id = ? AND relation = ? AND invalidated_at IS NULL`, ws, from, to, relation))
	if err != nil {
		return memory.Edge{}, mapErr("sqlite: find edge", err)
	}
	return e, nil
}

func (c *conn) ListEdges(ctx context.Context, ws string, q store.EdgeQuery) ([]memory.Edge, error) {
	ctx = c.detach(ctx)
	live := ""
	if !q.IncludeInvalidated {
		live = " AND invalidated_at IS NULL"
	}
	var rows *sql.Rows
	var err error
	if q.Node == "" {
		rows, err = c.db.QueryContext(ctx, "SELECT "+edgeCols+" FROM edges WHERE workspace_id = ? AND id > ?"+live+" ORDER BY id LIMIT ?",
			ws, q.After, pageLimit(q.Limit))
	} else {
		rows, err = c.db.QueryContext(ctx, "SELECT "+edgeCols+" FROM edges WHERE workspace_id = ? AND id > ? AND (from_id = ? OR to_id = ?)"+
			live+" ORDER BY id LIMIT ?", ws, q.After, q.Node, q.Node, pageLimit(q.Limit))
	}
	if err != nil {
		return nil, mapErr("sqlite: list edges", err)
	}
	defer rows.Close()
	out := []memory.Edge{}
	for rows.Next() {
		_, e, err := scanEdge(rows)
		if err != nil {
			return nil, mapErr("sqlite: list edges", err)
		}
		out = append(out, e)
	}
	return out, mapErr("sqlite: list edges", rows.Err())
}

func (c *conn) ScanGraph(ctx context.Context, fn func(ws string, n *memory.Node, e *memory.Edge) error) error {
	ctx = c.detach(ctx)
	rows, err := c.db.QueryContext(ctx, "SELECT "+nodeCols+" FROM nodes ORDER BY id")
	if err != nil {
		return mapErr("sqlite: scan nodes", err)
	}
	for rows.Next() {
		ws, n, err := scanNode(rows)
		if err == nil {
			err = fn(ws, &n, nil)
		}
		if err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return mapErr("sqlite: scan nodes", err)
	}
	rows, err = c.db.QueryContext(ctx, "SELECT "+edgeCols+" FROM edges ORDER BY id")
	if err != nil {
		return mapErr("sqlite: scan edges", err)
	}
	defer rows.Close()
	for rows.Next() {
		ws, e, err := scanEdge(rows)
		if err == nil {
			err = fn(ws, nil, &e)
		}
		if err != nil {
			return err
		}
	}
	return mapErr("sqlite: scan edges", rows.Err())
}

func (t *tx) InsertNode(ctx context.Context, ws string, n memory.Node) error {
	_, err := t.insertNode(ctx, ws, n, "")
	return err
}

// insertNode inserts n, with onConflict (empty or an ON CONFLICT clause)
// after its values, and logs the change if a row was inserted.
func (t *tx) insertNode(ctx context.Context, ws string, n memory.Node, onConflict string) (inserted bool, err error) {
	ctx = t.detach(ctx)
	props, err := jsonObject("properties", n.Properties)
	if err != nil {
		return false, err
	}
	res, err := t.db.ExecContext(ctx, "INSERT INTO nodes ("+nodeCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"+onConflict,
		ws, n.ID, n.Label, n.NaturalKey, props, string(n.Provenance), string(n.Status), micros(n.CreatedAt), micros(n.UpdatedAt),
		string(n.Access), n.Writer, store.EncodeGrants(n.Grants))
	if err != nil {
		return false, mapErr("sqlite: insert node", err)
	}
	if onConflict != "" {
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return false, mapErr("sqlite: insert node", err)
		}
	}
	return true, t.logGraphChange(ctx, ws, store.GraphNode, n.ID)
}

func (t *tx) EnsureNode(ctx context.Context, ws string, n memory.Node) (memory.Node, bool, error) {
	// Insert first and read only when the label and key are taken: a new
	// node (the usual case: callers have looked it up already) costs one
	// statement, not a lookup and an insert. SQLite has one writer at a
	// time, so nothing can come between the two.
	inserted, err := t.insertNode(ctx, ws, n, " ON CONFLICT (workspace_id, label, natural_key) DO NOTHING")
	switch {
	case err != nil:
		return memory.Node{}, false, err
	case inserted:
		return n, true, nil
	}
	got, err := t.GetNode(ctx, store.NodeFind{Workspace: ws, Label: n.Label, Key: n.NaturalKey})
	if err != nil {
		return memory.Node{}, false, err
	}
	return got, false, nil
}

func (t *tx) UpdateNode(ctx context.Context, ws string, n memory.Node) error {
	ctx = t.detach(ctx)
	props, err := jsonObject("properties", n.Properties)
	if err != nil {
		return err
	}
	res, err := t.db.ExecContext(ctx, `UPDATE nodes SET label = ?, natural_key = ?, properties = ?, provenance = ?, status = ?,
		created_at = ?, updated_at = ?, access = ?, writer = ?, grants = ? WHERE workspace_id = ? AND id = ?`,
		n.Label, n.NaturalKey, props, string(n.Provenance), string(n.Status), micros(n.CreatedAt), micros(n.UpdatedAt),
		string(n.Access), n.Writer, store.EncodeGrants(n.Grants), ws, n.ID)
	if err := affectedOne("sqlite: update node", res, err); err != nil {
		return err
	}
	return t.logGraphChange(ctx, ws, store.GraphNode, n.ID)
}

func affectedOne(op string, res sql.Result, err error) error {
	if err != nil {
		return mapErr(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return nil
}

func (t *tx) InsertEdge(ctx context.Context, ws string, e memory.Edge) error {
	ctx = t.detach(ctx)
	props, err := jsonObject("properties", e.Properties)
	if err != nil {
		return err
	}
	_, err = t.db.ExecContext(ctx, "INSERT INTO edges ("+edgeCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		ws, e.ID, e.From, e.To, e.Relation, e.Weight, props, micros(e.ObservedAt), nullMicros(e.ValidFrom), nullMicros(e.ValidUntil),
		nullMicros(e.InvalidatedAt), micros(e.CreatedAt), micros(e.UpdatedAt), string(e.Access), e.Writer)
	if err != nil {
		return mapErr("sqlite: insert edge", err)
	}
	return t.logGraphChange(ctx, ws, store.GraphEdge, e.ID)
}

func (t *tx) EnsureEdge(ctx context.Context, ws string, e memory.Edge) (memory.Edge, bool, error) {
	if e.InvalidatedAt != nil {
		return memory.Edge{}, false, errors.New("sqlite: ensure edge: the edge is not live")
	}
	got, err := t.FindLiveEdge(ctx, ws, e.From, e.To, e.Relation)
	switch {
	case err == nil:
		return got, false, nil
	case !errors.Is(err, store.ErrNotFound):
		return memory.Edge{}, false, err
	}
	if err := t.InsertEdge(ctx, ws, e); err != nil {
		return memory.Edge{}, false, err
	}
	return e, true, nil
}

func (t *tx) UpdateEdge(ctx context.Context, ws string, e memory.Edge) error {
	ctx = t.detach(ctx)
	props, err := jsonObject("properties", e.Properties)
	if err != nil {
		return err
	}
	res, err := t.db.ExecContext(ctx, `UPDATE edges SET from_id = ?, to_id = ?, relation = ?, weight = ?, properties = ?, observed_at = ?,
		valid_from = ?, valid_until = ?, invalidated_at = ?, created_at = ?, updated_at = ?, access = ?, writer = ? WHERE workspace_id = ? AND id = ?`,
		e.From, e.To, e.Relation, e.Weight, props, micros(e.ObservedAt), nullMicros(e.ValidFrom), nullMicros(e.ValidUntil),
		nullMicros(e.InvalidatedAt), micros(e.CreatedAt), micros(e.UpdatedAt), string(e.Access), e.Writer, ws, e.ID)
	if err := affectedOne("sqlite: update edge", res, err); err != nil {
		return err
	}
	return t.logGraphChange(ctx, ws, store.GraphEdge, e.ID)
}

func (t *tx) DeleteEdge(ctx context.Context, ws, id string) error {
	ctx = t.detach(ctx)
	res, err := t.db.ExecContext(ctx, "DELETE FROM edges WHERE workspace_id = ? AND id = ?", ws, id)
	if err := affectedOne("sqlite: delete edge", res, err); err != nil {
		return err
	}
	return t.logGraphChange(ctx, ws, store.GraphEdge, id)
}

func (c *conn) MentioningRecords(ctx context.Context, ws, entity string, limit int) ([]string, error) {
	ctx = c.detach(ctx)
	rows, err := c.db.QueryContext(ctx, `SELECT record_id FROM record_entities WHERE workspace_id = ? AND entity = ?
		ORDER BY record_id DESC LIMIT ?`, ws, entity, pageLimit(limit))
	if err != nil {
		return nil, mapErr("sqlite: mentioning records", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, mapErr("sqlite: mentioning records", err)
		}
		out = append(out, id)
	}
	return out, mapErr("sqlite: mentioning records", rows.Err())
}

// NamesEntity reports whether any record head names entity
// (store.EntityNamer).
func (c *conn) NamesEntity(ctx context.Context, ws, entity string) (bool, error) {
	ctx = c.detach(ctx)
	var named bool
	err := c.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM record_entities WHERE workspace_id = ? AND entity = ?)", ws, entity).Scan(&named)
	return named, mapErr("sqlite: names entity", err)
}
