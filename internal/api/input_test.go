package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/svctest"
)

// Every error body is {"error":{"code","message","details"}}, details an
// object even when empty: 401, 403, 404, 405, 409, JSON syntax errors.
func TestEveryErrorHasTheOneShape(t *testing.T) {
	h := newHarness(t, nil)
	r := h.write("std", map[string]any{"type": "belief", "content": "shape test"}, 201).Record
	h.wantError("GET", "/v1/whoami", "", nil, 401, "unauthenticated")
	h.wantError("GET", "/v1/agents", "std", nil, 403, "permission_denied")
	h.wantError("GET", "/v1/records/"+memory.NewID(), "std", nil, 404, "not_found")
	h.wantError("GET", "/no/such/route", "std", nil, 404, "not_found")
	h.wantError("PATCH", "/v1/records/"+r.ID, "std", map[string]any{"expected_version": 7, "content": "x"}, 409, "version_conflict")
	e := h.wantError("POST", "/v1/records", "std", `{"type": "belief",`, 400, "invalid_argument")
	if e.Error.Details == nil {
		t.Fatal("syntax error without details")
	}
	h.wantError("POST", "/v1/records", "std", `{"type": "belief", x}`, 400, "invalid_argument")
}

// The bearer scheme is case-insensitive (RFC 9110 §11.1).
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	h := newHarness(t, nil)
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		req, _ := http.NewRequest("GET", h.srv.URL+"/v1/whoami", nil)
		req.Header.Set("Authorization", scheme+" "+h.tokens["std"])
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("scheme %q: %d", scheme, resp.StatusCode)
		}
	}
	// Other schemes and malformed headers still get 401.
	for _, hv := range []string{"Basic " + h.tokens["std"], "Bearer", "Bearer " + h.tokens["std"] + " extra", h.tokens["std"]} {
		req, _ := http.NewRequest("GET", h.srv.URL+"/v1/whoami", nil)
		req.Header.Set("Authorization", hv)
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("Authorization %q: %d", hv[:6], resp.StatusCode)
		}
		checkErrorShape(t, raw)
	}
}

// A path served under other methods answers 405 with an Allow header.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	h := newHarness(t, nil)
	for _, c := range []struct {
		method, path, allow string
	}{
		{"PUT", "/v1/records", "GET, HEAD, POST"},
		{"POST", "/v1/records/" + memory.NewID(), "DELETE, GET, HEAD, PATCH"},
		{"DELETE", "/v1/search", "POST"},
		{"GET", "/memories/add", "POST"},
		{"PUT", "/v1/graph/nodes/person:x/neighbors", "GET, HEAD"},
	} {
		code, hdr, raw := h.do(c.method, c.path, "std", nil)
		if code != http.StatusMethodNotAllowed || hdr.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 %q: %s", c.method, c.path, code, hdr.Get("Allow"), c.allow, raw)
			continue
		}
		checkErrorShape(t, raw)
		var e apiError
		_ = json.Unmarshal(raw, &e)
		if e.Error.Code != "method_not_allowed" {
			t.Errorf("%s %s: code %q", c.method, c.path, e.Error.Code)
		}
	}
	h.wantError("GET", "/v1/nothing/here", "std", nil, 404, "not_found")
}

