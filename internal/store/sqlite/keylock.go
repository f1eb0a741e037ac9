package sqlite

import (
	"context"

	"github.com/memgate/memgate/internal/memory"
)

// LockKey has nothing to do: a write transaction holds SQLite's one write
// lock, which already serialises writers of every process.
func (t *tx) LockKey(ctx context.Context, key string) error { return nil }

func (t *tx) FindByMeta(ctx context.Context, ws, cat, field, value string, sc memory.Scope) ([]string, error) {
	ctx = t.detach(ctx)
	rows, err := t.db.QueryContext(ctx, `SELECT id FROM records
		WHERE workspace_id = ? AND category = ? AND invalidated_at IS NULL
		AND json_valid(metadata) AND json_type(metadata, ?) = 'text' AND json_extract(metadata, ?) = ?
		AND scope_user_id = ? AND scope_agent_id = ? AND scope_app_id = ?
		AND scope_project_id = ? AND scope_session_id = ?
		ORDER BY id`, ws, cat, "$."+jsonKey(field), "$."+jsonKey(field), value,
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
