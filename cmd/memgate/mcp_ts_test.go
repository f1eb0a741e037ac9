//go:build unix

package main

// MCP tests with software someone else wrote: the official TypeScript SDK
// (@modelcontextprotocol/sdk) as the client of `memgate mcp` (stdio) and
// of /mcp on `memgate serve` (Streamable HTTP), and the reference memory
// server (@modelcontextprotocol/server-memory) as the oracle for the
// compatibility tools. The scripts and their pinned npm packages live in
// internal/mcp/testdata/tsclient; `npm ci` runs there when node_modules is
// missing or does not match package-lock.json.
//
// Without node and npm the tests skip, except under CI=true, where they
// fail: CI must run them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	npmTimeout  = 10 * time.Minute // npm ci on a cold cache
	nodeTimeout = 3 * time.Minute  // one script run
)

// tsclientDir is the Node project, relative to this package.
var tsclientDir = filepath.Join("..", "..", "internal", "mcp", "testdata", "tsclient")

var (
	npmOnce sync.Once
	npmErr  error
)

// nodeProject returns the node executable and the project's absolute
// directory, with its dependencies installed.
func nodeProject(t *testing.T) (node, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs node and the memgate binary; skipped with -short")
	}
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are required under CI=true (node: %v, npm: %v); .ci/run installs them", errNode, errNpm)
		}
		t.Skip("needs node (>= 18) and npm on PATH to run the official MCP TypeScript SDK and the reference memory server")
	}
	dir, err := filepath.Abs(tsclientDir)
	if err != nil {
		t.Fatal(err)
	}
	npmOnce.Do(func() { npmErr = ensureNodeModules(npm, dir) })
	if npmErr != nil {
		t.Fatal(npmErr)
	}
	return node, dir
}

// ensureNodeModules runs `npm ci` in dir unless node_modules holds exactly
// the versions package-lock.json pins for the two packages the scripts use.
func ensureNodeModules(npm, dir string) error {
	lockBytes, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lockBytes, &lock); err != nil {
		return fmt.Errorf("package-lock.json: %w", err)
	}
	current := true
	for _, pkg := range []string{"node_modules/@modelcontextprotocol/sdk", "node_modules/@modelcontextprotocol/server-memory"} {
		want := lock.Packages[pkg].Version
		if want == "" {
			return fmt.Errorf("package-lock.json does not pin %s", pkg)
		}
		var installed struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(dir, pkg, "package.json"))
		if err != nil || json.Unmarshal(b, &installed) != nil || installed.Version != want {
			current = false
		}
	}
	if current {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return nil
}

// runNode runs `node script args...` in dir with env and returns stdout.
// A failure reports the script's stderr, with secrets blanked out.
func runNode(t *testing.T, node, dir string, env []string, secrets []string, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		t.Fatalf("node %s: %v\nstderr:\n%s\nstdout:\n%s", script, err, redact(stderr.String(), secrets), redact(stdout.String(), secrets))
	}
	return stdout.Bytes()
}

func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "<redacted>")
		}
	}
	return s
}

// createAgent creates an agent over REST and returns its id and token.
func createAgent(t *testing.T, op *client, name, trust string) (id, token string) {
	t.Helper()
	status, body, err := op.do("POST", "/v1/agents", map[string]any{"name": name, "trust": trust})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create agent %s: status %d, err %v", name, status, err) // the body holds the token: not printed
	}
	var a struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &a); err != nil || a.ID == "" || !strings.HasPrefix(a.Token, "mg_") {
		t.Fatalf("create agent %s: no id or token in the answer (err %v)", name, err)
	}
	return a.ID, a.Token
}

