package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/cli"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
)

// runIn is run with stdin.
func runIn(t *testing.T, dataDir, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		switch k {
		case "MEMGATE_DATA_DIR":
			return dataDir
		case "MEMGATE_EMBEDDER":
			return "none"
		}
		return ""
	}
	code := cli.Main(args, cli.Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: getenv, Ctx: t.Context()})
	return result{code, out.String(), errb.String()}
}

func mustRun(t *testing.T, r result) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	return r
}

func TestExportImportMigrateCommands(t *testing.T) {
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	var secrets []string
	r := mustRun(t, run(t, src, nil, "agents", "create", "--name", "coder", "--trust", "standard", "--json"))
	secrets = append(secrets, r.stdout[strings.Index(r.stdout, "mg_"):][:79])
	r = mustRun(t, run(t, src, nil, "users", "create", "--user-id", "alice", "--json"))
	secrets = append(secrets, r.stdout[strings.Index(r.stdout, "uk_"):][:46])
	for _, c := range []string{"Alice prefers PostgreSQL for backend work", "Use SKIP LOCKED for job claims", "The VPN drops every hour"} {
		mustRun(t, run(t, src, nil, "write", "--type", "belief", "--content", c, "--entity", "person:alice", "--scope", "user_id=alice"))
	}

	exp := mustRun(t, run(t, src, nil, "export")).stdout
	if !strings.HasPrefix(exp, `{"kind":"memgate-export","version":1,"workspace":"default"}`+"\n") || strings.Count(exp, `"kind":"record"`) != 3 {
		t.Fatalf("export:\n%s", exp)
	}
	for _, s := range secrets {
		if strings.Contains(exp, s) || strings.Contains(exp, s[len(s)-20:]) {
			t.Fatal("a token or user key is in the export")
		}
	}
	file := filepath.Join(tmp, "ws.ndjson")
	r = mustRun(t, run(t, src, nil, "export", "--out", file))
	if got, _ := os.ReadFile(file); string(got) != exp || r.stdout != "" || !strings.Contains(r.stderr, "3 records") {
		t.Fatalf("export --out: %q %q", r.stdout, r.stderr)
	}

	// Import into a fresh data directory, export again: the same bytes.
	dst := filepath.Join(tmp, "dst")
	r = mustRun(t, run(t, dst, nil, "import", file, "--json"))
	if !strings.Contains(r.stdout, `"workspace_created": true`) || strings.Contains(r.stderr, "operator token") {
		t.Fatalf("import: %s %s", r.stdout, r.stderr)
	}
	if again := mustRun(t, run(t, dst, nil, "export")).stdout; again != exp {
		t.Fatal("export of the import differs")
	}
	// Imported principals have no tokens; an operator token is re-issued.
	r = mustRun(t, run(t, dst, nil, "operators", "create", "--name", "admin", "--json"))
	if !strings.Contains(r.stdout, `"token": "mg_`) {
		t.Fatalf("operators create: %s", r.stdout)
	}
	// Only into an empty workspace.
	if r := run(t, dst, nil, "import", file); r.code != 7 || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("second import: %d %s", r.code, r.stderr)
	}
	// From stdin.
	mustRun(t, runIn(t, filepath.Join(tmp, "stdin"), exp, "import", "-"))

	// A bad line imports nothing and names the line.
	bad := strings.Replace(exp, `"type":"belief"`, `"type":"rumour"`, 1)
	badLine := 1 + strings.Count(exp[:strings.Index(exp, `"type":"belief"`)], "\n")
	badDir := filepath.Join(tmp, "bad")
	if r := runIn(t, badDir, bad, "import", "-"); r.code != 3 || !strings.Contains(r.stderr, "line "+strconv.Itoa(badLine)+":") {
		t.Fatalf("bad import: %d %s", r.code, r.stderr)
	}
	if r := run(t, badDir, nil, "export"); r.code != 6 {
		t.Fatalf("the bad import created the workspace: %d %s", r.code, r.stderr)
	}
	if r := run(t, filepath.Join(tmp, "none"), nil, "export"); r.code != 6 {
		t.Fatalf("export of a missing data directory: %d %s", r.code, r.stderr)
	}

	// migrate: to a data directory and to a sqlite:// URL.
	mdir := filepath.Join(tmp, "migrated")
	r = mustRun(t, run(t, src, nil, "migrate", "--to", mdir))
	if !strings.Contains(r.stdout, "3 records") {
		t.Fatalf("migrate: %s", r.stdout)
	}
	if got := mustRun(t, run(t, mdir, nil, "export")).stdout; got != exp {
		t.Fatal("export of the migrated directory differs")
	}
	udir := filepath.Join(tmp, "url")
	mustRun(t, run(t, src, nil, "migrate", "--to", "sqlite://"+filepath.Join(udir, "memgate.db")))
	if got := mustRun(t, run(t, udir, nil, "export")).stdout; got != exp {
		t.Fatal("export of the sqlite:// target differs")
	}
	if r := run(t, src, nil, "migrate", "--to", mdir); r.code != 7 {
		t.Fatalf("migrate into a non-empty target: %d %s", r.code, r.stderr)
	}
	// A PostgreSQL target that does not answer: unavailable, and the
	// password appears nowhere.
	sock := t.TempDir()
	if r := run(t, src, nil, "migrate", "--to", "postgres://memgate:hunter2-secret@/memgate?host="+sock); r.code != 11 ||
		strings.Contains(r.stderr+r.stdout, "hunter2") || !strings.Contains(r.stderr, "postgres://memgate:xxxxx@") {
		t.Fatalf("unreachable postgres target: %d %s", r.code, r.stderr)
	}
	for _, to := range []string{"sqlite://relative/memgate.db", "mysql://x", src} {
		if r := run(t, src, nil, "migrate", "--to", to); r.code != 2 {
			t.Fatalf("--to %s: %d %s", to, r.code, r.stderr)
		}
	}
	mustRun(t, run(t, src, nil, "migrate"))
}