// limit=0 is refused as its message says; paging at the maximum limit
// goes on to the next page.
func TestListLimits(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.RateLimit = gate.RateLimits{} })
	for _, path := range []string{"/v1/records?limit=0", "/v1/approvals?limit=0", "/v1/audit?limit=0", "/v1/graph/nodes?label=person&limit=0"} {
		e := h.wantError("GET", path, "op", nil, 400, "invalid_argument")
		if e.Error.Details["field"] != "limit" {
			t.Errorf("%s: details %v", path, e.Error.Details)
		}
	}
	e := h.wantError("GET", "/v1/graph/nodes/person:x/neighbors?depth=0", "op", nil, 400, "invalid_argument")
	if e.Error.Details["field"] != "depth" {
		t.Errorf("depth=0: %v", e.Error.Details)
	}

	// 501 records straight into the store (the API would take long).
	ctx := context.Background()
	var ids []string
	err := h.store.Tx(ctx, func(tx store.Tx) error {
		for i := range store.MaxLimit + 1 {
			r := memory.Record{ID: memory.NewID(), Type: memory.Belief, Category: "other", Content: "paged " + strconv.Itoa(i),
				Metadata: json.RawMessage(`{}`), Entities: []string{}, Version: 1, Status: memory.Active, Access: memory.Public,
				Source: memory.Source{Agent: "op", Kind: memory.Observed, Confidence: 0.5, Evidence: []string{}}, Path: memory.PathFast}
			now := h.clock.Now()
			r.ContentSHA256, r.CreatedAt, r.UpdatedAt, r.IngestedAt = memory.SHA256Hex(r.Content), now, now, now
			if err := tx.InsertRecord(ctx, memory.DefaultWorkspace, r); err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Records    []memory.Record `json:"records"`
		NextCursor string          `json:"next_cursor"`
	}
	h.mustDo("GET", "/v1/records?limit=500", "op", nil, 200, &page)
	if len(page.Records) != 500 || page.NextCursor == "" {
		t.Fatalf("first page at the maximum: %d records, next_cursor %q", len(page.Records), page.NextCursor)
	}
	var rest struct {
		Records    []memory.Record `json:"records"`
		NextCursor string          `json:"next_cursor"`
	}
	h.mustDo("GET", "/v1/records?limit=500&cursor="+page.NextCursor, "op", nil, 200, &rest)
	if len(rest.Records) != 1 || rest.NextCursor != "" || rest.Records[0].ID != ids[0] {
		t.Fatalf("second page: %d records, next_cursor %q", len(rest.Records), rest.NextCursor)
	}
}

// Bad input is refused with the field named, never the value.
func TestBadInputNamesTheField(t *testing.T) {
	h := newHarness(t, nil)
	const secret = "sk-secret-value-0123456789"
	for _, c := range []struct {
		name  string
		body  string
		field string
	}{
		{"non-finite metadata number", `{"type":"belief","content":"n","metadata":{"n":1e400}}`, "metadata.n"},
		{"nested non-finite number", `{"type":"belief","content":"n","metadata":{"a":[1,{"b":-1E999}]}}`, "metadata.a[1].b"},
		{"bad valid_from", `{"type":"belief","content":"t","valid_from":"` + secret + `"}`, "valid_from"},
		{"numeric valid_until", `{"type":"belief","content":"t","valid_until":1700000000}`, "valid_until"},
		{"unknown nested field", `{"type":"belief","content":"t","scope":{"tenant":"` + secret + `"}}`, "scope.tenant"},
		{"invalid UTF-8 content", "{\"type\":\"belief\",\"content\":\"bad \xff\xfe " + secret + "\"}", "content"},
		{"lone surrogate content", `{"type":"belief","content":"bad \ud800 ` + secret + `"}`, "content"},
		{"invalid UTF-8 in metadata", "{\"type\":\"belief\",\"content\":\"x\",\"metadata\":{\"k\":\"\xc3\"}}", "metadata.k"},
		{"invalid UTF-8 in scope", "{\"type\":\"belief\",\"content\":\"x\",\"scope\":{\"user_id\":\"\xff\"}}", "scope.user_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := h.wantError("POST", "/v1/records", "std", c.body, 400, "invalid_argument")
			if e.Error.Details["field"] != c.field {
				t.Fatalf("field %v, want %s: %+v", e.Error.Details["field"], c.field, e.Error)
			}
			if raw, _ := json.Marshal(e); bytes.Contains(raw, []byte("secret-value")) {
				t.Fatalf("error echoes the value: %s", raw)
			}
		})
	}
	// Graph properties follow the same rule.
	e := h.wantError("POST", "/v1/graph/nodes", "std", `{"label":"tool","natural_key":"x","properties":{"v":[1e400]}}`, 400, "invalid_argument")
	if e.Error.Details["field"] != "properties.v[0]" {
		t.Fatalf("node properties: %+v", e.Error)
	}
	// Nothing was stored.
	var l struct{ Records []memory.Record }
	h.mustDo("GET", "/v1/records", "op", nil, 200, &l)
	if len(l.Records) != 0 {
		t.Fatalf("refused writes stored %d records", len(l.Records))
	}
}

