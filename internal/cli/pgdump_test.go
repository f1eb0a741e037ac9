package cli_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/store/postgres/pgtest"
)

// TestPostgresDumpRestoreServes: the PostgreSQL backup docs/backup.md
// describes — pg_dump -Fc, then pg_restore into an empty database —
// gives a database memgate serves: the same export, audit chains that
// verify, the agents' tokens still working, old records found and new
// ones written.
func TestPostgresDumpRestoreServes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pg_dump and pg_restore; skipped with -short")
	}
	src := pgtest.URL(t)
	tools := map[string]string{}
	for _, name := range []string{"pg_dump", "pg_restore"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (Debian: postgresql-client)", name)
			}
			t.Skipf("%s is not installed", name)
		}
		tools[name] = p
	}
	dst := pgtest.URL(t)
	srcEnv := map[string]string{"MEMGATE_EMBEDDER": "none", "MEMGATE_DATABASE_URL": src}
	dstEnv := map[string]string{"MEMGATE_EMBEDDER": "none", "MEMGATE_DATABASE_URL": dst}
	dir := t.TempDir()

	var agent struct{ Token string }
	mustJSON(t, run(t, filepath.Join(dir, "a"), srcEnv, "agents", "create", "--name", "writer", "--trust", "trusted", "--json"), &agent)
	srv := startServe(t, filepath.Join(dir, "a"), srcEnv)
	old := srv.write(agent.Token, "pgdumpmarker", "project:pgdump", http.StatusCreated)
	srv.write(agent.Token, "secondmarker", "service:other", http.StatusCreated)

	// The dump is taken while the server runs (pg_dump reads one
	// snapshot).
	dump := filepath.Join(dir, "memgate.dump")
	if out, err := exec.Command(tools["pg_dump"], "--format=custom", "--no-owner", "--file", dump, "--dbname", src).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	srv.stop()
	if out, err := exec.Command(tools["pg_restore"], "--no-owner", "--exit-on-error", "--dbname", dst, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}

	want := run(t, filepath.Join(dir, "a"), srcEnv, "export")
	got := run(t, filepath.Join(dir, "b"), dstEnv, "export")
	if want.code != 0 || got.code != 0 || got.stdout != want.stdout {
		t.Fatalf("export of the restored database differs (exit %d %d): %s%s", want.code, got.code, got.stderr, want.stderr)
	}
	if r := run(t, filepath.Join(dir, "b"), dstEnv, "audit", "verify"); r.code != 0 || !strings.Contains(r.stdout, "verified") {
		t.Fatalf("audit verify of the restored database: exit %d %s%s", r.code, r.stdout, r.stderr)
	}

	restored := startServe(t, filepath.Join(dir, "b"), dstEnv)
	var rec struct{ Content string }
	restored.do("GET", "/v1/records/"+old, agent.Token, nil, http.StatusOK, &rec)
	if !strings.Contains(rec.Content, "pgdumpmarker") {
		t.Fatalf("restored record: %+v", rec)
	}
	var found struct {
		Results []struct {
			Record struct{ ID string } `json:"record"`
		} `json:"results"`
	}
	restored.do("POST", "/v1/search", agent.Token, map[string]any{"query": "pgdumpmarker"}, http.StatusOK, &found)
	if len(found.Results) == 0 || found.Results[0].Record.ID != old {
		t.Fatalf("search of the restored database: %+v", found)
	}
	restored.write(agent.Token, "afterrestore", "team:third", http.StatusCreated)
	restored.stop()
	if r := run(t, filepath.Join(dir, "b"), dstEnv, "audit", "verify"); r.code != 0 {
		t.Fatalf("audit verify after writing to the restored database: exit %d %s", r.code, r.stderr)
	}
}
