package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestUserKeyNeverLeaks drives every fault through the helper and the
// gateway client, loads broken configurations, prints and logs every
// value that holds the key, and checks that the key appears in none of
// the resulting events, warnings, errors or strings.
func TestUserKeyNeverLeaks(t *testing.T) {
	var said []string
	var events eventLog
	ctx := context.Background()

	modes := []string{modeOK, modeTimeout, mode400, mode401, mode429, mode500, mode503, modeMalformed, modeNoResults, modeEchoSecret}
	for _, mode := range modes {
		f := newFakeGateway(t, testUserID, testUserKey)
		for _, p := range []string{pathSearch, pathAdd, pathFlush, pathJob} {
			f.fault(p, mode)
		}
		h := newTestHybrid(t, f, &events, timeoutFor(mode))
		h.RecallBeforeRun(ctx, RecallInput{ConversationID: "c1", Query: "vpn"})
		h.PersistAfterRun(ctx, PersistInput{ConversationID: "c1", UserPrompt: "q", FinalAnswer: "a"})

		// The key did travel, in the bodies: the test is not vacuous.
		if got := f.requests(pathSearch); len(got) != 1 || got[0]["user_key"] != testUserKey {
			t.Fatalf("%s: the key was not sent to the server", mode)
		}

		gw, err := NewGatewayClient(f.URL())
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, timeoutFor(mode))
		_, e1 := gw.Search(cctx, SearchRequest{UserID: testUserID, UserKey: testUserKey, ConversationID: "c1", Query: "vpn", Scope: []string{ScopeCurrentChat}})
		e2 := gw.Add(cctx, AddRequest{UserID: testUserID, UserKey: testUserKey, SessionID: "chat:c1", Messages: []Message{{SenderID: "u1", Role: RoleUser, Timestamp: 1, Content: "x"}}})
		_, e3 := gw.Flush(cctx, FlushRequest{UserID: testUserID, UserKey: testUserKey, SessionID: "chat:c1"})
		_, e4 := gw.Job(cctx, JobRequest{UserID: testUserID, UserKey: testUserKey, JobID: "job-404"})
		cancel()
		for _, err := range []error{e1, e2, e3, e4} {
			if err != nil {
				said = append(said, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
			}
		}
		if mode == modeEchoSecret && e1 == nil {
			t.Fatal("echo_secret: want an error")
		}
	}

	for _, e := range events.all() {
		b, _ := json.Marshal(e)
		said = append(said, string(b), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
	}
	var logged bytes.Buffer
	SlogSink(slog.New(slog.NewJSONHandler(&logged, nil)))(Event{Name: EventAddFailed, Operation: OpAdd, Category: CategoryUnauthorized, Status: 401})

	// Configuration warnings and errors with the key set.
	for _, c := range []*HybridConfig{
		{UserKey: testUserKey},
		{Mode: ModeHybrid, UserKey: testUserKey},
		{Mode: "bogus", BaseURL: "http://h", UserID: "u", UserKey: testUserKey},
		{BaseURL: "::" + testUserKey, UserID: "u", UserKey: testUserKey},
		{BaseURL: "http://h", UserID: "u", UserKey: testUserKey, Scopes: []string{testUserKey}},
		{BaseURL: "http://h", UserID: "u", UserKey: testUserKey, TopK: 1000},
		{BaseURL: "http://h", UserID: "u", UserKey: testUserKey, Timeout: -1},
		{BaseURL: "http://h", UserID: "u", UserKey: testUserKey, UserKeyFile: "/nonexistent/" + testUserKey},
		{BaseURL: "http://h", UserID: "u", UserKeyFile: "/nonexistent/" + testUserKey},
	} {
		_, warnings, err := LoadHybrid(c, events.sink)
		said = append(said, warnings...)
		if err != nil {
			said = append(said, err.Error())
		}
		if err == nil && len(warnings) == 0 {
			t.Errorf("config %v: want a warning or an error", c)
		}
	}
	var bad HybridConfig
	if err := json.Unmarshal([]byte(`{"user_key": "`+testUserKey+`", "timeout": "`+testUserKey+`"}`), &bad); err != nil {
		said = append(said, err.Error())
	}

	// Values that hold the key, printed and logged.
	cfg := HybridConfig{BaseURL: "http://h", UserID: "u", UserKey: testUserKey}
	sreq := SearchRequest{UserID: "u", UserKey: testUserKey, Query: "q"}
	areq := AddRequest{UserID: "u", UserKey: testUserKey, SessionID: "s"}
	freq := FlushRequest{UserID: "u", UserKey: testUserKey, SessionID: "s"}
	jreq := JobRequest{UserID: "u", UserKey: testUserKey, JobID: "j"}
	user := User{UserID: "u", UserKey: testUserKey}
	for _, v := range []any{cfg, &cfg, sreq, &sreq, areq, freq, jreq, user} {
		said = append(said, fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v), fmt.Sprint(v))
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("value", "v", v)
		slog.New(slog.NewTextHandler(&logged, nil)).Info("value", "v", v)
	}
	said = append(said, logged.String())

	if len(said) < 50 {
		t.Fatalf("only %d strings collected; the test lost its inputs", len(said))
	}
	for _, s := range said {
		if strings.Contains(s, testUserKey) {
			t.Errorf("user key leaked: %q", s)
		}
	}
	if !strings.Contains(logged.String(), "[redacted]") {
		t.Error("logged values do not show the redaction")
	}
}

func TestErrorScrubsEchoedKey(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	f.fault(pathSearch, modeEchoSecret)
	gw, _ := NewGatewayClient(f.URL())
	_, err := gw.Search(context.Background(), SearchRequest{UserID: testUserID, UserKey: testUserKey, Query: "q"})
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("err = %T %v", err, err)
	}
	want := map[string]any{"user_key": "[redacted]", "nested": []any{"[redacted]"}}
	if e.Status != 401 || e.Code != CodeUnauthenticated || e.Message != "bad key [redacted]" || fmt.Sprint(e.Details) != fmt.Sprint(want) {
		t.Errorf("error = %#v", e)
	}
}