// The gateway names the member at fault, with its index, and refuses
// seconds for milliseconds, unknown roles and invalid text.
func TestGatewayInputNamesTheField(t *testing.T) {
	h := newHarness(t, nil)
	key := newUser(h, "u1")
	msg := func(i int, m map[string]any) []any {
		out := make([]any, 0, i+1)
		for j := range i {
			out = append(out, map[string]any{"sender_id": "u1", "role": "user", "timestamp": 1780000000000 + j, "content": "fine " + strconv.Itoa(j)})
		}
		return append(out, m)
	}
	add := func(m map[string]any) map[string]any {
		return map[string]any{"user_id": "u1", "user_key": key, "session_id": "chat:c1", "messages": msg(3, m)}
	}
	for _, c := range []struct {
		name  string
		body  any
		field string
	}{
		{"content of the wrong type", add(map[string]any{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": 42}), "messages[3].content"},
		{"timestamp as a string", add(map[string]any{"sender_id": "u1", "role": "user", "timestamp": "yesterday", "content": "x"}), "messages[3].timestamp"},
		{"timestamp in seconds", add(map[string]any{"sender_id": "u1", "role": "user", "timestamp": 1780000000, "content": "x"}), "messages[3].timestamp"},
		{"timestamp past 9999", add(map[string]any{"sender_id": "u1", "role": "user", "timestamp": int64(253402300800000), "content": "x"}), "messages[3].timestamp"},
		{"unknown role", add(map[string]any{"sender_id": "u1", "role": "wizard", "timestamp": 1780000000000, "content": "x"}), "messages[3].role"},
		{"invalid UTF-8", "{\"user_id\":\"u1\",\"user_key\":\"" + key + "\",\"session_id\":\"chat:c1\",\"messages\":[{\"sender_id\":\"u1\",\"role\":\"user\",\"timestamp\":1780000000000,\"content\":\"bad \xff\"}]}", "messages[0].content"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := h.wantError("POST", "/memories/add", "", c.body, 400, "invalid_argument")
			if e.Error.Details["field"] != c.field {
				t.Fatalf("field %v, want %s: %+v", e.Error.Details["field"], c.field, e.Error)
			}
		})
	}
	// Seconds get a hint; milliseconds from 2000 on are fine.
	e := h.wantError("POST", "/memories/add", "", add(map[string]any{"sender_id": "u1", "role": "user", "timestamp": 1780000000, "content": "x"}), 400, "invalid_argument")
	if !strings.Contains(e.Error.Message, "seconds") {
		t.Fatalf("no hint for seconds: %s", e.Error.Message)
	}
	h.mustDo("POST", "/memories/add", "", add(map[string]any{"sender_id": "bot", "role": "assistant", "timestamp": 946684800000, "content": "y2k"}), 200, nil)
}

// limits.min_message_timestamp_ms lowers the floor for old chats.
func TestGatewayMinTimestampKnob(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.Limits.MinMessageTimestampMs = 1 })
	key := newUser(h, "u1")
	h.mustDo("POST", "/memories/add", "", map[string]any{"user_id": "u1", "user_key": key, "session_id": "chat:old",
		"messages": []any{map[string]any{"sender_id": "u1", "role": "user", "timestamp": 86400000, "content": "from 1970"}}}, 200, nil)
	h.wantError("POST", "/memories/add", "", map[string]any{"user_id": "u1", "user_key": key, "session_id": "chat:old",
		"messages": []any{map[string]any{"sender_id": "u1", "role": "user", "timestamp": 0, "content": "zero"}}}, 400, "invalid_argument")
	bad := gate.Default()
	bad.Limits.MinMessageTimestampMs = 0
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "limits.min_message_timestamp_ms") {
		t.Fatalf("policy with min_message_timestamp_ms 0: %v", err)
	}
}

