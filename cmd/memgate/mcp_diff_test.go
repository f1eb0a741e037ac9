//go:build unix

package main

// The differential test of the drop-in (issue 20): the same seeded random
// sequences of the reference memory server's nine tools are sent to the
// reference (@modelcontextprotocol/server-memory, pinned in
// internal/mcp/testdata/tsclient) and to `memgate mcp --dropin-only`,
// every result and each sequence's final graph are compared, and any
// difference outside the allow-list of docs/mcp-dropin.md fails the test.
//
// The default suite runs a few short sequences; for thousands of calls:
//
//	MEMGATE_DIFF_SEQUENCES=100 MEMGATE_DIFF_CALLS=60 go test ./cmd/memgate -run TestMCPDifferential -v
//
// MEMGATE_DIFF_SEED picks the first seed (sequence i uses seed+i), so a
// failure names the seed that reproduces it.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// diffServer is one side of the comparison. updates receives a value
// for each notifications/resources/updated of the knowledge graph.
type diffServer struct {
	name    string
	cs      *sdk.ClientSession
	updates chan struct{}
}

func connectCommand(t *testing.T, name string, cmd *exec.Cmd) diffServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	d := diffServer{name: name, updates: make(chan struct{}, 1<<16)}
	c := sdk.NewClient(&sdk.Implementation{Name: "memgate-diff", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			if req.Params.URI == "memory://knowledge-graph" {
				d.updates <- struct{}{}
			}
		},
	})
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", name, err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "memory://knowledge-graph"}); err != nil {
		t.Fatalf("%s: resources/subscribe: %v", name, err)
	}
	d.cs = cs
	return d
}

// awaitUpdates waits until d has sent n graph updates since the last call,
// or fails at a deadline.
func (d diffServer) awaitUpdates(t *testing.T, n int) {
	t.Helper()
	deadline := time.NewTimer(nodeTimeout)
	defer deadline.Stop()
	for range n {
		select {
		case <-d.updates:
		case <-deadline.C:
			t.Fatalf("%s: fewer than %d notifications/resources/updated", d.name, n)
		}
	}
}

// diffResult is a call's outcome reduced to what is compared: whether it
// failed, and the structured content and the text content, both as JSON
// values.
type diffResult struct {
	Error      bool `json:"error,omitempty"`
	Structured any  `json:"structured,omitempty"`
	Text       any  `json:"text,omitempty"`
	message    string
	// ranked: memgate answered a search nothing contains with ranked
	// entities (_meta memgate/ranked), where the reference finds none.
	ranked bool
}

func (d diffServer) call(t *testing.T, tool string, args map[string]any) diffResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	res, err := d.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %s: protocol error %v", d.name, tool, err)
	}
	var out diffResult
	var text string
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		return diffResult{Error: true, message: text}
	}
	if err := json.Unmarshal([]byte(text), &out.Text); err != nil {
		out.Text = text
	}
	raw, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(raw, &out.Structured)
	_, out.ranked = res.Meta["memgate/ranked"]
	return out
}

