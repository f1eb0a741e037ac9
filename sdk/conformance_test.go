package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// gatewayTarget is a running server that speaks the Memory Gateway
// contract, with one user provisioned on it.
type gatewayTarget struct {
	BaseURL string
	UserID  string
	UserKey string
	// OperatorToken is optional; when set, POST /users is checked too.
	OperatorToken string
}

// runGatewayConformance checks the Hybrid helper and the GatewayClient
// against target, relying only on what SPEC §6 guarantees. It is the hook
// for testing against a real server: TestGatewayConformanceFake runs it
// against the in-process fake, and a test that starts a memgate server
// calls it with that server's URL and a user created there.
func runGatewayConformance(t *testing.T, target gatewayTarget) {
	t.Helper()
	ctx := context.Background()
	word := fmt.Sprintf("zebracorn%d", time.Now().UnixNano())
	conv := "conformance-" + word

	var events eventLog
	h, warnings, err := LoadHybrid(&HybridConfig{
		Mode: ModeHybrid, BaseURL: target.BaseURL, UserID: target.UserID, UserKey: target.UserKey,
		Scopes: []string{ScopeCurrentChat, ScopeAllUserMemory}, Timeout: 10 * time.Second,
	}, events.sink)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("LoadHybrid: %v %q", err, warnings)
	}
	var seen []Event
	expect := func(step string, want ...string) []Event {
		t.Helper()
		ev := events.all()
		seen = append(seen, ev...)
		events.mu.Lock()
		events.events = nil
		events.mu.Unlock()
		if got := eventNames(ev); !slices.Equal(got, want) {
			t.Fatalf("%s: events = %+v, want %q", step, ev, want)
		}
		return ev
	}

	// A fresh conversation recalls without failing.
	for _, it := range h.RecallBeforeRun(ctx, RecallInput{ConversationID: conv, Query: word}) {
		if strings.Contains(it.Text, word) {
			t.Errorf("fresh conversation recalled %q", it.Text)
		}
	}
	expect("first recall", EventRecallSucceeded)

	// A completed turn is added once and flushed.
	h.PersistAfterRun(ctx, PersistInput{ConversationID: conv, UserPrompt: "remember the codeword " + word + " for the vpn", FinalAnswer: "Noted, the codeword is " + word + "."})
	ev := expect("persist", EventAddSucceeded, EventFlushSucceeded)
	if ev[0].Messages != 2 || ev[1].JobID == "" {
		t.Errorf("persist events = %+v", ev)
	}
	jobID := ev[1].JobID

	// Added turns are searchable at once.
	items := h.RecallBeforeRun(ctx, RecallInput{ConversationID: conv, Query: word})
	expect("recall after persist", EventRecallSucceeded)
	found := false
	for _, it := range items {
		if !it.Untrusted {
			t.Errorf("item %s is not marked untrusted", it.ID)
		}
		if strings.Contains(it.Text, word) {
			found = true
			if it.SessionID != SessionID(conv) || !slices.Contains([]string{ScopeCurrentChat, ScopeAllUserMemory}, it.SourceScope) {
				t.Errorf("recalled item = %+v", it)
			}
		}
	}
	if !found {
		t.Errorf("the persisted turn was not recalled: %+v", items)
	}

	// The flush's job is readable.
	gw, err := NewGatewayClient(target.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	job, err := gw.Job(ctx, JobRequest{UserID: target.UserID, UserKey: target.UserKey, JobID: jobID})
	if err != nil || job.ID != jobID || job.Status == "" {
		t.Errorf("Job(%s) = %+v, %v", jobID, job, err)
	}

	// Out-of-range top_k is a client error.
	_, err = gw.Search(ctx, SearchRequest{UserID: target.UserID, UserKey: target.UserKey, ConversationID: conv, Query: word, Scope: []string{ScopeCurrentChat}, TopK: 101})
	if StatusOf(err) != 400 {
		t.Errorf("top_k 101: %v, want 400", err)
	}

	// A wrong key and an unknown user get the same 401.
	_, e1 := gw.Search(ctx, SearchRequest{UserID: target.UserID, UserKey: target.UserKey + "x", Query: word, Scope: []string{ScopeAllUserMemory}})
	_, e2 := gw.Search(ctx, SearchRequest{UserID: "no-such-user-" + word, UserKey: target.UserKey, Query: word, Scope: []string{ScopeAllUserMemory}})
	if StatusOf(e1) != 401 || e1.Error() != e2.Error() {
		t.Errorf("wrong key: %v; unknown user: %v", e1, e2)
	}

	// With a wrong key the helper reports, sends no flush, and never fails.
	bad, _, err := LoadHybrid(&HybridConfig{Mode: ModeHybrid, BaseURL: target.BaseURL, UserID: target.UserID, UserKey: target.UserKey + "x"}, events.sink)
	if err != nil {
		t.Fatal(err)
	}
	if items := bad.RecallBeforeRun(ctx, RecallInput{ConversationID: conv, Query: word}); len(items) != 0 {
		t.Errorf("recall with a wrong key returned %d items", len(items))
	}
	bad.PersistAfterRun(ctx, PersistInput{ConversationID: conv, UserPrompt: "q", FinalAnswer: "a"})
	for _, e := range expect("wrong key", EventRecallFailed, EventAddFailed) {
		if e.Category != CategoryUnauthorized || e.Status != 401 {
			t.Errorf("wrong-key event = %+v", e)
		}
	}

	// A new user does not see the first user's memories.
	if target.OperatorToken != "" {
		u, err := gw.CreateUser(ctx, target.OperatorToken, CreateUserRequest{})
		if err != nil || u.UserID == "" || u.UserKey == "" || u.UserID == target.UserID {
			t.Fatalf("CreateUser = %v, %v", u, err)
		}
		other, _, err := LoadHybrid(&HybridConfig{BaseURL: target.BaseURL, UserID: u.UserID, UserKey: u.UserKey}, events.sink)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range other.RecallBeforeRun(ctx, RecallInput{ConversationID: conv, Query: word}) {
			if strings.Contains(it.Text, word) {
				t.Errorf("another user recalled %q", it.Text)
			}
		}
		expect("other user", EventRecallSucceeded)
	}

	b, _ := json.Marshal(seen)
	if len(seen) < 6 || strings.Contains(string(b), target.UserKey) {
		t.Errorf("%d events checked; an event holds the user key or events were lost", len(seen))
	}
}

func eventNames(ev []Event) []string {
	out := []string{}
	for _, e := range ev {
		out = append(out, e.Name)
	}
	return out
}

func TestGatewayConformanceFake(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	runGatewayConformance(t, gatewayTarget{BaseURL: f.URL(), UserID: testUserID, UserKey: testUserKey, OperatorToken: f.operatorToken})
}
