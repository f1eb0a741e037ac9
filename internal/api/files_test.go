package api_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

type fileView struct {
	ID            string `json:"id"`
	Path          string `json:"path"`
	Content       string `json:"content"`
	ContentSHA256 string `json:"content_sha256"`
	Version       int    `json:"version"`
	Pinned        bool   `json:"pinned"`
	Status        string `json:"status"`
	Author        string `json:"author"`
}

type fileResult struct {
	File       fileView `json:"file"`
	Decision   string   `json:"decision"`
	ApprovalID string   `json:"approval_id"`
}

func TestFilesREST(t *testing.T) {
	h := newHarness(t, nil)
	var created fileResult
	h.mustDo("POST", "/v1/files", "std", map[string]any{"path": "/memories/MEMORY.md", "content": "- likes tea\n", "pinned": true}, http.StatusCreated, &created)
	if created.File.Version != 1 || !created.File.Pinned {
		t.Fatalf("create: %+v", created)
	}
	id := created.File.ID
	h.wantError("POST", "/v1/files", "std", map[string]any{"path": "/memories/MEMORY.md", "content": "again"}, http.StatusConflict, "conflict")
	h.wantError("POST", "/v1/files", "std", map[string]any{"path": "/memories/../x", "content": "x"}, http.StatusBadRequest, "invalid_argument")
	h.wantError("POST", "/v1/files", "std", map[string]any{"path": "/memories/a", "content": "x", "bogus": 1}, http.StatusBadRequest, "invalid_argument")

	// Precondition: a stale hash is 409 and writes nothing.
	h.wantError("PATCH", "/v1/files/"+id, "std", map[string]any{"content": "x", "expected_content_sha256": memory.SHA256Hex("stale")}, http.StatusConflict, "conflict")
	var up fileResult
	h.mustDo("PATCH", "/v1/files/"+id, "std", map[string]any{"content": "- likes coffee\n", "expected_content_sha256": created.File.ContentSHA256}, http.StatusOK, &up)
	if up.File.Version != 2 {
		t.Fatalf("update: %+v", up)
	}
	// Concurrent updates from version 2: one wins, one is 409.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, _ = h.do("PATCH", "/v1/files/"+id, "std", map[string]any{"content": []string{"a\n", "b\n"}[i], "expected_content_sha256": up.File.ContentSHA256})
		}()
	}
	wg.Wait()
	if !(codes[0] == 200 && codes[1] == 409 || codes[0] == 409 && codes[1] == 200) {
		t.Fatalf("concurrent updates: %v", codes)
	}
	var got struct {
		File fileView `json:"file"`
	}
	h.mustDo("GET", "/v1/files/"+id+"?version=1", "std2", nil, http.StatusOK, &got)
	if got.File.Content != "- likes tea\n" {
		t.Fatalf("version 1: %+v", got.File)
	}
	var list struct {
		Files []fileView `json:"files"`
	}
	h.mustDo("GET", "/v1/files?path_prefix=/memories&pinned=true", "std2", nil, http.StatusOK, &list)
	if len(list.Files) != 1 || list.Files[0].ID != id {
		t.Fatalf("list: %+v", list)
	}
	h.mustDo("GET", "/v1/files?path=/memories/MEMORY.md", "std2", nil, http.StatusOK, &list)
	if len(list.Files) != 1 {
		t.Fatalf("list by path: %+v", list)
	}
	// Others may read but not change or delete it; read_only may not write.
	h.wantError("PATCH", "/v1/files/"+id, "std2", map[string]any{"content": "x"}, http.StatusForbidden, "permission_denied")
	h.wantError("POST", "/v1/files", "ro", map[string]any{"path": "/memories/ro.md", "content": "x"}, http.StatusForbidden, "permission_denied")
	h.wantError("DELETE", "/v1/files/"+id+"?expected_content_sha256="+memory.SHA256Hex("stale"), "std", nil, http.StatusConflict, "conflict")
	h.mustDo("DELETE", "/v1/files/"+id, "std", nil, http.StatusOK, nil)
	h.wantError("PATCH", "/v1/files/"+id, "std", map[string]any{"content": "x"}, http.StatusNotFound, "not_found")
	var hist struct {
		Versions []fileView `json:"versions"`
	}
	h.mustDo("GET", "/v1/files/"+id+"/history", "std", nil, http.StatusOK, &hist)
	if len(hist.Versions) != 4 {
		t.Fatalf("history: %d versions", len(hist.Versions))
	}

	// A restricted agent's file waits for approval; a secret is quarantined.
	var queued fileResult
	h.mustDo("POST", "/v1/files", "restricted", map[string]any{"path": "/memories/r.md", "content": "restricted note"}, http.StatusAccepted, &queued)
	if queued.Decision != memory.DecisionQueued || queued.ApprovalID == "" {
		t.Fatalf("restricted: %+v", queued)
	}
	var q fileResult
	h.mustDo("POST", "/v1/files", "std", map[string]any{"path": "/memories/s.md", "content": "token sk-ant-api03-" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"}, http.StatusAccepted, &q)
	if q.Decision != memory.DecisionQuarantined {
		t.Fatalf("secret: %+v", q)
	}
}

func TestMemoryToolREST(t *testing.T) {
	h := newHarness(t, nil)
	type result struct {
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
		Content   string `json:"content"`
		IsError   bool   `json:"is_error"`
	}
	var r result
	h.mustDo("POST", "/v1/memory-tool", "std", map[string]any{"type": "tool_use", "id": "toolu_1", "name": "memory",
		"input": map[string]any{"command": "create", "path": "/memories/a.md", "file_text": "hello\n"}}, http.StatusOK, &r)
	if r.Type != "tool_result" || r.ToolUseID != "toolu_1" || r.Content != "File created successfully at: /memories/a.md" || r.IsError {
		t.Fatalf("create: %+v", r)
	}
	h.mustDo("POST", "/v1/memory-tool", "std", map[string]any{"command": "view", "path": "/memories/a.md"}, http.StatusOK, &r)
	if r.Content != "Here's the content of /memories/a.md with line numbers:\n     1\thello\n     2\t" {
		t.Fatalf("view: %q", r.Content)
	}
	h.mustDo("POST", "/v1/memory-tool", "ro", map[string]any{"command": "create", "path": "/memories/b.md", "file_text": "x"}, http.StatusOK, &r)
	if !r.IsError {
		t.Fatalf("read_only create: %+v", r)
	}
	h.wantError("POST", "/v1/memory-tool", "", map[string]any{"command": "view", "path": "/memories"}, http.StatusUnauthorized, "unauthenticated")
}

func TestFilesRedactREST(t *testing.T) {
	h := newHarness(t, nil)
	var c fileResult
	h.mustDo("POST", "/v1/files", "std", map[string]any{"path": "/memories/a.md", "content": "v1 text"}, http.StatusCreated, &c)
	h.mustDo("PATCH", "/v1/files/"+c.File.ID, "std", map[string]any{"content": "v2 text"}, http.StatusOK, nil)
	h.wantError("POST", "/v1/files/"+c.File.ID+"/versions/2/redact", "std", nil, http.StatusConflict, "conflict")
	h.wantError("POST", "/v1/files/"+c.File.ID+"/versions/1/redact", "std2", nil, http.StatusForbidden, "permission_denied")
	h.wantError("POST", "/v1/files/"+c.File.ID+"/versions/x/redact", "std", nil, http.StatusBadRequest, "invalid_argument")
	var got struct {
		File struct {
			Content       string `json:"content"`
			ContentSHA256 string `json:"content_sha256"`
			Redacted      bool   `json:"redacted"`
		} `json:"file"`
	}
	h.mustDo("POST", "/v1/files/"+c.File.ID+"/versions/1/redact", "std", nil, http.StatusOK, &got)
	if !got.File.Redacted || got.File.Content != "" || got.File.ContentSHA256 != c.File.ContentSHA256 {
		t.Fatalf("redact: %+v", got)
	}
	var rep struct {
		OK bool `json:"ok"`
	}
	h.mustDo("GET", "/v1/audit/verify", "op", nil, http.StatusOK, &rep)
	if !rep.OK {
		t.Fatal("audit chain broken after redaction")
	}
}

// A file is found by the words of its path as well as by its text, and
// after a rename by its new path only (REST search).
func TestFilesSearchByPathREST(t *testing.T) {
	h := newHarness(t, nil)
	var a, b fileResult
	h.mustDo("POST", "/v1/files", "std", map[string]any{"path": "/memories/USER.md", "content": "Prefers tea in the morning.\n"}, http.StatusCreated, &a)
	h.mustDo("POST", "/v1/files", "std", map[string]any{"path": "/memories/quokka/notes.md", "content": "Deploys run on Tuesdays.\n"}, http.StatusCreated, &b)
	type hits struct {
		Results []struct {
			Record struct {
				ID string `json:"id"`
			} `json:"record"`
		} `json:"results"`
	}
	ids := func(query string) []string {
		var out hits
		h.mustDo("POST", "/v1/search", "std2", map[string]any{"query": query, "category": "file"}, http.StatusOK, &out)
		var got []string
		for _, r := range out.Results {
			got = append(got, r.Record.ID)
		}
		return got
	}
	has := func(got []string, id string) bool {
		for _, g := range got {
			if g == id {
				return true
			}
		}
		return false
	}
	for q, id := range map[string]string{"USER.md": a.File.ID, "user": a.File.ID, "quokka": b.File.ID, "tea": a.File.ID} {
		if got := ids(q); !has(got, id) {
			t.Fatalf("search %q: %v, want %s", q, got, id)
		}
	}
	// The stored content is unchanged by the indexing.
	var got struct {
		File fileView `json:"file"`
	}
	h.mustDo("GET", "/v1/files/"+a.File.ID, "std", nil, http.StatusOK, &got)
	if got.File.Content != "Prefers tea in the morning.\n" {
		t.Fatalf("content: %q", got.File.Content)
	}
	// A rename keeps the content; the index follows the path.
	h.mustDo("PATCH", "/v1/files/"+b.File.ID, "std", map[string]any{"path": "/memories/wombat/notes.md"}, http.StatusOK, nil)
	if got := ids("wombat"); !has(got, b.File.ID) {
		t.Fatalf("after rename, search wombat: %v", got)
	}
	if got := ids("quokka"); has(got, b.File.ID) {
		t.Fatalf("after rename, search quokka still finds the file: %v", got)
	}
}
