package sdk

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	testUserID  = "u1"
	testUserKey = "uk_SECRET_abc123"
)

// timeoutFor returns the helper timeout for a test of mode: short when
// the fake will block, so the test is quick, and generous otherwise, so a
// loaded machine cannot turn a healthy request into a timeout.
func timeoutFor(mode string) time.Duration {
	if mode == modeTimeout {
		return 100 * time.Millisecond
	}
	return 10 * time.Second
}

// newTestHybrid returns an enabled helper against f.
func newTestHybrid(t *testing.T, f *fakeGateway, events *eventLog, timeout time.Duration) *Hybrid {
	t.Helper()
	h, warnings, err := LoadHybrid(&HybridConfig{
		Mode: ModeHybrid, BaseURL: f.URL(), UserID: testUserID, UserKey: testUserKey,
		Timeout: timeout,
	}, events.sink)
	if err != nil || len(warnings) != 0 || !h.Enabled() {
		t.Fatalf("LoadHybrid: %v, warnings %q, enabled %v", err, warnings, h.Enabled())
	}
	return h
}

func TestRecallFaults(t *testing.T) {
	closed := httptest.NewServer(nil)
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		mode     string
		category string
		status   int
	}{
		{modeTimeout, CategoryTimeout, 0},
		{mode400, CategoryClientError, 400},
		{mode401, CategoryUnauthorized, 401},
		{mode429, CategoryRateLimited, 429},
		{mode500, CategoryServerError, 500},
		{mode503, CategoryServerError, 503},
		{modeMalformed, CategoryBadResponse, 200},
		{modeNoResults, CategoryBadResponse, 200},
		{"network", CategoryNetwork, 0},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			f := newFakeGateway(t, testUserID, testUserKey)
			var events eventLog
			h := newTestHybrid(t, f, &events, timeoutFor(tt.mode))
			if tt.mode == "network" {
				h.gw.t.base = closedURL
			} else {
				f.fault(pathSearch, tt.mode)
			}

			items := h.RecallBeforeRun(context.Background(), RecallInput{ConversationID: "c1", Query: "vpn"})

			if items == nil || len(items) != 0 {
				t.Errorf("items = %#v, want an empty non-nil slice", items)
			}
			wantHits := 1
			if tt.mode == "network" {
				wantHits = 0
			}
			if n := f.count(pathSearch); n != wantHits {
				t.Errorf("search requests = %d, want %d", n, wantHits)
			}
			ev := events.all()
			if len(ev) != 1 {
				t.Fatalf("events = %+v, want exactly one", ev)
			}
			e := ev[0]
			if e.Name != EventRecallFailed || e.Operation != OpSearch || e.Category != tt.category || e.Status != tt.status {
				t.Errorf("event = %+v, want %s/%s/%s/%d", e, EventRecallFailed, OpSearch, tt.category, tt.status)
			}
			if !e.Failed() {
				t.Error("Failed() = false on a failure event")
			}
		})
	}
}

func TestRecallSucceeded(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	uri := "res://runbook.md#VPN#L1-L9"
	f.seed = []SearchResult{{
		ID: "r1", SessionID: "", Text: "VPN runbook: restart the tunnel", Score: 0.5, SourceScope: ScopeResources,
		ResourceURI: &uri, Raw: json.RawMessage(`{"fake_raw_marker": "RAW_PAYLOAD_SHOULD_NOT_LEAK"}`),
	}}
	var events eventLog
	h := newTestHybrid(t, f, &events, timeoutFor(modeOK))
	h.PersistAfterRun(context.Background(), PersistInput{ConversationID: "c1", UserPrompt: "my vpn drops hourly", FinalAnswer: "check the dhcp lease"})

	items := h.RecallBeforeRun(context.Background(), RecallInput{ConversationID: "c1", Query: "vpn problems"})

	if len(items) != 2 {
		t.Fatalf("items = %+v, want the turn and the seeded resource", items)
	}
	if items[0].Text != "user: my vpn drops hourly" || items[0].SessionID != "chat:c1" || items[0].SourceScope != ScopeCurrentChat || items[0].ResourceURI != "" {
		t.Errorf("items[0] = %+v", items[0])
	}
	if items[1].ID != "r1" || items[1].ResourceURI != uri || items[1].Score != 0.5 {
		t.Errorf("items[1] = %+v", items[1])
	}
	for _, it := range items {
		if !it.Untrusted {
			t.Errorf("item %s not marked untrusted", it.ID)
		}
	}
	b, _ := json.Marshal(items)
	if strings.Contains(string(b), "RAW_PAYLOAD") || strings.Contains(string(b), `"raw"`) {
		t.Errorf("raw payload reached the items: %s", b)
	}

	reqs := f.requests(pathSearch)
	if len(reqs) != 1 {
		t.Fatalf("search requests = %d, want 1", len(reqs))
	}
	want := map[string]any{
		"user_id": testUserID, "user_key": testUserKey, "conversation_id": "c1", "query": "vpn problems",
		"scope": []any{ScopeCurrentChat, ScopeAllUserMemory}, "top_k": float64(8), "app_id": "default", "project_id": "default",
	}
	got, _ := json.Marshal(reqs[0])
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("search body = %s\nwant %s", got, wantJSON)
	}

	ev := events.all()
	last := ev[len(ev)-1]
	if last.Name != EventRecallSucceeded || last.Results != 2 || last.Status != 200 || last.Failed() {
		t.Errorf("last event = %+v", last)
	}
}

