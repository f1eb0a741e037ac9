package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/cli"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
)

// TestErasureLeavesNothing is the erasure test of every forget path, on
// both backends (docs/erasure.md). Each path erases a record holding its
// own marker word (in the content and in an entity, so a graph node holds
// it too); the words first reach the database files and the search index
// snapshot, so the test proves they are removed, not merely never
// written. Then every file of the data directory is read byte by byte
// and, on PostgreSQL, every relation file of the database (tables, TOAST,
// indexes) through pg_read_binary_file after a CHECKPOINT: the bytes on
// disk, free space in pages included. The audit log (in those files, and
// read through the API) must not hold them either.
//
// Paths: REST DELETE /v1/records/{id}, REST forget_subject, MCP
// memory_forget by id and by subject, the gateway's /memories/delete,
// REST approval reject, approval expiry from the CLI, REST forgetting of
// an ingested document (DELETE /v1/resources/{id}), and the CLI's
// forget ID and forget --subject, both without a server (the snapshot
// serve left must not keep the words) and beside a running server (which
// must not write them back).
func TestErasureLeavesNothing(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			env := map[string]string{}
			var pgURL string
			if backend == "postgres" {
				pgURL = pgtest.URL(t)
				env["MEMGATE_DATABASE_URL"] = pgURL
			}
			testErasure(t, env, pgURL)
		})
	}
}

// markers: one per forget path, and one that stays.
const (
	mkRESTRecord  = "mkrestrec1x"
	mkRESTSubject = "mkrestsubj2x"
	mkMCPRecord   = "mkmcprec3x"
	mkMCPSubject  = "mkmcpsubj4x"
	mkCLIRecord   = "mkclirec5x"
	mkCLISubject  = "mkclisubj6x"
	mkCLILive     = "mkclilive7x"
	mkCLILiveSubj = "mkclilivesubj12x"
	mkGateway     = "mkgateway8x"
	mkReject      = "mkreject9x"
	mkExpire      = "mkexpire10x"
	mkKeep        = "mkkeep11x"
	mkResource    = "mkresource13x"
	// Words of operators' reasons for rejecting items: erased by
	// forgetting the rejected record, and by forgetting a subject the
	// rejected record named.
	mkReasonRecord  = "mkreasonrec14x"
	mkReasonSubject = "mkreasonsubj15x"
	// A name the gateway's turn mentions becomes a graph node
	// (name:Mkgwname16x); the index holds it lower case.
	mkGatewayName      = "Mkgwname16x"
	mkGatewayNameLower = "mkgwname16x"
)

var erased = []string{mkRESTRecord, mkRESTSubject, mkMCPRecord, mkMCPSubject, mkCLIRecord, mkCLISubject, mkCLILive, mkCLILiveSubj,
	mkGateway, mkReject, mkExpire, mkResource, mkReasonRecord, mkReasonSubject, mkGatewayName, mkGatewayNameLower}

