package api_test

// The read paths of the access-matrix property test (accessmatrix_test.go).
// A new read path gets a probe here; graph reads (nodes, get, neighbors,
// path, the MCP graph and compatibility tools, read_graph, search_nodes)
// belong here too, with a want derived from accessRules over the records
// a node or edge comes from.

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// readProbe is one read path. run returns the items (record ids, or for
// other probes any ids) the path shows actor a, and the items the rules
// say it must show. A subset probe (ranked results) may show fewer, never
// others. Add probes for new read paths here — graph nodes, edges and
// paths derived from records belong in this list too, with a want
// computed from accessRules over the records they come from.
type readProbe struct {
	name    string
	applies func(a *actor) bool
	run     func(e *matrixEnv, a *actor) (shown, want map[string]bool)
	subset  bool
}

// readProbes is every read path the matrix checks.
var readProbes = []readProbe{
	perRecord("core get", anyActor, func(e *matrixEnv, a *actor, id string, sens bool) bool {
		_, err := e.svc.Get(e.ctx, a.p, id, core.GetOptions{IncludeSensitive: sens})
		return e.found(a, "core get", err)
	}, headRule),
	perRecord("core get version 1", anyActor, func(e *matrixEnv, a *actor, id string, sens bool) bool {
		_, err := e.svc.Get(e.ctx, a.p, id, core.GetOptions{Version: 1, IncludeSensitive: sens})
		return e.found(a, "core get version", err)
	}, versionRule(1)),
	perRecord("core history (version 1 listed)", anyActor, func(e *matrixEnv, a *actor, id string, sens bool) bool {
		vs, err := e.svc.History(e.ctx, a.p, id, sens)
		return e.found(a, "core history", err) && slices.ContainsFunc(vs, func(v memory.Record) bool { return v.Version == 1 })
	}, versionRule(1)),
	perRecord("REST get", tokenActor, func(e *matrixEnv, a *actor, id string, sens bool) bool {
		return e.restFound(a, "/v1/records/"+id+fmt.Sprintf("?include_sensitive=%t", sens))
	}, headRule),
	perRecord("REST get version 1", tokenActor, func(e *matrixEnv, a *actor, id string, sens bool) bool {
		return e.restFound(a, "/v1/records/"+id+fmt.Sprintf("?version=1&include_sensitive=%t", sens))
	}, versionRule(1)),
	perRecord("REST get known_at version 1", tokenActor, func(e *matrixEnv, a *actor, id string, sens bool) bool {
		at := e.version(id, 1).UpdatedAt.Format(time.RFC3339Nano)
		return e.restFound(a, "/v1/records/"+id+"?known_at="+url.QueryEscape(at)+fmt.Sprintf("&include_sensitive=%t", sens))
	}, versionRule(1)),
	perRecord("REST history", tokenActor, func(e *matrixEnv, a *actor, id string, sens bool) bool {
		return e.restFound(a, "/v1/records/"+id+fmt.Sprintf("/history?include_sensitive=%t", sens))
	}, headRule),
	perRecord("MCP memory_get", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		return e.toolFound(a, "memory_get", map[string]any{"id": id})
	}, noSensitive(headRule)),
	perRecord("MCP memory_history", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		return e.toolFound(a, "memory_history", map[string]any{"id": id})
	}, noSensitive(headRule)),
	perRecord("REST resource source", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		rid := chunkResource(e.head(id))
		return rid != "" && e.restFound(a, "/v1/resources/"+rid+"/source?lines=1-1")
	}, chunkRule(noSensitive(headRule))),
	perRecord("MCP resource_cite", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		rid := chunkResource(e.head(id))
		return rid != "" && e.toolFound(a, "resource_cite", map[string]any{"citation": "res://" + rid + "#x#L1-L1"})
	}, chunkRule(noSensitive(headRule))),
	perRecord("REST file get", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		return e.restFound(a, "/v1/files/"+id)
	}, fileRule(noSensitive(headRule))),
	perRecord("REST file history", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		return e.restFound(a, "/v1/files/"+id+"/history")
	}, fileRule(noSensitive(headRule))),
	perRecord("REST memory-tool view", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		path := filePath(e.head(id))
		if path == "" {
			return false
		}
		code, raw := e.rest(a, "POST", "/v1/memory-tool", map[string]any{"command": "view", "path": path})
		var res struct {
			IsError bool `json:"is_error"`
		}
		if code != http.StatusOK || json.Unmarshal(raw, &res) != nil {
			e.t.Fatalf("seed %d: memory-tool view as %s: %d %s", e.seed, a, code, raw)
		}
		return !res.IsError
	}, unscopedFile(fileRule(liveFileRule(noSensitive(headRule))))),
	perRecord("MCP block_read", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		path := filePath(e.head(id))
		if path == "" {
			return false
		}
		raw, code := e.callTool(a, "block_read", map[string]any{"name": path})
		var res struct {
			Exists bool `json:"exists"`
		}
		if code != http.StatusOK || json.Unmarshal(raw, &res) != nil {
			e.t.Fatalf("seed %d: block_read as %s: %d %s", e.seed, a, code, raw)
		}
		return res.Exists
	}, unscopedFile(fileRule(liveFileRule(noSensitive(headRule))))),
	{name: "REST files list", applies: tokenActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
		var out struct {
			Files []struct {
				ID string `json:"id"`
			} `json:"files"`
		}
		e.restJSON(a, "/v1/files?path_prefix=/memories", &out)
		shown := map[string]bool{}
		for _, f := range out.Files {
			shown[f.ID] = true
		}
		return shown, e.wantSet(a, func(h memory.Record) bool {
			return accessRules.read(a.p, h, false) && isFileRecord(h) && h.InvalidatedAt == nil && h.Scope == memory.Scope{} &&
				slices.Contains([]memory.Status{memory.Active, memory.Provisional, memory.Quarantined}, h.Status)
		})
	}},
	{name: "core list (every status)", applies: anyActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
		sens := e.rng.IntN(2) == 0
		shown := map[string]bool{}
		req := core.ListRequest{Statuses: memory.Statuses, IncludeInvalidated: true, IncludeSensitive: sens, Limit: 7}
		for {
			page, err := e.svc.List(e.ctx, a.p, req)
			if err != nil {
				e.t.Fatalf("seed %d: list as %s: %v", e.seed, a, err)
			}
			for _, r := range page.Records {
				shown[r.ID] = true
			}
			if page.NextCursor == "" {
				break
			}
			req.Cursor = page.NextCursor
		}
		return shown, e.wantSet(a, func(h memory.Record) bool { return accessRules.read(a.p, h, sens) })
	}},
	{name: "REST list (every status)", applies: tokenActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
		sens := e.rng.IntN(2) == 0
		q := url.Values{"include_invalidated": {"true"}, "include_sensitive": {fmt.Sprint(sens)}, "limit": {"500"}}
		for _, s := range memory.Statuses {
			q.Add("status", string(s))
		}
		var out struct {
			Records []memory.Record `json:"records"`
		}
		e.restJSON(a, "/v1/records?"+q.Encode(), &out)
		shown := map[string]bool{}
		for _, r := range out.Records {
			shown[r.ID] = true
		}
		return shown, e.wantSet(a, func(h memory.Record) bool { return accessRules.read(a.p, h, sens) })
	}},
	{name: "core list known_at (versions)", applies: anyActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
		// The state known now, through the versions table.
		now := time.Now().Add(time.Hour)
		shown := map[string]bool{}
		page, err := e.svc.List(e.ctx, a.p, core.ListRequest{Statuses: memory.Statuses, IncludeInvalidated: true, KnownAt: &now, Limit: 500})
		if err != nil {
			e.t.Fatalf("seed %d: list known_at as %s: %v", e.seed, a, err)
		}
		for _, r := range page.Records {
			shown[r.ID] = true
		}
		return shown, e.wantSet(a, func(h memory.Record) bool { return accessRules.read(a.p, h, false) })
	}},
	{name: "session events (core, REST, MCP)", applies: anyActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
		shown := map[string]bool{}
		for cursor := ""; ; {
			page, err := e.svc.ListEvents(e.ctx, a.p, matrixSession, cursor, 7)
			if err != nil {
				e.t.Fatalf("seed %d: events as %s: %v", e.seed, a, err)
			}
			for _, r := range page.Records {
				shown[r.ID] = true
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if a.token != "" {
			var out struct {
				Records []memory.Record `json:"records"`
			}
			e.restJSON(a, "/v1/sessions/"+matrixSession+"/events?limit=500", &out)
			rest := map[string]bool{}
			for _, r := range out.Records {
				rest[r.ID] = true
			}
			raw, code := e.callTool(a, "event_list", map[string]any{"session_id": matrixSession, "limit": 500})
			var tool struct {
				Events []struct {
					ID string `json:"id"`
				} `json:"events"`
			}
			if code != http.StatusOK || json.Unmarshal(raw, &tool) != nil {
				e.t.Fatalf("seed %d: event_list as %s: %d %s", e.seed, a, code, raw)
			}
			mcp := map[string]bool{}
			for _, r := range tool.Events {
				mcp[r.ID] = true
			}
			if !maps.Equal(rest, shown) || !maps.Equal(mcp, shown) {
				e.t.Fatalf("seed %d: events as %s: core %v, REST %v, MCP %v", e.seed, a, shown, rest, mcp)
			}
		}
		return shown, e.wantSet(a, func(h memory.Record) bool {
			_, ev := core.EventOf(h)
			return ev && h.Scope.SessionID == matrixSession && h.Status == memory.Active && h.InvalidatedAt == nil &&
				accessRules.read(a.p, h, false)
		})
	}},
	{name: "search (core, REST, MCP) for each record's own word", applies: anyActor, subset: false,
		run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
			shown, want := map[string]bool{}, map[string]bool{}
			searchable := []memory.Status{memory.Active, memory.Provisional, memory.Superseded, memory.Archived, memory.Quarantined}
			for _, id := range e.ids[a.p.Workspace] {
				h := e.head(id)
				word := recordMarker(h.Content)
				if word == "" || e.rng.IntN(3) != 0 { // a sample keeps the test fast
					continue
				}
				sens := e.rng.IntN(2) == 0
				hits, statuses := e.search(a, core.SearchRequest{Query: word, K: 5, Statuses: searchable, IncludeSensitive: sens})
				if accessRules.read(a.p, h, sens) && h.InvalidatedAt == nil && slices.Contains(statuses, h.Status) {
					want[id] = true
				}
				for _, hid := range hits {
					shown[hid] = true
				}
			}
			return shown, want
		}},
	{name: "context assembly (core, REST, MCP) for each record's own word", applies: anyActor, subset: true,
		run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
			shown := map[string]bool{}
			for _, id := range e.ids[a.p.Workspace] {
				word := recordMarker(e.head(id).Content)
				if word == "" || e.rng.IntN(4) != 0 { // a sample keeps the test fast
					continue
				}
				for _, rid := range e.contextIDs(a, word) {
					shown[rid] = true
				}
			}
			// Context never asks for sensitive records.
			return shown, e.wantSet(a, func(h memory.Record) bool { return accessRules.read(a.p, h, false) })
		}},
}

