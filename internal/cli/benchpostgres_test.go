package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/store/postgres/pgtest"
)

// TestBenchLatencyPostgres: `bench latency --postgres URL` writes its
// records into that PostgreSQL database and searches them (issue 14: the
// same figures on both backends, one command each); a database that
// already holds records is refused, so the bench never mixes its records
// with others or measures a store other than the one it built.
func TestBenchLatencyPostgres(t *testing.T) {
	url := pgtest.URL(t)
	var insts []map[string]any
	for q := range 3 {
		var sessions [][]map[string]string
		var ids []string
		for s := range 3 {
			var turns []map[string]string
			for k := range 6 {
				role := map[int]string{0: "user", 1: "assistant"}[k%2]
				turns = append(turns, map[string]string{"role": role,
					"content": fmt.Sprintf("In session %d of thread %d, turn %d talks about lighthouse number %d and its keeper.", s, q, k, q*100+s*10+k)})
			}
			sessions, ids = append(sessions, turns), append(ids, fmt.Sprintf("q%d-s%d", q, s))
		}
		insts = append(insts, map[string]any{"question_id": fmt.Sprint("q", q), "question_type": "single-session-user",
			"question": fmt.Sprintf("What did I say about lighthouse %d?", q*100+11), "answer": "x", "question_date": "2023/06/01 (Thu) 10:00",
			"haystack_session_ids": ids, "haystack_dates": []string{"2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "2023/05/22 (Mon) 11:00"},
			"haystack_sessions": sessions, "answer_session_ids": ids[1:2]})
	}
	raw, err := json.Marshal(insts)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "lme.json")
	if err := os.WriteFile(data, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", "latency", "--data", data, "--records", "120", "--queries", "10", "--warmup", "2", "--rounds", "1",
		"--postgres", url, "--json-only"}
	r := run(t, filepath.Join(t.TempDir(), "unused"), nil, args...)
	var out struct {
		Records, Docs int
		Write         struct {
			PerS float64 `json:"per_s"`
		}
		Search map[string]struct {
			P95 float64 `json:"p95_ms"`
		}
	}
	mustJSON(t, r, &out)
	if out.Records != 120 || out.Docs < 100 || out.Write.PerS <= 0 || out.Search["lexical"].P95 <= 0 {
		t.Fatalf("summary %+v", out)
	}
	r = run(t, filepath.Join(t.TempDir(), "unused"), nil, args...)
	if r.code == 0 || !strings.Contains(r.stderr, "already holds") {
		t.Fatalf("a second run on the filled database: exit %d, %s", r.code, r.stderr)
	}
}