// Forgetting twice answers the same on REST and on the gateway: 200.
func TestForgetTwiceIsIdempotentEverywhere(t *testing.T) {
	h := newHarness(t, nil)
	key := newUser(h, "u1")
	var added core.AddResult
	h.mustDo("POST", "/memories/add", "", map[string]any{"user_id": "u1", "user_key": key, "session_id": "chat:c1",
		"messages": []any{map[string]any{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": "forget me"}}}, 200, &added)
	del := map[string]any{"user_id": "u1", "user_key": key, "memory_id": added.MemoryIDs[0]}
	for range 2 {
		var out struct {
			ID      string `json:"id"`
			Deleted bool   `json:"deleted"`
		}
		h.mustDo("POST", "/memories/delete", "", del, 200, &out)
		if out.ID != added.MemoryIDs[0] || !out.Deleted {
			t.Fatalf("delete: %+v", out)
		}
	}
	// Another user's live memory and unknown ids stay 404.
	key2 := newUser(h, "u2")
	h.wantError("POST", "/memories/delete", "", map[string]any{"user_id": "u2", "user_key": key2, "memory_id": memory.NewID()}, 404, "not_found")
	r := h.write("std", map[string]any{"type": "belief", "content": "forget twice over REST"}, 201).Record
	h.mustDo("DELETE", "/v1/records/"+r.ID, "std", nil, 200, nil)
	h.mustDo("DELETE", "/v1/records/"+r.ID, "std", nil, 200, nil)
}

// An export never fails on stored data: a number no double holds, stored
// before the gate refused it, is exported as its digits in a string.
func TestExportSurvivesNonFiniteStoredNumbers(t *testing.T) {
	h := newHarness(t, nil)
	r := h.write("std", map[string]any{"type": "belief", "content": "holds a huge number", "metadata": map[string]any{"n": 1}}, 201).Record
	ctx := context.Background()
	err := h.store.Tx(ctx, func(tx store.Tx) error {
		head, err := tx.GetRecord(ctx, memory.DefaultWorkspace, r.ID)
		if err != nil {
			return err
		}
		next := head
		next.Version++
		next.Metadata = json.RawMessage(`{"n":1e400,"m":-2E999}`)
		return tx.UpdateRecord(ctx, memory.DefaultWorkspace, next, head.Version)
	})
	if err != nil {
		t.Fatal(err)
	}
	raw := h.mustDo("GET", "/v1/export", "op", nil, 200, nil)
	if !bytes.Contains(raw, []byte(`"n":"1e400"`)) || !bytes.Contains(raw, []byte(`"m":"-2E999"`)) || !bytes.Contains(raw, []byte(`"kind":"end"`)) {
		t.Fatalf("export: %s", raw)
	}
}

// MCP's transport-level errors come in the one error envelope too, and
// never quote the request.
func TestMCPTransportErrorsHaveTheOneShape(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.Limits.MaxRequestBytes = 64 << 10 })
	const secret = "sk-secret-value-0123456789"
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_write","arguments":{"content":"` + strings.Repeat("x", 70<<10) + `"}}}`
	for _, c := range []struct {
		name, method, ctype, accept, body string
		status                            int
		code                              string
	}{
		{"malformed payload", "POST", "application/json", "application/json, text/event-stream", `{"jsonrpc":"2.0","id":1,"method":` + secret, 400, "invalid_argument"},
		{"not JSON-RPC", "POST", "application/json", "application/json, text/event-stream", `{"` + secret + `":1}`, 400, "invalid_argument"},
		{"wrong content type", "POST", "text/plain", "application/json, text/event-stream", `{}`, 415, "invalid_argument"},
		{"wrong accept", "POST", "application/json", "text/html", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 400, "invalid_argument"},
		{"too large", "POST", "application/json", "application/json, text/event-stream", big, 413, "too_large"},
		{"wrong method", "PUT", "application/json", "application/json, text/event-stream", `{}`, 405, "method_not_allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, h.srv.URL+"/mcp", strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+h.tokens["std"])
			req.Header.Set("Content-Type", c.ctype)
			req.Header.Set("Accept", c.accept)
			resp, err := h.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s, want %d: %s", resp.StatusCode, resp.Header.Get("Content-Type"), c.status, raw)
			}
			checkErrorShape(t, raw)
			var e apiError
			_ = json.Unmarshal(raw, &e)
			if e.Error.Code != c.code || bytes.Contains(raw, []byte("secret-value")) {
				t.Fatalf("code %q, want %q (or echoes the body): %s", e.Error.Code, c.code, raw)
			}
		})
	}
}

