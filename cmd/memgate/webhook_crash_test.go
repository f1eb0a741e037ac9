//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/events"
)

// hookReceiver is a webhook endpoint on loopback: it checks every
// signature and counts deliveries per event id.
type hookReceiver struct {
	t      *testing.T
	mu     sync.Mutex
	secret string
	byID   map[string]int
	bad    []string
	subj   map[string]string // approval id -> kind, from approval.pending
	notify chan struct{}
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := events.Verify(h.secret, r.Header.Get(events.SignatureHeader), body, time.Now(), 0); err != nil {
		h.bad = append(h.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p events.Payload
	if err := json.Unmarshal(body, &p); err != nil || p.ID != r.Header.Get(events.EventIDHeader) {
		h.bad = append(h.bad, "payload")
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.byID[p.ID]++
	if p.Type == events.ApprovalPending {
		var s struct {
			ApprovalID string `json:"approval_id"`
		}
		_ = json.Unmarshal(p.Subject, &s)
		h.subj[s.ApprovalID] = p.Type
	}
	select {
	case h.notify <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// TestWebhooksSurviveSIGKILL: memgate is killed with SIGKILL while writes
// that raise events are under way and deliveries are going out. After a
// restart the receiver gets every event the database committed (the
// outbox is the truth, drained over GET /v1/events), including the one of
// every acknowledged write, each with a valid signature, and no event that
// was never committed.
func TestWebhooksSurviveSIGKILL(t *testing.T) {
	rcv := &hookReceiver{t: t, byID: map[string]int{}, subj: map[string]string{}, notify: make(chan struct{}, 1)}
	hs := httptest.NewServer(rcv)
	defer hs.Close()

	dataDir := filepath.Join(t.TempDir(), "data")
	// A short delivery timeout makes the dead process's lease on the
	// endpoint (3× it) run out soon after the restart.
	srv := startServer(t, dataDir, "--webhook-timeout", "1s")
	token := srv.Tokens()[0]
	c := newClient(t, srv.base, token, 4)
	var created struct {
		Webhook struct{ ID string } `json:"webhook"`
		Secret  string              `json:"secret"`
	}
	status, body, err := c.do("POST", "/v1/webhooks", map[string]any{"url": hs.URL + "/hook"})
	if err != nil || status != http.StatusCreated || json.Unmarshal(body, &created) != nil || created.Secret == "" {
		t.Fatalf("register: %d %v %s", status, err, body)
	}
	rcv.mu.Lock()
	rcv.secret = created.Secret
	rcv.mu.Unlock()

	// Quarantined writes: each raises approval.pending and
	// record.quarantined in its transaction.
	var acked []string // approval ids of acknowledged writes
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range 3 {
		wg.Go(func() {
			for n := range 2000 {
				content := fmt.Sprintf("deploy key for drill %d-%d: sk-proj-4fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0k%s", w, n, spell(n+2000*w))
				status, body, err := c.do("POST", "/v1/records", map[string]any{"type": "belief", "content": content})
				if err != nil {
					return // killed
				}
				var res struct {
					ApprovalID string `json:"approval_id"`
				}
				if status != http.StatusAccepted || json.Unmarshal(body, &res) != nil || res.ApprovalID == "" {
					t.Errorf("write: %d %s", status, body)
					return
				}
				mu.Lock()
				acked = append(acked, res.ApprovalID)
				mu.Unlock()
			}
		})
	}
	// Kill while writes are flowing and deliveries are going out.
	deadline := time.After(60 * time.Second)
	for {
		rcv.mu.Lock()
		n := len(rcv.byID)
		rcv.mu.Unlock()
		if n >= 30 {
			break
		}
		select {
		case <-rcv.notify:
		case <-deadline:
			t.Fatalf("%d deliveries within 60s; output:\n%s", n, srv.Output())
		}
	}
	srv.signal(t, syscall.SIGKILL)
	srv.waitExit(t, exitTimeout)
	wg.Wait()

	srv2 := startServer(t, dataDir, "--webhook-timeout", "1s")
	defer srv2.stop(t)
	c2 := newClient(t, srv2.base, token, 2)
	status, body, err = c2.do("GET", "/v1/events?after=0&follow=false", nil)
	if err != nil || status != 200 {
		t.Fatalf("drain: %d %v", status, err)
	}
	var committed []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var p events.Payload
			if err := json.Unmarshal([]byte(data), &p); err != nil {
				t.Fatal(err)
			}
			committed = append(committed, p.ID)
		}
	}
	if len(committed) < 2*len(acked) {
		t.Fatalf("the outbox holds %d events for %d acknowledged quarantined writes", len(committed), len(acked))
	}
	// Wait, bounded, until the receiver has every committed event.
	missing := func() int {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		n := 0
		for _, id := range committed {
			if rcv.byID[id] == 0 {
				n++
			}
		}
		return n
	}
	deadline = time.After(60 * time.Second)
	for missing() > 0 {
		select {
		case <-rcv.notify:
		case <-time.After(2 * time.Second): // re-check: the last delivery may have notified already
		case <-deadline:
			t.Fatalf("%d of %d committed events never delivered after the restart; output:\n%s", missing(), len(committed), srv2.Output())
		}
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bad) > 0 {
		t.Fatalf("bad deliveries: %v", rcv.bad)
	}
	known := map[string]bool{}
	for _, id := range committed {
		known[id] = true
	}
	dups := 0
	for id, n := range rcv.byID {
		if !known[id] {
			t.Errorf("event %s was delivered but never committed", id)
		}
		dups += n - 1
	}
	for _, a := range acked {
		if rcv.subj[a] == "" {
			t.Errorf("acknowledged write's approval %s: no approval.pending delivered", a)
		}
	}
	t.Logf("%d acknowledged writes, %d events committed, all delivered; %d redeliveries after the kill", len(acked), len(committed), dups)
}
