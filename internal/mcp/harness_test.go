package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/mcp"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/svctest"
)

// harness is a real service over a fresh SQLite database with an operator
// and agents of each trust level.
type harness struct {
	t   *testing.T
	svc *core.Service
	ps  map[string]memory.Principal
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	st := svctest.SQLite(t)
	ix := svctest.Index(t, st)
	pol := gate.Default()
	pol.RateLimit.Agent = gate.Bucket{}
	svc := core.New(core.Options{Store: st, Policy: pol, Index: ix})
	if _, _, err := svc.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := core.LocalOperator(memory.DefaultWorkspace)
	h := &harness{t: t, svc: svc, ps: map[string]memory.Principal{"op": op}}
	for name, trust := range map[string]memory.Trust{"trusted": memory.Trusted, "std": memory.Standard, "std2": memory.Standard,
		"restricted": memory.Restricted, "ro": memory.ReadOnly} {
		cp, err := svc.CreateAgent(ctx, op, name, trust)
		if err != nil {
			t.Fatal(err)
		}
		h.ps[name] = cp.Principal
	}
	return h
}

// connect returns a client session to a server acting as principal who,
// over the SDK's in-memory transports.
func (h *harness) connect(who string) *sdk.ClientSession {
	h.t.Helper()
	p, ok := h.ps[who]
	if !ok {
		h.t.Fatalf("no principal %q", who)
	}
	return h.connectAs(func(context.Context, *sdk.RequestExtra) (memory.Principal, error) { return p, nil })
}

func (h *harness) connectAs(who mcp.Who) *sdk.ClientSession {
	h.t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(h.svc, who, mcp.Options{Version: "test"}).Connect(ctx, st, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call calls a tool; the result must not be a protocol error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return res
}

// ok calls a tool, requires success and decodes its structured content.
func ok(t *testing.T, cs *sdk.ClientSession, name string, args, out any) *sdk.CallToolResult {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s(%v): tool error %s", name, args, text(res))
	}
	if out != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, raw, err)
		}
	}
	return res
}

// fails calls a tool and requires a tool error with code, and no
// structured content.
func fails(t *testing.T, cs *sdk.ClientSession, name string, args any, code string) string {
	t.Helper()
	res := call(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v): succeeded, want %s: %s", name, args, code, text(res))
	}
	if got := text(res); !strings.HasPrefix(got, code+": ") {
		t.Fatalf("%s(%v): error %q, want code %s", name, args, got, code)
	}
	if res.StructuredContent != nil {
		t.Fatalf("%s: error result has structured content %v", name, res.StructuredContent)
	}
	return text(res)
}

// text is a result's single text content.
func text(res *sdk.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		return ""
	}
	return tc.Text
}
