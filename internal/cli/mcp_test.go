package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/cli"
)

// TestMCPCommandNamedAgentMustExist: a session told to act as an agent
// fails before serving when there is none by that name (without --agent it
// acts as the client's own agent: TestMCPClientIsTheAgent).
func TestMCPCommandNamedAgentMustExist(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	r := run(t, dir, map[string]string{"MEMGATE_MCP_AGENT": "ghost"}, "mcp")
	if r.code != 6 || !strings.Contains(r.stderr, "memgate agents create") || r.stdout != "" {
		t.Fatalf("unknown agent: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestMCPCommandOverStdio runs `memgate mcp` in-process on pipes and
// drives it with the SDK's client: the protocol on stdout, the calls
// acting as the named agent, and a clean exit when the client hangs up.
func TestMCPCommandOverStdio(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustRun(t, run(t, dir, nil, "agents", "create", "--name", "coder", "--trust", "standard"))

	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		getenv := func(k string) string {
			switch k {
			case "MEMGATE_DATA_DIR":
				return dir
			case "MEMGATE_MCP_AGENT":
				return "coder"
			case "MEMGATE_EMBEDDER":
				return "none"
			}
			return ""
		}
		code := cli.Main([]string{"mcp", "--log-level", "error"}, cli.Env{Stdin: serverIn, Stdout: serverOut, Stderr: &stderr, Getenv: getenv, Ctx: t.Context()})
		serverOut.Close()
		done <- code
	}()

	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "cli-test", Version: "1"}, nil).Connect(ctx,
		&sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "create_entities", Arguments: map[string]any{"entities": []any{
		map[string]any{"name": "Build server", "entityType": "system", "observations": []string{"Is slow on Mondays"}}}}})
	if err != nil || res.IsError {
		t.Fatalf("create_entities: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "memory_query", Arguments: map[string]any{"query": "when is the build server slow?"}})
	if err != nil || res.IsError {
		t.Fatalf("memory_query: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(raw), `"content":"Build server: Is slow on Mondays"`) || !strings.Contains(string(raw), `"agent":"coder"`) {
		t.Fatalf("memory_query found %s", raw)
	}
	cs.Close()
	if code := <-done; code != 0 {
		t.Fatalf("memgate mcp exited %d: %s", code, stderr.String())
	}
	// What the session wrote is in the data directory for every command.
	r := mustRun(t, run(t, dir, nil, "query", "build server Mondays", "--json"))
	if !strings.Contains(r.stdout, "Is slow on Mondays") {
		t.Fatalf("query after the session: %s", r.stdout)
	}
}

const memoryFile = `{"type":"entity","name":"John Smith","entityType":"person","observations":["Speaks fluent Spanish","Graduated in 2019"]}
{"type":"entity","name":"Anthropic","entityType":"organization","observations":[]}

{"type":"relation","from":"John Smith","to":"Anthropic","relationType":"works_at"}
{"type":"relation","from":"John Smith","to":"Anthropic","relationType":"admires"}`

func TestImportFromMCPMemory(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "data")
	file := filepath.Join(tmp, "memory.jsonl")
	if err := os.WriteFile(file, []byte(memoryFile), 0o600); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Lines               int `json:"lines"`
		EntitiesCreated     int `json:"entities_created"`
		EntitiesExisting    int `json:"entities_existing"`
		ObservationsAdded   int `json:"observations_added"`
		ObservationsSkipped int `json:"observations_skipped"`
		RelationsCreated    int `json:"relations_created"`
		RelationsExisting   int `json:"relations_existing"`
	}
	mustJSON(t, run(t, dir, nil, "import", "--from-mcp-memory", file, "--json"), &st)
	if st.Lines != 5 || st.EntitiesCreated != 2 || st.ObservationsAdded != 2 || st.RelationsCreated != 2 || st.EntitiesExisting != 0 {
		t.Fatalf("first import %+v", st)
	}
	// The observations are memories.
	r := mustRun(t, run(t, dir, nil, "query", "who speaks Spanish", "--json"))
	if !strings.Contains(r.stdout, "John Smith: Speaks fluent Spanish") {
		t.Fatalf("query after import: %s", r.stdout)
	}
	// The relations are one edge of the graph (free-text relation types
	// map to RELATED_TO; core's tests check they read back as given).
	r = mustRun(t, run(t, dir, nil, "graph", "neighbors", "entity:John_Smith", "--json"))
	if !strings.Contains(r.stdout, `"natural_key": "Anthropic"`) || !strings.Contains(r.stdout, `"relation": "RELATED_TO"`) {
		t.Fatalf("neighbors after import: %s", r.stdout)
	}
	// Importing again changes nothing.
	mustJSON(t, run(t, dir, nil, "import", "--from-mcp-memory", file, "--json"), &st)
	if st.EntitiesCreated != 0 || st.EntitiesExisting != 2 || st.ObservationsAdded != 0 || st.ObservationsSkipped != 2 ||
		st.RelationsCreated != 0 || st.RelationsExisting != 2 {
		t.Fatalf("second import %+v", st)
	}
	// Text output names the counts.
	r = mustRun(t, run(t, dir, nil, "import", "--from-mcp-memory", file))
	if !strings.Contains(r.stdout, "0 entities created (2 already present)") {
		t.Fatalf("text output %q", r.stdout)
	}
}

func TestImportFromMCPMemoryBadLine(t *testing.T) {
	for _, c := range []struct {
		name, file, want string
	}{
		{"not JSON", `{"type":"entity","name":"A","entityType":"t","observations":[]}` + "\n" + `{"type":"entity","name":"B","entityType":"t","observations":["x"]}` + "\nnot json\n", "line 3"},
		{"unknown type", `{"type":"entity","name":"A","entityType":"t","observations":[]}` + "\n" + `{"type":"node","name":"B"}`, "line 2"},
		{"entity without observations", `{"type":"entity","name":"A","entityType":"t"}`, "line 1"},
		{"relation without to", `{"type":"entity","name":"A","entityType":"t","observations":["x"]}` + "\n" + `{"type":"relation","from":"A","relationType":"knows"}`, "line 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "data")
			file := filepath.Join(tmp, "memory.jsonl")
			if err := os.WriteFile(file, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			r := run(t, dir, nil, "import", "--from-mcp-memory", file)
			if r.code != 3 || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d %q, want 3 naming %q", r.code, r.stderr, c.want)
			}
			// Nothing was imported.
			r = mustRun(t, run(t, dir, nil, "graph", "nodes", "--label", "entity", "--json"))
			if strings.Contains(r.stdout, `"natural_key"`) {
				t.Fatalf("a bad file imported nodes: %s", r.stdout)
			}
		})
	}
	r := run(t, filepath.Join(t.TempDir(), "data"), nil, "import", "--from-mcp-memory", "x.jsonl", "extra")
	if r.code != 2 {
		t.Fatalf("extra argument: exit %d", r.code)
	}
}