func TestRecallTruncatesToTopK(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		f.seed = append(f.seed, SearchResult{ID: id, Text: id, Score: 0.1})
	}
	var events eventLog
	h, _, err := LoadHybrid(&HybridConfig{BaseURL: f.URL(), UserID: testUserID, UserKey: testUserKey, TopK: 3}, events.sink)
	if err != nil {
		t.Fatal(err)
	}
	items := h.RecallBeforeRun(context.Background(), RecallInput{ConversationID: "c1", Query: "anything"})
	if len(items) != 3 {
		t.Errorf("got %d items, want top_k = 3", len(items))
	}
	if reqs := f.requests(pathSearch); reqs[0]["top_k"] != float64(3) {
		t.Errorf("top_k sent = %v, want 3", reqs[0]["top_k"])
	}
}

func TestRecallCanceledByCaller(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	var events eventLog
	h := newTestHybrid(t, f, &events, timeoutFor(modeOK))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if items := h.RecallBeforeRun(ctx, RecallInput{ConversationID: "c1", Query: "vpn"}); len(items) != 0 {
		t.Errorf("items = %+v", items)
	}
	if ev := events.all(); len(ev) != 1 || ev[0].Name != EventRecallFailed || ev[0].Category != CategoryCanceled {
		t.Errorf("events = %+v, want one recall_failed/canceled", ev)
	}
}

