package sqlite

import (
	"context"
	"time"

	"github.com/memgate/memgate/internal/store"
)

const sessionCols = "id_hash, workspace_id, principal_id, csrf, created_at, expires_at"

func (c *conn) GetSession(ctx context.Context, idHash string) (store.Session, error) {
	ctx = c.detach(ctx)
	var (
		s                store.Session
		created, expires int64
	)
	err := c.db.QueryRowContext(ctx, "SELECT "+sessionCols+" FROM console_sessions WHERE id_hash = ?", idHash).
		Scan(&s.IDHash, &s.Workspace, &s.PrincipalID, &s.CSRF, &created, &expires)
	if err != nil {
		return store.Session{}, mapErr("sqlite: get session", err)
	}
	s.CreatedAt, s.ExpiresAt = fromMicros(created), fromMicros(expires)
	return s, nil
}

func (t *tx) InsertSession(ctx context.Context, s store.Session) error {
	ctx = t.detach(ctx)
	_, err := t.db.ExecContext(ctx, "INSERT INTO console_sessions ("+sessionCols+") VALUES (?, ?, ?, ?, ?, ?)",
		s.IDHash, s.Workspace, s.PrincipalID, s.CSRF, micros(s.CreatedAt), micros(s.ExpiresAt))
	return mapErr("sqlite: insert session", err)
}

func (t *tx) DeleteSession(ctx context.Context, idHash string) error {
	ctx = t.detach(ctx)
	_, err := t.db.ExecContext(ctx, "DELETE FROM console_sessions WHERE id_hash = ?", idHash)
	return mapErr("sqlite: delete session", err)
}

func (t *tx) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	ctx = t.detach(ctx)
	res, err := t.db.ExecContext(ctx, "DELETE FROM console_sessions WHERE expires_at <= ?", micros(now))
	if err != nil {
		return 0, mapErr("sqlite: delete expired sessions", err)
	}
	n, err := res.RowsAffected()
	return int(n), mapErr("sqlite: delete expired sessions", err)
}
