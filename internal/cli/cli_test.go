package cli_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/memgate/memgate/internal/cli"
	"github.com/memgate/memgate/internal/memory"
)

type result struct {
	code           int
	stdout, stderr string
}

// run executes the CLI in-process against dataDir with extra env.
func run(t *testing.T, dataDir string, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "MEMGATE_DATA_DIR" {
			return dataDir
		}
		if v, ok := env[k]; ok || k != "MEMGATE_EMBEDDER" {
			return v
		}
		return "none" // tests that need meaning ask for an embedder
	}
	code := cli.Main(args, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv, Ctx: t.Context()})
	return result{code, out.String(), errb.String()}
}

func mustJSON(t *testing.T, r result, v any) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON: %v: %s", err, r.stdout)
	}
}

func TestAgentsCreateOnFreshDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	r := run(t, dir, nil, "agents", "create", "--name", "coder", "--trust", "standard", "--json")
	var a struct {
		ID, Name, Trust, Token string
	}
	mustJSON(t, r, &a)
	if a.Name != "coder" || a.Trust != "standard" || !strings.HasPrefix(a.Token, "mg_") {
		t.Fatalf("agent %+v", a)
	}
	// The first open bootstraps the workspace and shows the operator token once.
	if !strings.Contains(r.stderr, "operator token (shown once") {
		t.Fatalf("no bootstrap notice: %q", r.stderr)
	}
	r2 := run(t, dir, nil, "agents", "list", "--json")
	if strings.Contains(r2.stderr, "operator token") {
		t.Fatal("operator token shown twice")
	}
	var list struct{ Agents []memory.Principal }
	mustJSON(t, r2, &list)
	if len(list.Agents) != 1 || list.Agents[0].Name != "coder" || strings.Contains(r2.stdout, a.Token) {
		t.Fatalf("list %s", r2.stdout)
	}
	if r := run(t, dir, nil, "agents", "create", "--name", "coder", "--json"); r.code != 7 {
		t.Fatalf("duplicate name: exit %d %s", r.code, r.stderr)
	}
	// Re-trust (core.SetAgentTrust, audited as agent.trust), and a bad
	// level names the field without echoing it.
	if r := run(t, dir, nil, "agents", "trust", "coder", "--trust", "restricted", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"trust": "restricted"`) {
		t.Fatalf("trust: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, nil, "agents", "trust", "coder", "--trust", "godlike", "--json"); r.code == 0 || !strings.Contains(r.stderr, "trust") || strings.Contains(r.stderr, "godlike") {
		t.Fatalf("bad trust: %d %s", r.code, r.stderr)
	}
	if r := run(t, dir, nil, "agents", "list", "--json"); !strings.Contains(r.stdout, `"trust": "restricted"`) {
		t.Fatalf("the trust change did not stick: %s", r.stdout)
	}
	if r := run(t, dir, nil, "agents", "revoke", "coder", "--json"); r.code != 0 || !strings.Contains(r.stdout, "revoked_at") {
		t.Fatalf("revoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
}

func TestUsersCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	r := run(t, dir, nil, "users", "create", "--user-id", "alice@example", "--json")
	// Exactly the interface other tools rely on: {"user_id", "user_key"}.
	var u map[string]string
	mustJSON(t, r, &u)
	if len(u) != 2 || u["user_id"] != "alice@example" || !strings.HasPrefix(u["user_key"], "uk_") || len(u["user_key"]) != 3+32+1+43 {
		t.Fatalf("users create printed %s", r.stdout)
	}
	r2 := run(t, dir, nil, "users", "list", "--json")
	if !strings.Contains(r2.stdout, `"user_id": "alice@example"`) || strings.Contains(r2.stdout, u["user_key"]) {
		t.Fatalf("users list %s", r2.stdout)
	}
	if r := run(t, dir, nil, "users", "create", "--user-id", "alice@example"); r.code != 7 {
		t.Fatalf("duplicate user: exit %d %s", r.code, r.stderr)
	}
	if r := run(t, dir, nil, "users", "create", "--user-id", "has space"); r.code != 3 || !strings.Contains(r.stderr, "user_id") {
		t.Fatalf("bad user id: exit %d %s", r.code, r.stderr)
	}
	if r := run(t, dir, nil, "users", "create"); r.code != 2 {
		t.Fatalf("missing --user-id: exit %d", r.code)
	}
	if r := run(t, dir, nil, "users", "revoke", "alice@example", "--json"); r.code != 0 || !strings.Contains(r.stdout, "revoked_at") {
		t.Fatalf("revoke: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, nil, "users", "revoke", "nobody"); r.code != 6 {
		t.Fatalf("revoke unknown: exit %d", r.code)
	}
}

func TestForgetSubjectCommand(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, "write", "--type", "belief", "--content", "Bob lives in Oslo", "--entity", "person:bob", "--json")
	run(t, dir, nil, "write", "--type", "belief", "--content", "Bob's notes", "--scope", "user_id=bob", "--json")
	run(t, dir, nil, "write", "--type", "belief", "--content", "Carol lives in Rome", "--entity", "person:carol", "--json")
	var rep struct {
		Subject                         string
		Records, Messages, Nodes, Edges int
	}
	var pre struct {
		Records, Nodes int
		Preview        bool
	}
	mustJSON(t, run(t, dir, nil, "forget", "--subject", "person:bob", "--preview", "--json"), &pre)
	if !pre.Preview || pre.Records != 1 || pre.Nodes != 1 {
		t.Fatalf("preview %+v", pre)
	}
	if r := run(t, dir, nil, "list", "--json"); !strings.Contains(r.stdout, "Bob lives in Oslo") {
		t.Fatalf("the preview erased: %s", r.stdout)
	}
	mustJSON(t, run(t, dir, nil, "forget", "--subject", "person:bob", "--json"), &rep)
	if rep.Subject != "person:bob" || rep.Records != 1 || rep.Nodes != 1 {
		t.Fatalf("report %+v", rep)
	}
	mustJSON(t, run(t, dir, nil, "forget", "--subject", "user:bob", "--json"), &rep)
	if rep.Records != 1 || rep.Nodes != 0 {
		t.Fatalf("scoped report %+v", rep)
	}
	r := run(t, dir, nil, "list", "--json")
	if strings.Contains(r.stdout, "Bob") || !strings.Contains(r.stdout, "Carol lives in Rome") {
		t.Fatalf("list after forgetting %s", r.stdout)
	}
	if r := run(t, dir, nil, "forget", "--subject", "bob"); r.code != 3 {
		t.Fatalf("bad subject: exit %d %s", r.code, r.stderr)
	}
	if r := run(t, dir, nil, "forget", "--subject", "person:bob", "someid"); r.code != 2 {
		t.Fatalf("both: exit %d", r.code)
	}
}

func TestGraphCommands(t *testing.T) {
	dir := t.TempDir()
	var n memory.Node
	mustJSON(t, run(t, dir, nil, "graph", "node", "upsert", "--label", "person", "--key", "alice", "--properties", `{"name":"Alice"}`, "--json"), &n)
	if n.Label != "person" || n.NaturalKey != "alice" || n.Status != memory.NodeActive {
		t.Fatalf("node %+v", n)
	}
	run(t, dir, nil, "graph", "node", "upsert", "--label", "project", "--key", "atlas")
	run(t, dir, nil, "graph", "node", "upsert", "--label", "system", "--key", "pg")
	mustJSON(t, run(t, dir, nil, "graph", "node", "upsert", "--label", "store", "--key", "vault", "--access", "sensitive", "--json"), &n)
	if n.Access != memory.Sensitive {
		t.Fatalf("--access: node %+v", n)
	}
	var e memory.Edge
	mustJSON(t, run(t, dir, nil, "graph", "edge", "upsert", "--from", "person:alice", "--to", "project:atlas", "--relation", "WORKS_WITH", "--json"), &e)
	run(t, dir, nil, "graph", "edge", "upsert", "--from", "project:atlas", "--to", "system:pg", "--relation", "USES")
	if r := run(t, dir, nil, "graph", "edge", "upsert", "--from", "person:alice", "--to", "system:pg", "--relation", "LIKES"); r.code != 3 || !strings.Contains(r.stderr, "USES") {
		t.Fatalf("bad relation: exit %d %s", r.code, r.stderr)
	}
	var nb struct{ Neighbors []struct{ Depth int } }
	mustJSON(t, run(t, dir, nil, "graph", "neighbors", "person:alice", "--depth", "2", "--json"), &nb)
	if len(nb.Neighbors) != 2 || nb.Neighbors[1].Depth != 2 {
		t.Fatalf("neighbors %+v", nb)
	}
	r := run(t, dir, nil, "graph", "path", "person:alice", "system:pg")
	if r.code != 0 || !strings.Contains(r.stdout, "USES") {
		t.Fatalf("path: %d %s", r.code, r.stdout)
	}
	if r := run(t, dir, nil, "graph", "neighbors", "person:alice", "--depth", "4"); r.code != 3 {
		t.Fatalf("depth 4: exit %d", r.code)
	}
	run(t, dir, nil, "graph", "edge", "invalidate", e.ID)
	mustJSON(t, run(t, dir, nil, "graph", "neighbors", "person:alice", "--depth", "2", "--json"), &nb)
	if len(nb.Neighbors) != 0 {
		t.Fatalf("after invalidating: %+v", nb)
	}
	run(t, dir, nil, "graph", "node", "archive", "system:pg")
	if r := run(t, dir, nil, "graph", "node", "get", "system:pg"); r.code != 6 {
		t.Fatalf("archived get: exit %d", r.code)
	}
	if r := run(t, dir, nil, "graph", "nodes", "--label", "person", "--label", "system", "--include-archived"); strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("nodes: %q", r.stdout)
	}
}

func TestRecordCommands(t *testing.T) {
	dir := t.TempDir()
	var w struct {
		Decision string
		Record   memory.Record
	}
	mustJSON(t, run(t, dir, nil, "write", "--type", "belief", "--content", "Alice prefers PostgreSQL",
		"--entity", "person:alice", "--scope", "user_id=alice", "--kind", "told", "--json"), &w)
	if w.Decision != "accepted" || w.Record.Source.Confidence != 0.75 || w.Record.Scope.UserID != "alice" {
		t.Fatalf("write %+v", w)
	}
	id := w.Record.ID

	var got memory.Record
	mustJSON(t, run(t, dir, nil, "get", id, "--json"), &got)
	if got.Content != "Alice prefers PostgreSQL" {
		t.Fatalf("get %+v", got)
	}
	if r := run(t, dir, nil, "get", id); r.code != 0 || !strings.Contains(r.stdout, "Alice prefers PostgreSQL") {
		t.Fatalf("text get: %+v", r)
	}
	var list struct{ Records []memory.Record }
	mustJSON(t, run(t, dir, nil, "list", "--entity", "person:alice", "--json"), &list)
	if len(list.Records) != 1 {
		t.Fatalf("list %d", len(list.Records))
	}
	mustJSON(t, run(t, dir, nil, "list", "--scope", "user_id=bob", "--json"), &list)
	if len(list.Records) != 0 {
		t.Fatalf("scope filter ignored")
	}
	var hist struct{ Versions []memory.Record }
	mustJSON(t, run(t, dir, nil, "history", id, "--json"), &hist)
	if len(hist.Versions) != 1 {
		t.Fatalf("history %d", len(hist.Versions))
	}
	var f struct{ Record memory.Record }
	mustJSON(t, run(t, dir, nil, "forget", id, "--json"), &f)
	if f.Record.Status != memory.Forgotten || f.Record.Content != "" {
		t.Fatalf("forget %+v", f.Record)
	}

	// Distinct exit codes.
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"get", memory.NewID()}, 6},
		{[]string{"write", "--type", "blog", "--content", "x"}, 3},
		{[]string{"write", "--type", "belief", "--content", strings.Repeat("x", 40000)}, 8},
		{[]string{"write", "--content", "x"}, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"get"}, 2},
		{[]string{"list", "--scope", "colour=red"}, 2},
		{[]string{"list", "--as-of", "soon"}, 2},
		{[]string{"approvals", "approve", memory.NewID()}, 6},
		{[]string{"agents", "create", "--name", "x", "--trust", "god"}, 3},
	} {
		r := run(t, dir, nil, c.args...)
		if r.code != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, r.code, c.code, r.stderr)
		}
		if r.code != 0 && r.stderr == "" {
			t.Errorf("%v: no error message", c.args)
		}
	}
}

func TestApprovalCommands(t *testing.T) {
	dir := t.TempDir()
	var w struct {
		Decision   string
		ApprovalID string `json:"approval_id"`
		Record     memory.Record
	}
	mustJSON(t, run(t, dir, nil, "write", "--type", "belief", "--content", "Ping me at dana@example.com", "--json"), &w)
	if w.Decision != "quarantined" || w.ApprovalID == "" {
		t.Fatalf("write %+v", w)
	}
	var w2 struct {
		ApprovalID string `json:"approval_id"`
	}
	mustJSON(t, run(t, dir, nil, "write", "--type", "belief", "--content", "Unsure fact", "--provisional", "--json"), &w2)

	var page struct {
		Items []struct{ ID, Kind string }
	}
	mustJSON(t, run(t, dir, nil, "approvals", "list", "--json"), &page)
	if len(page.Items) != 2 {
		t.Fatalf("queue %+v", page)
	}
	var item struct {
		Status string
		Record memory.Record
	}
	mustJSON(t, run(t, dir, nil, "approvals", "approve", w.ApprovalID, "--content", "Ping Dana", "--json"), &item)
	if item.Status != "approved" || item.Record.Content != "Ping Dana" || item.Record.Status != memory.Active {
		t.Fatalf("approve %+v", item)
	}
	mustJSON(t, run(t, dir, nil, "approvals", "reject", w2.ApprovalID, "--reason", "guess", "--json"), &item)
	if item.Status != "rejected" || item.Record.Status != memory.Forgotten {
		t.Fatalf("reject %+v", item)
	}
	if r := run(t, dir, nil, "approvals", "reject", w2.ApprovalID); r.code != 7 {
		t.Fatalf("second decision: exit %d", r.code)
	}
}

func TestAuditVerifyNamesTamperedRow(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []string{"one", "two", "three", "four"} {
		if r := run(t, dir, nil, "write", "--type", "belief", "--content", "fact "+c); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	r := run(t, dir, nil, "audit", "verify", "--json")
	var rep struct {
		OK      bool
		Entries int64
	}
	mustJSON(t, r, &rep)
	if !rep.OK || rep.Entries != 5 {
		t.Fatalf("verify %+v", rep)
	}

	db, err := sql.Open("sqlite", filepath.Join(dir, "memgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := db.QueryRow(`SELECT id FROM audit_log WHERE seq = 3`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// The schema refuses updates with a trigger; an attacker with the file
	// drops it first.
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'`)
	if err != nil {
		t.Fatal(err)
	}
	var triggers []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		triggers = append(triggers, n)
	}
	rows.Close()
	for _, n := range triggers {
		if _, err := db.Exec(`DROP TRIGGER "` + n + `"`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`UPDATE audit_log SET payload = replace(payload, 'accepted', 'rejected') WHERE seq = 3`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	r = run(t, dir, nil, "audit", "verify")
	if r.code != 12 {
		t.Fatalf("tampered chain: exit %d, stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "seq 3") || !strings.Contains(r.stderr, id) {
		t.Fatalf("verify does not name the row (seq 3, id %s): %q", id, r.stderr)
	}
}

func TestPolicyErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("rate_limit:\n  agent:\n    per_second: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, map[string]string{"MEMGATE_POLICY": pol}, "agents", "list")
	if r.code != 3 || !strings.Contains(r.stderr, "rate_limit.agent.per_second") {
		t.Fatalf("bad policy: exit %d %q", r.code, r.stderr)
	}
	if err := os.WriteFile(pol, []byte("pii:\n  action: reject\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, dir, map[string]string{"MEMGATE_POLICY": pol}, "write", "--type", "belief", "--content", "mail x@y.example")
	if r.code != 9 {
		t.Fatalf("pii reject under policy file: exit %d %q", r.code, r.stderr)
	}
}

func TestFlagsBeatEnvironment(t *testing.T) {
	envDir, flagDir := t.TempDir(), t.TempDir()
	if r := run(t, envDir, nil, "write", "--data-dir", flagDir, "--type", "belief", "--content", "where am I"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if _, err := os.Stat(filepath.Join(flagDir, "memgate.db")); err != nil {
		t.Fatalf("flag data dir not used: %v", err)
	}
	if _, err := os.Stat(filepath.Join(envDir, "memgate.db")); err == nil {
		t.Fatal("env data dir used although the flag was given")
	}
}

// The CLI writes as the workspace's operator principal, never as a free
// name an agent could take; internal names are reserved.
func TestCLIWritesAsTheOperatorPrincipal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	r := run(t, dir, nil, "write", "--type", "decision", "--content", "Payroll runs on the 25th", "--access", "agent", "--json")
	var w struct {
		Record memory.Record `json:"record"`
	}
	mustJSON(t, r, &w)
	if w.Record.Source.Agent != "operator" || !memory.ValidID(w.Record.Source.PrincipalID) || w.Record.ModifiedBy != w.Record.Source.PrincipalID {
		t.Fatalf("CLI write attributed to %q (%q), modified_by %q; want the bootstrap operator's id", w.Record.Source.Agent,
			w.Record.Source.PrincipalID, w.Record.ModifiedBy)
	}
	for _, name := range []string{"cli", "operator", "system"} {
		if r := run(t, dir, nil, "agents", "create", "--name", name, "--trust", "read_only"); r.code == 0 {
			t.Fatalf("agent named %q created: %s", name, r.stdout)
		}
	}
}

func TestRotateCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var a, b struct{ ID, Name, Token string }
	mustJSON(t, run(t, dir, nil, "agents", "create", "--name", "coder", "--json"), &a)
	if r := run(t, dir, nil, "agents", "revoke", "coder"); r.code != 0 {
		t.Fatalf("revoke: %s", r.stderr)
	}
	mustJSON(t, run(t, dir, nil, "agents", "rotate", "coder", "--json"), &b)
	if b.ID != a.ID || b.Token == a.Token || !strings.HasPrefix(b.Token, "mg_") {
		t.Fatalf("rotate: %+v after %+v", b, a)
	}
	var list struct{ Agents []memory.Principal }
	mustJSON(t, run(t, dir, nil, "agents", "list", "--json"), &list)
	if len(list.Agents) != 1 || list.Agents[0].Revoked() {
		t.Fatalf("a rotated agent is active again: %+v", list.Agents)
	}
	var u, u2 struct {
		UserID  string `json:"user_id"`
		UserKey string `json:"user_key"`
	}
	mustJSON(t, run(t, dir, nil, "users", "create", "--user-id", "ann", "--json"), &u)
	mustJSON(t, run(t, dir, nil, "users", "rotate-key", "ann", "--json"), &u2)
	if u2.UserID != "ann" || u2.UserKey == u.UserKey || !strings.HasPrefix(u2.UserKey, "uk_") {
		t.Fatalf("rotate-key: %+v", u2)
	}
	if r := run(t, dir, nil, "agents", "rotate", "nobody"); r.code == 0 {
		t.Fatal("rotating an unknown agent succeeded")
	}
}
