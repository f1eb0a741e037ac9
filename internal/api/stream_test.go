package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
)

// serverTimeout stands in for the server's 60 s timeouts: streams here
// last several times longer.
const serverTimeout = 50 * time.Millisecond

// waitPast returns when t lies in the past: the stream under test must
// outlive the server's timeout, so real time has to pass.
func waitPast(t time.Time) {
	<-time.After(time.Until(t))
}

// streamServer starts s on loopback with short timeouts; its own client
// keeps no connections shared with other tests.
func streamServer(t *testing.T, svc *core.Service, tweak func(*Server)) (*httptest.Server, string) {
	t.Helper()
	tok, _, err := svc.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := New(svc, nil, nil, "test")
	if tweak != nil {
		tweak(s)
	}
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = serverTimeout, serverTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, tok
}

// An export that takes longer than the server's WriteTimeout arrives
// whole: the handler moves its own write deadline on as it writes.
func TestExportOutlivesWriteTimeout(t *testing.T) {
	svc := oaService(t)
	ctx := context.Background()
	var start time.Time
	srv, tok := streamServer(t, svc, func(s *Server) {
		s.exportProgress = func(done int) {
			if done == 1 { // a slow export: past the server's timeout after the first record
				waitPast(start.Add(3 * serverTimeout))
			}
		}
	})
	op := core.LocalOperator("default")
	for _, c := range []string{"first of a long export", "second of a long export", "third of a long export"} {
		if _, err := svc.Write(ctx, op, core.WriteRequest{Type: "belief", Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/export", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	start = time.Now()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("export cut after %s: %d %v (%d bytes)", time.Since(start), resp.StatusCode, err, len(raw))
	}
	if strings.Count(string(raw), `"kind":"record"`) != 3 || !strings.Contains(string(raw), `"kind":"end"`) {
		t.Fatalf("export incomplete: %s", raw)
	}
	if time.Since(start) < 3*serverTimeout {
		t.Fatal("the export did not outlive the server timeout; the test proves nothing")
	}
}

// An import whose body arrives slower than the server's ReadTimeout is
// read whole.
func TestImportOutlivesReadTimeout(t *testing.T) {
	ctx := context.Background()
	src := oaService(t)
	if _, _, err := src.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := core.LocalOperator("default")
	for _, c := range []string{"imported slowly", "over a slow link"} {
		if _, err := src.Write(ctx, op, core.WriteRequest{Type: "belief", Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	var exp bytes.Buffer
	if _, err := src.Export(ctx, op, &exp, nil); err != nil {
		t.Fatal(err)
	}
	srv, tok := streamServer(t, oaService(t), nil)
	pr, pw := io.Pipe()
	start := time.Now()
	go func() {
		half := exp.Len() / 2
		_, _ = pw.Write(exp.Bytes()[:half])
		waitPast(start.Add(3 * serverTimeout))
		_, _ = pw.Write(exp.Bytes()[half:])
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/import", pr)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(raw), `"records":2`) {
		t.Fatalf("slow import: %d %s", resp.StatusCode, raw)
	}
}