// TestMCPTypeScriptClient drives memgate's MCP server with the official
// TypeScript SDK: over stdio (`memgate mcp`, the agent named by
// MEMGATE_MCP_AGENT, on the data directory of a running server) and over
// Streamable HTTP (/mcp with the same agent's bearer token); every tool is
// called and checked by the script. HTTP without a token, with a bogus one
// and with a revoked one must be refused.
func TestMCPTypeScriptClient(t *testing.T) {
	node, dir := nodeProject(t)
	bin := memgateBinary(t)
	dataDir := t.TempDir()
	srv := startServer(t, dataDir)
	toks := srv.Tokens()
	if len(toks) != 1 {
		t.Fatalf("want one operator token at first start, got %d", len(toks))
	}
	op := newClient(t, srv.base, toks[0], 2)
	_, agentToken := createAgent(t, op, "tsclient", "standard")
	revokedID, revokedToken := createAgent(t, op, "tsclient-revoked", "standard")
	if status, _, err := op.do("DELETE", "/v1/agents/"+revokedID, nil); err != nil || status != http.StatusOK {
		t.Fatalf("revoke agent: status %d, err %v", status, err)
	}
	secrets := []string{toks[0], agentToken, revokedToken}

	env := append(childEnv(),
		"MGTEST_BIN="+bin,
		"MGTEST_URL="+srv.base+"/mcp",
		"MGTEST_AGENT_TOKEN="+agentToken,
		"MGTEST_REVOKED_TOKEN="+revokedToken,
		// The stdio server's configuration, as a client config would set it.
		"MEMGATE_DATA_DIR="+dataDir,
		"MEMGATE_MCP_AGENT=tsclient",
		"MEMGATE_LOG_LEVEL=warn",
	)
	out := runNode(t, node, dir, env, secrets, "session.js")

	var summary struct {
		Stdio, HTTP struct {
			Tools  int      `json:"tools"`
			Called []string `json:"called"`
		}
		Refused map[string]int `json:"refused"`
	}
	if err := json.Unmarshal(out, &summary); err != nil {
		t.Fatalf("session summary is not JSON: %v\n%s", err, redact(string(out), secrets))
	}
	for _, s := range []struct {
		name   string
		called []string
		tools  int
	}{{"stdio", summary.Stdio.Called, summary.Stdio.Tools}, {"http", summary.HTTP.Called, summary.HTTP.Tools}} {
		if len(s.called) != 18 || s.tools < 18 {
			t.Errorf("%s: called %d tools of %d listed, want all 18: %v", s.name, len(s.called), s.tools, s.called)
		}
	}
	for _, k := range []string{"no_token", "bogus_token", "revoked_token"} {
		if summary.Refused[k] != http.StatusUnauthorized {
			t.Errorf("HTTP %s: refused with %d, want 401", k, summary.Refused[k])
		}
	}
	t.Logf("session summary: %s", redact(strings.TrimSpace(string(out)), secrets))

	// The audit chain still verifies after both sessions, and no token
	// reached the server's output.
	var verify struct {
		OK bool `json:"ok"`
	}
	op.getJSON(t, "/v1/audit/verify", http.StatusOK, &verify)
	if !verify.OK {
		t.Errorf("audit chain does not verify after the MCP sessions")
	}
	srv.stop(t)
	all := srv.AllOutput()
	for i, sec := range secrets[1:] {
		if strings.Contains(all, sec) {
			t.Errorf("agent token %d appears in the server's output", i+1)
		}
	}
}

// parityOutput is what parity.js prints.
type parityOutput struct {
	Tools map[string]struct {
		Missing     bool     `json:"missing"`
		Required    []string `json:"required"`
		Properties  []string `json:"properties"`
		ReadOnly    bool     `json:"readOnly"`
		Destructive bool     `json:"destructive"`
	} `json:"tools"`
	Steps []struct {
		Step   string          `json:"step"`
		Tool   string          `json:"tool"`
		Result json.RawMessage `json:"result"`
	} `json:"steps"`
	Notes []string `json:"notes"`
}

