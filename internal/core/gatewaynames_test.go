package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// A user's gateway turn names the names it mentions, so they become graph
// nodes linked to it; an assistant's turn names none; the policy's
// graph.conversation_names: false turns it off.
func TestGatewayTurnsNameTheirNames(t *testing.T) {
	s, p := newGatewayUser(t, "carol")
	ctx := t.Context()
	cv := UserConversation(p, DefaultGroupApp, DefaultGroupApp, "s1")
	add := func(role, content string, ts int64) memory.Record {
		t.Helper()
		res, err := s.GatewayAdd(ctx, p, cv, []GatewayMessage{{SenderID: "carol", Role: role, Timestamp: ts, Content: content}})
		if err != nil || len(res.MemoryIDs) != 1 {
			t.Fatalf("add: %v %+v", err, res)
		}
		r, err := s.Get(ctx, p, res.MemoryIDs[0], GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := add("user", "My grandma in Sweden gave me this; I wear it to the Connected LGBTQ Activists meetings.", 1_750_000_000_000)
	if want := []string{"name:carol/Sweden", "name:carol/Connected_LGBTQ_Activists"}; !slices.Equal(r.Entities, want) {
		t.Fatalf("the user's turn names %q, want %q", r.Entities, want)
	}
	op := LocalOperator(memory.DefaultWorkspace)
	n, err := s.GetNode(ctx, op, "name:carol/Connected_LGBTQ_Activists", false)
	if err != nil {
		t.Fatalf("the name's node: %v", err)
	}
	if n.Label != NameLabel || string(n.Properties) != `{"name":"Connected LGBTQ Activists"}` {
		t.Fatalf("node %s %s", n.Label, n.Properties)
	}
	// Created with its grant: what regrant computes from the records
	// naming it.
	if want, err := recordGrants(ctx, s.store, p.Workspace, "name:carol/Connected_LGBTQ_Activists"); err != nil || !slices.Equal(n.Grants, want) {
		t.Fatalf("node grants %+v, the records give %+v (%v)", n.Grants, want, err)
	}
	if ok, err := s.NodeVisible(ctx, p, n); err != nil || !ok {
		t.Fatalf("the user does not see the node its own turn names: %v %v", ok, err)
	}
	if r := add("assistant", "You could visit Stockholm or Gothenburg next.", 1_750_000_001_000); len(r.Entities) != 0 {
		t.Fatalf("the assistant's turn names %q", r.Entities)
	}
	// A name too long for an entity key is left out; the turn is stored.
	long := "Z" + strings.Repeat("q", 300)
	if r := add("user", "We met "+long+" and Priya.", 1_750_000_001_500); !slices.Equal(r.Entities, []string{"name:carol/Priya"}) {
		t.Fatalf("with a name too long for a key the turn names %q", r.Entities)
	}
	s.policy.Graph.ConversationNames = false
	if r := add("user", "We flew to Lisbon with Priya.", 1_750_000_002_000); len(r.Entities) != 0 {
		t.Fatalf("with conversation_names off the turn names %q", r.Entities)
	}
}
