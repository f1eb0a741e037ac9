package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// Gateway is a memgate server the benchmarks ingest through, over HTTP,
// as a chat runtime would: POST /memories/add, then /memories/flush.
type Gateway struct {
	URL     string
	UserID  string
	UserKey string
	// Wait blocks until a flush job has ended.
	Wait   func(ctx context.Context, jobID string) (core.JobView, error)
	client *http.Client
}

// StartGateway serves svc's HTTP API on a loopback port, runs its job
// workers when workers is set, and creates the gateway user the
// benchmark writes as. stop shuts both down.
func StartGateway(ctx context.Context, svc *core.Service, ws string, workers bool) (*Gateway, func(), error) {
	u, err := svc.CreateUser(ctx, core.LocalOperator(ws), "bench-"+memory.NewID()[24:])
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: api.New(svc, nil, nil, "bench").Handler(), ReadHeaderTimeout: 10 * time.Second}
	jobsCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) })
	if workers {
		wg.Go(func() { svc.RunJobs(jobsCtx) })
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		stopJobs()
		wg.Wait()
	}
	g := &Gateway{URL: "http://" + ln.Addr().String(), UserID: u.UserID, UserKey: u.UserKey,
		Wait:   func(ctx context.Context, id string) (core.JobView, error) { return svc.WaitJob(ctx, ws, id) },
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}}
	return g, stop, nil
}

// post sends one gateway request and decodes a 2xx answer into out.
func (g *Gateway) post(ctx context.Context, path string, body map[string]any, out any) (int, error) {
	body["user_id"], body["user_key"] = g.UserID, g.UserKey
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+path, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("POST %s: %w", path, err)
		}
	}
	return resp.StatusCode, nil
}

// Add posts messages of one session.
func (g *Gateway) Add(ctx context.Context, app, project, session string, msgs []core.GatewayMessage) (core.AddResult, error) {
	var res core.AddResult
	_, err := g.post(ctx, "/memories/add", map[string]any{"app_id": app, "project_id": project, "session_id": session,
		"messages": msgs}, &res)
	return res, err
}

// Flush queues extraction of a session.
func (g *Gateway) Flush(ctx context.Context, app, project, session string) (core.FlushResult, error) {
	var res core.FlushResult
	_, err := g.post(ctx, "/memories/flush", map[string]any{"app_id": app, "project_id": project, "session_id": session}, &res)
	return res, err
}

// sessionTurns groups a conversation's turns by session, in order.
func sessionTurns(c Conv) [][]Turn {
	var out [][]Turn
	idx := map[string]int{}
	for _, t := range c.Turns {
		i, ok := idx[t.Session]
		if !ok {
			i = len(out)
			idx[t.Session] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], t)
	}
	return out
}

// messages turns a session's turns into gateway messages: each at its
// session date plus its index in milliseconds, so that timestamps are
// positive, distinct and in order. Turns without a date count from
// 2000-01-01, the earliest time the gateway accepts by default.
func messages(turns []Turn) []core.GatewayMessage {
	out := make([]core.GatewayMessage, len(turns))
	for i, t := range turns {
		base := int64(946684800000)
		if t.ValidFrom != nil && t.ValidFrom.UnixMilli() > base {
			base = t.ValidFrom.UnixMilli()
		}
		out[i] = core.GatewayMessage{SenderID: t.Speaker, Role: t.Role, Timestamp: base + int64(i), Content: t.Text}
	}
	return out
}
