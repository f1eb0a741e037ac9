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
	return scanAudit(rows)
}

// scanAudit reads audit rows (auditCols, in order) and closes them.
func scanAudit(rows *sql.Rows) ([]audit.Entry, error) {
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
	return out, mapErr("sqlite: list audit", rows.Err())
}

// AppendAudit seals e after the workspace's chain head and stores it. The
// head is read and advanced in this transaction, and write transactions
// are serialised, so the chain cannot fork. Within one SQLite transaction
// (a group-commit batch) the head is read once and kept in t.heads, and
// audit_heads is written once per workspace just before the commit
// (flushAuditHeads): two statements fewer per audited write. A caller
// whose savepoint rolls back restores t.heads (see runBatch).
func (t *tx) AppendAudit(ctx context.Context, ws string, e audit.Entry) (audit.Entry, error) {
	ctx = t.detach(ctx)
	op := "sqlite: append audit entry " + e.ID
	h, ok := t.heads[ws]
	if !ok {
		h.hash = audit.GenesisHash
		err := t.stmt(ctx, stAuditHead).QueryRowContext(ctx, ws).Scan(&h.seq, &h.hash)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return audit.Entry{}, mapErr(op, err)
		}
	}
	sealed, err := audit.Seal(e, h.seq+1, h.hash)
	if err != nil {
		return audit.Entry{}, fmt.Errorf("%s: %w", op, err)
	}
	_, err = t.stmt(ctx, stInsertAudit).ExecContext(ctx, ws,
		sealed.ID, sealed.Seq, micros(sealed.TS), sealed.ActorKind, sealed.ActorID,
		sealed.Event, string(sealed.Payload), sealed.PrevHash, sealed.Hash)
	if err != nil {
		return audit.Entry{}, mapErr(op, err)
	}
	if t.heads == nil {
		t.heads = map[string]auditHead{}
	}
	t.heads[ws] = auditHead{seq: sealed.Seq, hash: sealed.Hash, dirty: true}
	return sealed, nil
}

// auditHead is a chain head AppendAudit read or advanced in a transaction;
// dirty when audit_heads does not hold it yet.
type auditHead struct {
	seq   int64
	hash  string
	dirty bool
}

// flushAuditHeads writes the heads the transaction advanced to
// audit_heads; runBatch calls it just before the commit.
func (t *tx) flushAuditHeads(ctx context.Context) error {
	for ws, h := range t.heads {
		if !h.dirty {
			continue
		}
		if _, err := t.stmt(ctx, stUpsertAuditHead).ExecContext(ctx, ws, h.seq, h.hash); err != nil {
			return mapErr("sqlite: audit head of "+ws, err)
		}
		h.dirty = false
		t.heads[ws] = h
	}
	return nil
}
