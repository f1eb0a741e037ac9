package postgres

import (
	"context"
	"time"
)

func (c *conn) GetSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := c.q.QueryRow(ctx, `SELECT value FROM settings WHERE key = $1`, key).Scan(&v)
	return v, mapErr("postgres: get setting", err)
}

func (t *tx) PutSetting(ctx context.Context, key, value string) error {
	_, err := t.q.Exec(ctx, `
		INSERT INTO settings (key, value, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, value, time.Now().UnixMicro())
	return mapErr("postgres: put setting", err)
}
