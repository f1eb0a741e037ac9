package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaimJobUsesIndex: claiming a job reads the queued and running jobs
// through the jobs_claim index, not every job ever run (the scan made
// each claim slower as flushes accumulated, issue 14).
func TestClaimJobUsesIndex(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+claimJobSQL(2), 1, 1, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if got := strings.Join(plan, "; "); !strings.Contains(got, "USING INDEX jobs_claim") || strings.Contains(got, "SCAN jobs") {
		t.Fatalf("claim plan %q: want a search of jobs_claim, no scan of jobs", got)
	}
}