// TestMigrateToPostgres: export (SQLite) → migrate --to postgres:// →
// export (PostgreSQL, --database-url) gives the same bytes, the graph
// answers the same, and migrating back gives the same bytes again.
func TestMigrateToPostgres(t *testing.T) {
	pgURL := pgtest.URL(t)
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	mustRun(t, run(t, src, nil, "agents", "create", "--name", "coder", "--trust", "standard"))
	mustRun(t, run(t, src, nil, "users", "create", "--user-id", "alice"))
	for _, c := range []string{"Alice prefers PostgreSQL for backend work", "Use SKIP LOCKED for job claims", "The VPN drops every hour"} {
		mustRun(t, run(t, src, nil, "write", "--type", "belief", "--content", c, "--entity", "person:alice", "--scope", "user_id=alice"))
	}
	mustRun(t, run(t, src, nil, "graph", "node", "upsert", "--label", "project", "--key", "atlas"))
	mustRun(t, run(t, src, nil, "graph", "node", "upsert", "--label", "system", "--key", "pg"))
	mustRun(t, run(t, src, nil, "graph", "edge", "upsert", "--from", "person:alice", "--to", "project:atlas", "--relation", "WORKS_WITH"))
	mustRun(t, run(t, src, nil, "graph", "edge", "upsert", "--from", "project:atlas", "--to", "system:pg", "--relation", "USES"))
	exp := mustRun(t, run(t, src, nil, "export")).stdout
	if strings.Count(exp, `"kind":"record"`) != 3 || strings.Count(exp, `"kind":"edge"`) != 2 {
		t.Fatalf("export:\n%s", exp)
	}

	r := mustRun(t, run(t, src, nil, "migrate", "--to", pgURL))
	if !strings.Contains(r.stdout, "3 records") {
		t.Fatalf("migrate: %s", r.stdout)
	}
	pg := map[string]string{"MEMGATE_DATABASE_URL": pgURL}
	pgDir := filepath.Join(tmp, "pg-replica") // holds only its index snapshot
	if got := mustRun(t, run(t, pgDir, pg, "export")).stdout; got != exp {
		t.Fatalf("export of the PostgreSQL copy differs:\n%s\n---\n%s", got, exp)
	}
	for _, ref := range []string{"person:alice", "project:atlas", "system:pg"} {
		before := mustRun(t, run(t, src, nil, "graph", "neighbors", ref, "--depth", "2", "--direction", "both", "--json")).stdout
		after := mustRun(t, run(t, pgDir, pg, "graph", "neighbors", ref, "--depth", "2", "--direction", "both", "--json")).stdout
		if before != after || !strings.Contains(before, "WORKS_WITH") && !strings.Contains(before, "USES") {
			t.Fatalf("neighbors of %s differ:\n%s\n%s", ref, before, after)
		}
	}
	if got := mustRun(t, run(t, pgDir, pg, "query", "job claims", "--json")).stdout; !strings.Contains(got, "SKIP LOCKED") {
		t.Fatalf("search on the PostgreSQL copy: %s", got)
	}
	if r := run(t, src, nil, "migrate", "--to", pgURL); r.code != 7 {
		t.Fatalf("migrate into a non-empty PostgreSQL database: %d %s", r.code, r.stderr)
	}
	if r := run(t, pgDir, pg, "migrate", "--to", pgURL); r.code != 2 {
		t.Fatalf("migrate onto itself: %d %s", r.code, r.stderr)
	}
	// And back: PostgreSQL → a new data directory.
	back := filepath.Join(tmp, "back")
	mustRun(t, run(t, pgDir, pg, "migrate", "--to", back))
	if got := mustRun(t, run(t, back, nil, "export")).stdout; got != exp {
		t.Fatal("export of the copy migrated back from PostgreSQL differs")
	}
	// Without --to, migrate brings the PostgreSQL schema up to date.
	if r := mustRun(t, run(t, pgDir, pg, "migrate")); !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("migrate: %s", r.stdout)
	}
}
