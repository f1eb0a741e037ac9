package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/memgate/memgate/internal/audit"
)

func (c *conn) ListAudit(ctx context.Context, ws string, afterSeq int64, limit int) ([]audit.Entry, error) {
	ctx = c.detach(ctx)
	rows, err := c.stmt(ctx, stListAudit).QueryContext(ctx, ws, afterSeq, pageLimit(limit))
	if err != nil {
		return nil, mapErr("sqlite: list audit", err)
	}
	defer rows.Close()
	out := []audit.Entry{}
	for rows.Next() {
		var (
			e       audit.Entry
			ts      int64
			payload string
		)
		if err := rows.Scan(&e.ID, &e.Seq, &ts, &e.ActorKind, &e.ActorID, &e.Event, &payload, &e.PrevHash, &e.Hash); err != nil {
			return nil, mapErr("sqlite: list audit", err)
		}
		e.TS = fromMicros(ts)
		e.Payload = []byte(payload)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr("sqlite: list audit", err)
	}
	return out, nil
}

// AppendAudit seals e after the workspace's chain head and stores it. The
// head is read and advanced in this transaction, and write transactions
// are serialised, so the chain cannot fork.
func (t *tx) AppendAudit(ctx context.Context, ws string, e audit.Entry) (audit.Entry, error) {
	ctx = t.detach(ctx)
	op := "sqlite: append audit entry " + e.ID
	var (
		seq  int64
		prev = audit.GenesisHash
	)
	err := t.stmt(ctx, stAuditHead).QueryRowContext(ctx, ws).Scan(&seq, &prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return audit.Entry{}, mapErr(op, err)
	}
	sealed, err := audit.Seal(e, seq+1, prev)
	if err != nil {
		return audit.Entry{}, fmt.Errorf("%s: %w", op, err)
	}
	_, err = t.stmt(ctx, stInsertAudit).ExecContext(ctx, ws,
		sealed.ID, sealed.Seq, micros(sealed.TS), sealed.ActorKind, sealed.ActorID,
		sealed.Event, string(sealed.Payload), sealed.PrevHash, sealed.Hash)
	if err != nil {
		return audit.Entry{}, mapErr(op, err)
	}
	if _, err := t.stmt(ctx, stUpsertAuditHead).ExecContext(ctx, ws, sealed.Seq, sealed.Hash); err != nil {
		return audit.Entry{}, mapErr(op, err)
	}
	return sealed, nil
}
