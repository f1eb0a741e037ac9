package sqlite

import (
	"testing"
)

func TestZZPlan(t *testing.T) {
	s := openTest(t, Options{})
	for _, q := range []string{
		`EXPLAIN QUERY PLAN SELECT id FROM records WHERE workspace_id = 'a' AND status = 'active' AND scope_user_id = 'u' AND scope_user_id <> '' AND (access IN ('public')) AND invalidated_at IS NULL ORDER BY id DESC LIMIT 50`,
		`EXPLAIN QUERY PLAN SELECT id FROM records WHERE workspace_id = ? AND status = ? AND scope_user_id = ? AND scope_user_id <> '' ORDER BY id DESC LIMIT 50`,
		`EXPLAIN QUERY PLAN SELECT id FROM records WHERE workspace_id = ? AND status IN (?, ?) AND type IN (?) ORDER BY id DESC LIMIT 50`,
		`EXPLAIN QUERY PLAN SELECT id FROM records WHERE workspace_id = ? AND status = ? AND id IN (SELECT record_id FROM record_entities WHERE workspace_id = ? AND entity = ?) ORDER BY id DESC LIMIT 50`,
		`EXPLAIN QUERY PLAN SELECT id FROM record_versions WHERE workspace_id = ? AND updated_at <= ? AND (replaced_at IS NULL OR replaced_at > ?) AND status = ? ORDER BY id DESC LIMIT 50`,
		`EXPLAIN QUERY PLAN ` + stmtSQL[stFindDuplicate],
		`EXPLAIN QUERY PLAN ` + stmtSQL[stListExpiredApprovals],
	} {
		rows, err := s.r.Query(q, "a", "b", "c", "d")
		if err != nil {
			rows, err = s.r.Query(q)
			if err != nil {
				rows, err = s.r.Query(q, "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k")
				if err != nil {
					rows, err = s.r.Query(q, "a", "b", "c")
					if err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		t.Log(q)
		for rows.Next() {
			var a, b, c int
			var d string
			rows.Scan(&a, &b, &c, &d)
			t.Log("   ", d)
		}
		rows.Close()
	}
}
