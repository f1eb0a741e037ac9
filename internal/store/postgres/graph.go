package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

const (
	nodeCols = "workspace_id, id, label, natural_key, properties, provenance, status, created_at, updated_at, access, writer, grants"
	edgeCols = "workspace_id, id, from_id, to_id, relation, weight, properties, observed_at, valid_from, valid_until, invalidated_at, created_at, updated_at, access, writer"
)

func scanNode(row pgx.Row) (string, memory.Node, error) {
	var (
		ws, props, prov, status, access string
		grants                          *string
		n                               memory.Node
	)
	if err := row.Scan(&ws, &n.ID, &n.Label, &n.NaturalKey, &props, &prov, &status, &n.CreatedAt, &n.UpdatedAt, &access, &n.Writer, &grants); err != nil {
		return "", memory.Node{}, err
	}
	n.Access, n.Grants = memory.Access(access), store.DecodeGrants(grants)
	n.Properties = []byte(props)
	n.Provenance, n.Status = memory.NodeProvenance(prov), memory.NodeStatus(status)
	n.CreatedAt, n.UpdatedAt = utc(n.CreatedAt), utc(n.UpdatedAt)
	return ws, n, nil
}

func scanEdge(row pgx.Row) (string, memory.Edge, error) {
	var (
		ws, props, access string
		e                 memory.Edge
	)
	if err := row.Scan(&ws, &e.ID, &e.From, &e.To, &e.Relation, &e.Weight, &props, &e.ObservedAt, &e.ValidFrom, &e.ValidUntil,
		&e.InvalidatedAt, &e.CreatedAt, &e.UpdatedAt, &access, &e.Writer); err != nil {
		return "", memory.Edge{}, err
	}
	e.Access = memory.Access(access)
	e.Properties = []byte(props)
	e.ObservedAt, e.CreatedAt, e.UpdatedAt = utc(e.ObservedAt), utc(e.CreatedAt), utc(e.UpdatedAt)
	e.ValidFrom, e.ValidUntil, e.InvalidatedAt = utcPtr(e.ValidFrom), utcPtr(e.ValidUntil), utcPtr(e.InvalidatedAt)
	return ws, e, nil
}

func (c *conn) GetNode(ctx context.Context, f store.NodeFind) (memory.Node, error) {
	if err := f.Check(); err != nil {
		return memory.Node{}, err
	}
	q, args := "SELECT "+nodeCols+" FROM nodes WHERE workspace_id = $1 AND id = $2", []any{f.Workspace, f.ID}
	if f.ID == "" {
		q, args = "SELECT "+nodeCols+" FROM nodes WHERE workspace_id = $1 AND label = $2 AND natural_key = $3", []any{f.Workspace, f.Label, f.Key}
	}
	_, n, err := scanNode(c.q.QueryRow(ctx, q, args...))
	if err != nil {
		return memory.Node{}, mapErr("postgres: get node", err)
	}
	return n, nil
}

func (c *conn) ListNodes(ctx context.Context, ws string, q store.NodeQuery) ([]memory.Node, error) {
	statuses := make([]string, len(q.Statuses))
	for i, s := range q.Statuses {
		statuses[i] = string(s)
	}
	rows, err := c.q.Query(ctx, "SELECT "+nodeCols+` FROM nodes WHERE workspace_id = $1 AND id > $2
		AND (cardinality($3::text[]) = 0 OR label = ANY($3::text[]))
		AND (cardinality($4::text[]) = 0 OR status = ANY($4::text[]))
		ORDER BY id LIMIT $5`, ws, q.After, list(q.Labels), statuses, pageLimit(q.Limit))
	if err != nil {
		return nil, mapErr("postgres: list nodes", err)
	}
	defer rows.Close()
	out := []memory.Node{}
	for rows.Next() {
		_, n, err := scanNode(rows)
		if err != nil {
			return nil, mapErr("postgres: list nodes", err)
		}
		out = append(out, n)
	}
	return out, mapErr("postgres: list nodes", rows.Err())
}

func (c *conn) GetEdge(ctx context.Context, ws, id string) (memory.Edge, error) {
	_, e, err := scanEdge(c.q.QueryRow(ctx, "SELECT "+edgeCols+" FROM edges WHERE workspace_id = $1 AND id = $2", ws, id))
	if err != nil {
		return memory.Edge{}, mapErr("postgres: get edge", err)
	}
	return e, nil
}

