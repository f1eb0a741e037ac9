package postgres

import (
	"context"
	"time"

	"github.com/memgate/memgate/internal/store"
)

const sessionCols = "id_hash, workspace_id, principal_id, csrf, created_at, expires_at"

func (c *conn) GetSession(ctx context.Context, idHash string) (store.Session, error) {
	var s store.Session
	err := c.q.QueryRow(ctx, "SELECT "+sessionCols+" FROM console_sessions WHERE id_hash = $1", idHash).
		Scan(&s.IDHash, &s.Workspace, &s.PrincipalID, &s.CSRF, &s.CreatedAt, &s.ExpiresAt)
	if err != nil {
		return store.Session{}, mapErr("postgres: get session", err)
	}
	s.CreatedAt, s.ExpiresAt = utc(s.CreatedAt), utc(s.ExpiresAt)
	return s, nil
}

func (t *tx) InsertSession(ctx context.Context, s store.Session) error {
	_, err := t.q.Exec(ctx, "INSERT INTO console_sessions ("+sessionCols+") VALUES ($1, $2, $3, $4, $5, $6)",
		s.IDHash, s.Workspace, s.PrincipalID, s.CSRF, s.CreatedAt, s.ExpiresAt)
	return mapErr("postgres: insert session", err)
}

func (t *tx) DeleteSession(ctx context.Context, idHash string) error {
	_, err := t.q.Exec(ctx, "DELETE FROM console_sessions WHERE id_hash = $1", idHash)
	return mapErr("postgres: delete session", err)
}

func (t *tx) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	tag, err := t.q.Exec(ctx, "DELETE FROM console_sessions WHERE expires_at <= $1", now)
	if err != nil {
		return 0, mapErr("postgres: delete expired sessions", err)
	}
	return int(tag.RowsAffected()), nil
}
