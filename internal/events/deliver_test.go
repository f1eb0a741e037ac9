package events_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/svctest"
)

// clock is a test clock moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// receiver is a webhook endpoint on loopback whose answer the test sets.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	secret string
	now    func() time.Time

	mu    sync.Mutex
	mode  string // ok, fail (500), down (connection dropped)
	got   []received
	tries map[string]int // event id -> requests
}

type received struct {
	eventID, kind, delivery string
	p                       events.Payload
}

func newReceiver(t *testing.T, now func() time.Time) *receiver {
	r := &receiver{t: t, mode: "ok", tries: map[string]int{}, now: now}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) set(mode string) {
	r.mu.Lock()
	r.mode = mode
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	id := req.Header.Get(events.EventIDHeader)
	r.tries[id]++
	switch r.mode {
	case "down":
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close()
		return
	case "fail":
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if err := events.Verify(r.secret, req.Header.Get(events.SignatureHeader), body, r.now(), 0); err != nil {
		r.t.Errorf("event %s: signature: %v", id, err)
	}
	var p events.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		r.t.Errorf("body: %v", err)
	}
	if p.ID != id || p.Type != req.Header.Get(events.EventTypeHeader) {
		r.t.Errorf("headers (%s, %s) disagree with the body (%s, %s)", id, req.Header.Get(events.EventTypeHeader), p.ID, p.Type)
	}
	r.got = append(r.got, received{eventID: id, kind: p.Type, delivery: req.Header.Get(events.DeliveryIDHeader), p: p})
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

type env struct {
	ctx context.Context
	st  store.Store
	svc *core.Service
	op  memory.Principal
	clk *clock
}

func newEnv(t *testing.T, o events.Options) *env {
	ctx := t.Context()
	st := svctest.SQLite(t)
	clk := &clock{t: time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)}
	o.Now = clk.Now
	pol := gate.Default()
	pol.RateLimit.Operator, pol.RateLimit.Agent, pol.RateLimit.User = gate.Bucket{}, gate.Bucket{}, gate.Bucket{}
	svc := core.New(core.Options{Store: st, Policy: pol, Now: clk.Now, Webhooks: o})
	tok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	op, err := svc.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	return &env{ctx: ctx, st: st, svc: svc, op: op, clk: clk}
}

