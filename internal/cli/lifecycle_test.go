package cli_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/cli"
)

// semanticEmbedder returns the flags that select a semantic embedder
// available offline: the built-in USE-Lite (the default, named because
// run() defaults tests to --embedder none).
func semanticEmbedder(*testing.T) []string { return []string{"--embedder", "use"} }

// stdioSession runs `memgate mcp` in-process on real pipes and connects
// the SDK's client as clientName. It returns the session; the command
// ends when the client closes, and its exit status is checked then.
func stdioSession(t *testing.T, dir, clientName string, args ...string) *sdk.ClientSession {
	t.Helper()
	// OS pipes, as a client that spawns `memgate mcp` connects them.
	serverIn, clientOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	clientIn, serverOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	done := make(chan int, 1)
	// t.Context ends before cleanups run; the session must outlive it.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		getenv := func(k string) string {
			if k == "MEMGATE_DATA_DIR" {
				return dir
			}
			return ""
		}
		code := cli.Main(append([]string{"mcp", "--log-level", "error"}, args...),
			cli.Env{Stdin: serverIn, Stdout: serverOut, Stderr: &stderr, Getenv: getenv, Ctx: ctx})
		serverOut.Close()
		serverIn.Close()
		done <- code
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: clientName, Version: "1"}, nil).Connect(ctx,
		&sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer cancel()
		cs.Close() // closes clientOut: the server reads EOF
		defer clientIn.Close()
		if code := <-done; code != 0 {
			t.Errorf("memgate mcp exited %d: %s", code, stderr.String())
		}
	})
	return cs
}

type mcpHit struct {
	Record struct {
		ID      string `json:"id"`
		Content string `json:"content"`
	} `json:"record"`
	Signals []string `json:"signals"`
}

func mcpQuery(t *testing.T, cs *sdk.ClientSession, q string) []mcpHit {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "memory_query", Arguments: map[string]any{"query": q}})
	if err != nil || res.IsError {
		t.Fatalf("memory_query: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Results []mcpHit `json:"results"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out.Results
}

// foundByMeaning waits until q's first hit is the record holding want and
// the dense signal found it, or the deadline passes.
func foundByMeaning(t *testing.T, cs *sdk.ClientSession, q, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var hits []mcpHit
	for {
		hits = mcpQuery(t, cs, q)
		if len(hits) > 0 && hits[0].Record.Content == want && slices.Contains(hits[0].Signals, "dense") {
			t.Logf("%q found by meaning after %s", q, within-time.Until(deadline))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q: %q not first by meaning within %s; hits %+v", q, want, within, hits)
		}
		<-tick.C
	}
}

// TestStdioMCPFindsByMeaning is the zero-setup path most agents use: one
// stdio session, no serve running. Its own write is found by meaning at
// once, and a write by another process (a one-shot CLI write) within 2 s.
func TestStdioMCPFindsByMeaning(t *testing.T) {
	emb := semanticEmbedder(t)
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, run(t, dir, nil, "agents", "create", "--name", "coder", "--trust", "standard"))
	cs := stdioSession(t, dir, "test-client", append([]string{"--agent", "coder"}, emb...)...)

	for _, c := range []string{"I work as a nurse", "The build server is slow on Mondays"} {
		mustRun(t, run(t, dir, nil, append([]string{"write", "--type", "belief", "--content", c}, emb...)...))
	}
	const pet = "I adopted a beagle named Rex last spring"
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "memory_write", Arguments: map[string]any{"type": "belief", "content": pet}})
	if err != nil || res.IsError {
		t.Fatalf("memory_write: %v %+v", err, res)
	}
	foundByMeaning(t, cs, "what pet does the user have?", pet, 2*time.Second)

	// Another process writes; its CLI write embeds before it returns, and
	// the session's change follower installs that vector.
	const dentist = "My cousin Ines is a dentist"
	w := mustRun(t, run(t, dir, nil, append([]string{"write", "--type", "belief", "--content", dentist}, emb...)...))
	if strings.Contains(w.stderr, "without a vector") {
		t.Fatalf("the CLI write left its vector pending: %s", w.stderr)
	}
	foundByMeaning(t, cs, "which relative treats teeth?", dentist, 2*time.Second)
}

