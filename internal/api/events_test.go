package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// sseMsg is one Server-Sent Events message.
type sseMsg struct {
	id, event string
	p         events.Payload
}

// sseClient reads an event stream.
type sseClient struct {
	resp *http.Response
	sc   *bufio.Scanner
	stop context.CancelFunc
}

func (h *harness) openSSE(t *testing.T, lastID string, query string) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+"/v1/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+h.tokens["op"])
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("GET /v1/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &sseClient{resp: resp, sc: bufio.NewScanner(resp.Body), stop: cancel}
	t.Cleanup(c.close)
	return c
}

func (c *sseClient) close() { c.stop(); c.resp.Body.Close() }

// next reads the next message (comments skipped); the stream's context
// bounds the wait.
func (c *sseClient) next(t *testing.T) sseMsg {
	t.Helper()
	var m sseMsg
	for c.sc.Scan() {
		line := c.sc.Text()
		switch {
		case line == "" && m.id != "":
			return m
		case strings.HasPrefix(line, "id: "):
			m.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			m.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &m.p); err != nil {
				t.Fatalf("data: %v", err)
			}
		}
	}
	t.Fatalf("stream ended: %v", c.sc.Err())
	return m
}

func (h *harness) emit(t *testing.T, n int, ws string) []string {
	t.Helper()
	var ids []string
	err := h.store.Tx(t.Context(), func(tx store.Tx) error {
		for i := range n {
			e := events.New(ws, events.Kinds[i%len(events.Kinds)], time.Now(), events.Subject{"n": i})
			ids = append(ids, e.ID)
			if err := tx.AppendEvent(t.Context(), e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestEventStreamResume: a client reads part of the stream, drops, and
// reconnects with the last id it saw; across the gap (events committed
// while it was away) it receives every event exactly once, in order, and
// none of another workspace.
func TestEventStreamResume(t *testing.T) {
	h := newHarness(t, nil)
	ctx := t.Context()
	if err := h.store.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "ws-other", Settings: json.RawMessage(`{}`), CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	before := h.emit(t, 3, memory.DefaultWorkspace) // before the stream: not sent to a stream that starts now
	c := h.openSSE(t, "", "")
	want := h.emit(t, 5, memory.DefaultWorkspace)
	h.emit(t, 2, "ws-other")
	var got []string
	var last string
	for range 3 {
		m := c.next(t)
		got, last = append(got, m.p.ID), m.id
		if m.event != m.p.Type || strconv.FormatInt(m.p.Seq, 10) != m.id || m.p.Workspace != memory.DefaultWorkspace {
			t.Fatalf("message %+v", m)
		}
	}
	c.close()
	want = append(want, h.emit(t, 4, memory.DefaultWorkspace)...)
	h.emit(t, 1, "ws-other")
	c2 := h.openSSE(t, last, "")
	for len(got) < len(want) {
		got = append(got, c2.next(t).p.ID)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events across a reconnect:\n got %v\nwant %v", got, want)
	}
	// after=0 replays from the start; follow=false ends when caught up.
	code, _, body := h.do("GET", "/v1/events?after=0&follow=false", "op", nil)
	if code != 200 || strings.Count(string(body), "\nevent: ") != len(before)+len(want) {
		t.Fatalf("drain: %d, %d events, want %d", code, strings.Count(string(body), "\nevent: "), len(before)+len(want))
	}
	for _, q := range []string{"?after=-1", "?after=x", "?follow=maybe"} {
		if code, _, _ := h.do("GET", "/v1/events"+q, "op", nil); code != 400 {
			t.Errorf("GET /v1/events%s = %d, want 400", q, code)
		}
	}
}
