package sqlite

import (
	"context"
	"time"
)

func (c *conn) GetSetting(ctx context.Context, key string) (string, error) {
	ctx = c.detach(ctx)
	var v string
	err := c.db.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	return v, mapErr("sqlite: get setting", err)
}

func (t *tx) PutSetting(ctx context.Context, key, value string) error {
	ctx = t.detach(ctx)
	_, err := t.db.ExecContext(ctx, `
		INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, value, time.Now().UnixMicro())
	return mapErr("sqlite: put setting", err)
}