func testErasure(t *testing.T, env map[string]string, pgURL string) {
	dir := filepath.Join(t.TempDir(), "data")
	// Queued items expire at once, so `approvals expire` has one to erase;
	// the server's own expiry loop runs only at its start.
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("approvals:\n  ttl: 1ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["MEMGATE_POLICY"] = policy
	r := run(t, dir, env, "agents", "create", "--name", "writer", "--trust", "standard", "--json")
	var writer struct{ Token string }
	mustJSON(t, r, &writer)
	m := regexp.MustCompile(`operator token \(shown once, store it now\): (\S+)`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no operator token in %q", r.stderr)
	}
	op := m[1]
	var newbie struct{ Token string }
	mustJSON(t, run(t, dir, env, "agents", "create", "--name", "newbie", "--trust", "restricted", "--json"), &newbie)
	var user map[string]string
	mustJSON(t, run(t, dir, env, "users", "create", "--user-id", "alice", "--json"), &user)

	// 1. Write every marker while a server runs; its shutdown saves the
	// index snapshot with all of them.
	srv := startServe(t, dir, env)
	ids := map[string]string{}
	for _, mk := range []string{mkRESTRecord, mkCLIRecord, mkCLILive, mkKeep} {
		ids[mk] = srv.write(writer.Token, mk, "topic:"+mk+"_node", http.StatusCreated)
	}
	for _, mk := range []string{mkRESTSubject, mkCLISubject, mkCLILiveSubj, mkMCPSubject} {
		srv.write(writer.Token, mk, "person:"+mk, http.StatusCreated)
	}
	ids[mkExpire] = srv.write(newbie.Token, mkExpire, "topic:"+mkExpire+"_node", http.StatusAccepted)
	mcpWriter := srv.mcp(writer.Token)
	res := srv.callTool(mcpWriter, "memory_write", map[string]any{"type": "belief", "content": "the " + mkMCPRecord + " fact",
		"entities": []string{"topic:" + mkMCPRecord + "_node"}})
	ids[mkMCPRecord] = res["record"].(map[string]any)["id"].(string)
	var added struct {
		MemoryIDs []string `json:"memory_ids"`
	}
	srv.do("POST", "/memories/add", "", map[string]any{"user_id": "alice", "user_key": user["user_key"], "session_id": "chat:1",
		"messages": []map[string]any{{"sender_id": "alice", "role": "user", "timestamp": 1780000000000, "content": "my code word is " + mkGateway + ", my friend " + mkGatewayName + " knows it"}}},
		http.StatusOK, &added)
	ids[mkGateway] = added.MemoryIDs[0]
	var nameNode struct{ Properties map[string]string }
	srv.do("GET", "/v1/graph/nodes/name:alice%2F"+mkGatewayName, op, nil, http.StatusOK, &nameNode)
	if nameNode.Properties["name"] != mkGatewayName {
		t.Fatalf("the gateway turn's name node: %+v", nameNode)
	}
	// An ingested document of two chunks, one of them at its second
	// version: forgetting the resource erases every chunk and version.
	var doc struct {
		ResourceID string `json:"resource_id"`
	}
	srv.do("POST", "/v1/resources", writer.Token, map[string]any{"uri": "https://wiki.example/erase.md",
		"content": "# Doc\n\nthe " + mkResource + " runbook\n\n## Two\n\nmore " + mkResource + " text\n"}, http.StatusCreated, &doc)
	srv.do("POST", "/v1/resources", writer.Token, map[string]any{"uri": "https://wiki.example/erase.md",
		"content": "# Doc\n\nthe " + mkResource + " runbook\n\n## Two\n\nmore " + mkResource + " text, changed\n"}, http.StatusCreated, &doc)
	ids[mkResource] = doc.ResourceID
	srv.stop()

	if pgURL != "" {
		// As autovacuum would: planner statistics sample column values.
		pgExec(t, pgURL, "ANALYZE")
	}
	snap := filepath.Join(dir, "index.snapshot")
	for _, mk := range []string{mkCLIRecord, mkCLISubject, mkKeep} {
		if !fileHas(t, snap, mk) {
			t.Fatalf("test is broken: the snapshot does not hold %s", mk)
		}
	}
	for _, mk := range append([]string{mkKeep}, erased...) {
		if mk != mkReject && mk != mkReasonRecord && mk != mkReasonSubject && len(leftovers(t, dir, pgURL, mk)) == 0 {
			t.Fatalf("test is broken: %s never reached the database files", mk)
		}
	}

	// 2. The CLI without a server: forget, forget --subject, approvals
	// expire.
	mustRun(t, run(t, dir, env, "forget", ids[mkCLIRecord]))
	mustRun(t, run(t, dir, env, "forget", "--subject", "person:"+mkCLISubject))
	if r := mustRun(t, run(t, dir, env, "approvals", "expire", "--json")); !strings.Contains(r.stdout, `"expired": 1`) {
		t.Fatalf("approvals expire: %s", r.stdout)
	}
	assertErased(t, dir, pgURL, mkCLIRecord, mkCLISubject, mkExpire)

	// 3. With a server: REST, MCP, gateway, reject, and the CLI beside it.
	srv = startServe(t, dir, env)
	ids[mkReject] = srv.write(newbie.Token, mkReject, "topic:"+mkReject+"_node", http.StatusAccepted)
	reasonSubject := "person:reason_subject"
	ids[mkReasonSubject] = srv.write(newbie.Token, "queued about a person", reasonSubject, http.StatusAccepted)
	var queue struct {
		Items []struct {
			ID       string `json:"id"`
			RecordID string `json:"record_id"`
		} `json:"items"`
	}
	srv.do("GET", "/v1/approvals", op, nil, http.StatusOK, &queue)
	rejected := 0
	for _, it := range queue.Items {
		reason := map[string]string{ids[mkReject]: "quotes " + mkReasonRecord, ids[mkReasonSubject]: "about " + mkReasonSubject}[it.RecordID]
		if reason != "" {
			srv.do("POST", "/v1/approvals/"+it.ID+"/reject", op, map[string]any{"reason": reason}, http.StatusOK, nil)
			rejected++
		}
	}
	if rejected != 2 {
		t.Fatalf("the items to reject are not queued: %+v", queue)
	}
	for _, mk := range []string{mkReasonRecord, mkReasonSubject} {
		if len(leftovers(t, dir, pgURL, mk)) == 0 {
			t.Fatalf("test is broken: the reason %s never reached the database files", mk)
		}
	}
	// The rejected record is a tombstone; forgetting it erases the
	// reason. Forgetting the subject the other item named erases its.
	srv.do("DELETE", "/v1/records/"+ids[mkReject], op, nil, http.StatusOK, nil)
	srv.do("POST", "/v1/graph/forget_subject", op, map[string]any{"subject": reasonSubject}, http.StatusOK, nil)
	srv.do("DELETE", "/v1/records/"+ids[mkRESTRecord], writer.Token, nil, http.StatusOK, nil)
	srv.do("POST", "/v1/graph/forget_subject", op, map[string]any{"subject": "person:" + mkRESTSubject}, http.StatusOK, nil)
	srv.callTool(srv.mcp(writer.Token), "memory_forget", map[string]any{"id": ids[mkMCPRecord]})
	srv.callTool(srv.mcp(op), "memory_forget", map[string]any{"subject": "person:" + mkMCPSubject})
	srv.do("POST", "/memories/delete", "", map[string]any{"user_id": "alice", "user_key": user["user_key"], "memory_id": ids[mkGateway]},
		http.StatusOK, nil)
	srv.do("DELETE", "/v1/resources/"+ids[mkResource], writer.Token, nil, http.StatusOK, nil)
	if pgURL != "" {
		forgetBesideOlderTransaction(t, dir, env, pgURL, mkCLILive, "forget", ids[mkCLILive])
	} else {
		mustRun(t, run(t, dir, env, "forget", ids[mkCLILive]))
	}
	mustRun(t, run(t, dir, env, "forget", "--subject", "person:"+mkCLILiveSubj))
	// Each forget returned after its scrub: nothing waits for a timer.
	assertErased(t, dir, pgURL, erased...)
	// The server's shutdown catches up and saves a new snapshot, which
	// must hold none of them either.
	srv.stop()
	if !fileHas(t, snap, mkKeep) {
		t.Fatal("test is broken: the server saved no snapshot at shutdown")
	}
	assertErased(t, dir, pgURL, erased...)
	if len(leftovers(t, dir, pgURL, mkKeep)) == 0 {
		t.Fatal("the record nobody forgot was erased too")
	}

	// Every path was audited, with hashes only.
	mustRun(t, run(t, dir, env, "audit", "verify"))
	srv = startServe(t, dir, env)
	var page struct {
		Entries []json.RawMessage `json:"entries"`
	}
	srv.do("GET", "/v1/audit?limit=500", op, nil, http.StatusOK, &page)
	// The event outbox names ids and counts only: no erased text, and the
	// erasures are there.
	outbox := srv.raw("GET", "/v1/events?after=0&follow=false", op)
	srv.stop()
	for _, mk := range erased {
		if bytes.Contains(outbox, []byte(mk)) {
			t.Errorf("the event outbox holds %s", mk)
		}
	}
	if n := bytes.Count(outbox, []byte("event: forget.completed")); n != 12 {
		t.Errorf("the outbox has %d forget.completed events, want 12 (7 records: 5 plus the document's 2 chunks; 5 subjects)", n)
	}
	events := map[string]int{}
	for _, e := range page.Entries {
		for _, mk := range erased {
			if bytes.Contains(e, []byte(mk)) {
				t.Errorf("audit entry holds %s: %s", mk, e)
			}
		}
		var ev struct{ Event string }
		json.Unmarshal(e, &ev)
		events[ev.Event]++
	}
	// record.forget: 7 records and the rejected one's reason.
	if events["record.forget"] != 8 || events["subject.forget"] != 5 || events["approval.reject"] != 2 || events["approval.expire"] != 1 {
		t.Errorf("audit events %v", events)
	}
}

// forgetBesideOlderTransaction runs the CLI with args, erasing marker,
// while a transaction of another database of the server, begun before
// the erasure, still runs, as another test's or application's under
// load. Until it ends every snapshot, VACUUM FULL's own included, has an
// xmin older than the erasure, and the rewrite keeps the dead rows: the
// forget must not return meanwhile. The test waits until the forget's
// scrub has polled the horizon a few times (a session of the database
// querying pg_stat_activity), ends the transaction, and expects the forget
// to finish then.
func forgetBesideOlderTransaction(t *testing.T, dir string, env map[string]string, pgURL, marker string, args ...string) {
	t.Helper()
	ctx := t.Context()
	other, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	older, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback(context.Background())
	if _, err := older.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- run(t, dir, env, args...) }()

	probe, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(context.Background())
	var since time.Time
	if err := probe.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&since); err != nil {
		t.Fatal(err)
	}
	polls := map[time.Time]bool{}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		rows, err := probe.Query(ctx, `SELECT query_start FROM pg_stat_activity /* erasure probe */
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query_start > $1
			AND query ILIKE '%pg_stat_activity%' AND query NOT LIKE '%erasure probe%'`, since)
		if err != nil {
			t.Fatal(err)
		}
		starts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range starts {
			polls[st] = true
		}
		if len(polls) >= 3 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("%v returned (exit %d: %s) while a transaction older than the erasure ran; %s is in %v",
				args, r.code, r.stderr, marker, leftovers(t, dir, pgURL, marker))
		case <-deadline:
			t.Fatalf("%v neither returned nor waited for the older transaction within a minute", args)
		case <-tick.C:
		}
	}
	if err := older.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		mustRun(t, r)
	case <-time.After(time.Minute):
		t.Fatalf("%v did not end within a minute of the older transaction's end", args)
	}
}