func (c *conn) FindLiveEdge(ctx context.Context, ws, from, to, relation string) (memory.Edge, error) {
	_, e, err := scanEdge(c.q.QueryRow(ctx, "SELECT "+edgeCols+` FROM edges WHERE workspace_id = $1 AND from_id = $2
		AND to_id = $3 AND relation = $4 AND invalidated_at IS NULL`, ws, from, to, relation))
	if err != nil {
		return memory.Edge{}, mapErr("postgres: find edge", err)
	}
	return e, nil
}

func (c *conn) ListEdges(ctx context.Context, ws string, q store.EdgeQuery) ([]memory.Edge, error) {
	live := ""
	if !q.IncludeInvalidated {
		live = " AND invalidated_at IS NULL"
	}
	var (
		rows pgx.Rows
		err  error
	)
	if q.Node == "" {
		rows, err = c.q.Query(ctx, "SELECT "+edgeCols+" FROM edges WHERE workspace_id = $1 AND id > $2"+live+" ORDER BY id LIMIT $3",
			ws, q.After, pageLimit(q.Limit))
	} else {
		rows, err = c.q.Query(ctx, "SELECT "+edgeCols+" FROM edges WHERE workspace_id = $1 AND id > $2 AND (from_id = $3 OR to_id = $3)"+
			live+" ORDER BY id LIMIT $4", ws, q.After, q.Node, pageLimit(q.Limit))
	}
	if err != nil {
		return nil, mapErr("postgres: list edges", err)
	}
	defer rows.Close()
	out := []memory.Edge{}
	for rows.Next() {
		_, e, err := scanEdge(rows)
		if err != nil {
			return nil, mapErr("postgres: list edges", err)
		}
		out = append(out, e)
	}
	return out, mapErr("postgres: list edges", rows.Err())
}

