package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/store"
)

// The change logs (record_changes, graph_changes) are read by other
// processes with "seq > after": a reader that has seen seq N never looks
// below N again. With a plain sequence, a transaction that drew seq 5 but
// commits after another that drew seq 6 would be skipped by a reader that
// saw 6 first. So appends are ordered by commit instead:
//
//   - a transaction collects its change entries as it writes (logChange)
//     and appends them only when fn has returned, right before COMMIT;
//   - the append first takes a transaction-scoped advisory lock, held
//     until the commit, and only then draws its seqs.
//
// A transaction that draws seqs therefore commits before the next one can
// draw any; PostgreSQL makes a commit visible before it releases the
// transaction's locks, so whenever seq N is visible, every lower seq is
// visible too or was rolled back (a gap). The lock is held for the
// append and the commit only, not while fn runs, and transactions that
// change neither log never take it. Entries keep their order within a
// transaction (unnest WITH ORDINALITY).

// pendingChange is a change-log entry not yet appended.
type pendingChange struct {
	ws, kind, id string
}

// logChange records a change of record id, appended at commit.
func (t *tx) logChange(ws, id string) {
	t.changes = append(t.changes, pendingChange{ws: ws, id: id})
}

// logGraphChange records a change of a node or edge, appended at commit.
func (t *tx) logGraphChange(ws string, kind store.GraphItem, id string) {
	t.graphChanges = append(t.graphChanges, pendingChange{ws: ws, kind: string(kind), id: id})
}

// appendChanges writes the pending change-log entries under the change-log
// lock; the caller commits next.
func (t *tx) appendChanges(ctx context.Context, lock int64) error {
	if len(t.changes) == 0 && len(t.graphChanges) == 0 && len(t.events) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	b.Queue("SELECT pg_advisory_xact_lock($1)", lock)
	if len(t.changes) > 0 {
		ws, ids := make([]string, len(t.changes)), make([]string, len(t.changes))
		for i, c := range t.changes {
			ws[i], ids[i] = c.ws, c.id
		}
		b.Queue(`INSERT INTO record_changes (workspace_id, record_id)
			SELECT w, id FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS c (w, id, n) ORDER BY n`, ws, ids)
	}
	if len(t.graphChanges) > 0 {
		n := len(t.graphChanges)
		ws, kinds, ids := make([]string, n), make([]string, n), make([]string, n)
		for i, c := range t.graphChanges {
			ws[i], kinds[i], ids[i] = c.ws, c.kind, c.id
		}
		b.Queue(`INSERT INTO graph_changes (workspace_id, kind, item_id)
			SELECT w, k, id FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS c (w, k, id, n) ORDER BY n`, ws, kinds, ids)
	}
	if err := t.queueEvents(b); err != nil {
		return err
	}
	return mapErr("postgres: change log", t.q.SendBatch(ctx, b).Close())
}

func (c *conn) ListChanges(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	rows, err := c.q.Query(ctx, "SELECT seq, workspace_id, record_id FROM record_changes WHERE seq > $1 ORDER BY seq LIMIT $2", after, limit)
	if err != nil {
		return nil, mapErr("postgres: changes", err)
	}
	defer rows.Close()
	var out []store.Change
	for rows.Next() {
		var ch store.Change
		if err := rows.Scan(&ch.Seq, &ch.Workspace, &ch.RecordID); err != nil {
			return nil, mapErr("postgres: changes", err)
		}
		out = append(out, ch)
	}
	return out, mapErr("postgres: changes", rows.Err())
}

func (c *conn) ChangeHead(ctx context.Context) (int64, error) {
	var seq int64
	err := c.q.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM record_changes").Scan(&seq)
	return seq, mapErr("postgres: change head", err)
}

func (c *conn) ListGraphChanges(ctx context.Context, after int64, limit int) ([]store.GraphChange, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	rows, err := c.q.Query(ctx, "SELECT seq, workspace_id, kind, item_id FROM graph_changes WHERE seq > $1 ORDER BY seq LIMIT $2", after, limit)
	if err != nil {
		return nil, mapErr("postgres: graph changes", err)
	}
	defer rows.Close()
	var out []store.GraphChange
	for rows.Next() {
		var (
			ch   store.GraphChange
			kind string
		)
		if err := rows.Scan(&ch.Seq, &ch.Workspace, &kind, &ch.ID); err != nil {
			return nil, mapErr("postgres: graph changes", err)
		}
		ch.Kind = store.GraphItem(kind)
		out = append(out, ch)
	}
	return out, mapErr("postgres: graph changes", rows.Err())
}

func (c *conn) GraphChangeHead(ctx context.Context) (int64, error) {
	var seq int64
	err := c.q.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM graph_changes").Scan(&seq)
	return seq, mapErr("postgres: graph change head", err)
}
