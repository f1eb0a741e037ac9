package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/mcp"
	"github.com/memgate/memgate/internal/memory"
)

// connectWith is connect with server and client options.
func (h *harness) connectWith(who string, o mcp.Options, co *sdk.ClientOptions) *sdk.ClientSession {
	h.t.Helper()
	p := h.ps[who]
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(h.svc, func(context.Context, *sdk.RequestExtra) (memory.Principal, error) { return p, nil }, o).Connect(ctx, st, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, co).Connect(ctx, ct, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// TestDropinOnlyTools: the drop-in-only server lists exactly the
// reference's nine tools with its names, titles, annotations and schemas
// (dropin_tools.json is the reference's own tools/list, less descriptions;
// cmd/memgate's differential test checks it against the live reference).
func TestDropinOnlyTools(t *testing.T) {
	h := newHarness(t)
	cs := h.connectWith("std", mcp.Options{DropinOnly: true}, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("dropin_tools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != len(want) {
		t.Fatalf("%d tools, want the reference's %d", len(res.Tools), len(want))
	}
	for i, tool := range res.Tools {
		b, _ := json.Marshal(tool)
		var got map[string]any
		_ = json.Unmarshal(b, &got)
		w := want[slices.IndexFunc(want, func(m map[string]any) bool { return m["name"] == tool.Name })]
		for _, k := range []string{"name", "title", "annotations", "inputSchema", "outputSchema"} {
			if !reflect.DeepEqual(got[k], w[k]) {
				t.Errorf("tool %d %s: %s differs:\n got  %v\n want %v", i, tool.Name, k, got[k], w[k])
			}
		}
	}
	// The tools work, and a memgate-only argument is ignored as the
	// reference ignores unknown arguments.
	ok(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "A", "entityType": "t", "observations": []string{"x"}}}}, nil)
	var g struct{ Entities []any }
	ok(t, cs, "read_graph", map[string]any{"limit": 0}, &g)
	if len(g.Entities) != 1 {
		t.Fatalf("read_graph %+v", g)
	}
}

// TestGraphSubscription: a client subscribed to memory://knowledge-graph
// is told after each change a tool call makes.
func TestGraphSubscription(t *testing.T) {
	h := newHarness(t)
	updated := make(chan string, 16)
	cs := h.connectWith("std", mcp.Options{}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	ctx := t.Context()
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "memory://knowledge-graph"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	wait := func(what string) {
		t.Helper()
		select {
		case uri := <-updated:
			if uri != "memory://knowledge-graph" {
				t.Fatalf("%s: update of %q", what, uri)
			}
		case <-time.After(60 * time.Second): // a bound, not a pace: the update normally arrives before the call's result
			t.Fatalf("%s: no notifications/resources/updated", what)
		}
	}
	ok(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "A", "entityType": "t", "observations": []string{}}}}, nil)
	wait("create_entities")
	ok(t, cs, "read_graph", map[string]any{}, nil) // reads change nothing ...
	ok(t, cs, "delete_entities", map[string]any{"entityNames": []string{"A"}}, nil)
	wait("delete_entities") // ... so the next notification is the delete's
	select {
	case uri := <-updated:
		t.Fatalf("extra notification %q", uri)
	default:
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "memory://knowledge-graph"}); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
}

// TestHeldObservationsFlagged: personal data an agent writes is returned
// as stored, read back by it (flagged in _meta), hidden from others.
func TestHeldObservationsFlagged(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	res := ok(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "Alice", "entityType": "person", "observations": []string{"email is alice@example.com", "likes tea"}}}}, nil)
	heldOf := func(res *sdk.CallToolResult) []any {
		held, _ := res.Meta["memgate/held"].([]any)
		return held
	}
	if len(heldOf(res)) != 1 {
		t.Fatalf("create result _meta %v", res.Meta)
	}
	var g struct {
		Entities []struct{ Observations []string }
	}
	res = ok(t, cs, "open_nodes", map[string]any{"names": []string{"Alice"}}, &g)
	if len(g.Entities) != 1 || len(g.Entities[0].Observations) != 2 || len(heldOf(res)) != 1 {
		t.Fatalf("writer's read %+v, _meta %v", g, res.Meta)
	}
	ok(t, h.connect("std2"), "open_nodes", map[string]any{"names": []string{"Alice"}}, &g)
	if len(g.Entities) != 1 || !slices.Equal(g.Entities[0].Observations, []string{"likes tea"}) {
		t.Fatalf("another agent's read %+v", g)
	}
	// A limit that cuts the graph says so.
	ok(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "Bob", "entityType": "person", "observations": []string{}}}}, nil)
	res = ok(t, cs, "read_graph", map[string]any{"limit": 1}, nil)
	if res.Meta["memgate/omitted"] != float64(1) || len(res.Content) != 2 {
		t.Fatalf("cut read_graph: _meta %v, %d contents", res.Meta, len(res.Content))
	}
}