// assertErased fails for every marker left in the data directory or the
// database.
func assertErased(t *testing.T, dir, pgURL string, markers ...string) {
	t.Helper()
	for _, mk := range markers {
		if where := leftovers(t, dir, pgURL, mk); len(where) > 0 {
			t.Errorf("%s is still in %v", mk, where)
		}
	}
}

// leftovers names every file of dir, and every relation of the
// PostgreSQL database at pgURL, whose bytes hold marker.
func leftovers(t *testing.T, dir, pgURL, marker string) []string {
	t.Helper()
	var where []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fileHas(t, path, marker) {
			where = append(where, filepath.Base(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pgURL != "" {
		where = append(where, pgRelationsHolding(t, pgURL, marker)...)
	}
	return where
}

// pgRelationsHolding reads the file of every relation of memgate's
// schema (tables, indexes, their TOAST tables and TOAST indexes) after a
// CHECKPOINT has written every dirty page, and names those holding
// marker. pg_read_binary_file needs a superuser, as the test server's is.
// The system catalogs are not read: pg_statistic keeps sampled values of
// erased rows as dead tuples (docs/erasure.md, PostgreSQL).
func pgRelationsHolding(t *testing.T, pgURL, marker string) []string {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT c.oid::regclass::text, pg_relation_filepath(c.oid) FROM pg_class c
		WHERE pg_relation_filepath(c.oid) IS NOT NULL AND c.relkind IN ('r', 't', 'i', 'm')
		AND (c.relnamespace = current_schema()::regnamespace
			OR c.oid IN (SELECT t.reltoastrelid FROM pg_class t WHERE t.relnamespace = current_schema()::regnamespace)
			OR c.oid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid IN
				(SELECT t.reltoastrelid FROM pg_class t WHERE t.relnamespace = current_schema()::regnamespace)))`)
	if err != nil {
		t.Fatal(err)
	}
	type rel struct{ name, path string }
	var rels []rel
	for rows.Next() {
		var r rel
		if err := rows.Scan(&r.name, &r.path); err != nil {
			t.Fatal(err)
		}
		rels = append(rels, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rels {
		var pos int
		err := conn.QueryRow(ctx, "SELECT position($1::bytea IN pg_read_binary_file($2, 0, (pg_stat_file($2)).size))", []byte(marker), r.path).Scan(&pos)
		if err != nil {
			t.Fatalf("read %s (%s): %v", r.name, r.path, err)
		}
		if pos > 0 {
			out = append(out, "pg:"+r.name)
		}
	}
	return out
}

func pgExec(t *testing.T, pgURL, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatal(err)
	}
}

func fileHas(t *testing.T, path, needle string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(needle))
}

// lockedBuffer collects a running server's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is `memgate serve` running in-process on a loopback port.
type served struct {
	t      *testing.T
	url    string
	cancel context.CancelFunc
	done   chan int
	logs   *lockedBuffer
}

func startServe(t *testing.T, dir string, env map[string]string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, logs := &lockedBuffer{}, &lockedBuffer{}
	getenv := func(k string) string {
		if k == "MEMGATE_DATA_DIR" {
			return dir
		}
		return env[k]
	}
	s := &served{t: t, cancel: cancel, done: make(chan int, 1), logs: logs}
	go func() {
		s.done <- cli.Main([]string{"serve", "--addr", "127.0.0.1:0", "--expiry-interval", "1h"},
			cli.Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: logs, Getenv: getenv, Ctx: ctx})
	}()
	t.Cleanup(s.stop)
	re := regexp.MustCompile(`memgate listening on (http://\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			s.url = m[1]
			return s
		}
		select {
		case code := <-s.done:
			t.Fatalf("serve exited %d: %s", code, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", logs.String())
		}
	}
}

// stop shuts the server down gracefully and waits for it to exit.
func (s *served) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	if code := <-s.done; code != 0 {
		s.t.Errorf("serve exited %d: %s", code, s.logs.String())
	}
}

func (s *served) do(method, path, token string, body any, want int, out any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// write stores a belief naming marker in its content and entity, and
// returns the record id.
func (s *served) write(token, marker, entity string, want int) string {
	s.t.Helper()
	var res struct {
		Record struct{ ID string } `json:"record"`
	}
	s.do("POST", "/v1/records", token, map[string]any{"type": "belief", "content": "remember the " + marker + " plan",
		"entities": []string{entity}}, want, &res)
	return res.Record.ID
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcp connects the SDK's Streamable HTTP client to /mcp with token.
func (s *served) mcp(token string) *sdk.ClientSession {
	s.t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}},
		MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "erasure-test", Version: "1"}, nil).Connect(s.t.Context(), tr, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { cs.Close() })
	return cs
}

func (s *served) callTool(cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
	s.t.Helper()
	res, err := cs.CallTool(s.t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		s.t.Fatalf("%s: %v %s", name, err, fmt.Sprint(res))
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out
}

// raw GETs path and returns the body, requiring 200.
func (s *served) raw(method, path, token string) []byte {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("%s %s: %d: %s", method, path, resp.StatusCode, raw)
	}
	return raw
}
