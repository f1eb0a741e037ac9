package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func scanWorkspace(sc scanner) (memory.Workspace, error) {
	var (
		w        memory.Workspace
		settings string
		created  int64
	)
	if err := sc.Scan(&w.ID, &settings, &created); err != nil {
		return memory.Workspace{}, err
	}
	w.Settings = []byte(settings)
	w.CreatedAt = fromMicros(created)
	return w, nil
}

func (c *conn) GetWorkspace(ctx context.Context, id string) (memory.Workspace, error) {
	ctx = c.detach(ctx)
	w, err := scanWorkspace(c.stmt(ctx, stGetWorkspace).QueryRowContext(ctx, id))
	if err != nil {
		return memory.Workspace{}, mapErr("sqlite: get workspace "+id, err)
	}
	return w, nil
}

func (c *conn) ListWorkspaces(ctx context.Context) ([]memory.Workspace, error) {
	ctx = c.detach(ctx)
	rows, err := c.stmt(ctx, stListWorkspaces).QueryContext(ctx)
	if err != nil {
		return nil, mapErr("sqlite: list workspaces", err)
	}
	defer rows.Close()
	out := []memory.Workspace{}
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return nil, mapErr("sqlite: list workspaces", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("sqlite: list workspaces", err)
	}
	return out, nil
}

func (t *tx) CreateWorkspace(ctx context.Context, w memory.Workspace) error {
	ctx = t.detach(ctx)
	op := "sqlite: create workspace " + w.ID
	settings, err := jsonObject("settings", w.Settings)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	_, err = t.stmt(ctx, stCreateWorkspace).ExecContext(ctx, w.ID, settings, micros(w.CreatedAt))
	return mapErr(op, err)
}

func scanPrincipal(sc scanner) (memory.Principal, error) {
	var (
		p           memory.Principal
		kind, trust string
		created     int64
		revoked     sql.NullInt64
	)
	if err := sc.Scan(&p.ID, &p.Workspace, &kind, &p.Name, &trust, &p.TokenHash, &created, &revoked); err != nil {
		return memory.Principal{}, err
	}
	p.Kind = memory.PrincipalKind(kind)
	p.Trust = memory.Trust(trust)
	p.CreatedAt = fromMicros(created)
	p.RevokedAt = fromNullMicros(revoked)
	return p, nil
}

func (c *conn) GetPrincipal(ctx context.Context, ws, id string) (memory.Principal, error) {
	ctx = c.detach(ctx)
	p, err := scanPrincipal(c.stmt(ctx, stGetPrincipal).QueryRowContext(ctx, ws, id))
	if err != nil {
		return memory.Principal{}, mapErr("sqlite: get principal "+id, err)
	}
	return p, nil
}

func (c *conn) GetPrincipalByName(ctx context.Context, ws, name string) (memory.Principal, error) {
	ctx = c.detach(ctx)
	p, err := scanPrincipal(c.stmt(ctx, stGetPrincipalByName).QueryRowContext(ctx, ws, name))
	if err != nil {
		return memory.Principal{}, mapErr("sqlite: get principal by name", err)
	}
	return p, nil
}

// FindPrincipal looks a principal up by id in every workspace; it is the
// one read that is not scoped to a workspace (token authentication).
func (c *conn) FindPrincipal(ctx context.Context, id string) (memory.Principal, error) {
	ctx = c.detach(ctx)
	p, err := scanPrincipal(c.stmt(ctx, stFindPrincipal).QueryRowContext(ctx, id))
	if err != nil {
		return memory.Principal{}, mapErr("sqlite: find principal "+id, err)
	}
	return p, nil
}

// ListPrincipals lists a workspace's principals of one kind ("" for every
// kind) in creation order.
func (c *conn) ListPrincipals(ctx context.Context, ws string, kind memory.PrincipalKind) ([]memory.Principal, error) {
	ctx = c.detach(ctx)
	var (
		rows *sql.Rows
		err  error
	)
	if kind == "" {
		rows, err = c.stmt(ctx, stListPrincipals).QueryContext(ctx, ws)
	} else {
		rows, err = c.stmt(ctx, stListPrincipalsKind).QueryContext(ctx, ws, string(kind))
	}
	if err != nil {
		return nil, mapErr("sqlite: list principals", err)
	}
	defer rows.Close()
	out := []memory.Principal{}
	for rows.Next() {
		p, err := scanPrincipal(rows)
		if err != nil {
			return nil, mapErr("sqlite: list principals", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("sqlite: list principals", err)
	}
	return out, nil
}

func (t *tx) InsertPrincipal(ctx context.Context, p memory.Principal) error {
	ctx = t.detach(ctx)
	_, err := t.stmt(ctx, stInsertPrincipal).ExecContext(ctx,
		p.ID, p.Workspace, string(p.Kind), p.Name, string(p.Trust), p.TokenHash,
		micros(p.CreatedAt), nullMicros(p.RevokedAt))
	return mapErr("sqlite: insert principal "+p.ID, err)
}

func (t *tx) SetCredential(ctx context.Context, ws, id string, hash []byte) error {
	ctx = t.detach(ctx)
	op := "sqlite: set credential of principal " + id
	res, err := t.stmt(ctx, stSetCredential).ExecContext(ctx, hash, ws, id)
	if err != nil {
		return mapErr(op, err)
	}
	return requireOne(op, res)
}

func (t *tx) RevokePrincipal(ctx context.Context, ws, id string, at time.Time) error {
	ctx = t.detach(ctx)
	op := "sqlite: revoke principal " + id
	res, err := t.stmt(ctx, stRevokePrincipal).ExecContext(ctx, micros(at), ws, id)
	if err != nil {
		return mapErr(op, err)
	}
	return requireOne(op, res)
}

func (t *tx) SetTrust(ctx context.Context, ws, id string, trust memory.Trust) error {
	ctx = t.detach(ctx)
	op := "sqlite: set trust of principal " + id
	res, err := t.db.ExecContext(ctx, `UPDATE principals SET trust = ? WHERE workspace_id = ? AND id = ?`, string(trust), ws, id)
	if err != nil {
		return mapErr(op, err)
	}
	return requireOne(op, res)
}

// requireOne reports store.ErrNotFound unless res changed exactly one row.
func requireOne(op string, res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return nil
}