// fullDisk is a store whose writes fail as on a full disk while full is
// set: the failure is injected, the store is the real SQLite one.
type fullDisk struct {
	store.Store
	full atomic.Bool
}

func (f *fullDisk) Tx(ctx context.Context, fn func(store.Tx) error) error {
	if f.full.Load() {
		return fmt.Errorf("sqlite: database or disk is full: %w", store.ErrUnavailable)
	}
	return f.Store.Tx(ctx, fn)
}

// /readyz turns 503 when writes fail for want of storage, and ready again
// once a probe write commits.
func TestReadyzReflectsFailingWrites(t *testing.T) {
	ctx := context.Background()
	st := svctest.SQLite(t)
	disk := &fullDisk{Store: st}
	svc := core.New(core.Options{Store: disk, Policy: gate.Default()})
	tok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	t.Cleanup(srv.Close)
	get := func(path string, body io.Reader) (int, map[string]any) {
		t.Helper()
		method := "GET"
		if body != nil {
			method = "POST"
		}
		req, _ := http.NewRequest(method, srv.URL+path, body)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	write := func() int {
		code, body := get("/v1/records", strings.NewReader(`{"type":"belief","content":"disk test"}`))
		if code >= 400 {
			raw, _ := json.Marshal(body)
			checkErrorShape(t, raw)
		}
		return code
	}
	if code, body := get("/readyz", nil); code != 200 || body["writes"] != "ok" {
		t.Fatalf("readyz before: %d %v", code, body)
	}
	disk.full.Store(true)
	if code := write(); code != 503 {
		t.Fatalf("write on a full disk: %d", code)
	}
	for range 2 { // stays not-ready while the probe fails
		if code, body := get("/readyz", nil); code != 503 || body["writes"] != "failing" || body["status"] != "cannot_write" {
			t.Fatalf("readyz on a full disk: %d %v", code, body)
		}
	}
	disk.full.Store(false)
	if code, body := get("/readyz", nil); code != 200 || body["writes"] != "ok" || body["status"] != "ready" {
		t.Fatalf("readyz after space came back: %d %v", code, body)
	}
	if code := write(); code != 201 {
		t.Fatalf("write after space came back: %d", code)
	}
}

// JSON-RPC protocol errors over /mcp carry fixed messages: the SDK's own
// quote the params or the tool name sent.
func TestMCPProtocolErrorsDoNotEcho(t *testing.T) {
	h := newHarness(t, nil)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"sk-secret-params-value"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sk-secret-tool-name","arguments":{}}}`,
		`[{"jsonrpc":"2.0","id":6,"method":"tools/call","params":["sk-secret-in-batch"]}]`,
	} {
		req, _ := http.NewRequest("POST", h.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+h.tokens["std"])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := h.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(raw, []byte("sk-secret")) {
			t.Fatalf("answer echoes the request: %d %s", resp.StatusCode, raw)
		}
		if resp.StatusCode == 200 {
			var rpc struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			one := bytes.TrimSpace(raw)
			if len(one) > 0 && one[0] == '[' { // a batch's answers
				one = bytes.TrimSuffix(bytes.TrimPrefix(one, []byte("[")), []byte("]"))
			}
			if err := json.Unmarshal(one, &rpc); err != nil || rpc.Error.Code != -32602 || rpc.Error.Message == "" {
				t.Fatalf("want an invalid-params error: %s", raw)
			}
		} else {
			checkErrorShape(t, raw)
		}
	}
}