func TestInvalidInputMakesNoRequest(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	var events eventLog
	h := newTestHybrid(t, f, &events, timeoutFor(modeOK))
	ctx := context.Background()

	h.RecallBeforeRun(ctx, RecallInput{ConversationID: "", Query: "vpn"})
	h.RecallBeforeRun(ctx, RecallInput{ConversationID: "c1", Query: "  "})
	h.PersistAfterRun(ctx, PersistInput{ConversationID: "c1", UserPrompt: "hi", FinalAnswer: ""})
	h.PersistAfterRun(ctx, PersistInput{ConversationID: "", UserPrompt: "hi", FinalAnswer: "hello"})

	if n := f.count(pathSearch) + f.count(pathAdd) + f.count(pathFlush); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
	want := []string{EventRecallFailed, EventRecallFailed, EventAddFailed, EventAddFailed}
	if got := events.names(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	for _, e := range events.all() {
		if e.Category != CategoryInvalidInput {
			t.Errorf("event %+v, want category invalid_input", e)
		}
	}
}

func TestPersistAddThenFlush(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	var events eventLog
	h := newTestHybrid(t, f, &events, timeoutFor(modeOK))

	h.PersistAfterRun(context.Background(), PersistInput{ConversationID: "c42", UserPrompt: "my vpn drops", FinalAnswer: "try this", AssistantSenderID: "beaver"})

	if f.count(pathAdd) != 1 || f.count(pathFlush) != 1 {
		t.Fatalf("adds = %d, flushes = %d, want 1 and 1", f.count(pathAdd), f.count(pathFlush))
	}
	add := f.requests(pathAdd)[0]
	raw, _ := json.Marshal(add["messages"])
	var msgs []Message
	if err := json.Unmarshal(raw, &msgs); err != nil {
		t.Fatal(err)
	}
	if add["session_id"] != "chat:c42" || add["user_id"] != testUserID || add["user_key"] != testUserKey ||
		add["app_id"] != "default" || add["project_id"] != "default" {
		t.Errorf("add body = %v", add)
	}
	if len(msgs) != 2 ||
		msgs[0] != (Message{SenderID: testUserID, Role: RoleUser, Timestamp: msgs[0].Timestamp, Content: "my vpn drops"}) ||
		msgs[1] != (Message{SenderID: "beaver", Role: RoleAssistant, Timestamp: msgs[1].Timestamp, Content: "try this"}) {
		t.Errorf("messages = %+v", msgs)
	}
	if msgs[0].Timestamp <= 0 || msgs[1].Timestamp <= msgs[0].Timestamp {
		t.Errorf("timestamps %d, %d: want positive and increasing", msgs[0].Timestamp, msgs[1].Timestamp)
	}
	flush := f.requests(pathFlush)[0]
	if flush["session_id"] != "chat:c42" || flush["user_key"] != testUserKey || flush["messages"] != nil {
		t.Errorf("flush body = %v", flush)
	}

	ev := events.all()
	if len(ev) != 2 {
		t.Fatalf("events = %+v", ev)
	}
	if ev[0].Name != EventAddSucceeded || ev[0].Messages != 2 || ev[0].Status != 200 {
		t.Errorf("add event = %+v", ev[0])
	}
	if ev[1].Name != EventFlushSucceeded || ev[1].JobID != "job-1" || ev[1].Status != 202 {
		t.Errorf("flush event = %+v", ev[1])
	}
}

func TestPersistAddFailureSkipsFlushAndDoesNotRetry(t *testing.T) {
	for _, tt := range []struct {
		mode     string
		category string
		status   int
	}{
		{modeTimeout, CategoryTimeout, 0},
		{mode400, CategoryClientError, 400},
		{mode401, CategoryUnauthorized, 401},
		{mode429, CategoryRateLimited, 429},
		{mode500, CategoryServerError, 500},
		{mode503, CategoryServerError, 503},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			f := newFakeGateway(t, testUserID, testUserKey)
			f.fault(pathAdd, tt.mode)
			var events eventLog
			h := newTestHybrid(t, f, &events, timeoutFor(tt.mode))

			h.PersistAfterRun(context.Background(), PersistInput{ConversationID: "c1", UserPrompt: "q", FinalAnswer: "a"})

			if n := f.count(pathAdd); n != 1 {
				t.Errorf("adds = %d, want exactly 1 (no retry)", n)
			}
			if n := f.count(pathFlush); n != 0 {
				t.Errorf("flushes = %d, want 0 after a failed add", n)
			}
			ev := events.all()
			if len(ev) != 1 || ev[0].Name != EventAddFailed || ev[0].Category != tt.category || ev[0].Status != tt.status || ev[0].Messages != 2 {
				t.Errorf("events = %+v, want one add_failed/%s/%d", ev, tt.category, tt.status)
			}
		})
	}
}

func TestPersistAddIgnoresResponseBody(t *testing.T) {
	// The add contract defines no response body; any 2xx is success.
	f := newFakeGateway(t, testUserID, testUserKey)
	f.fault(pathAdd, modeMalformed)
	var events eventLog
	h := newTestHybrid(t, f, &events, timeoutFor(modeOK))
	h.PersistAfterRun(context.Background(), PersistInput{ConversationID: "c1", UserPrompt: "q", FinalAnswer: "a"})
	if got, want := events.names(), []string{EventAddSucceeded, EventFlushSucceeded}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestPersistFlushFailure(t *testing.T) {
	for _, tt := range []struct {
		mode     string
		category string
		status   int
	}{
		{mode500, CategoryServerError, 500},
		{modeTimeout, CategoryTimeout, 0},
		{modeMalformed, CategoryBadResponse, 200},
		{modeNoResults, CategoryBadResponse, 200},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			f := newFakeGateway(t, testUserID, testUserKey)
			f.fault(pathFlush, tt.mode)
			var events eventLog
			h := newTestHybrid(t, f, &events, timeoutFor(tt.mode))

			h.PersistAfterRun(context.Background(), PersistInput{ConversationID: "c1", UserPrompt: "q", FinalAnswer: "a"})

			if f.count(pathAdd) != 1 || f.count(pathFlush) != 1 {
				t.Errorf("adds = %d, flushes = %d, want 1 and 1", f.count(pathAdd), f.count(pathFlush))
			}
			ev := events.all()
			if len(ev) != 2 || ev[0].Name != EventAddSucceeded || ev[1].Name != EventFlushFailed ||
				ev[1].Category != tt.category || ev[1].Status != tt.status {
				t.Errorf("events = %+v, want add_succeeded then flush_failed/%s/%d", ev, tt.category, tt.status)
			}
		})
	}
}

