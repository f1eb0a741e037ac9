package cli_test

import (
	"fmt"
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
	data := writeLongMemEval(t, 3,
		func(q, s, k int) string {
			return fmt.Sprintf("In session %d of thread %d, turn %d talks about lighthouse number %d and its keeper.", s, q, k, q*100+s*10+k)
		},
		func(q int) string { return fmt.Sprintf("What did I say about lighthouse %d?", q*100+11) })
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
