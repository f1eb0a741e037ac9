package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// fuzzServer is a real handler over a fresh database with an operator
// and a standard agent, and a small graph to reach.
func fuzzServer(f *testing.F) (http.Handler, map[bool]string) {
	f.Helper()
	ctx := context.Background()
	svc := oaService(f)
	opTok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		f.Fatal(err)
	}
	op := core.LocalOperator(memory.DefaultWorkspace)
	agent, err := svc.CreateAgent(ctx, op, "fuzzer", memory.Standard)
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range []string{"Alice works on project atlas", "Atlas uses PostgreSQL"} {
		if _, err := svc.Write(ctx, op, core.WriteRequest{Type: "belief", Content: c, Entities: []string{"person:alice", "project:atlas"}}); err != nil {
			f.Fatal(err)
		}
	}
	return New(svc, nil, nil, "test").Handler(), map[bool]string{false: opTok, true: agent.Token}
}

// checkAnswer fails on a 5xx, on a body that is not JSON, and on a 4xx
// that is not the one error envelope or that echoes the input.
func checkAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder, input []byte) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s answered %d: %s", what, rec.Code, rec.Body.Bytes())
	}
	if rec.Code < 400 {
		return
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s answered %d with Content-Type %q: %q", what, rec.Code, ct, rec.Body.Bytes())
	}
	var env map[string]map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || len(env) != 1 || len(env["error"]) != 3 {
		t.Fatalf("%s answered %d without the error envelope: %s", what, rec.Code, rec.Body.Bytes())
	}
	var e struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	raw, _ := json.Marshal(env["error"])
	if err := json.Unmarshal(raw, &e); err != nil || e.Code == "" || e.Message == "" || e.Details == nil {
		t.Fatalf("%s answered %d with an incomplete error: %s", what, rec.Code, rec.Body.Bytes())
	}
	checkNoEcho(t, input, e.Message, e.Details)
}

// graphRoutes are the graph endpoints the fuzzer drives: the method, the
// path (REF stands for the fuzzed reference, path-escaped) and whether
// the body is sent.
var graphRoutes = []struct {
	method, path string
	body         bool
}{
	{"POST", "/v1/graph/nodes", true},
	{"GET", "/v1/graph/nodes", false},
	{"GET", "/v1/graph/nodes/REF", false},
	{"POST", "/v1/graph/nodes/REF/archive", false},
	{"GET", "/v1/graph/nodes/REF/neighbors", false},
	{"GET", "/v1/graph/path", false},
	{"POST", "/v1/graph/edges", true},
	{"DELETE", "/v1/graph/edges/REF", false},
	{"GET", "/v1/graph/health", false},
	{"POST", "/v1/graph/forget_subject", true},
}

// FuzzGraph drives every graph endpoint with arbitrary references, query
// strings and bodies, as an operator and as an agent: never a 5xx, and
// every 4xx in the one error envelope without echoing the input.
func FuzzGraph(f *testing.F) {
	seeds := []struct {
		route      uint8
		ref, query string
		body       string
	}{
		{0, "", "", `{"label":"tool","natural_key":"grep","properties":{"lang":"c"}}`},
		{0, "", "", `{"label":"Tool","natural_key":"has space","properties":[1]}`},
		{0, "", "", `{"label":"tool","natural_key":"x","properties":{"n":1e400}}`},
		{0, "", "", "{\"label\":\"tool\",\"natural_key\":\"\xff\"}"},
		{0, "", "", `{"label":"tool","natural_key":"x","status":"secret-status-value","provenance":7}`},
		{1, "", "label=person&limit=0", ""},
		{1, "", "label=person&limit=100000&cursor=not-a-cursor", ""},
		{1, "", "label=%ff%fe&include_archived=maybe", ""},
		{2, "person:alice", "", ""},
		{2, "nobody:here", "include_archived=1", ""},
		{2, "../../v1/agents", "", ""},
		{3, "project:atlas", "", ""},
		{4, "person:alice", "depth=9&limit=-1&direction=sideways&relation=WORKS_WITH", ""},
		{4, "person:alice", "depth=0", ""},
		{5, "", "from=person:alice&to=project:atlas&max_depth=3", ""},
		{5, "", "from=person:alice", ""},
		{5, "", "from=%00&to=x:y&max_depth=abc", ""},
		{6, "", "", `{"from":"person:alice","to":"project:atlas","relation":"WORKS_WITH","weight":0.5}`},
		{6, "", "", `{"from":"person:alice","to":"project:atlas","relation":"secret-relation-value","valid_from":"yesterday"}`},
		{6, "", "", `{"from":"person:alice","to":"person:alice","relation":"KNOWS","weight":1e999}`},
		{7, "01890000-0000-7000-8000-000000000000", "", ""},
		{7, "not-an-id", "", ""},
		{8, "", "", ""},
		{9, "", "", `{"subject":"person:alice"}`},
		{9, "", "", `{"subject":""}`},
		{9 | 0x80, "", "", `{"subject":"person:alice"}`},
		{0 | 0x80, "", "", `{"label":"tool","natural_key":"agent-made"}`},
	}
	for _, s := range seeds {
		f.Add(s.route, s.ref, s.query, []byte(s.body))
	}
	h, tokens := fuzzServer(f)
	f.Fuzz(func(t *testing.T, route uint8, ref, query string, body []byte) {
		rt := graphRoutes[int(route&0x7f)%len(graphRoutes)]
		path := strings.ReplaceAll(rt.path, "REF", url.PathEscape(ref))
		var rd *bytes.Reader
		if rt.body {
			rd = bytes.NewReader(body)
		} else {
			rd = bytes.NewReader(nil)
		}
		req := httptest.NewRequest(rt.method, "/", rd)
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery = unescapedPath(path), path, query
		req.Header.Set("Authorization", "Bearer "+tokens[route&0x80 != 0])
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		input := body
		if !rt.body {
			input = []byte(ref + query)
		}
		checkAnswer(t, rt.method+" "+rt.path, rec, input)
	})
}

