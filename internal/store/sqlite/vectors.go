package sqlite

import (
	"context"
	"database/sql"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func (c *conn) ScanRecords(ctx context.Context, fn func(ws string, r memory.Record) error) error {
	ctx = c.detach(ctx)
	rows, err := c.db.QueryContext(ctx, "SELECT workspace_id, "+recordSelect+" FROM records ORDER BY id")
	if err != nil {
		return mapErr("sqlite: scan records", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ws string
		r, err := scanRecord(prefixScanner{rows, &ws})
		if err != nil {
			return err
		}
		if err := fn(ws, r); err != nil {
			return err
		}
	}
	return mapErr("sqlite: scan records", rows.Err())
}

// prefixScanner scans one leading column into ws and the rest as a record.
type prefixScanner struct {
	rows *sql.Rows
	ws   *string
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.rows.Scan(append([]any{p.ws}, dest...)...)
}

func (c *conn) ListMissingVectors(ctx context.Context, model, after string, limit int) ([]store.VectorTask, error) {
	ctx = c.detach(ctx)
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	rows, err := c.db.QueryContext(ctx, `
		SELECT r.workspace_id, r.id, r.content, r.content_sha256 FROM records r
		WHERE r.id > ? AND r.status <> 'forgotten'
		  AND NOT EXISTS (SELECT 1 FROM record_vectors v
		                  WHERE v.workspace_id = r.workspace_id AND v.record_id = r.id
		                    AND v.model = ? AND v.content_sha256 = r.content_sha256)
		ORDER BY r.id LIMIT ?`, after, model, limit)
	if err != nil {
		return nil, mapErr("sqlite: missing vectors", err)
	}
	defer rows.Close()
	var out []store.VectorTask
	for rows.Next() {
		var t store.VectorTask
		if err := rows.Scan(&t.Workspace, &t.ID, &t.Content, &t.ContentSHA256); err != nil {
			return nil, mapErr("sqlite: missing vectors", err)
		}
		out = append(out, t)
	}
	return out, mapErr("sqlite: missing vectors", rows.Err())
}

func (c *conn) CountVectors(ctx context.Context, model string) (have, total int, err error) {
	ctx = c.detach(ctx)
	err = c.db.QueryRowContext(ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM record_vectors v
		            WHERE v.workspace_id = r.workspace_id AND v.record_id = r.id
		              AND v.model = ? AND v.content_sha256 = r.content_sha256))
		FROM records r WHERE r.status <> 'forgotten'`, model).Scan(&total, &have)
	return have, total, mapErr("sqlite: count vectors", err)
}

func (c *conn) ScanVectors(ctx context.Context, model string, fn func(ws, id string, vec []float32) error) error {
	ctx = c.detach(ctx)
	rows, err := c.db.QueryContext(ctx, `
		SELECT v.workspace_id, v.record_id, v.vec FROM record_vectors v
		JOIN records r ON r.workspace_id = v.workspace_id AND r.id = v.record_id
		WHERE v.model = ? AND v.content_sha256 = r.content_sha256 AND r.status <> 'forgotten'
		ORDER BY v.record_id`, model)
	if err != nil {
		return mapErr("sqlite: scan vectors", err)
	}
	defer rows.Close()
	var (
		ws, id string
		raw    []byte
		buf    []float32
	)
	for rows.Next() {
		if err := rows.Scan(&ws, &id, &raw); err != nil {
			return mapErr("sqlite: scan vectors", err)
		}
		if buf, err = store.DecodeVector(raw, buf); err != nil {
			return err
		}
		if err := fn(ws, id, buf); err != nil {
			return err
		}
	}
	return mapErr("sqlite: scan vectors", rows.Err())
}

func (c *conn) GetCachedEmbeddings(ctx context.Context, model string, hashes []string) (map[string][]float32, error) {
	ctx = c.detach(ctx)
	out := make(map[string][]float32, len(hashes))
	for len(hashes) > 0 {
		n := min(len(hashes), 500)
		args := make([]any, 0, n+1)
		args = append(args, model)
		for _, h := range hashes[:n] {
			args = append(args, h)
		}
		rows, err := c.db.QueryContext(ctx, "SELECT content_sha256, vec FROM embedding_cache WHERE model = ? AND content_sha256 IN ("+placeholders(n)+")", args...)
		if err != nil {
			return nil, mapErr("sqlite: embedding cache", err)
		}
		for rows.Next() {
			var h string
			var raw []byte
			if err := rows.Scan(&h, &raw); err != nil {
				rows.Close()
				return nil, mapErr("sqlite: embedding cache", err)
			}
			v, err := store.DecodeVector(raw, nil)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out[h] = v
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, mapErr("sqlite: embedding cache", err)
		}
		hashes = hashes[n:]
	}
	return out, nil
}

func (t *tx) PutVectors(ctx context.Context, model string, vs []store.Vector) error {
	ctx = t.detach(ctx)
	for _, v := range vs {
		_, err := t.db.ExecContext(ctx, `
			INSERT INTO record_vectors (workspace_id, record_id, model, content_sha256, dim, vec)
			SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (
				SELECT 1 FROM records WHERE workspace_id = ? AND id = ? AND content_sha256 = ? AND status <> 'forgotten')
			ON CONFLICT (workspace_id, record_id, model) DO UPDATE
				SET content_sha256 = excluded.content_sha256, dim = excluded.dim, vec = excluded.vec`,
			v.Workspace, v.RecordID, model, v.ContentSHA256, len(v.Vec), store.EncodeVector(v.Vec),
			v.Workspace, v.RecordID, v.ContentSHA256)
		if err != nil {
			return mapErr("sqlite: put vectors", err)
		}
	}
	return nil
}

func (t *tx) PutCachedEmbeddings(ctx context.Context, model string, byHash map[string][]float32) error {
	ctx = t.detach(ctx)
	for h, v := range byHash {
		_, err := t.db.ExecContext(ctx, `
			INSERT INTO embedding_cache (model, content_sha256, dim, vec) VALUES (?, ?, ?, ?)
			ON CONFLICT (model, content_sha256) DO UPDATE SET dim = excluded.dim, vec = excluded.vec`,
			model, h, len(v), store.EncodeVector(v))
		if err != nil {
			return mapErr("sqlite: put embedding cache", err)
		}
	}
	return nil
}

// DropDerived deletes a record's vectors and the cached embeddings of
// every version's content (store.Purge runs it before the versions are
// tombstoned, while their hashes are still known).
func (t *tx) DropDerived(ctx context.Context, ws, id string) error {
	if _, err := t.db.ExecContext(ctx, `DELETE FROM embedding_cache WHERE content_sha256 IN (
			SELECT content_sha256 FROM record_versions WHERE workspace_id = ? AND id = ?)`, ws, id); err != nil {
		return mapErr("sqlite: purge embeddings", err)
	}
	if _, err := t.db.ExecContext(ctx, `DELETE FROM record_vectors WHERE workspace_id = ? AND record_id = ?`, ws, id); err != nil {
		return mapErr("sqlite: purge vectors", err)
	}
	return nil
}