func TestPersistSurvivesCanceledTurn(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	var events eventLog
	h := newTestHybrid(t, f, &events, timeoutFor(modeOK))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.PersistAfterRun(ctx, PersistInput{ConversationID: "c1", UserPrompt: "q", FinalAnswer: "a"})
	if got, want := events.names(), []string{EventAddSucceeded, EventFlushSucceeded}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

func TestTimestampsPositiveAndMonotonic(t *testing.T) {
	clocks := map[string][]time.Time{
		"frozen":    {time.UnixMilli(1780000000000), time.UnixMilli(1780000000000), time.UnixMilli(1780000000000)},
		"backwards": {time.UnixMilli(1780000005000), time.UnixMilli(1780000001000), time.UnixMilli(1779999999999)},
		"epoch":     {time.Unix(0, 0), time.Unix(-5, 0), time.Unix(0, 0)},
		"forward":   {time.UnixMilli(1780000000000), time.UnixMilli(1780000060000), time.UnixMilli(1780000120000)},
	}
	for name, ticks := range clocks {
		t.Run(name, func(t *testing.T) {
			f := newFakeGateway(t, testUserID, testUserKey)
			var events eventLog
			h := newTestHybrid(t, f, &events, timeoutFor(modeOK))
			i := 0
			h.now = func() time.Time { return ticks[i] }
			for i = range ticks {
				h.PersistAfterRun(context.Background(), PersistInput{ConversationID: "c1", UserPrompt: "q", FinalAnswer: "a"})
			}
			var ts []int64
			for _, add := range f.requests(pathAdd) {
				for _, m := range add["messages"].([]any) {
					ts = append(ts, int64(m.(map[string]any)["timestamp"].(float64)))
				}
			}
			if len(ts) != 2*len(ticks) {
				t.Fatalf("got %d timestamps, want %d", len(ts), 2*len(ticks))
			}
			for j, v := range ts {
				if v <= 0 {
					t.Errorf("timestamp %d = %d, want positive", j, v)
				}
				if j > 0 && v <= ts[j-1] {
					t.Errorf("timestamps %v are not strictly increasing at %d", ts, j)
				}
			}
			if name == "forward" && ts[2] != 1780000060000 {
				t.Errorf("a clock that moves forward is used as is: got %d", ts[2])
			}
		})
	}
}

func TestCuratedMakesNoCalls(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	var events eventLog
	h, warnings, err := LoadHybrid(&HybridConfig{Mode: ModeCurated, BaseURL: f.URL(), UserID: testUserID, UserKey: testUserKey}, events.sink)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("LoadHybrid: %v %q", err, warnings)
	}
	var nilHelper *Hybrid
	for _, h := range []*Hybrid{h, nilHelper} {
		if h.Enabled() || h.Mode() != ModeCurated {
			t.Errorf("Enabled() = %v, Mode() = %q", h.Enabled(), h.Mode())
		}
		items := h.RecallBeforeRun(context.Background(), RecallInput{ConversationID: "c1", Query: "vpn"})
		if items == nil || len(items) != 0 {
			t.Errorf("items = %#v", items)
		}
		h.PersistAfterRun(context.Background(), PersistInput{ConversationID: "c1", UserPrompt: "q", FinalAnswer: "a"})
	}
	if n := f.count(pathSearch) + f.count(pathAdd) + f.count(pathFlush); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
	if ev := events.all(); len(ev) != 0 {
		t.Errorf("events = %+v, want none", ev)
	}
}

func TestPanickingSinkDoesNotBreakTheTurn(t *testing.T) {
	f := newFakeGateway(t, testUserID, testUserKey)
	calls := 0
	h, _, err := LoadHybrid(&HybridConfig{BaseURL: f.URL(), UserID: testUserID, UserKey: testUserKey}, func(Event) {
		calls++
		panic("sink bug")
	})
	if err != nil {
		t.Fatal(err)
	}
	h.RecallBeforeRun(context.Background(), RecallInput{ConversationID: "c1", Query: "vpn"})
	h.PersistAfterRun(context.Background(), PersistInput{ConversationID: "c1", UserPrompt: "q", FinalAnswer: "a"})
	if calls != 3 || f.count(pathFlush) != 1 {
		t.Errorf("sink calls = %d, flushes = %d, want 3 and 1", calls, f.count(pathFlush))
	}
}