// contextIDs assembles a context for query through a random path open to
// a and returns the record ids it holds (graph facts name edges, not
// records, and are left out).
func (e *matrixEnv) contextIDs(a *actor, query string) []string {
	e.t.Helper()
	req := contextpack.Request{Query: query, BudgetTokens: 4000}
	var env contextpack.Envelope
	switch {
	case a.token != "" && e.rng.IntN(3) == 0:
		code, raw := e.rest(a, "POST", "/v1/context", req)
		if code != http.StatusOK || json.Unmarshal(raw, &env) != nil {
			e.t.Fatalf("seed %d: REST context as %s: %d %s", e.seed, a, code, raw)
		}
	case a.mcp != nil && e.rng.IntN(2) == 0:
		raw, code := e.callTool(a, "memory_context", map[string]any{"query": query, "budget_tokens": 4000})
		if code != http.StatusOK || json.Unmarshal(raw, &env) != nil {
			e.t.Fatalf("seed %d: memory_context as %s: %d", e.seed, a, code)
		}
	default:
		var err error
		if env, err = contextpack.New(e.svc, nil).Assemble(e.ctx, a.p, req); err != nil {
			e.t.Fatalf("seed %d: context as %s: %v", e.seed, a, err)
		}
	}
	var ids []string
	for _, s := range env.Sections {
		for _, it := range s.Items {
			if it.Kind != contextpack.KindFact && it.ID != "" {
				ids = append(ids, it.ID)
			}
		}
	}
	return ids
}

