//go:build unix

package main

// The Python and TypeScript clients and the mem0-compatible API, each
// tested with its own language's test runner against a real `memgate
// serve` on loopback: Debian's python3 (standard library only) for
// clients/python, node --test for clients/typescript (with the real
// @anthropic-ai/sdk and @langchain/langgraph) and for the official mem0ai
// npm client (internal/mem0compat/testdata/node).
//
// Without python3 or node the tests skip, except under CI=true, where
// they fail; .ci/run installs both and runs `npm ci` for the two Node
// projects. A missing node_modules is installed here once.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clientServer is one memgate serve shared by the client suites, with an
// operator token and two agents: "app" (standard trust: writes are
// accepted) and "intern" (restricted: writes wait for approval).
type clientServer struct {
	base, operator, agent, restricted string
}

// needTool finds a program, skipping (or failing under CI=true) without it.
func needTool(t *testing.T, name, why string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the memgate binary and " + name + "; skipped with -short")
	}
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true (%s); .ci/run installs it", name, why)
		}
		t.Skipf("needs %s on PATH (%s)", name, why)
	}
	return p
}

func startClientServer(t *testing.T) *clientServer {
	t.Helper()
	srv := startServer(t, t.TempDir(), "--embedder", "")
	toks := srv.Tokens()
	if len(toks) != 1 {
		t.Fatalf("want one operator token, got %d", len(toks))
	}
	cs := &clientServer{base: srv.base, operator: toks[0]}
	for _, a := range []struct {
		name, trust string
		into        *string
	}{{"app", "standard", &cs.agent}, {"intern", "restricted", &cs.restricted}} {
		var out struct {
			Token string `json:"token"`
		}
		clientPost(t, cs.base+"/v1/agents", cs.operator, map[string]string{"name": a.name, "trust": a.trust}, &out)
		if out.Token == "" {
			t.Fatalf("agent %s: no token", a.name)
		}
		*a.into = out.Token
	}
	return cs
}

func clientPost(t *testing.T, url, token string, in, out any) {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatal(err)
	}
}

func (cs *clientServer) env() []string {
	return append(childEnv(), "MEMGATE_URL="+cs.base, "MEMGATE_OPERATOR_TOKEN="+cs.operator,
		"MEMGATE_AGENT_TOKEN="+cs.agent, "MEMGATE_RESTRICTED_TOKEN="+cs.restricted,
		"MEM0_TELEMETRY=false", "NO_COLOR=1")
}

func (cs *clientServer) secrets() []string { return []string{cs.operator, cs.agent, cs.restricted} }

// runSuite runs a test runner and fails with its output when it fails.
func runSuite(t *testing.T, cs *clientServer, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, redact(out.String(), cs.secrets()))
	}
	t.Log(redact(out.String(), cs.secrets()))
	return out.String()
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// npmInstalled runs `npm ci --ignore-scripts` in dir once when its
// node_modules is missing (.ci/run installs it ahead of the tests).
func npmInstalled(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return
	}
	npm := needTool(t, "npm", "installs the pinned dev dependencies")
	ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

// sharedClientServer starts a server for one suite: each suite gets its
// own, so it asserts on what it alone wrote.
func sharedClientServer(t *testing.T) *clientServer {
	t.Helper()
	return startClientServer(t)
}

// TestPythonClient runs clients/python's unittest suite with python3.
func TestPythonClient(t *testing.T) {
	py := needTool(t, "python3", "the Python client's tests run with a bare python3")
	cs := sharedClientServer(t)
	dir := filepath.Join(repoRoot(t), "clients", "python")
	out := runSuite(t, cs, dir, append(cs.env(), "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1"), py, "-m", "unittest", "discover", "-s", "tests", "-v")
	if !strings.Contains(out, "OK") {
		t.Fatalf("python suite did not report OK:\n%s", redact(out, cs.secrets()))
	}
}

// TestTypeScriptClient runs clients/typescript's node --test suites: the
// client, the Anthropic SDK memory tool, the LangGraph.js store.
func TestTypeScriptClient(t *testing.T) {
	node := needTool(t, "node", "the TypeScript client's tests run under node --test")
	dir := filepath.Join(repoRoot(t), "clients", "typescript")
	npmInstalled(t, dir)
	cs := sharedClientServer(t)
	suites, err := filepath.Glob(filepath.Join(dir, "test", "*.test.mjs"))
	if err != nil || len(suites) < 4 {
		t.Fatalf("want the four suites in %s/test, found %v (%v)", dir, suites, err)
	}
	runSuite(t, cs, dir, cs.env(), node, append([]string{"--test", "--test-reporter=spec"}, suites...)...)
}

// TestMem0OfficialClient drives memgate's mem0-compatible API with the
// official mem0ai npm client, unmodified.
func TestMem0OfficialClient(t *testing.T) {
	node := needTool(t, "node", "the official mem0ai client is JavaScript")
	dir := filepath.Join(repoRoot(t), "internal", "mem0compat", "testdata", "node")
	npmInstalled(t, dir)
	cs := sharedClientServer(t)
	runSuite(t, cs, dir, cs.env(), node, "--test", "--test-reporter=spec", "mem0.test.mjs")
}