// TestStdioMCPEmbedsOtherProcessesUnembeddedWrites: a record another
// process wrote without a vector (it had no embedder) is embedded by the
// session, woken by its change follower rather than the 30 s sweep.
func TestStdioMCPEmbedsOtherProcessesUnembeddedWrites(t *testing.T) {
	emb := semanticEmbedder(t)
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, run(t, dir, nil, "agents", "create", "--name", "coder", "--trust", "standard"))
	mustRun(t, run(t, dir, nil, "write", "--type", "belief", "--content", "I work as a nurse"))
	cs := stdioSession(t, dir, "test-client", append([]string{"--agent", "coder"}, emb...)...)
	const pet = "I adopted a beagle named Rex last spring"
	mustRun(t, run(t, dir, nil, "write", "--type", "belief", "--content", pet, "--embedder", "none"))
	foundByMeaning(t, cs, "what pet does the user have?", pet, 2*time.Second)
}

// TestOneShotWriteEmbeds: a CLI write with an embedder stores the
// record's vector before it returns, so the next one-shot query finds it
// by meaning. (core's TestCloseSaysVectorsPending covers a failing
// embedder.)
func TestOneShotWriteEmbeds(t *testing.T) {
	emb := semanticEmbedder(t)
	dir := filepath.Join(t.TempDir(), "data")
	w := mustRun(t, run(t, dir, nil, append([]string{"write", "--type", "belief", "--content", "I adopted a beagle named Rex last spring"}, emb...)...))
	if strings.Contains(w.stderr, "vector") {
		t.Fatalf("stderr: %s", w.stderr)
	}
	r := mustRun(t, run(t, dir, nil, append([]string{"query", "what pet does the user have?", "--json", "--explain"}, emb...)...))
	if !strings.Contains(r.stdout, `"dense"`) || !strings.Contains(r.stdout, "beagle") {
		t.Fatalf("query after the write found nothing by meaning: %s", r.stdout)
	}
}

// TestMCPClientIsTheAgent: `memgate mcp` with no prior step and no
// --agent acts as the MCP client's own agent, mcp-<client name>, created
// on first use at the policy's mcp.client_trust and audited.
func TestMCPClientIsTheAgent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cs := stdioSession(t, dir, "Claude Desktop")
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "memory_write", Arguments: map[string]any{"type": "belief", "content": "The user prefers tea"}})
	if err != nil || res.IsError {
		t.Fatalf("memory_write: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(raw), `"agent":"mcp-claude-desktop"`) {
		t.Fatalf("written as %s", raw)
	}
	var list struct {
		Agents []struct{ Name, Trust string } `json:"agents"`
	}
	mustJSON(t, run(t, dir, nil, "agents", "list", "--json"), &list)
	if len(list.Agents) != 1 || list.Agents[0].Name != "mcp-claude-desktop" || list.Agents[0].Trust != "standard" {
		t.Fatalf("agents %+v", list.Agents)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "memgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM audit_log WHERE event = 'agent.create' AND payload LIKE '%mcp-claude-desktop%'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("agent.create audit entries: %d, %v", n, err)
	}
}

// TestMCPClientTrustFromPolicy: the policy sets the trust of a client's
// agent; a read_only client cannot write.
func TestMCPClientTrustFromPolicy(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	pol := filepath.Join(tmp, "policy.yaml")
	if err := os.WriteFile(pol, []byte("mcp:\n  client_trust: read_only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := stdioSession(t, dir, "cursor", "--policy", pol)
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "memory_write", Arguments: map[string]any{"type": "belief", "content": "The user prefers tea"}})
	if err != nil || !res.IsError {
		t.Fatalf("memory_write as a read_only client: %v %+v", err, res)
	}
	if hits := mcpQuery(t, cs, "tea"); len(hits) != 0 {
		t.Fatalf("hits %+v", hits)
	}
}
