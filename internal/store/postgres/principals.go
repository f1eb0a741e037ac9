package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func scanWorkspace(row pgx.Row) (memory.Workspace, error) {
	var (
		w        memory.Workspace
		settings string
	)
	if err := row.Scan(&w.ID, &settings, &w.CreatedAt); err != nil {
		return memory.Workspace{}, err
	}
	w.Settings = []byte(settings)
	w.CreatedAt = utc(w.CreatedAt)
	return w, nil
}

func (c *conn) GetWorkspace(ctx context.Context, id string) (memory.Workspace, error) {
	w, err := scanWorkspace(c.q.QueryRow(ctx, `SELECT id, settings, created_at FROM workspaces WHERE id = $1`, id))
	if err != nil {
		return memory.Workspace{}, mapErr("postgres: get workspace "+id, err)
	}
	return w, nil
}

func (c *conn) ListWorkspaces(ctx context.Context) ([]memory.Workspace, error) {
	rows, err := c.q.Query(ctx, `SELECT id, settings, created_at FROM workspaces ORDER BY id`)
	if err != nil {
		return nil, mapErr("postgres: list workspaces", err)
	}
	defer rows.Close()
	out := []memory.Workspace{}
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return nil, mapErr("postgres: list workspaces", err)
		}
		out = append(out, w)
	}
	return out, mapErr("postgres: list workspaces", rows.Err())
}

func (t *tx) CreateWorkspace(ctx context.Context, w memory.Workspace) error {
	op := "postgres: create workspace " + w.ID
	settings, err := jsonObject("settings", w.Settings)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	_, err = t.q.Exec(ctx, `INSERT INTO workspaces (id, settings, created_at) VALUES ($1, $2, $3)`, w.ID, settings, w.CreatedAt)
	return mapErr(op, err)
}

const principalCols = "id, workspace_id, kind, name, trust, token_hash, created_at, revoked_at"

func scanPrincipal(row pgx.Row) (memory.Principal, error) {
	var (
		p           memory.Principal
		kind, trust string
	)
	if err := row.Scan(&p.ID, &p.Workspace, &kind, &p.Name, &trust, &p.TokenHash, &p.CreatedAt, &p.RevokedAt); err != nil {
		return memory.Principal{}, err
	}
	p.Kind = memory.PrincipalKind(kind)
	p.Trust = memory.Trust(trust)
	p.CreatedAt = utc(p.CreatedAt)
	p.RevokedAt = utcPtr(p.RevokedAt)
	return p, nil
}

func (c *conn) GetPrincipal(ctx context.Context, ws, id string) (memory.Principal, error) {
	p, err := scanPrincipal(c.q.QueryRow(ctx, `SELECT `+principalCols+` FROM principals WHERE workspace_id = $1 AND id = $2`, ws, id))
	if err != nil {
		return memory.Principal{}, mapErr("postgres: get principal "+id, err)
	}
	return p, nil
}

func (c *conn) GetPrincipalByName(ctx context.Context, ws, name string) (memory.Principal, error) {
	p, err := scanPrincipal(c.q.QueryRow(ctx, `SELECT `+principalCols+` FROM principals WHERE workspace_id = $1 AND name = $2`, ws, name))
	if err != nil {
		return memory.Principal{}, mapErr("postgres: get principal by name", err)
	}
	return p, nil
}

// FindPrincipal looks a principal up by id in every workspace; it is the
// one read that is not scoped to a workspace (token authentication).
func (c *conn) FindPrincipal(ctx context.Context, id string) (memory.Principal, error) {
	p, err := scanPrincipal(c.q.QueryRow(ctx, `SELECT `+principalCols+` FROM principals WHERE id = $1`, id))
	if err != nil {
		return memory.Principal{}, mapErr("postgres: find principal "+id, err)
	}
	return p, nil
}

// ListPrincipals lists a workspace's principals of one kind ("" for every
// kind) in creation order.
func (c *conn) ListPrincipals(ctx context.Context, ws string, kind memory.PrincipalKind) ([]memory.Principal, error) {
	rows, err := c.q.Query(ctx, `SELECT `+principalCols+` FROM principals WHERE workspace_id = $1 AND ($2 = '' OR kind = $2)
		ORDER BY created_at, id`, ws, string(kind))
	if err != nil {
		return nil, mapErr("postgres: list principals", err)
	}
	defer rows.Close()
	out := []memory.Principal{}
	for rows.Next() {
		p, err := scanPrincipal(rows)
		if err != nil {
			return nil, mapErr("postgres: list principals", err)
		}
		out = append(out, p)
	}
	return out, mapErr("postgres: list principals", rows.Err())
}

func (t *tx) InsertPrincipal(ctx context.Context, p memory.Principal) error {
	_, err := t.q.Exec(ctx, `INSERT INTO principals (`+principalCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		p.ID, p.Workspace, string(p.Kind), p.Name, string(p.Trust), p.TokenHash, p.CreatedAt, p.RevokedAt)
	return mapErr("postgres: insert principal "+p.ID, err)
}

func (t *tx) SetCredential(ctx context.Context, ws, id string, hash []byte) error {
	tag, err := t.q.Exec(ctx, `UPDATE principals SET token_hash = $1, revoked_at = NULL WHERE workspace_id = $2 AND id = $3`, hash, ws, id)
	return affectedOne("postgres: set credential of principal "+id, tag, err)
}

func (t *tx) RevokePrincipal(ctx context.Context, ws, id string, at time.Time) error {
	tag, err := t.q.Exec(ctx, `UPDATE principals SET revoked_at = $1 WHERE workspace_id = $2 AND id = $3`, at, ws, id)
	return affectedOne("postgres: revoke principal "+id, tag, err)
}

func (t *tx) SetTrust(ctx context.Context, ws, id string, trust memory.Trust) error {
	tag, err := t.q.Exec(ctx, `UPDATE principals SET trust = $1 WHERE workspace_id = $2 AND id = $3`, string(trust), ws, id)
	return affectedOne("postgres: set trust of principal "+id, tag, err)
}

// affectedOne reports store.ErrNotFound unless the statement changed a row.
func affectedOne(op string, tag pgconn.CommandTag, err error) error {
	if err != nil {
		return mapErr(op, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	return nil
}