func (c *conn) ScanGraph(ctx context.Context, fn func(ws string, n *memory.Node, e *memory.Edge) error) error {
	rows, err := c.q.Query(ctx, "SELECT "+nodeCols+" FROM nodes ORDER BY id")
	if err != nil {
		return mapErr("postgres: scan nodes", err)
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
		return mapErr("postgres: scan nodes", err)
	}
	rows, err = c.q.Query(ctx, "SELECT "+edgeCols+" FROM edges ORDER BY id")
	if err != nil {
		return mapErr("postgres: scan edges", err)
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
	return mapErr("postgres: scan edges", rows.Err())
}

func (t *tx) InsertNode(ctx context.Context, ws string, n memory.Node) error {
	props, err := jsonObject("properties", n.Properties)
	if err != nil {
		return err
	}
	_, err = t.q.Exec(ctx, "INSERT INTO nodes ("+nodeCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
		ws, n.ID, n.Label, n.NaturalKey, props, string(n.Provenance), string(n.Status), n.CreatedAt, n.UpdatedAt,
		string(n.Access), n.Writer, store.EncodeGrants(n.Grants))
	if err != nil {
		return mapErr("postgres: insert node", err)
	}
	t.logGraphChange(ws, store.GraphNode, n.ID)
	return nil
}

func (t *tx) EnsureNode(ctx context.Context, ws string, n memory.Node) (memory.Node, bool, error) {
	props, err := jsonObject("properties", n.Properties)
	if err != nil {
		return memory.Node{}, false, err
	}
	// ON CONFLICT on the natural key waits for a concurrent transaction
	// that inserted the same key and, once it commits, inserts nothing;
	// the SELECT that follows (a new snapshot under READ COMMITTED) then
	// sees its node. A plain INSERT would fail with a unique violation
	// and abort this transaction.
	tag, err := t.q.Exec(ctx, "INSERT INTO nodes ("+nodeCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (workspace_id, label, natural_key) DO NOTHING`,
		ws, n.ID, n.Label, n.NaturalKey, props, string(n.Provenance), string(n.Status), n.CreatedAt, n.UpdatedAt,
		string(n.Access), n.Writer, store.EncodeGrants(n.Grants))
	if err != nil {
		return memory.Node{}, false, mapErr("postgres: ensure node", err)
	}
	if tag.RowsAffected() == 1 {
		t.logGraphChange(ws, store.GraphNode, n.ID)
		return n, true, nil
	}
	got, err := t.GetNode(ctx, store.NodeFind{Workspace: ws, Label: n.Label, Key: n.NaturalKey})
	return got, false, err
}

func (t *tx) UpdateNode(ctx context.Context, ws string, n memory.Node) error {
	props, err := jsonObject("properties", n.Properties)
	if err != nil {
		return err
	}
	tag, err := t.q.Exec(ctx, `UPDATE nodes SET label = $1, natural_key = $2, properties = $3, provenance = $4, status = $5,
		created_at = $6, updated_at = $7, access = $8, writer = $9, grants = $10 WHERE workspace_id = $11 AND id = $12`,
		n.Label, n.NaturalKey, props, string(n.Provenance), string(n.Status), n.CreatedAt, n.UpdatedAt,
		string(n.Access), n.Writer, store.EncodeGrants(n.Grants), ws, n.ID)
	if err := affectedOne("postgres: update node", tag, err); err != nil {
		return err
	}
	t.logGraphChange(ws, store.GraphNode, n.ID)
	return nil
}

func (t *tx) InsertEdge(ctx context.Context, ws string, e memory.Edge) error {
	props, err := jsonObject("properties", e.Properties)
	if err != nil {
		return err
	}
	_, err = t.q.Exec(ctx, "INSERT INTO edges ("+edgeCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
		ws, e.ID, e.From, e.To, e.Relation, e.Weight, props, e.ObservedAt, e.ValidFrom, e.ValidUntil,
		e.InvalidatedAt, e.CreatedAt, e.UpdatedAt, string(e.Access), e.Writer)
	if err != nil {
		return mapErr("postgres: insert edge", err)
	}
	t.logGraphChange(ws, store.GraphEdge, e.ID)
	return nil
}

func (t *tx) EnsureEdge(ctx context.Context, ws string, e memory.Edge) (memory.Edge, bool, error) {
	if e.InvalidatedAt != nil {
		return memory.Edge{}, false, errors.New("postgres: ensure edge: the edge is not live")
	}
	props, err := jsonObject("properties", e.Properties)
	if err != nil {
		return memory.Edge{}, false, err
	}
	// As EnsureNode, on the partial unique index of live edges.
	tag, err := t.q.Exec(ctx, "INSERT INTO edges ("+edgeCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (workspace_id, from_id, to_id, relation) WHERE invalidated_at IS NULL DO NOTHING`,
		ws, e.ID, e.From, e.To, e.Relation, e.Weight, props, e.ObservedAt, e.ValidFrom, e.ValidUntil,
		e.InvalidatedAt, e.CreatedAt, e.UpdatedAt, string(e.Access), e.Writer)
	if err != nil {
		return memory.Edge{}, false, mapErr("postgres: ensure edge", err)
	}
	if tag.RowsAffected() == 1 {
		t.logGraphChange(ws, store.GraphEdge, e.ID)
		return e, true, nil
	}
	got, err := t.FindLiveEdge(ctx, ws, e.From, e.To, e.Relation)
	return got, false, err
}

func (t *tx) UpdateEdge(ctx context.Context, ws string, e memory.Edge) error {
	props, err := jsonObject("properties", e.Properties)
	if err != nil {
		return err
	}
	tag, err := t.q.Exec(ctx, `UPDATE edges SET from_id = $1, to_id = $2, relation = $3, weight = $4, properties = $5, observed_at = $6,
		valid_from = $7, valid_until = $8, invalidated_at = $9, created_at = $10, updated_at = $11, access = $12, writer = $13
		WHERE workspace_id = $14 AND id = $15`,
		e.From, e.To, e.Relation, e.Weight, props, e.ObservedAt, e.ValidFrom, e.ValidUntil,
		e.InvalidatedAt, e.CreatedAt, e.UpdatedAt, string(e.Access), e.Writer, ws, e.ID)
	if err := affectedOne("postgres: update edge", tag, err); err != nil {
		return err
	}
	t.logGraphChange(ws, store.GraphEdge, e.ID)
	return nil
}

func (t *tx) DeleteEdge(ctx context.Context, ws, id string) error {
	tag, err := t.q.Exec(ctx, "DELETE FROM edges WHERE workspace_id = $1 AND id = $2", ws, id)
	if err := affectedOne("postgres: delete edge", tag, err); err != nil {
		return err
	}
	t.logGraphChange(ws, store.GraphEdge, id)
	return nil
}

func (c *conn) MentioningRecords(ctx context.Context, ws, entity string, limit int) ([]string, error) {
	rows, err := c.q.Query(ctx, `SELECT record_id FROM record_entities WHERE workspace_id = $1 AND entity = $2
		ORDER BY record_id DESC LIMIT $3`, ws, entity, pageLimit(limit))
	if err != nil {
		return nil, mapErr("postgres: mentioning records", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, mapErr("postgres: mentioning records", err)
		}
		out = append(out, id)
	}
	return out, mapErr("postgres: mentioning records", rows.Err())
}

// NamesEntity reports whether any record head names entity
// (store.EntityNamer).
func (c *conn) NamesEntity(ctx context.Context, ws, entity string) (bool, error) {
	var named bool
	err := c.q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM record_entities WHERE workspace_id = $1 AND entity = $2)", ws, entity).Scan(&named)
	return named, mapErr("postgres: names entity", err)
}
