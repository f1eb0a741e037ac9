package core

import (
	"bytes"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// newGatewayUser is a service with one gateway user, authenticated as the
// gateway does.
func newGatewayUser(t *testing.T, name string) (*Service, memory.Principal) {
	t.Helper()
	s, _, _ := newPortableService(t, true)
	u, err := s.CreateUser(t.Context(), LocalOperator(memory.DefaultWorkspace), name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.AuthenticateGatewayUser(t.Context(), u.UserID, u.UserKey)
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// The gateway contract's rules are the service's: a caller that is not
// the HTTP handler (the SDK's in-process server, the bench, a future
// transport) gets the same defaults and refusals.
func TestGatewaySearchRulesInService(t *testing.T) {
	s, p := newGatewayUser(t, "alice")
	ctx := t.Context()
	app, proj := GatewayGroup("", "")
	if app != DefaultGroupApp || proj != DefaultGroupApp {
		t.Fatalf("default group %q/%q", app, proj)
	}
	k := func(n int) *int { return &n }
	for _, tc := range []struct {
		name  string
		req   GatewaySearchRequest
		field string
	}{
		{"top_k 0", GatewaySearchRequest{Query: "q", TopK: k(0)}, "top_k"},
		{"top_k over max", GatewaySearchRequest{Query: "q", TopK: k(MaxTopK + 1)}, "top_k"},
		{"empty scope list", GatewaySearchRequest{Query: "q", Scopes: []string{}}, "scope"},
		{"unknown scope", GatewaySearchRequest{Query: "q", Scopes: []string{"everything"}}, "scope[0]"},
		{"repeated scope", GatewaySearchRequest{Query: "q", Scopes: []string{ScopeResources, ScopeResources}}, "scope[1]"},
		{"current_chat without conversation", GatewaySearchRequest{Query: "q", Scopes: []string{ScopeCurrentChat}}, "conversation_id"},
		{"min_relevance above 1", GatewaySearchRequest{Query: "q", MinRelevance: 1.5}, "min_relevance"},
		{"conversation id too long", GatewaySearchRequest{Query: "q", ConversationID: strings.Repeat("c", MaxConversationIDBytes+1)}, "conversation_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.AppID, tc.req.ProjectID = app, proj
			_, err := s.GatewaySearch(ctx, p, tc.req)
			fe := fault.As(err)
			if err == nil || fe.Code != fault.InvalidArgument || fe.Details["field"] != tc.field {
				t.Fatalf("err %v (field %v), want invalid %s", err, fe.Details["field"], tc.field)
			}
		})
	}
	hits, err := s.GatewaySearch(ctx, p, GatewaySearchRequest{AppID: app, ProjectID: proj, Query: "anything", ConversationID: "c1"})
	if err != nil || hits == nil {
		t.Fatalf("defaults: %v, %v", hits, err)
	}
}

func TestGatewayAddRulesInService(t *testing.T) {
	s, p := newGatewayUser(t, "bob")
	ctx := t.Context()
	app, proj := GatewayGroup("", "")
	cv := UserConversation(p, app, proj, "s1")
	msg := GatewayMessage{SenderID: "bob", Role: "user", Timestamp: 1_750_000_000_000, Content: "hello"}
	many := make([]GatewayMessage, MaxAddMessages+1)
	for i := range many {
		many[i] = msg
	}
	long := msg
	long.Content = strings.Repeat("x", s.MaxMessageContentBytes()+1)
	blank := msg
	blank.Content = "  \n"
	for _, tc := range []struct {
		name  string
		msgs  []GatewayMessage
		field string
	}{
		{"none", nil, "messages"},
		{"too many", many, "messages"},
		{"content over the computed limit", []GatewayMessage{long}, "messages[0].content"},
		{"blank content", []GatewayMessage{msg, blank}, "messages[1].content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.GatewayAdd(ctx, p, cv, tc.msgs)
			if fe := fault.As(err); err == nil || fe.Code != fault.InvalidArgument || fe.Details["field"] != tc.field {
				t.Fatalf("err %v, want invalid %s", err, tc.field)
			}
		})
	}
	res, err := s.GatewayAdd(ctx, p, cv, []GatewayMessage{msg})
	if err != nil || res.Added != 1 {
		t.Fatalf("add: %+v, %v", res, err)
	}
}

// A user created without an id gets one, on every path.
func TestCreateUserGeneratesID(t *testing.T) {
	s, _, _ := newPortableService(t, true)
	u, err := s.CreateUser(t.Context(), LocalOperator(memory.DefaultWorkspace), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u.UserID, "user-") || !ValidUserID(u.UserID) || u.UserKey == "" {
		t.Fatalf("generated user %+v", u)
	}
}

// Migrate is export piped into import: the target exports the same bytes.
func TestMigrate(t *testing.T) {
	src, _, clk := newPortableService(t, true)
	buildFixture(t, src, clk)
	dst, _, _ := newPortableService(t, false)
	op := LocalOperator(memory.DefaultWorkspace)
	var exported, imported int
	st, err := src.Migrate(t.Context(), op, dst, func(n int) { exported = n }, func(n int) { imported = n })
	if err != nil {
		t.Fatal(err)
	}
	if !st.WorkspaceCreated || st.Records == 0 || exported != st.Records || imported != st.Records {
		t.Fatalf("stats %+v, progress %d/%d", st, exported, imported)
	}
	if a, b := export(t, src, memory.DefaultWorkspace), export(t, dst, memory.DefaultWorkspace); !bytes.Equal(a, b) {
		t.Fatal("the migrated workspace exports differently")
	}
	// Into a workspace that is not empty: refused, nothing written.
	if _, err := src.Migrate(t.Context(), op, dst, nil, nil); err == nil {
		t.Fatal("migrating into a non-empty workspace succeeded")
	}
}