// matrixSession is the session of the matrix's event records.
const matrixSession = "matrix-session"

func anyActor(*actor) bool     { return true }
func tokenActor(a *actor) bool { return a.token != "" }

// headRule and versionRule pick the rule a per-record probe follows.
type recordRule func(e *matrixEnv, a *actor, id string, sens bool) bool

func headRule(e *matrixEnv, a *actor, id string, sens bool) bool {
	return accessRules.read(a.p, e.head(id), sens)
}

func versionRule(n int) recordRule {
	return func(e *matrixEnv, a *actor, id string, sens bool) bool {
		return accessRules.readVersion(a.p, e.head(id), e.version(id, n), sens)
	}
}

// matrixResourceID is the resource id of the matrix's i-th chunk of ws.
func matrixResourceID(ws string, i int) string {
	return fmt.Sprintf("res_%024x", sha256.Sum256([]byte(fmt.Sprintf("%s/%d", ws, i))))[:28]
}

// chunkResource is a knowledge chunk's resource id, "" for other records.
func chunkResource(h memory.Record) string {
	var m struct {
		RID string `json:"resource_id"`
	}
	if h.Type != memory.Resource || h.Category != core.ChunkCategory || json.Unmarshal(h.Metadata, &m) != nil {
		return ""
	}
	return m.RID
}

