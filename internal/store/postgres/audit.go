package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/audit"
)

func (c *conn) ListAudit(ctx context.Context, ws string, afterSeq int64, limit int) ([]audit.Entry, error) {
	rows, err := c.q.Query(ctx, `SELECT id, seq, ts, actor_kind, actor_id, event, payload, prev_hash, hash FROM audit_log
		WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, ws, afterSeq, pageLimit(limit))
	if err != nil {
		return nil, mapErr("postgres: list audit", err)
	}
	return scanAudit(rows)
}

// scanAudit reads audit rows (id, seq, ts, actor_kind, actor_id, event,
// payload, prev_hash, hash) and closes them.
func scanAudit(rows pgx.Rows) ([]audit.Entry, error) {
	defer rows.Close()
	out := []audit.Entry{}
	for rows.Next() {
		var (
			e       audit.Entry
			payload string
		)
		if err := rows.Scan(&e.ID, &e.Seq, &e.TS, &e.ActorKind, &e.ActorID, &e.Event, &payload, &e.PrevHash, &e.Hash); err != nil {
			return nil, mapErr("postgres: list audit", err)
		}
		e.TS = utc(e.TS)
		e.Payload = []byte(payload)
		out = append(out, e)
	}
	return out, mapErr("postgres: list audit", rows.Err())
}

// AppendAudit seals e after the workspace's chain head and stores it. The
// head row is created if missing and locked in one statement (an upsert
// locks the row it finds), so concurrent appenders to one workspace queue
// for it until this transaction ends, and the chain cannot fork.
func (t *tx) AppendAudit(ctx context.Context, ws string, e audit.Entry) (audit.Entry, error) {
	op := "postgres: append audit entry " + e.ID
	var (
		seq  int64
		prev string
	)
	err := t.q.QueryRow(ctx, `INSERT INTO audit_heads (workspace_id, seq, hash) VALUES ($1, 0, $2)
		ON CONFLICT (workspace_id) DO UPDATE SET seq = audit_heads.seq
		RETURNING seq, hash`, ws, audit.GenesisHash).Scan(&seq, &prev)
	if err != nil {
		return audit.Entry{}, mapErr(op, err)
	}
	sealed, err := audit.Seal(e, seq+1, prev)
	if err != nil {
		return audit.Entry{}, fmt.Errorf("%s: %w", op, err)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO audit_log (workspace_id, id, seq, ts, actor_kind, actor_id, event, payload, prev_hash, hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, ws,
		sealed.ID, sealed.Seq, sealed.TS, sealed.ActorKind, sealed.ActorID,
		sealed.Event, string(sealed.Payload), sealed.PrevHash, sealed.Hash)
	b.Queue(`UPDATE audit_heads SET seq = $2, hash = $3 WHERE workspace_id = $1`, ws, sealed.Seq, sealed.Hash)
	if err := t.q.SendBatch(ctx, b).Close(); err != nil {
		return audit.Entry{}, mapErr(op, err)
	}
	return sealed, nil
}