func unescapedPath(p string) string {
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}

// FuzzMCP drives MCP over HTTP (/mcp) with arbitrary JSON-RPC bodies:
// never a 5xx, every 4xx in the one error envelope, and tool errors that
// do not echo what was sent.
func FuzzMCP(f *testing.F) {
	call := func(tool, args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`,
		call("memory_write", `{"type":"belief","content":"fuzzing MCP over HTTP"}`),
		call("memory_write", `{"type":"secret-type-value","content":"x"}`),
		call("memory_write", `{"type":"belief","content":"n","metadata":{"n":1e400}}`),
		call("memory_write", "{\"type\":\"belief\",\"content\":\"bad \xff utf8\"}"),
		call("memory_write", `{"type":"belief","content":"lone \ud800"}`),
		call("memory_query", `{"query":"atlas","limit":0}`),
		call("memory_get", `{"id":"not-an-id"}`),
		call("memory_forget", `{"id":"01890000-0000-7000-8000-000000000000"}`),
		call("create_entities", `{"entities":[{"name":"A","entityType":"t","observations":["o"]}]}`),
		call("create_relations", `{"relations":[{"from":"A","to":"B","relationType":"secret-relation"}]}`),
		call("search_nodes", `{"query":""}`),
		call("read_graph", `{"limit":"many"}`),
		call("open_nodes", `{"names":[1,2,3]}`),
		call("no_such_tool", `{}`),
		call("secret-tool-name", `{}`),
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"secret-params-value"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"`,
		`not json at all, secret-garbage-value`,
		``,
		`null`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(call("memory_write", `{"type":"belief","content":"as an agent"}`)), true)
	h, tokens := fuzzServer(f)
	f.Fuzz(func(t *testing.T, body []byte, asAgent bool) {
		req := httptest.NewRequest("POST", "/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokens[asAgent])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, "POST /mcp", rec, body)
		if rec.Code >= 300 || len(bytes.TrimSpace(rec.Body.Bytes())) == 0 {
			return
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST /mcp answered %d with a body that is not JSON: %q", rec.Code, rec.Body.Bytes())
		}
		// Neither a tool error's text nor a protocol error's message may
		// repeat the request.
		type answer struct {
			Result struct {
				IsError bool `json:"isError"`
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		var answers []answer
		var one answer
		if json.Unmarshal(rec.Body.Bytes(), &one) == nil {
			answers = append(answers, one)
		} else {
			_ = json.Unmarshal(rec.Body.Bytes(), &answers)
		}
		for _, a := range answers {
			texts := []string{a.Error.Message}
			if a.Result.IsError {
				for _, c := range a.Result.Content {
					texts = append(texts, c.Text)
				}
			}
			for _, text := range texts {
				checkNoEcho(t, body, text, nil)
				for _, marker := range []string{"secret-type-value", "secret-relation", "secret-params-value", "secret-tool"} {
					if bytes.Contains(body, []byte(marker)) && strings.Contains(text, marker) {
						t.Fatalf("error echoes a submitted value: %q", text)
					}
				}
			}
		}
	})
}