// chunkRule is rule for a path that shows the live knowledge chunks
// (not superseded, forgotten or retired) of a resource's current version.
func chunkRule(rule recordRule) recordRule {
	return func(e *matrixEnv, a *actor, id string, sens bool) bool {
		h := e.head(id)
		return chunkResource(h) != "" && h.InvalidatedAt == nil &&
			slices.Contains([]memory.Status{memory.Active, memory.Provisional, memory.Quarantined}, h.Status) && rule(e, a, id, sens)
	}
}

// isFileRecord reports whether a head is a memory file (internal/files).
func isFileRecord(h memory.Record) bool {
	var m struct {
		Path string `json:"file_path"`
	}
	return h.Type == memory.Resource && h.Category == "file" && json.Unmarshal(h.Metadata, &m) == nil && m.Path != ""
}

// filePath is a memory file's path, "" for other records.
func filePath(h memory.Record) string {
	var m struct {
		Path string `json:"file_path"`
	}
	if !isFileRecord(h) || json.Unmarshal(h.Metadata, &m) != nil {
		return ""
	}
	return m.Path
}

// liveFileRule is rule for a path that shows only files that currently
// hold their path (not superseded, forgotten or deleted).
func liveFileRule(rule recordRule) recordRule {
	return func(e *matrixEnv, a *actor, id string, sens bool) bool {
		h := e.head(id)
		return h.InvalidatedAt == nil && slices.Contains([]memory.Status{memory.Active, memory.Provisional, memory.Quarantined}, h.Status) &&
			rule(e, a, id, sens)
	}
}