// TestMCPReferenceParity runs one scripted session of the compatibility
// tools against the reference memory server and against `memgate mcp` on a
// fresh data directory, and requires the same normalised results (graphs
// compared without order, since the reference defines none), the same
// required arguments and annotations, and every reference argument
// accepted by memgate.
func TestMCPReferenceParity(t *testing.T) {
	node, dir := nodeProject(t)
	bin := memgateBinary(t)

	refFile := filepath.Join(t.TempDir(), "memory.jsonl")
	refEnv := append(childEnv(), "MEMORY_FILE_PATH="+refFile)
	refOut := runNode(t, node, dir, refEnv, nil, "parity.js", node, filepath.Join("node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js"))

	dataDir := t.TempDir()
	create := exec.Command(bin, "agents", "create", "--name", "claude", "--trust", "standard", "--data-dir", dataDir, "--json")
	create.Env = childEnv()
	if err := runBounded(create, startTimeout); err != nil { // output holds tokens: not printed
		t.Fatalf("memgate agents create: %v", err)
	}
	mgOut := runNode(t, node, dir, append(childEnv(), "MEMGATE_LOG_LEVEL=warn"), nil, "parity.js",
		bin, "mcp", "--agent", "claude", "--data-dir", dataDir)

	var ref, mg parityOutput
	if err := json.Unmarshal(refOut, &ref); err != nil {
		t.Fatalf("reference output: %v\n%s", err, refOut)
	}
	if err := json.Unmarshal(mgOut, &mg); err != nil {
		t.Fatalf("memgate output: %v\n%s", err, mgOut)
	}
	if len(ref.Steps) < 20 {
		t.Fatalf("reference session has %d steps, want the whole script", len(ref.Steps))
	}
	if n := countErrors(ref); n != 1 {
		t.Fatalf("the reference server failed %d calls, want exactly the one to a missing entity; notes: %v", n, ref.Notes)
	}

	for name, rt := range ref.Tools {
		mt, ok := mg.Tools[name]
		switch {
		case rt.Missing:
			t.Errorf("reference server lacks %s", name)
		case !ok || mt.Missing:
			t.Errorf("memgate lacks the tool %s", name)
		default:
			if !slices.Equal(rt.Required, mt.Required) {
				t.Errorf("%s: required arguments %v, reference %v", name, mt.Required, rt.Required)
			}
			for _, p := range rt.Properties {
				if !slices.Contains(mt.Properties, p) {
					t.Errorf("%s: argument %s of the reference is not in memgate's schema %v", name, p, mt.Properties)
				}
			}
			if rt.ReadOnly != mt.ReadOnly || rt.Destructive != mt.Destructive {
				t.Errorf("%s: annotations read-only %v destructive %v, reference %v %v", name, mt.ReadOnly, mt.Destructive, rt.ReadOnly, rt.Destructive)
			}
		}
	}

	if len(mg.Steps) != len(ref.Steps) {
		t.Fatalf("memgate session has %d steps, reference %d", len(mg.Steps), len(ref.Steps))
	}
	diffs := 0
	for i, rs := range ref.Steps {
		ms := mg.Steps[i]
		var rv, mv any
		if err := json.Unmarshal(rs.Result, &rv); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(ms.Result, &mv); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rv, mv) {
			diffs++
			t.Errorf("step %d %q (%s):\n  reference: %s\n  memgate:   %s", i+1, rs.Step, rs.Tool, compact(rs.Result), compact(ms.Result))
		}
	}
	if diffs > 0 {
		t.Logf("memgate notes: %s", strings.Join(mg.Notes, "\n"))
	}

	// Migration: the memory file the reference server wrote, imported into
	// another fresh data directory, reads back as the reference's final
	// graph (twice: a second import changes nothing).
	var final json.RawMessage
	for _, s := range ref.Steps {
		if s.Step == "final graph" {
			var r struct {
				Structured json.RawMessage `json:"structured"`
			}
			if err := json.Unmarshal(s.Result, &r); err != nil || len(r.Structured) == 0 {
				t.Fatalf("reference final graph: %v %s", err, s.Result)
			}
			final = r.Structured
		}
	}
	if final == nil {
		t.Fatal("the reference session has no final graph step")
	}
	importDir := t.TempDir()
	create = exec.Command(bin, "agents", "create", "--name", "claude", "--trust", "standard", "--data-dir", importDir, "--json")
	create.Env = childEnv()
	if err := runBounded(create, startTimeout); err != nil {
		t.Fatalf("memgate agents create: %v", err)
	}
	for range 2 {
		imp := exec.Command(bin, "import", "--from-mcp-memory", refFile, "--data-dir", importDir)
		imp.Env = childEnv()
		var out bytes.Buffer
		imp.Stdout, imp.Stderr = &out, &out
		if err := runBounded(imp, startTimeout); err != nil {
			t.Fatalf("memgate import --from-mcp-memory: %v\n%s", err, out.String())
		}
		graph := runNode(t, node, dir, append(childEnv(), "MEMGATE_LOG_LEVEL=warn"), nil, "readgraph.js",
			bin, "mcp", "--agent", "claude", "--data-dir", importDir)
		var want, got any
		if err := json.Unmarshal(final, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(graph, &got); err != nil {
			t.Fatalf("readgraph output: %v\n%s", err, graph)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("graph imported from the reference's memory file:\n  reference: %s\n  memgate:   %s", compact(final), bytes.TrimSpace(graph))
		}
	}
}

func countErrors(o parityOutput) int {
	n := 0
	for _, s := range o.Steps {
		var r map[string]any
		if json.Unmarshal(s.Result, &r) == nil && (r["error"] == true || r["protocolError"] == true) {
			n++
		}
	}
	return n
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
