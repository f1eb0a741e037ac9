package sdk

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestGatewayClientContract(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	gw, err := NewGatewayClient(f.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// A body without optional fields omits them.
	if _, err := gw.Search(ctx, SearchRequest{UserID: testUserID, UserKey: testUserKey, Query: "q", Scope: []string{ScopeAllUserMemory}}); err != nil {
		t.Fatal(err)
	}
	body := f.requests(pathSearch)[0]
	for _, k := range []string{"conversation_id", "top_k", "app_id", "project_id"} {
		if _, ok := body[k]; ok {
			t.Errorf("search body has %s although it was not set: %v", k, body)
		}
	}

	err = gw.Add(ctx, AddRequest{UserID: testUserID, UserKey: testUserKey, SessionID: "chat:c9", AppID: "a", ProjectID: "p",
		Messages: []Message{{SenderID: "u1", Role: RoleUser, Timestamp: 1780000000000, Content: "hello there"}}})
	if err != nil {
		t.Fatal(err)
	}
	add := f.requests(pathAdd)[0]
	msg := add["messages"].([]any)[0].(map[string]any)
	if add["app_id"] != "a" || add["project_id"] != "p" || msg["sender_id"] != "u1" || msg["role"] != "user" ||
		msg["timestamp"] != float64(1780000000000) || msg["content"] != "hello there" || len(msg) != 4 {
		t.Errorf("add body = %v", add)
	}

	fr, err := gw.Flush(ctx, FlushRequest{UserID: testUserID, UserKey: testUserKey, SessionID: "chat:c9"})
	if err != nil || fr.JobID != "job-1" || fr.Status != "queued" {
		t.Fatalf("Flush = %+v, %v", fr, err)
	}
	job, err := gw.Job(ctx, JobRequest{UserID: testUserID, UserKey: testUserKey, JobID: fr.JobID})
	if err != nil || job.ID != "job-1" || job.Status != "queued" || job.LastError != "" || job.CreatedAt.IsZero() {
		t.Fatalf("Job = %+v, %v", job, err)
	}
	if got := f.requests(pathJob)[0]; got["job_id"] != "job-1" || got["user_key"] != testUserKey || got["user_id"] != testUserID {
		t.Errorf("job body = %v", got)
	}
	if _, err := gw.Job(ctx, JobRequest{UserID: testUserID, UserKey: testUserKey, JobID: "nope"}); !IsNotFound(err) {
		t.Errorf("unknown job: %v", err)
	}

	res, err := gw.Search(ctx, SearchRequest{UserID: testUserID, UserKey: testUserKey, ConversationID: "c9", Query: "hello", Scope: []string{ScopeCurrentChat}, TopK: 5})
	if err != nil || len(res.Results) != 1 || res.Results[0].ResourceURI != nil || len(res.Results[0].Raw) == 0 || res.Results[0].SessionID != "chat:c9" {
		t.Fatalf("Search = %+v, %v", res, err)
	}
}

func TestGatewayClientBadResponses(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	gw, _ := NewGatewayClient(f.URL())
	ctx := context.Background()
	f.fault(pathSearch, modeNoResults)
	f.fault(pathFlush, modeNoResults)
	f.fault(pathJob, modeNoResults)
	if _, err := gw.Search(ctx, SearchRequest{UserID: testUserID, UserKey: testUserKey, Query: "q"}); !errors.Is(err, ErrBadResponse) {
		t.Errorf("search without results: %v", err)
	}
	if _, err := gw.Flush(ctx, FlushRequest{UserID: testUserID, UserKey: testUserKey, SessionID: "s"}); !errors.Is(err, ErrBadResponse) {
		t.Errorf("flush without job_id: %v", err)
	}
	if _, err := gw.Job(ctx, JobRequest{UserID: testUserID, UserKey: testUserKey, JobID: "j"}); !errors.Is(err, ErrBadResponse) {
		t.Errorf("job without job: %v", err)
	}
	f.fault(pathSearch, modeMalformed)
	if _, err := gw.Search(ctx, SearchRequest{UserID: testUserID, UserKey: testUserKey, Query: "q"}); !errors.Is(err, ErrBadResponse) {
		t.Errorf("malformed search: %v", err)
	}
}

func TestGatewayUnknownUserAndWrongKeyLookAlike(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	gw, _ := NewGatewayClient(f.URL())
	ctx := context.Background()
	_, e1 := gw.Search(ctx, SearchRequest{UserID: testUserID, UserKey: "uk_wrong", Query: "q", Scope: []string{ScopeAllUserMemory}})
	_, e2 := gw.Search(ctx, SearchRequest{UserID: "nobody", UserKey: testUserKey, Query: "q", Scope: []string{ScopeAllUserMemory}})
	if StatusOf(e1) != 401 || e1.Error() != e2.Error() {
		t.Errorf("wrong key: %v; unknown user: %v", e1, e2)
	}
}

func TestGatewayCreateUser(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	gw, _ := NewGatewayClient(f.URL())
	ctx := context.Background()
	u, err := gw.CreateUser(ctx, f.operatorToken, CreateUserRequest{UserID: "alice"})
	if err != nil || u.UserID != "alice" || !strings.HasPrefix(u.UserKey, "uk_fake_") {
		t.Fatalf("CreateUser = %+v, %v", u, err)
	}
	if strings.Contains(u.String(), u.UserKey) {
		t.Errorf("User.String() shows the key: %s", u)
	}
	// The new user can use the gateway.
	if err := gw.Add(ctx, AddRequest{UserID: u.UserID, UserKey: u.UserKey, SessionID: "chat:1",
		Messages: []Message{{SenderID: "alice", Role: RoleUser, Timestamp: 1, Content: "hi"}}}); err != nil {
		t.Errorf("Add as the new user: %v", err)
	}
	if _, err := gw.CreateUser(ctx, "op_wrong", CreateUserRequest{}); StatusOf(err) != 401 || strings.Contains(err.Error(), "op_wrong") {
		t.Errorf("CreateUser with a wrong token: %v", err)
	}
	n := f.count(pathUsers)
	if _, err := gw.CreateUser(ctx, "", CreateUserRequest{}); err == nil || f.count(pathUsers) != n {
		t.Errorf("CreateUser without a token: %v (want an error and no request)", err)
	}
}
