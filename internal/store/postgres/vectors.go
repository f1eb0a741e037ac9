package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func (c *conn) ScanRecords(ctx context.Context, fn func(ws string, r memory.Record) error) error {
	rows, err := c.q.Query(ctx, "SELECT workspace_id, "+recordSelect+" FROM records ORDER BY id")
	if err != nil {
		return mapErr("postgres: scan records", err)
	}
	defer rows.Close()
	for rows.Next() {
		var ws string
		r, err := scanRecord(rows, &ws)
		if err != nil {
			return mapErr("postgres: scan records", err)
		}
		if err := fn(ws, r); err != nil {
			return err
		}
	}
	return mapErr("postgres: scan records", rows.Err())
}

func (c *conn) ListMissingVectors(ctx context.Context, model, after string, limit int) ([]store.VectorTask, error) {
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	rows, err := c.q.Query(ctx, `
		SELECT r.workspace_id, r.id, r.content, r.content_sha256 FROM records r
		WHERE r.id > $1 AND r.status <> 'forgotten'
		  AND NOT EXISTS (SELECT 1 FROM record_vectors v
		                  WHERE v.workspace_id = r.workspace_id AND v.record_id = r.id
		                    AND v.model = $2 AND v.content_sha256 = r.content_sha256)
		ORDER BY r.id LIMIT $3`, after, model, limit)
	if err != nil {
		return nil, mapErr("postgres: missing vectors", err)
	}
	defer rows.Close()
	var out []store.VectorTask
	for rows.Next() {
		var t store.VectorTask
		if err := rows.Scan(&t.Workspace, &t.ID, &t.Content, &t.ContentSHA256); err != nil {
			return nil, mapErr("postgres: missing vectors", err)
		}
		out = append(out, t)
	}
	return out, mapErr("postgres: missing vectors", rows.Err())
}

func (c *conn) CountVectors(ctx context.Context, model string) (have, total int, err error) {
	err = c.q.QueryRow(ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM record_vectors v
		            WHERE v.workspace_id = r.workspace_id AND v.record_id = r.id
		              AND v.model = $1 AND v.content_sha256 = r.content_sha256))
		FROM records r WHERE r.status <> 'forgotten'`, model).Scan(&total, &have)
	return have, total, mapErr("postgres: count vectors", err)
}

func (c *conn) ScanVectors(ctx context.Context, model string, fn func(ws, id string, vec []float32) error) error {
	rows, err := c.q.Query(ctx, `
		SELECT v.workspace_id, v.record_id, v.vec FROM record_vectors v
		JOIN records r ON r.workspace_id = v.workspace_id AND r.id = v.record_id
		WHERE v.model = $1 AND v.content_sha256 = r.content_sha256 AND r.status <> 'forgotten'
		ORDER BY v.record_id`, model)
	if err != nil {
		return mapErr("postgres: scan vectors", err)
	}
	defer rows.Close()
	var (
		ws, id string
		raw    []byte
		buf    []float32
	)
	for rows.Next() {
		if err := rows.Scan(&ws, &id, &raw); err != nil {
			return mapErr("postgres: scan vectors", err)
		}
		if buf, err = store.DecodeVector(raw, buf); err != nil {
			return err
		}
		if err := fn(ws, id, buf); err != nil {
			return err
		}
	}
	return mapErr("postgres: scan vectors", rows.Err())
}

func (c *conn) GetCachedEmbeddings(ctx context.Context, model string, hashes []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(hashes))
	if len(hashes) == 0 {
		return out, nil
	}
	rows, err := c.q.Query(ctx, "SELECT content_sha256, vec FROM embedding_cache WHERE model = $1 AND content_sha256 = ANY($2::text[])",
		model, hashes)
	if err != nil {
		return nil, mapErr("postgres: embedding cache", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h   string
			raw []byte
		)
		if err := rows.Scan(&h, &raw); err != nil {
			return nil, mapErr("postgres: embedding cache", err)
		}
		v, err := store.DecodeVector(raw, nil)
		if err != nil {
			return nil, err
		}
		out[h] = v
	}
	return out, mapErr("postgres: embedding cache", rows.Err())
}

func (t *tx) PutVectors(ctx context.Context, model string, vs []store.Vector) error {
	if len(vs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, v := range vs {
		b.Queue(`
			INSERT INTO record_vectors (workspace_id, record_id, model, content_sha256, dim, vec)
			SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (
				SELECT 1 FROM records WHERE workspace_id = $1 AND id = $2 AND content_sha256 = $4 AND status <> 'forgotten')
			ON CONFLICT (workspace_id, record_id, model) DO UPDATE
				SET content_sha256 = excluded.content_sha256, dim = excluded.dim, vec = excluded.vec`,
			v.Workspace, v.RecordID, model, v.ContentSHA256, len(v.Vec), store.EncodeVector(v.Vec))
	}
	return mapErr("postgres: put vectors", t.q.SendBatch(ctx, b).Close())
}

func (t *tx) PutCachedEmbeddings(ctx context.Context, model string, byHash map[string][]float32) error {
	if len(byHash) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for h, v := range byHash {
		b.Queue(`
			INSERT INTO embedding_cache (model, content_sha256, dim, vec) VALUES ($1, $2, $3, $4)
			ON CONFLICT (model, content_sha256) DO UPDATE SET dim = excluded.dim, vec = excluded.vec`,
			model, h, len(v), store.EncodeVector(v))
	}
	return mapErr("postgres: put embedding cache", t.q.SendBatch(ctx, b).Close())
}

// DropDerived deletes a record's vectors and the cached embeddings of
// every version's content (store.Purge runs it before the versions are
// tombstoned, while their hashes are still known).
func (t *tx) DropDerived(ctx context.Context, ws, id string) error {
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM embedding_cache WHERE content_sha256 IN (
		SELECT content_sha256 FROM record_versions WHERE workspace_id = $1 AND id = $2)`, ws, id)
	b.Queue(`DELETE FROM record_vectors WHERE workspace_id = $1 AND record_id = $2`, ws, id)
	return mapErr("postgres: purge vectors", t.q.SendBatch(ctx, b).Close())
}
