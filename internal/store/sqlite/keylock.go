package sqlite

import (
	"context"
	"slices"

	"github.com/memgate/memgate/internal/memory"
)

// LockKey has nothing to do: a write transaction holds SQLite's one write
// lock, which already serialises writers of every process.
func (t *tx) LockKey(ctx context.Context, key string) error { return nil }

// FindByMeta names the field in the SQL text when it is file_path, so
// that the query matches the expression of the records_file_path index
// (migration 0012); other fields are bound and scan.
func (t *tx) FindByMeta(ctx context.Context, ws, cat, field, value string, sc memory.Scope) ([]string, error) {
	ctx = t.detach(ctx)
	path := "$." + jsonKey(field)
	extract := "json_extract(metadata, ?1)"
	if field == "file_path" {
		extract = "json_extract(metadata, '$.file_path')"
	}
	rows, err := t.db.QueryContext(ctx, `SELECT id FROM records
		WHERE workspace_id = ?2 AND category = ?3 AND `+extract+` = ?4 AND invalidated_at IS NULL
		AND json_type(metadata, ?1) = 'text'
		AND scope_user_id = ?5 AND scope_agent_id = ?6 AND scope_app_id = ?7
		AND scope_project_id = ?8 AND scope_session_id = ?9`, path, ws, cat, value,
		sc.UserID, sc.AgentID, sc.AppID, sc.ProjectID, sc.SessionID)
	if err != nil {
		return nil, mapErr("sqlite: find by metadata", err)
	}
	defer rows.Close()
	ids := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, mapErr("sqlite: find by metadata", err)
		}
		ids = append(ids, id)
	}
	// Sorted here: an ORDER BY would lead SQLite to the primary key
	// instead of the path index.
	slices.Sort(ids)
	return ids, mapErr("sqlite: find by metadata", rows.Err())
}

// jsonKey quotes a member name for a JSON path, so a name holding "." or
// "[" names one member.
func jsonKey(field string) string {
	out := []byte{'"'}
	for i := 0; i < len(field); i++ {
		if field[i] == '"' || field[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, field[i])
	}
	return string(append(out, '"'))
}
