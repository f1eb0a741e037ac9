package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
)

// dataLines keeps an export's node, edge, record and approval lines: the
// workspace's memory, without the principals each harness creates anew.
func dataLines(t *testing.T, export []byte) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(string(export), "\n"), "\n") {
		var l struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		switch l.Kind {
		case "node", "edge", "record", "approval":
			out = append(out, line)
		}
	}
	return out
}

// TestExportImportREST moves a workspace between two servers over REST:
// the export streams canonical NDJSON ending in its trailer, the import
// is atomic and refuses non-empty workspaces, bad lines and oversize
// bodies, and the imported graph and records are served at once.
func TestExportImportREST(t *testing.T) {
	src := newHarness(t, nil)
	for _, k := range []string{"person:alice", "project:apollo", "concept:rockets"} {
		label, key, _ := strings.Cut(k, ":")
		src.node("op", label, key, http.StatusCreated)
	}
	src.edge("person:alice", "project:apollo", "WORKS_WITH")
	src.edge("project:apollo", "concept:rockets", "RELATED_TO")
	src.write("std", map[string]any{"type": "decision", "content": "apollo launches use the quokka checklist",
		"entities": []string{"project:apollo"}}, http.StatusCreated)
	src.write("trusted", map[string]any{"type": "belief", "content": "alice reviews every launch plan",
		"entities": []string{"person:alice"}}, http.StatusCreated)

	status, hdr, export := src.do("GET", "/v1/export", "op", nil)
	if status != http.StatusOK || hdr.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d %q %s", status, hdr.Get("Content-Type"), export)
	}
	lines := strings.Split(strings.TrimSuffix(string(export), "\n"), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], `{"counts":{`) || !strings.Contains(lines[len(lines)-1], `"kind":"end"`) {
		t.Fatalf("export does not end with its trailer: %s", lines[len(lines)-1])
	}
	for _, tok := range src.secrets {
		if bytes.Contains(export, []byte(tok)) {
			t.Fatal("export holds a token")
		}
	}
	src.wantError("GET", "/v1/export", "std", nil, http.StatusForbidden, "permission_denied")
	src.wantError("GET", "/v1/export", "", nil, http.StatusUnauthorized, "unauthenticated")
	wantNeighbors := src.neighborKeys("/v1/graph/nodes/person:alice/neighbors?depth=2")

	// The source is not empty: importing into it would merge two
	// histories, so it is refused and nothing changes.
	src.wantError("POST", "/v1/import", "op", export, http.StatusConflict, "conflict")
	if _, _, again := src.do("GET", "/v1/export", "op", nil); !bytes.Equal(again, export) {
		t.Fatal("a refused import changed the workspace")
	}

	src.wantError("POST", "/v1/import", "std", export, http.StatusForbidden, "permission_denied")

	dst := newHarnessOpts(t, harnessOptions{operatorOnly: true,
		tweak: func(p *gate.Policy) { p.Limits.MaxImportBytes = int64(len(export)) + 1024 }})
	// A bad line imports nothing, and the error names it.
	bad := bytes.Replace(export, []byte(`"relation":"WORKS_WITH"`), []byte(`"relation":"ADMIRES"`), 1)
	if e := dst.wantError("POST", "/v1/import", "op", bad, http.StatusBadRequest, "invalid_argument"); !strings.Contains(e.Error.Message, "line ") {
		t.Fatalf("bad line error does not name the line: %+v", e)
	}
	cut := export[:bytes.LastIndexByte(export[:len(export)-1], '\n')+1]
	if e := dst.wantError("POST", "/v1/import", "op", cut, http.StatusBadRequest, "invalid_argument"); !strings.Contains(e.Error.Message, "end line") {
		t.Fatalf("truncated export: %+v", e)
	}
	if _, _, empty := dst.do("GET", "/v1/export", "op", nil); len(dataLines(t, empty)) != 0 {
		t.Fatalf("a refused import wrote something: %s", empty)
	}
	big := append(bytes.Repeat([]byte(" "), 2048), export...)
	dst.wantError("POST", "/v1/import", "op", big, http.StatusRequestEntityTooLarge, "too_large")

	// Load dst's in-memory graph index before the import, so the
	// neighbors below show the import updating it, not a first load.
	dst.mustDo("GET", "/v1/graph/health", "op", nil, http.StatusOK, nil)
	var st core.ImportStats
	dst.mustDo("POST", "/v1/import", "op", export, http.StatusOK, &st)
	// The file's operator matches this server's by name and is kept; the
	// five agents are imported, without tokens.
	if st.Nodes != 3 || st.Edges != 2 || st.Records != 2 || st.WorkspaceCreated || st.Principals != 5 || st.PrincipalsKept != 1 {
		t.Fatalf("import stats %+v", st)
	}
	_, _, reexport := dst.do("GET", "/v1/export", "op", nil)
	if got, want := dataLines(t, reexport), dataLines(t, export); !slices.Equal(got, want) {
		t.Fatalf("re-export differs:\n got %q\nwant %q", got, want)
	}
	// Served at once, without a restart: the graph index and the search
	// index learned of the imported nodes, edges and records.
	if got := dst.neighborKeys("/v1/graph/nodes/person:alice/neighbors?depth=2"); !slices.Equal(got, wantNeighbors) || len(got) != 2 {
		t.Fatalf("neighbors after import = %v, want %v", got, wantNeighbors)
	}
	var res core.SearchResponse
	dst.mustDo("POST", "/v1/search", "op", map[string]any{"query": "quokka checklist"}, http.StatusOK, &res)
	if len(res.Results) == 0 || !strings.Contains(res.Results[0].Record.Content, "quokka") {
		t.Fatalf("imported record not searchable: %+v", res.Results)
	}
}
