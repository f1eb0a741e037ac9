//go:build unix

package main

// End-to-end tests of the real binary: crash safety under SIGKILL,
// graceful shutdown on SIGTERM, and the one-time operator token. They build
// cmd/memgate once, run it as a child process and talk to it over HTTP.
// Synchronisation is by reading the child's pipes (the listening line on
// stdout, the "listening" log line on stderr) and by waiting for its exit;
// every wait is bounded.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	listeningPrefix = "memgate listening on http://"
	tokenLinePrefix = "memgate: operator token (shown once, store it now): "

	startTimeout = 30 * time.Second // build is separate; this is just startup
	exitTimeout  = 30 * time.Second
	httpTimeout  = 15 * time.Second
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// memgateBinary builds this package once per test run and returns the
// executable's path.
func memgateBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the memgate binary; skipped with -short")
	}
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		buildDir, buildErr = os.MkdirTemp("", "memgate-e2e-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "memgate")
		cmd := exec.Command(goTool, "build", "-o", binPath, ".")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out.String())
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// childEnv is this process's environment without MEMGATE_* variables, so
// the child is configured by its flags alone.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEMGATE_") {
			env = append(env, kv)
		}
	}
	return env
}

// server is a running `memgate serve` child process.
type server struct {
	cmd  *exec.Cmd
	addr string // host:port it listens on
	base string // http://host:port

	mu     sync.Mutex
	tokens []string        // operator tokens announced on stdout or stderr
	tail   []string        // last output lines, for failure messages
	all    strings.Builder // the whole output
	logged map[string]bool // msg of every JSON log line

	listenLogged chan struct{} // closed at the "listening" log line

	done  chan struct{} // closed once the pipes hit EOF and Wait returned
	state *os.ProcessState
}

const tailLines = 60

// note records one output line of the child.
func (s *server) note(stream, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok, ok := strings.CutPrefix(line, tokenLinePrefix); ok {
		s.tokens = append(s.tokens, strings.TrimSpace(tok))
	}
	var rec struct {
		Msg string `json:"msg"`
	}
	if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &rec) == nil && rec.Msg != "" {
		if rec.Msg == "listening" && !s.logged[rec.Msg] {
			close(s.listenLogged)
		}
		s.logged[rec.Msg] = true
	}
	s.all.WriteString(line)
	s.all.WriteByte('\n')
	s.tail = append(s.tail, stream+": "+line)
	if len(s.tail) > tailLines {
		s.tail = s.tail[len(s.tail)-tailLines:]
	}
}

// Tokens returns the operator tokens the child has announced so far.
func (s *server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens...)
}

func (s *server) Logged(msg string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logged[msg]
}

// AllOutput returns everything the child printed so far, stdout and
// stderr interleaved by line.
func (s *server) AllOutput() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all.String()
}

// Output returns the last lines the child printed.
func (s *server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// readLines calls fn for every line of r until EOF; it never stops
// draining, so the child can never block on a full pipe.
func readLines(r io.Reader, fn func(string)) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			fn(line)
		}
		if err != nil {
			return
		}
	}
}

// startServer runs `memgate serve` on dataDir and returns once it listens.
// It waits for both the listening line on stdout and the "listening" log
// line on stderr, which the server writes after any token announcement, so
// Tokens is complete for the start-up phase when it returns.
func startServer(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	bin := memgateBinary(t)
	// These tests are about durability, not meaning: no embedder (extra
	// may name one, or "" for the default; the last --embedder wins).
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "info", "--embedder", "none"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, logged: map[string]bool{}, listenLogged: make(chan struct{}), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	addrCh := make(chan string, 1)
	var readers sync.WaitGroup
	readers.Go(func() {
		sent := false
		readLines(stdout, func(line string) {
			s.note("stdout", line)
			if a, ok := strings.CutPrefix(line, listeningPrefix); ok && !sent {
				sent = true
				addrCh <- strings.TrimSpace(a)
			}
		})
	})
	readers.Go(func() { readLines(stderr, func(line string) { s.note("stderr", line) }) })
	go func() {
		readers.Wait() // all output read: only now may Wait close the pipes
		_ = cmd.Wait()
		s.state = cmd.ProcessState
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Kill()
			<-s.done
		}
	})

	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case a := <-addrCh:
		s.addr, s.base = a, "http://"+a
	case <-s.done:
		t.Fatalf("memgate serve exited before listening (%v); output:\n%s", s.state, s.Output())
	case <-deadline.C:
		_ = cmd.Process.Kill()
		<-s.done
		t.Fatalf("memgate serve did not print its listening line within %s; output:\n%s", startTimeout, s.Output())
	}
	// The "listening" log line precedes the stdout line in the child, but
	// the two pipes are read independently: wait for stderr to catch up.
	select {
	case <-s.listenLogged:
	case <-s.done:
		t.Fatalf("memgate serve exited right after listening (%v); output:\n%s", s.state, s.Output())
	case <-deadline.C:
		_ = cmd.Process.Kill()
		<-s.done
		t.Fatalf("no \"listening\" log line within %s; output:\n%s", startTimeout, s.Output())
	}
	return s
}

