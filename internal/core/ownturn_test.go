package core

import (
	"testing"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// TestGatewayUpdateKeepsOwnTurnFlagged: a user editing its own flagged
// turn, still with its contact details, keeps it flagged and readable by
// itself (it was quarantined, vanishing from its recall); agents still
// cannot read it.
func TestGatewayUpdateKeepsOwnTurnFlagged(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		s, ps := graphAccessService(t, st)
		ctx := t.Context()
		s.policy.RateLimit.User = gate.Bucket{}
		u, err := s.CreateUser(ctx, ps["op"], "dana")
		if err != nil {
			t.Fatal(err)
		}
		up, err := s.AuthenticateUser(ctx, "", u.UserID, u.UserKey)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.GatewayAdd(ctx, up, UserConversation(up, "app", "proj", "chat:1"), []GatewayMessage{
			{SenderID: up.Name, Role: "user", Timestamp: 1700000000000, Content: "mail me at dana@example.com"}})
		if err != nil || res.Decisions[memory.DecisionFlagged] != 1 {
			t.Fatalf("add %+v %v", res, err)
		}
		id := res.MemoryIDs[0]
		wr, err := s.GatewayUpdate(ctx, up, "app", "proj", id, "mail me at dana.w@example.com instead")
		if err != nil {
			t.Fatal(err)
		}
		if wr.Decision != memory.DecisionFlagged || wr.Record.Status != memory.Active || wr.Record.Access != memory.UserOnly {
			t.Fatalf("update decided %s, stored %s at %s", wr.Decision, wr.Record.Status, wr.Record.Access)
		}
		hits, err := s.GatewaySearch(ctx, up, GatewaySearchRequest{Query: "mail me", AppID: "app", ProjectID: "proj",
			Scopes: []string{ScopeAllUserMemory}, TopK: new(5)})
		if err != nil || len(hits) != 1 || hits[0].ID != id {
			t.Fatalf("the user's recall after the edit: %+v %v", hits, err)
		}
		if _, err := s.Get(ctx, ps["trusted"], id, GetOptions{IncludeSensitive: true}); !fault.Is(err, fault.NotFound) {
			t.Fatalf("a trusted agent reads the flagged turn: %v", err)
		}
	})
}
