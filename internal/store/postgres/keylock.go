package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"slices"

	"github.com/memgate/memgate/internal/memory"
)

// LockKey takes a transaction-scoped advisory lock on 64 bits of key's
// sha256, in the two-int4 key space, which does not overlap the bigint
// keys of the change log and the migrations. Two keys hashing alike only
// serialise more than needed. key never reaches the server (it may hold
// bytes PostgreSQL text refuses, such as NUL).
func (t *tx) LockKey(ctx context.Context, key string) error {
	h := sha256.Sum256([]byte(key))
	hi, lo := int32(binary.BigEndian.Uint32(h[0:4])), int32(binary.BigEndian.Uint32(h[4:8]))
	_, err := t.q.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`, hi, lo)
	return mapErr("postgres: lock key", err)
}

// FindByMeta names the field in the SQL text when it is file_path, so
// that the query matches the expression of the records_file_path index
// (migration 0012); other fields are bound and scan.
func (t *tx) FindByMeta(ctx context.Context, ws, cat, field, value string, sc memory.Scope) ([]string, error) {
	cond := "metadata->>$3 = $4"
	if field == "file_path" {
		cond = "metadata->>'file_path' = $4 AND $3::text <> ''"
	}
	rows, err := t.q.Query(ctx, `SELECT id FROM records
		WHERE workspace_id = $1 AND category = $2 AND invalidated_at IS NULL AND `+cond+`
		AND scope_user_id = $5 AND scope_agent_id = $6 AND scope_app_id = $7
		AND scope_project_id = $8 AND scope_session_id = $9`, ws, cat, field, value,
		sc.UserID, sc.AgentID, sc.AppID, sc.ProjectID, sc.SessionID)
	if err != nil {
		return nil, mapErr("postgres: find by metadata", err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, mapErr("postgres: find by metadata", err)
		}
		ids = append(ids, id)
	}
	// Sorted here: an ORDER BY would lead SQLite to the primary key
	// instead of the path index.
	slices.Sort(ids)
	return ids, mapErr("postgres: find by metadata", rows.Err())
}