// signal sends sig to the child.
func (s *server) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// waitExit waits up to d for the child to exit and returns its state.
func (s *server) waitExit(t *testing.T, d time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-s.done:
		return s.state
	case <-time.After(d):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Fatalf("memgate did not exit within %s; output:\n%s", d, s.Output())
		return nil
	}
}

// stop shuts the server down with SIGTERM and requires exit status 0.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.signal(t, syscall.SIGTERM)
	st := s.waitExit(t, exitTimeout)
	if st.ExitCode() != 0 {
		t.Fatalf("memgate serve after SIGTERM: %v, want exit status 0; output:\n%s", st, s.Output())
	}
}

// client is a small JSON client for one server.
type client struct {
	hc    *http.Client
	base  string
	token string
}

func newClient(t *testing.T, base, token string, conns int) *client {
	tr := &http.Transport{MaxIdleConns: 2 * conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{hc: &http.Client{Transport: tr, Timeout: httpTimeout}, base: base, token: token}
}

// do sends a request and returns the status and the whole body. err is a
// transport error (including a body cut short).
func (c *client) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, err
	}
	return resp.StatusCode, b, nil
}

// getJSON GETs path, requires status want and decodes the body into v.
func (c *client) getJSON(t *testing.T, path string, want int, v any) {
	t.Helper()
	status, body, err := c.do("GET", path, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if status != want {
		t.Fatalf("GET %s: status %d, want %d: %s", path, status, want, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: decode: %v: %s", path, err, body)
		}
	}
}

// spell writes n in base 26 with the letters a-z, so unique contents carry
// no digit runs for the PII screen to flag.
func spell(n int) string {
	var b []byte
	for {
		b = append(b, byte('a'+n%26))
		n /= 26
		if n == 0 {
			break
		}
	}
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// Word lists for drillContent, 16 phrases each.
var drillSlots = [][]string{
	{"the release manager", "the on-call engineer", "the data team", "the platform team", "the mobile lead",
		"the support rota", "the security reviewer", "the billing squad", "the search team", "the design lead",
		"the infra group", "the docs writer", "the QA lead", "the product owner", "the SRE pair", "the backend guild"},
	{"rolled back", "paused", "rescheduled", "reviewed", "split", "merged", "rewrote", "load tested",
		"documented", "profiled", "retired", "migrated", "throttled", "reindexed", "audited", "patched"},
	{"flaky", "slow", "noisy", "legacy", "nightly", "regional", "shared", "experimental",
		"critical", "internal", "public", "batch", "streaming", "cached", "archived", "staging"},
	{"export job", "checkout flow", "search cluster", "notification service", "ledger database", "image pipeline",
		"auth gateway", "report builder", "message queue", "feature store", "sync worker", "billing cron",
		"web frontend", "mobile backend", "cache tier", "ingest service"},
	{"a spike in timeouts", "the quarterly freeze", "a failed canary", "a customer escalation", "the vendor outage",
		"an expired certificate", "a schema drift", "the traffic surge", "a memory leak", "the region failover",
		"a stuck deploy", "the budget review", "a disk alarm", "the compliance audit", "a broken dashboard", "the holiday peak"},
	{"page the owner", "check the runbook", "warm the cache", "pin the version", "drain the queue",
		"snapshot the volume", "notify support", "freeze merges", "add replicas", "run the smoke suite",
		"tag the release", "open an incident", "rebalance the shards", "review the alerts", "update the status page",
		"compare the dashboards"},
	{"the morning standup", "the weekly sync", "the next release", "Friday evening", "the handover",
		"the maintenance window", "the board demo", "month end", "the code freeze", "the launch review",
		"the sprint demo", "the partner call", "the retro", "the planning meeting", "lunch", "the night shift"},
}

// drillContent is a unique, PII-free record content of about 150 bytes
// for writer w's n-th write (w < 8). Its seven slots spell a scrambled
// n*8+w in base 16, so distinct writes get distinct slot tuples: any two
// contents differ in whole phrases and the gate's near-duplicate check
// (term overlap >= 0.9) leaves them alone.
func drillContent(w, n int) string {
	const bits = 28 // 7 slots of 16 phrases
	x := uint32(n*8+w) & (1<<bits - 1)
	x = x * 0x9e3779b1 & (1<<bits - 1) // odd multipliers and xorshifts are
	x ^= x >> 13                       // bijections on 28-bit values
	x = x * 0x85ebca6b & (1<<bits - 1)
	pick := func(i int) string { return drillSlots[i][x>>(4*i)&15] }
	return fmt.Sprintf("Drill episode %s by writer %s: %s %s the %s %s after %s; next time, %s before %s.",
		spell(n), spell(w), pick(0), pick(1), pick(2), pick(3), pick(4), pick(5), pick(6))
}

type recordBody struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"`
}

type writeResponse struct {
	Decision string     `json:"decision"`
	Record   recordBody `json:"record"`
}

type verifyResponse struct {
	OK      bool   `json:"ok"`
	Entries int64  `json:"entries"`
	Head    string `json:"head"`
}

// TestCrashSafety kills the server with SIGKILL in the middle of a stream
// of concurrent writes, restarts it on the same data directory and checks
// that every acknowledged write survived intact, the audit chain verifies,
// and records and audit entries agree one to one.
func TestCrashSafety(t *testing.T) {
	const (
		writers   = 4
		ackTarget = 200  // acknowledged writes before the kill
		maxWrites = 5000 // per writer: a bound in case the kill never comes
	)
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startServer(t, dataDir)
	toks := srv.Tokens()
	if len(toks) != 1 {
		t.Fatalf("fresh data dir: got %d operator token lines, want 1; output:\n%s", len(toks), srv.Output())
	}
	token := toks[0]
	c := newClient(t, srv.base, token, 2*writers)

	var (
		mu        sync.Mutex
		acked     = map[string]string{} // record id -> content, for every 201
		attempted = map[string]bool{}   // every content sent
		failures  []error               // unexpected failures before the kill

		acks     atomic.Int64
		inflight atomic.Int64
		killed   atomic.Bool
		reached  = make(chan struct{})
		once     sync.Once
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
		once.Do(func() { close(reached) })
	}
	for w := range writers {
		wg.Go(func() {
			for n := range maxWrites {
				content := drillContent(w, n)
				mu.Lock()
				attempted[content] = true
				mu.Unlock()
				inflight.Add(1)
				status, body, err := c.do("POST", "/v1/records", map[string]any{
					"type": "episode", "content": content, "entities": []string{"system:crashdrill"},
				})
				inflight.Add(-1)
				if err != nil || status != http.StatusCreated {
					if killed.Load() {
						return // the server is gone: this write's fate is unknown
					}
					fail(fmt.Errorf("writer %d write %d: status %d err %v: %s", w, n, status, err, body))
					return
				}
				var wr writeResponse
				if err := json.Unmarshal(body, &wr); err != nil || wr.Record.ID == "" {
					fail(fmt.Errorf("writer %d write %d: undecodable 201 (err %v): %s", w, n, err, body))
					return
				}
				if wr.Decision != "accepted" || wr.Record.Content != content {
					fail(fmt.Errorf("writer %d write %d: decision %q content %q", w, n, wr.Decision, wr.Record.Content))
					return
				}
				mu.Lock()
				acked[wr.Record.ID] = content
				mu.Unlock()
				if acks.Add(1) >= ackTarget {
					once.Do(func() { close(reached) })
				}
			}
			fail(fmt.Errorf("writer %d: %d writes without a kill", w, maxWrites))
		})
	}

	select {
	case <-reached:
	case <-time.After(2 * time.Minute):
		fail(errors.New("timed out waiting for acknowledged writes"))
	}
	killed.Store(true)
	inflightAtKill := inflight.Load()
	srv.signal(t, syscall.SIGKILL)
	wg.Wait() // every writer ends on its first failed request
	st := srv.waitExit(t, exitTimeout)
	mu.Lock()
	if len(failures) > 0 {
		mu.Unlock()
		t.Fatalf("writes failed before the kill: %v\noutput:\n%s", errors.Join(failures...), srv.Output())
	}
	mu.Unlock()
	if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("server ended with %v, want killed by SIGKILL; output:\n%s", st, srv.Output())
	}
	t.Logf("killed after %d acknowledged writes with %d requests in flight", len(acked), inflightAtKill)
	if len(acked) < ackTarget {
		t.Fatalf("only %d acknowledged writes before the kill, want >= %d", len(acked), ackTarget)
	}

	// Restart on the same data directory: the workspace exists, so no new
	// token is printed and the first one still works.
	srv2 := startServer(t, dataDir)
	if toks := srv2.Tokens(); len(toks) != 0 {
		t.Fatalf("restart printed %d operator token lines, want none", len(toks))
	}
	c2 := newClient(t, srv2.base, token, 4)
	c2.getJSON(t, "/readyz", http.StatusOK, nil)

	// Every acknowledged write is there, intact and active.
	missing := 0
	for id, content := range acked {
		status, body, err := c2.do("GET", "/v1/records/"+url.PathEscape(id), nil)
		if err != nil {
			t.Fatalf("GET record %s: %v", id, err)
		}
		var rec recordBody
		if status != http.StatusOK || json.Unmarshal(body, &rec) != nil || rec.Content != content || rec.Status != "active" {
			if missing++; missing <= 10 {
				t.Errorf("acknowledged record %s after restart: status %d: %.300s", id, status, body)
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged writes lost or damaged after SIGKILL", missing, len(acked))
	}

	// All active records, paged. Writes in flight at the kill may or may
	// not have landed, but nothing else may appear.
	active := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page > 100 {
			t.Fatal("record listing does not end")
		}
		var res struct {
			Records    []recordBody `json:"records"`
			NextCursor string       `json:"next_cursor"`
		}
		c2.getJSON(t, "/v1/records?limit=500&cursor="+url.QueryEscape(cursor), http.StatusOK, &res)
		for _, r := range res.Records {
			if active[r.ID] {
				t.Fatalf("record %s listed twice", r.ID)
			}
			active[r.ID] = true
			if !attempted[r.Content] {
				t.Errorf("active record %s has content that was never written: %.200q", r.ID, r.Content)
			}
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	if len(active) < len(acked) {
		t.Fatalf("%d active records, fewer than %d acknowledged writes", len(active), len(acked))
	}

	// The audit log: one accepted record.write per active record, and the
	// chain verifies.
	acceptedWrites := map[string]bool{}
	var entries int64
	after := int64(0)
	for page := 0; ; page++ {
		if page > 100 {
			t.Fatal("audit listing does not end")
		}
		var res struct {
			Entries []struct {
				Seq     int64           `json:"seq"`
				Event   string          `json:"event"`
				Payload json.RawMessage `json:"payload"`
			} `json:"entries"`
			NextAfter int64 `json:"next_after"`
		}
		c2.getJSON(t, fmt.Sprintf("/v1/audit?limit=500&after=%d", after), http.StatusOK, &res)
		entries += int64(len(res.Entries))
		for _, e := range res.Entries {
			if e.Event != "record.write" {
				continue
			}
			var p struct {
				Decision string `json:"decision"`
				RecordID string `json:"record_id"`
			}
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				t.Fatalf("audit entry %d: payload: %v", e.Seq, err)
			}
			if p.Decision == "accepted" {
				if acceptedWrites[p.RecordID] {
					t.Errorf("two accepted record.write entries for record %s", p.RecordID)
				}
				acceptedWrites[p.RecordID] = true
			}
		}
		if res.NextAfter == 0 {
			break
		}
		after = res.NextAfter
	}
	if len(acceptedWrites) != len(active) {
		t.Errorf("%d accepted record.write audit entries, %d active records", len(acceptedWrites), len(active))
	}
	for id := range active {
		if !acceptedWrites[id] {
			t.Errorf("active record %s has no accepted record.write audit entry", id)
		}
	}
	var rep verifyResponse
	c2.getJSON(t, "/v1/audit/verify", http.StatusOK, &rep)
	if !rep.OK || rep.Entries != entries {
		t.Fatalf("GET /v1/audit/verify = %+v, want ok with %d entries", rep, entries)
	}
	t.Logf("after restart: %d active records (%d acknowledged), %d audit entries", len(active), len(acked), entries)

	srv2.stop(t)

	// The offline verifier agrees.
	cmd := exec.Command(memgateBinary(t), "audit", "verify", "--data-dir", dataDir, "--json")
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := runBounded(cmd, exitTimeout); err != nil {
		t.Fatalf("memgate audit verify: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var cliRep verifyResponse
	if err := json.Unmarshal(stdout.Bytes(), &cliRep); err != nil {
		t.Fatalf("memgate audit verify --json: %v: %s", err, stdout.String())
	}
	if !cliRep.OK || cliRep.Entries != entries || cliRep.Head != rep.Head {
		t.Fatalf("memgate audit verify = %+v, want ok, %d entries, head %s", cliRep, entries, rep.Head)
	}
	if strings.Contains(stderr.String(), tokenLinePrefix) {
		t.Fatalf("memgate audit verify printed a new operator token")
	}
}

// runBounded runs cmd, killing it after d.
func runBounded(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("did not finish within %s", d)
	}
}

// TestGracefulShutdown sends SIGTERM to an idle server holding an idle
// keep-alive connection: it must exit 0 within its shutdown timeout.
func TestGracefulShutdown(t *testing.T) {
	const shutdownTimeout = 5 * time.Second
	srv := startServer(t, filepath.Join(t.TempDir(), "data"), "--shutdown-timeout", shutdownTimeout.String())
	c := newClient(t, srv.base, "", 1)
	c.getJSON(t, "/healthz", http.StatusOK, nil) // leaves an idle connection open

	start := time.Now()
	srv.signal(t, syscall.SIGTERM)
	st := srv.waitExit(t, shutdownTimeout+exitTimeout)
	elapsed := time.Since(start)
	if st.ExitCode() != 0 {
		t.Fatalf("exit after SIGTERM: %v, want status 0; output:\n%s", st, srv.Output())
	}
	if elapsed >= shutdownTimeout {
		t.Fatalf("idle server took %s to stop, want less than its shutdown timeout %s", elapsed, shutdownTimeout)
	}
	if !srv.Logged("stopped") {
		t.Fatalf("no \"stopped\" log line after SIGTERM; output:\n%s", srv.Output())
	}
	t.Logf("stopped %s after SIGTERM", elapsed.Round(time.Millisecond))
}

// TestOperatorTokenShownOnce starts a server on a fresh data directory,
// which announces the operator token once, then again on the same
// directory, which announces none; the first token keeps working.
func TestOperatorTokenShownOnce(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")

	srv := startServer(t, dataDir)
	c := newClient(t, srv.base, "", 1)
	toks := srv.Tokens()
	if len(toks) != 1 || !strings.HasPrefix(toks[0], "mg_") {
		t.Fatalf("first start: %d operator token lines, want exactly one with an mg_ token; output:\n%s", len(toks), srv.Output())
	}
	token := toks[0]
	c.token = token
	var who struct {
		Kind string `json:"kind"`
	}
	c.getJSON(t, "/v1/whoami", http.StatusOK, &who)
	if who.Kind != "operator" {
		t.Fatalf("whoami with the announced token: kind %q, want operator", who.Kind)
	}
	srv.stop(t)
	if n := len(srv.Tokens()); n != 1 { // whole output read by now
		t.Fatalf("first run printed %d operator token lines in total, want 1", n)
	}
	if n := strings.Count(srv.AllOutput(), token); n != 1 {
		t.Fatalf("the operator token appears %d times in the first run's output, want once", n)
	}

	srv2 := startServer(t, dataDir)
	c2 := newClient(t, srv2.base, token, 1)
	c2.getJSON(t, "/v1/whoami", http.StatusOK, nil)
	srv2.stop(t)
	if n := len(srv2.Tokens()); n != 0 {
		t.Fatalf("second start printed %d operator token lines, want none", n)
	}
	if out := srv2.AllOutput(); strings.Contains(out, "operator token") || strings.Contains(out, token) {
		t.Fatalf("second start mentions an operator token; output:\n%s", srv2.Output())
	}
}