// fileRule is rule for a path that shows memory files only.
func fileRule(rule recordRule) recordRule {
	return func(e *matrixEnv, a *actor, id string, sens bool) bool {
		return isFileRecord(e.head(id)) && rule(e, a, id, sens)
	}
}

// noSensitive is rule for a path that never asks for sensitive records.
func noSensitive(rule recordRule) recordRule {
	return func(e *matrixEnv, a *actor, id string, _ bool) bool { return rule(e, a, id, false) }
}

// perRecord is a probe that asks about records of the actor's workspace —
// and some of the other workspace, which it must never see —
// choosing include_sensitive at random each time.
func perRecord(name string, applies func(*actor) bool, shows func(e *matrixEnv, a *actor, id string, sens bool) bool, rule recordRule) readProbe {
	return readProbe{name: name, applies: applies, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
		shown, want := map[string]bool{}, map[string]bool{}
		for _, ws := range e.workspaces {
			for i, id := range e.ids[ws] {
				// Half of its own records and a few of the others, at random:
				// every run samples anew, which keeps the test fast.
				if ws != a.p.Workspace && i%8 != 0 || ws == a.p.Workspace && e.rng.IntN(2) == 0 {
					continue
				}
				sens := e.rng.IntN(2) == 0
				if shows(e, a, id, sens) {
					shown[id] = true
				}
				if ws == a.p.Workspace && rule(e, a, id, sens) {
					want[id] = true
				}
			}
		}
		return shown, want
	}}
}

// wantSet applies a rule to the heads of a's workspace.
func (e *matrixEnv) wantSet(a *actor, rule func(head memory.Record) bool) map[string]bool {
	want := map[string]bool{}
	for _, id := range e.ids[a.p.Workspace] {
		if rule(e.head(id)) {
			want[id] = true
		}
	}
	return want
}

func recordMarker(content string) string {
	for _, f := range strings.Fields(content) {
		if strings.HasPrefix(f, "mk") && strings.HasSuffix(f, "zq") {
			return f
		}
	}
	return ""
}

// search runs req through a random search path open to a and returns
// the hit ids and the statuses that path was asked for.
func (e *matrixEnv) search(a *actor, req core.SearchRequest) ([]string, []memory.Status) {
	e.t.Helper()
	var ids []string
	switch {
	case a.token != "" && e.rng.IntN(3) == 0:
		code, raw := e.rest(a, "POST", "/v1/search", req)
		var out core.SearchResponse
		if code != http.StatusOK || json.Unmarshal(raw, &out) != nil {
			e.t.Fatalf("seed %d: REST search as %s: %d %s", e.seed, a, code, raw)
		}
		for _, h := range out.Results {
			ids = append(ids, h.Record.ID)
		}
	case a.mcp != nil && e.rng.IntN(2) == 0:
		// memory_query asks for active and, on request, provisional.
		raw, code := e.callTool(a, "memory_query", map[string]any{"query": req.Query, "k": req.K,
			"include_provisional": true, "include_sensitive": req.IncludeSensitive})
		if code != http.StatusOK {
			e.t.Fatalf("seed %d: memory_query as %s: %d", e.seed, a, code)
		}
		var out struct {
			Results []struct {
				Record struct {
					ID string `json:"id"`
				} `json:"record"`
			} `json:"results"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			e.t.Fatal(err)
		}
		for _, h := range out.Results {
			ids = append(ids, h.Record.ID)
		}
		return ids, []memory.Status{memory.Active, memory.Provisional}
	default:
		resp, err := e.svc.Search(e.ctx, a.p, req)
		if err != nil {
			e.t.Fatalf("seed %d: search as %s: %v", e.seed, a, err)
		}
		for _, h := range resp.Results {
			ids = append(ids, h.Record.ID)
		}
	}
	return ids, req.Statuses
}