// emitAll appends one event of every kind in one transaction.
func (e *env) emitAll(t *testing.T) {
	err := e.st.Tx(e.ctx, func(tx store.Tx) error {
		for i, k := range events.Kinds {
			if err := events.Emit(e.ctx, tx, e.op.Workspace, k, e.clk.Now(), events.Subject{"n": i}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) deliveries(t *testing.T, webhookID string) []core.DeliveryView {
	page, err := e.svc.ListDeliveries(e.ctx, e.op, webhookID, "", 500)
	if err != nil {
		t.Fatal(err)
	}
	return page.Deliveries
}

// TestWebhookDelivery: a receiver on loopback gets every event kind once
// (one delivery per event id), signed; an answer of 500 and a spell of
// being down are retried after their backoff, with the same event id, and
// nothing is delivered before the backoff ends; the delivery log shows
// every attempt; an endpoint subscribed to some kinds gets only those.
func TestWebhookDelivery(t *testing.T) {
	e := newEnv(t, events.Options{BackoffBase: time.Minute, BackoffMax: time.Hour})
	rcv := newReceiver(t, e.clk.Now)
	created, err := e.svc.CreateWebhook(e.ctx, e.op, core.WebhookRequest{URL: rcv.srv.URL + "/hook?token=abc"})
	if err != nil {
		t.Fatal(err)
	}
	rcv.secret = created.Secret
	// The registration is audited, naming neither the URL's query (a
	// receiver's token) nor the secret.
	entries, err := e.st.ListAudit(e.ctx, e.op.Workspace, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	audited := false
	for _, a := range entries {
		if a.Event == "webhook.create" {
			audited = true
			if contains(a.Payload, "token=abc") || contains(a.Payload, created.Secret) || !contains(a.Payload, created.Webhook.ID) {
				t.Fatalf("audit payload %s", a.Payload)
			}
		}
	}
	if !audited {
		t.Fatal("webhook registration not audited")
	}
	few := newReceiver(t, e.clk.Now)
	fewHook, err := e.svc.CreateWebhook(e.ctx, e.op, core.WebhookRequest{URL: few.srv.URL, Kinds: []string{events.JobDead, events.AuditBroken}})
	if err != nil {
		t.Fatal(err)
	}
	few.secret = fewHook.Secret
	e.emitAll(t)
	d := e.svc.Deliverer()

	rcv.set("fail")
	if err := d.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := rcv.received(); len(got) != 0 {
		t.Fatalf("a failing receiver recorded %d deliveries", len(got))
	}
	log := e.deliveries(t, created.Webhook.ID)
	if len(log) != 1 || log[0].Outcome != store.DeliveryFailed || log[0].StatusCode != 500 || log[0].Attempt != 1 {
		t.Fatalf("delivery log after a 500: %+v", log)
	}
	first := log[0].EventID

	// Within the backoff nothing is attempted.
	rcv.set("down")
	if err := d.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.deliveries(t, created.Webhook.ID)); n != 1 {
		t.Fatalf("%d attempts before the backoff ended, want 1", n)
	}
	e.clk.Add(2 * time.Minute)
	if err := d.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	log = e.deliveries(t, created.Webhook.ID)
	if len(log) != 2 || log[0].Outcome != store.DeliveryFailed || log[0].StatusCode != 0 || log[0].Error == "" || log[0].Attempt != 2 || log[0].EventID != first {
		t.Fatalf("delivery log while down: %+v", log[0])
	}

	rcv.set("ok")
	e.clk.Add(3 * time.Minute)
	if err := d.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	got := rcv.received()
	if len(got) != len(events.Kinds) {
		t.Fatalf("receiver got %d deliveries, want %d", len(got), len(events.Kinds))
	}
	ids := map[string]bool{}
	for i, r := range got {
		if r.kind != events.Kinds[i] {
			t.Errorf("delivery %d is %s, want %s (outbox order)", i, r.kind, events.Kinds[i])
		}
		if ids[r.eventID] {
			t.Errorf("event %s delivered twice", r.eventID)
		}
		ids[r.eventID] = true
		if r.p.Workspace != e.op.Workspace || r.p.Seq == 0 || r.delivery == "" {
			t.Errorf("payload %+v", r.p)
		}
	}
	if got[0].eventID != first {
		t.Errorf("the retried event arrived with id %s, first tried as %s", got[0].eventID, first)
	}
	log = e.deliveries(t, created.Webhook.ID)
	delivered := 0
	for _, l := range log {
		if l.Outcome == store.DeliveryDelivered {
			delivered++
		}
	}
	if len(log) != 2+len(events.Kinds) || delivered != len(events.Kinds) {
		t.Fatalf("delivery log: %d entries, %d delivered", len(log), delivered)
	}
	// A pass with nothing new delivers nothing again.
	e.clk.Add(time.Hour)
	if err := d.RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.received()); n != len(events.Kinds) {
		t.Fatalf("after another pass the receiver has %d deliveries", n)
	}
	fg := few.received()
	if len(fg) != 2 || fg[0].kind != events.AuditBroken || fg[1].kind != events.JobDead {
		t.Fatalf("the filtered endpoint got %+v, want audit.broken and job.dead", fg)
	}
	// Listings never show the secret.
	hooks, err := e.svc.ListWebhooks(e.ctx, e.op)
	if err != nil || len(hooks) != 2 {
		t.Fatalf("ListWebhooks = %d, %v", len(hooks), err)
	}
	raw, _ := json.Marshal(hooks)
	if contains(raw, created.Secret) || contains(raw, fewHook.Secret) {
		t.Fatal("a listing holds a webhook secret")
	}
}

func contains(b []byte, s string) bool {
	return len(s) > 0 && string(b) != "" && stringsContains(string(b), s)
}

// TestWebhookGivesUp: an event an endpoint keeps refusing is logged dead
// after MaxAttempts and the endpoint moves on to the next.
func TestWebhookGivesUp(t *testing.T) {
	e := newEnv(t, events.Options{MaxAttempts: 2, BackoffBase: time.Second, BackoffMax: time.Second})
	rcv := newReceiver(t, e.clk.Now)
	c, err := e.svc.CreateWebhook(e.ctx, e.op, core.WebhookRequest{URL: rcv.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rcv.secret = c.Secret
	e.emitAll(t)
	rcv.set("fail")
	for range 2 {
		if err := e.svc.Deliverer().RunOnce(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.clk.Add(time.Minute)
	}
	log := e.deliveries(t, c.Webhook.ID)
	// Newest first: the next event's first failure (the pass moved on),
	// the first event given up on, its first failure.
	if len(log) != 3 || log[1].Outcome != store.DeliveryDead || log[1].EventType != events.Kinds[0] ||
		log[0].Outcome != store.DeliveryFailed || log[0].EventType != events.Kinds[1] || log[2].Outcome != store.DeliveryFailed {
		t.Fatalf("log: %+v", log)
	}
	rcv.set("ok")
	if err := e.svc.Deliverer().RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := rcv.received(); len(got) != len(events.Kinds)-1 || got[0].kind != events.Kinds[1] {
		t.Fatalf("after giving up on the first event the receiver got %d, starting with %v", len(got), got)
	}
}

// TestWebhookBatches: one pass delivers every pending event, a batch at
// a time, and saves the position after unsubscribed events.
func TestWebhookBatches(t *testing.T) {
	e := newEnv(t, events.Options{Batch: 3})
	rcv := newReceiver(t, e.clk.Now)
	c, err := e.svc.CreateWebhook(e.ctx, e.op, core.WebhookRequest{URL: rcv.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rcv.secret = c.Secret
	rcv2 := newReceiver(t, e.clk.Now)
	some, err := e.svc.CreateWebhook(e.ctx, e.op, core.WebhookRequest{URL: rcv2.srv.URL, Kinds: []string{events.ApprovalPending}})
	if err != nil {
		t.Fatal(err)
	}
	rcv2.secret = some.Secret
	e.emitAll(t)
	if err := e.svc.Deliverer().RunOnce(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(rcv.received()); got != len(events.Kinds) {
		t.Fatalf("one pass delivered %d events, want %d", got, len(events.Kinds))
	}
	if got := len(rcv2.received()); got != 1 {
		t.Fatalf("the filtered endpoint got %d events, want 1", got)
	}
	hooks, _ := e.svc.ListWebhooks(e.ctx, e.op)
	head, _ := e.st.EventHead(e.ctx)
	for _, h := range hooks {
		if h.Cursor != head {
			t.Errorf("webhook %s (kinds %v) cursor %d, want the head %d", h.ID, h.Kinds, h.Cursor, head)
		}
	}
}

// TestDeadEndpointBlocksNothing: while one endpoint hangs on a delivery,
// writes commit (with their events) and another endpoint receives every
// event; the hung delivery ends at its timeout and is retried later.
func TestDeadEndpointBlocksNothing(t *testing.T) {
	e := newEnv(t, events.Options{Timeout: 30 * time.Second})
	hung := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(hung) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer stuck.Close()
	if _, err := e.svc.CreateWebhook(e.ctx, e.op, core.WebhookRequest{URL: stuck.URL}); err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t, e.clk.Now)
	c, err := e.svc.CreateWebhook(e.ctx, e.op, core.WebhookRequest{URL: rcv.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	rcv.secret = c.Secret
	e.emitAll(t)
	done := make(chan error, 1)
	go func() { done <- e.svc.Deliverer().RunOnce(e.ctx) }()
	select {
	case <-hung:
	case <-time.After(time.Minute):
		t.Fatal("the stuck endpoint was never called")
	}
	// The stuck delivery is in flight: writes still commit, with events.
	before := len(e.outbox(t))
	for i := range 5 {
		if _, err := e.svc.Write(e.ctx, e.op, core.WriteRequest{Type: memory.Belief,
			Content: "key " + string(rune('a'+i)) + " sk-proj-4fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0kM"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.outbox(t)); n != before+10 {
		t.Fatalf("outbox grew by %d during a hung delivery, want 10", n-before)
	}
	// The healthy endpoint got its events meanwhile (RunOnce serves
	// endpoints concurrently; it has not returned).
	deadline := time.After(time.Minute)
	for len(rcv.received()) < len(events.Kinds) {
		select {
		case <-deadline:
			t.Fatalf("the healthy endpoint got %d events while the other hung", len(rcv.received()))
		case err := <-done:
			t.Fatalf("RunOnce returned (%v) before the stuck delivery ended", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	select {
	case err := <-done:
		t.Fatalf("RunOnce returned (%v) while a delivery hung", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	log := e.deliveries(t, "")
	if len(log) == 0 || log[len(log)-1].Outcome == "" {
		t.Fatal("empty delivery log")
	}
	failed := 0
	for _, d := range log {
		if d.Outcome == store.DeliveryFailed && d.StatusCode == http.StatusServiceUnavailable {
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d failed deliveries logged for the stuck endpoint, want 1", failed)
	}
}
