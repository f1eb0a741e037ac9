package sdk

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/svctest"
)

// TestRelevanceRealServer: the SDK's REST and gateway searches carry each
// hit's relevance and send min_relevance, against a real server.
func TestRelevanceRealServer(t *testing.T) {
	ctx := context.Background()
	st := svctest.SQLite(t)
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix})
	opTok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := svc.CreateUser(ctx, core.LocalOperator(memory.DefaultWorkspace), "alice")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	t.Cleanup(srv.Close)

	c, err := NewClient(srv.URL, opTok)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"The staging database runs PostgreSQL 16", "The staging cluster is in Frankfurt"} {
		if _, err := c.Write(ctx, WriteRequest{Type: "belief", Content: s}); err != nil {
			t.Fatal(err)
		}
	}
	q := "which PostgreSQL version does the staging database run?"
	all, err := c.Search(ctx, RecordSearchRequest{Query: q, Explain: true})
	if err != nil || len(all.Results) != 2 {
		t.Fatalf("search: %+v %v", all, err)
	}
	top := all.Results[0]
	if !(top.Relevance > 0 && top.Relevance <= 1) || top.Relevance <= all.Results[1].Relevance || top.Evidence == nil {
		t.Fatalf("relevance %+v", all.Results)
	}
	// The round-five knobs reach the server: an opening weight out of
	// range is refused naming its field, the ranker can be turned off.
	_, err = c.Search(ctx, RecordSearchRequest{Query: q, Opening: new(11.0)})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidArgument || !strings.Contains(e.Message, "opening") {
		t.Fatalf("opening 11: %v", err)
	}
	if off, err := c.Search(ctx, RecordSearchRequest{Query: q, Ranker: new(false), Opening: new(0.0)}); err != nil || len(off.Results) != 2 {
		t.Fatalf("ranker off: %+v %v", off, err)
	}
	cut, err := c.Search(ctx, RecordSearchRequest{Query: q, MinRelevance: math.Nextafter(all.Results[1].Relevance, 2)})
	if err != nil || len(cut.Results) != 1 || cut.Results[0].Record.ID != top.Record.ID {
		t.Fatalf("min_relevance: %+v %v", cut, err)
	}

	g, err := NewGatewayClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Add(ctx, AddRequest{UserID: u.UserID, UserKey: u.UserKey, SessionID: "chat:c1", Messages: []Message{
		{SenderID: u.UserID, Role: RoleUser, Timestamp: 1780000000000, Content: "My VPN drops every hour with WireGuard"},
	}}); err != nil {
		t.Fatal(err)
	}
	// The contract's answer has no relevance; asking for a minimum adds it.
	gs, err := g.Search(ctx, SearchRequest{UserID: u.UserID, UserKey: u.UserKey, Query: "WireGuard VPN drops"})
	if err != nil || len(gs.Results) != 1 || gs.Results[0].Relevance != 0 {
		t.Fatalf("gateway search without min_relevance: %+v %v", gs, err)
	}
	gs, err = g.Search(ctx, SearchRequest{UserID: u.UserID, UserKey: u.UserKey, Query: "WireGuard VPN drops", MinRelevance: math.SmallestNonzeroFloat64})
	if err != nil || len(gs.Results) != 1 || !(gs.Results[0].Relevance > 0 && gs.Results[0].Relevance <= 1) {
		t.Fatalf("gateway search: %+v %v", gs, err)
	}
	gs, err = g.Search(ctx, SearchRequest{UserID: u.UserID, UserKey: u.UserKey, Query: "WireGuard VPN drops",
		MinRelevance: math.Nextafter(gs.Results[0].Relevance, 2)})
	if err != nil || len(gs.Results) != 0 {
		t.Fatalf("gateway min_relevance: %+v %v", gs, err)
	}
}
