package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Events and webhooks (docs/events.md): the workspace's event stream as
// Server-Sent Events, and webhook endpoints with their delivery log.
// Operators only.

// ssePoll is how often an idle stream looks for new events; sseKeepalive
// how often it sends a comment so proxies keep the connection.
const (
	ssePoll      = 250 * time.Millisecond
	sseKeepalive = 15 * time.Second
)

// streamEvents serves GET /v1/events: events with seq after the
// Last-Event-ID header (a reconnecting EventSource sends it) or the after
// query parameter; with neither, from now on. Each SSE message has the
// event's seq as its id, its kind as its event name and its payload as
// data, so a client that reconnects with the last id it saw misses
// nothing and sees nothing twice. With follow=false the stream ends once
// it has caught up (a drain for scripts and cron jobs).
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	after, set, err := streamStart(r)
	if err != nil {
		return err
	}
	follow := true
	switch r.URL.Query().Get("follow") {
	case "", "true":
	case "false":
		follow = false
	default:
		return fault.Field("follow", "must be true or false")
	}
	ctx := r.Context()
	if !set {
		if after, err = s.svc.EventHead(ctx, p); err != nil {
			return err
		}
	} else if _, err := s.svc.EventsAfter(ctx, p, after, 1); err != nil {
		return err // the access check answers before the stream starts
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	dw := newDeadlineWriter(w, w, streamWindow)
	rc := http.NewResponseController(w)
	if _, err := fmt.Fprintf(dw, ": memgate events after %d\n\n", after); err != nil {
		return nil
	}
	_ = rc.Flush()
	lastWrite := time.Now()
	for {
		evs, err := s.svc.EventsAfter(ctx, p, after, 100)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("event stream read failed", "err", err)
			}
			return nil // the stream has started: the client reconnects
		}
		var b strings.Builder
		for _, e := range evs {
			data, _ := json.Marshal(e)
			fmt.Fprintf(&b, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data)
			after = e.Seq
		}
		if b.Len() == 0 && time.Since(lastWrite) >= sseKeepalive {
			b.WriteString(": keepalive\n\n")
		}
		if b.Len() > 0 {
			if _, err := dw.Write([]byte(b.String())); err != nil {
				return nil
			}
			if err := rc.Flush(); err != nil {
				return nil
			}
			lastWrite = time.Now()
		}
		if len(evs) == 100 {
			continue
		}
		if !follow {
			return nil // caught up: a drain ends here
		}
		if !wait(ctx, ssePoll) {
			return nil
		}
	}
}

// wait waits d or until ctx ends; false when it ended.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// streamStart reads where a stream starts: Last-Event-ID, else after.
func streamStart(r *http.Request) (int64, bool, error) {
	if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, false, fault.Field("Last-Event-ID", "must be a non-negative integer (an event's seq)")
		}
		return n, true, nil
	}
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, false, fault.Field("after", "must be a non-negative integer (an event's seq)")
		}
		return n, true, nil
	}
	return 0, false, nil
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req core.WebhookRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	res, err := s.svc.CreateWebhook(r.Context(), p, req)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, res)
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	hooks, err := s.svc.ListWebhooks(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"webhooks": hooks})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	if err := s.svc.DeleteWebhook(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	limit, err := queryPositive(r, "limit")
	if err != nil {
		return err
	}
	page, err := s.svc.ListDeliveries(r.Context(), p, r.URL.Query().Get("webhook_id"), r.URL.Query().Get("before"), limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}
