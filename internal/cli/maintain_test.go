package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// TestMaintainCommands: `memgate maintain decay|archive` run a job once
// with progress on stderr; --dry-run writes nothing; a second run changes
// nothing; `maintain restore` brings an archived record back.
func TestMaintainCommands(t *testing.T) {
	dir := t.TempDir()
	// Episodes halve every microsecond: anything written is old at once.
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("maintenance:\n  half_life:\n    episode: 1us\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MEMGATE_POLICY": pol}
	var w struct{ Record memory.Record }
	mustJSON(t, run(t, dir, env, "write", "--type", "episode", "--content", "deployed on friday", "--json"), &w)
	id := w.Record.ID

	type report struct {
		Job                       string
		DryRun                    bool `json:"dry_run"`
		Scanned, Decayed, Changed int
	}
	var rep report
	r := run(t, dir, env, "maintain", "decay", "--json")
	mustJSON(t, r, &rep)
	if rep.Job != "decay" || rep.Decayed != 1 || !strings.Contains(r.stderr, "decay: 1/1 records") || !strings.Contains(r.stderr, "records/s, eta") {
		t.Fatalf("decay: %+v, stderr %q", rep, r.stderr)
	}
	mustJSON(t, run(t, dir, env, "maintain", "archive", "--dry-run", "--json"), &rep)
	if !rep.DryRun || rep.Changed != 1 {
		t.Fatalf("dry run %+v", rep)
	}
	var got memory.Record
	mustJSON(t, run(t, dir, env, "get", id, "--json"), &got)
	if got.Status != memory.Active {
		t.Fatalf("dry run wrote: %s", got.Status)
	}
	mustJSON(t, run(t, dir, env, "maintain", "archive", "--json"), &rep)
	if rep.Changed != 1 {
		t.Fatalf("archive %+v", rep)
	}
	mustJSON(t, run(t, dir, env, "maintain", "archive", "--json", "--quiet"), &rep)
	if rep.Changed != 0 || rep.Scanned != 0 {
		t.Fatalf("second archive %+v", rep)
	}
	mustJSON(t, run(t, dir, env, "get", id, "--json"), &got)
	if got.Status != memory.Archived || got.Gate.Origin != memory.OriginMaintenance {
		t.Fatalf("archived %+v", got)
	}
	var list struct{ Records []memory.Record }
	mustJSON(t, run(t, dir, env, "list", "--json"), &list)
	if len(list.Records) != 0 {
		t.Fatalf("archived record listed by default: %d", len(list.Records))
	}
	if r := run(t, dir, env, "maintain", "restore", id); r.code != 0 || !strings.Contains(r.stdout, "restored "+id) {
		t.Fatalf("restore: %+v", r)
	}
	mustJSON(t, run(t, dir, env, "get", id, "--json"), &got)
	if got.Status != memory.Active {
		t.Fatalf("restored %s", got.Status)
	}
	for range 3 {
		mustJSON(t, run(t, dir, env, "write", "--type", "episode", "--content", "the release team uses a Tuesday train", "--json"), &w)
	}
	var crep struct{ Inserted, Reviews int }
	mustJSON(t, run(t, dir, env, "maintain", "consolidate", "--json"), &crep)
	if crep.Inserted != 1 || crep.Reviews != 1 {
		t.Fatalf("consolidate %+v", crep)
	}
	if r := run(t, dir, env, "approvals", "list"); !strings.Contains(r.stdout, "consolidation") {
		t.Fatalf("the proposal is not in the review queue: %s", r.stdout)
	}

	var sweep []struct{ Job string }
	mustJSON(t, run(t, dir, env, "maintain", "sweep", "--json", "--quiet"), &sweep)
	if len(sweep) < 5 || sweep[0].Job != "decay" {
		t.Fatalf("sweep %+v", sweep)
	}

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"maintain"}, 2},
		{[]string{"maintain", "defrag"}, 2},
		{[]string{"maintain", "archive", "--batch", "0"}, 2},
		{[]string{"maintain", "restore", memory.NewID()}, 6},
	} {
		if r := run(t, dir, env, c.args...); r.code != c.code || r.stderr == "" {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, r.code, c.code, r.stderr)
		}
	}
}