// Pools the generator draws from: names that differ only in case, in
// spaces and underscores, or in a leading space, the empty string, Greek
// and Turkish letters for case folding; observations that differ in case
// or in negation, personal data, the empty string.
var (
	diffNames = []string{"Alice", "alice", " Alice", "Bob Smith", "Bob_Smith", "", "Πέτρος", "İstanbul", "ΟΔΟΣ", "x%y", "Carol", "Dave"}
	diffTypes = []string{"person", "city", "", "organization", "Person"}
	diffObs   = []string{"likes tea", "LIKES TEA", "Likes tea", "does like working late at night on the backend services of Acme",
		"does not like working late at night on the backend services of Acme", "", "knows", "lives in İstanbul",
		"email is alice@example.com", "ΣΟΦΟΣ", "has 3 cats", "has 4 cats", "speaks Greek"}
	diffRelTypes = []string{"knows", "works_at", "depends on", "", "KNOWS", "mentors"}
	diffQueries  = []string{"alice", "ALICE", "ΠΈΤΡΟΣ", "πέτρος", "istanbul", "i\u0307stanbul", "tea", "", "smith", "_", "σοφος", "σοφοσ", "person", "late"}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// distinctNames picks up to n names, none twice: the reference would keep
// two entities of one name from one call, memgate one (allow-listed).
func distinctNames(r *rand.Rand, n int) []string {
	var out []string
	for range n {
		if x := pick(r, diffNames); !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func someObs(r *rand.Rand, max int) []string {
	out := []string{}
	for range r.IntN(max + 1) {
		out = append(out, pick(r, diffObs))
	}
	return out
}

func someRelations(r *rand.Rand) []any {
	var out []any
	seen := map[string]bool{}
	for range 1 + r.IntN(3) {
		rel := map[string]any{"from": pick(r, diffNames), "to": pick(r, diffNames), "relationType": pick(r, diffRelTypes)}
		key := fmt.Sprint(rel["from"], "\x00", rel["to"], "\x00", rel["relationType"])
		if !seen[key] { // a triple twice in one call: allow-listed
			seen[key] = true
			out = append(out, rel)
		}
	}
	return out
}

// nextCall draws one call of the nine tools.
func nextCall(r *rand.Rand) (string, map[string]any) {
	switch r.IntN(12) {
	case 0, 1, 2:
		var ents []any
		for _, n := range distinctNames(r, 1+r.IntN(3)) {
			ents = append(ents, map[string]any{"name": n, "entityType": pick(r, diffTypes), "observations": someObs(r, 3)})
		}
		return "create_entities", map[string]any{"entities": ents}
	case 3, 4:
		return "create_relations", map[string]any{"relations": someRelations(r)}
	case 5, 6:
		var items []any
		for range 1 + r.IntN(2) {
			items = append(items, map[string]any{"entityName": pick(r, diffNames), "contents": someObs(r, 3)})
		}
		return "add_observations", map[string]any{"observations": items}
	case 7:
		return "delete_entities", map[string]any{"entityNames": distinctNames(r, 1+r.IntN(2))}
	case 8:
		var items []any
		for range 1 + r.IntN(2) {
			items = append(items, map[string]any{"entityName": pick(r, diffNames), "observations": someObs(r, 2)})
		}
		return "delete_observations", map[string]any{"deletions": items}
	case 9:
		return "delete_relations", map[string]any{"relations": someRelations(r)}
	case 10:
		return "search_nodes", map[string]any{"query": pick(r, diffQueries)}
	default:
		if r.IntN(2) == 0 {
			return "read_graph", map[string]any{}
		}
		return "open_nodes", map[string]any{"names": distinctNames(r, 1+r.IntN(3))}
	}
}

// normalise applies the allow-list to a successful result: search_nodes
// lists the same entities as the reference, memgate's best match first,
// so its entities are compared as a set; where no entity contains the
// query memgate's ranked answer stands for the reference's empty one.
func normalise(tool string, d diffResult) diffResult {
	if tool != "search_nodes" {
		return d
	}
	if d.ranked {
		empty := map[string]any{"entities": []any{}, "relations": []any{}}
		d.Structured, d.Text, d.ranked = empty, empty, false
		return d
	}
	for _, v := range []*any{&d.Structured, &d.Text} {
		g, ok := (*v).(map[string]any)
		if !ok {
			continue
		}
		ents, _ := g["entities"].([]any)
		ents = slices.Clone(ents)
		slices.SortFunc(ents, func(a, b any) int {
			x, _ := json.Marshal(a)
			y, _ := json.Marshal(b)
			return strings.Compare(string(x), string(y))
		})
		g2 := map[string]any{}
		for k, x := range g {
			g2[k] = x
		}
		g2["entities"] = ents
		*v = g2
	}
	return d
}

func TestMCPDifferential(t *testing.T) {
	node, dir := nodeProject(t)
	bin := memgateBinary(t)
	sequences := envInt(t, "MEMGATE_DIFF_SEQUENCES", 4)
	calls := envInt(t, "MEMGATE_DIFF_CALLS", 40)
	seed := envInt(t, "MEMGATE_DIFF_SEED", 1)

	tmp := t.TempDir()
	refCmd := exec.Command(node, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-memory", "dist", "index.js"))
	refCmd.Env = append(childEnv(), "MEMORY_FILE_PATH="+filepath.Join(tmp, "memory.jsonl"))
	ref := connectCommand(t, "reference", refCmd)

	// memgate: a fresh data directory, one standard agent, and no rate
	// limit (a limit is a documented difference, not what is compared).
	dataDir := filepath.Join(tmp, "data")
	policy := filepath.Join(tmp, "policy.yaml")
	if err := os.WriteFile(policy, []byte("rate_limit:\n  agent: {per_second: 0, burst: 0}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(childEnv(), "MEMGATE_POLICY="+policy, "MEMGATE_LOG_LEVEL=warn")
	create := exec.Command(bin, "agents", "create", "--name", "claude", "--trust", "standard", "--data-dir", dataDir, "--json")
	create.Env = env
	if err := runBounded(create, startTimeout); err != nil { // output holds tokens: not printed
		t.Fatalf("memgate agents create: %v", err)
	}
	mgCmd := exec.Command(bin, "mcp", "--agent", "claude", "--data-dir", dataDir, "--dropin-only")
	mgCmd.Env = env
	mg := connectCommand(t, "memgate", mgCmd)

	compareTools(t, ref, mg)

	total, diffs, writes := 0, 0, 0
	for i := range sequences {
		s := uint64(seed + i)
		r := rand.New(rand.NewPCG(s, s))
		var log []string
		fail := func(format string, args ...any) {
			t.Helper()
			diffs++
			t.Errorf("seed %d, after %d calls:\n%s\n%s", s, len(log), strings.Join(log, "\n"), fmt.Sprintf(format, args...))
		}
		for range calls {
			tool, args := nextCall(r)
			a, _ := json.Marshal(args)
			log = append(log, "  "+tool+" "+string(a))
			want, got := ref.call(t, tool, args), mg.call(t, tool, args)
			total++
			if want.Error != got.Error {
				fail("%s: reference error=%v (%q), memgate error=%v (%q)", tool, want.Error, want.message, got.Error, got.message)
				break
			}
			if want.Error { // both refused: the wording may differ (allow-listed)
				continue
			}
			if strings.HasPrefix(tool, "create_") || strings.HasPrefix(tool, "add_") || strings.HasPrefix(tool, "delete_") {
				writes++
			}
			if w, g := normalise(tool, want), normalise(tool, got); !reflect.DeepEqual(w, g) {
				wj, _ := json.Marshal(w)
				gj, _ := json.Marshal(g)
				fail("%s:\n  reference: %s\n  memgate:   %s", tool, wj, gj)
				break
			}
		}
		// The final graphs agree, and the reset leaves both empty.
		want, got := ref.call(t, "read_graph", map[string]any{}), mg.call(t, "read_graph", map[string]any{})
		if !reflect.DeepEqual(want, got) {
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			fail("final graph:\n  reference: %s\n  memgate:   %s", wj, gj)
		}
		names := map[string]bool{}
		var g struct {
			Entities  []struct{ Name string }
			Relations []struct{ From, To string }
		}
		b, _ := json.Marshal(want.Structured)
		_ = json.Unmarshal(b, &g)
		for _, e := range g.Entities {
			names[e.Name] = true
		}
		for _, r := range g.Relations {
			names[r.From], names[r.To] = true, true
		}
		all := []string{}
		for n := range names {
			all = append(all, n)
		}
		slices.Sort(all)
		for _, d := range []diffServer{ref, mg} {
			if res := d.call(t, "delete_entities", map[string]any{"entityNames": all}); res.Error {
				t.Fatalf("%s: reset failed: %s", d.name, res.message)
			}
			// Each successful write was announced to the subscriber.
			d.awaitUpdates(t, writes+1)
			res := d.call(t, "read_graph", map[string]any{})
			if b, _ := json.Marshal(res.Structured); string(b) != `{"entities":[],"relations":[]}` {
				t.Fatalf("%s: graph after the reset: %s", d.name, b)
			}
		}
		writes = 0
		if diffs > 0 {
			break
		}
	}
	for _, d := range []diffServer{ref, mg} {
		if n := len(d.updates); n != 0 {
			t.Errorf("%s: %d notifications more than successful writes", d.name, n)
		}
	}
	t.Logf("%d sequences, %d calls compared, seeds %d..%d", sequences, total, seed, seed+sequences-1)
}

// compareTools requires the drop-in's nine tools to have the reference's
// names, titles, annotations and input and output schemas. (The
// reference's tools also carry execution {"taskSupport":"forbidden"},
// which the Go SDK's Tool type does not have; absent, it means the same.)
func compareTools(t *testing.T, ref, mg diffServer) {
	t.Helper()
	list := func(d diffServer) map[string]map[string]any {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := d.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("%s: tools/list: %v", d.name, err)
		}
		out := map[string]map[string]any{}
		for _, tool := range res.Tools {
			b, _ := json.Marshal(tool)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			out[tool.Name] = m
		}
		return out
	}
	want, got := list(ref), list(mg)
	if len(want) != 9 || len(got) != len(want) {
		t.Fatalf("tools: reference %d, memgate --dropin-only %d", len(want), len(got))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("memgate lacks %s", name)
			continue
		}
		for _, k := range []string{"title", "annotations", "inputSchema", "outputSchema"} {
			if !reflect.DeepEqual(w[k], g[k]) {
				wj, _ := json.Marshal(w[k])
				gj, _ := json.Marshal(g[k])
				t.Errorf("%s %s:\n  reference: %s\n  memgate:   %s", name, k, wj, gj)
			}
		}
	}
}
