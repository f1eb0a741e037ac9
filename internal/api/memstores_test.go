package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
)

type storeMemory struct {
	ID               string  `json:"id"`
	Type             string  `json:"type"`
	MemoryStoreID    string  `json:"memory_store_id"`
	MemoryVersionID  string  `json:"memory_version_id"`
	Path             string  `json:"path"`
	Content          *string `json:"content"`
	ContentSHA256    string  `json:"content_sha256"`
	ContentSizeBytes int     `json:"content_size_bytes"`
}

type memVersion struct {
	ID            string  `json:"id"`
	Type          string  `json:"type"`
	MemoryID      string  `json:"memory_id"`
	Operation     string  `json:"operation"`
	Content       *string `json:"content"`
	ContentSHA256 string  `json:"content_sha256"`
	RedactedAt    *string `json:"redacted_at"`
	CreatedBy     *struct {
		Type string `json:"type"`
	} `json:"created_by"`
}

func TestMemoryStoresAPI(t *testing.T) {
	h := newHarness(t, nil)
	var st struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Name string `json:"name"`
	}
	h.mustDo("POST", "/v1/memory_stores", "std", map[string]any{"name": "notes", "description": "project notes"}, http.StatusOK, &st)
	if !strings.HasPrefix(st.ID, "memstore_") || st.Type != "memory_store" || st.Name != "notes" {
		t.Fatalf("store: %+v", st)
	}
	base := "/v1/memory_stores/" + st.ID
	var m storeMemory
	h.mustDo("POST", base+"/memories", "std", map[string]any{"path": "/prefs.md", "content": "tea"}, http.StatusOK, &m)
	if !strings.HasPrefix(m.ID, "mem_") || m.Type != "memory" || m.Content != nil || m.ContentSHA256 != memory.SHA256Hex("tea") ||
		m.ContentSizeBytes != 3 || m.MemoryStoreID != st.ID || !strings.HasPrefix(m.MemoryVersionID, "memver_") {
		t.Fatalf("create: %+v", m)
	}
	e := h.wantError("POST", base+"/memories", "std", map[string]any{"path": "/prefs.md", "content": "x"}, http.StatusConflict, "conflict")
	if e.Error.Details["type"] != "memory_path_conflict_error" || e.Error.Details["conflicting_memory_id"] != m.ID {
		t.Fatalf("path conflict: %+v", e)
	}
	h.wantError("POST", base+"/memories", "std", map[string]any{"path": "/a/../b", "content": "x"}, http.StatusBadRequest, "invalid_argument")

	// Retrieve defaults to full.
	var got storeMemory
	h.mustDo("GET", base+"/memories/"+m.ID, "std2", nil, http.StatusOK, &got)
	if got.Content == nil || *got.Content != "tea" {
		t.Fatalf("retrieve: %+v", got)
	}
	// Precondition: a stale hash is 409 memory_precondition_failed_error...
	pc := func(sha string) map[string]any {
		return map[string]any{"type": "content_sha256", "content_sha256": sha}
	}
	e = h.wantError("POST", base+"/memories/"+m.ID, "std", map[string]any{"content": "coffee", "precondition": pc(memory.SHA256Hex("stale"))}, http.StatusConflict, "conflict")
	if e.Error.Details["type"] != "memory_precondition_failed_error" {
		t.Fatalf("precondition: %+v", e)
	}
	// ...unless the memory already holds what was asked: 200.
	h.mustDo("POST", base+"/memories/"+m.ID, "std", map[string]any{"content": "tea", "precondition": pc(memory.SHA256Hex("stale"))}, http.StatusOK, nil)
	var up storeMemory
	h.mustDo("POST", base+"/memories/"+m.ID, "std", map[string]any{"content": "green tea", "precondition": pc(m.ContentSHA256)}, http.StatusOK, &up)
	if up.ContentSHA256 != memory.SHA256Hex("green tea") || up.MemoryVersionID == m.MemoryVersionID {
		t.Fatalf("update: %+v", up)
	}
	// Concurrent updates with the same precondition: one wins, one is 409.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, _ = h.do("POST", base+"/memories/"+m.ID, "std", map[string]any{"content": fmt.Sprint("v", i), "precondition": pc(up.ContentSHA256)})
		}()
	}
	wg.Wait()
	if !(codes[0] == 200 && codes[1] == 409 || codes[0] == 409 && codes[1] == 200) {
		t.Fatalf("concurrent updates: %v", codes)
	}

	// Listing with depth rolls deeper memories up into prefixes; paging.
	for _, p := range []string{"/projects/a/notes.md", "/projects/b.md", "/projects/c.md", "/zz.md"} {
		h.mustDo("POST", base+"/memories", "std", map[string]any{"path": p, "content": "x " + p}, http.StatusOK, nil)
	}
	type item struct {
		Type string `json:"type"`
		Path string `json:"path"`
	}
	var page struct {
		Data     []item  `json:"data"`
		NextPage *string `json:"next_page"`
	}
	h.mustDo("GET", base+"/memories?path_prefix=/projects/&depth=1", "std", nil, http.StatusOK, &page)
	var got2 []string
	for _, it := range page.Data {
		got2 = append(got2, it.Type+" "+it.Path)
	}
	if strings.Join(got2, ",") != "memory_prefix /projects/a/,memory /projects/b.md,memory /projects/c.md" {
		t.Fatalf("depth listing: %v", got2)
	}
	var paths []string
	q := url.Values{"limit": {"2"}}
	for range 10 {
		h.mustDo("GET", base+"/memories?"+q.Encode(), "std", nil, http.StatusOK, &page)
		for _, it := range page.Data {
			paths = append(paths, it.Path)
		}
		if page.NextPage == nil {
			break
		}
		q.Set("page", *page.NextPage)
	}
	if strings.Join(paths, ",") != "/prefs.md,/projects/a/notes.md,/projects/b.md,/projects/c.md,/zz.md" {
		t.Fatalf("paged listing: %v", paths)
	}

	// Versions, newest first; redact a past one.
	var vs struct {
		Data []memVersion `json:"data"`
	}
	h.mustDo("GET", base+"/memory_versions?memory_id="+m.ID+"&view=full", "std", nil, http.StatusOK, &vs)
	if len(vs.Data) != 3 || vs.Data[2].Operation != "created" || vs.Data[0].Operation != "modified" || vs.Data[2].CreatedBy == nil {
		t.Fatalf("versions: %+v", vs)
	}
	h.wantError("POST", base+"/memory_versions/"+vs.Data[0].ID+"/redact", "std", nil, http.StatusConflict, "conflict")
	var red memVersion
	h.mustDo("POST", base+"/memory_versions/"+vs.Data[2].ID+"/redact", "std", nil, http.StatusOK, &red)
	if red.Content != nil || red.ContentSHA256 != memory.SHA256Hex("tea") || red.RedactedAt == nil {
		t.Fatalf("redact: %+v", red)
	}
	var v1 memVersion
	h.mustDo("GET", base+"/memory_versions/"+vs.Data[2].ID, "std", nil, http.StatusOK, &v1)
	if v1.Content != nil {
		t.Fatalf("redacted version still has content: %+v", v1)
	}

	// Delete with a stale expected hash: 409; then delete.
	var cur storeMemory
	h.mustDo("GET", base+"/memories/"+m.ID, "std", nil, http.StatusOK, &cur)
	e = h.wantError("DELETE", base+"/memories/"+m.ID+"?expected_content_sha256="+memory.SHA256Hex("stale"), "std", nil, http.StatusConflict, "conflict")
	if e.Error.Details["type"] != "memory_precondition_failed_error" {
		t.Fatalf("delete precondition: %+v", e)
	}
	var del struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	h.mustDo("DELETE", base+"/memories/"+m.ID+"?expected_content_sha256="+cur.ContentSHA256, "std", nil, http.StatusOK, &del)
	if del.ID != m.ID || del.Type != "memory_deleted" {
		t.Fatalf("delete: %+v", del)
	}
	h.wantError("GET", base+"/memories/"+m.ID, "std", nil, http.StatusNotFound, "not_found")
	h.mustDo("GET", base+"/memory_versions?memory_id="+m.ID+"&operation=deleted", "std", nil, http.StatusOK, &vs)
	if len(vs.Data) != 1 {
		t.Fatalf("deleted versions: %+v", vs)
	}

	// Governance: read_only may not write; an archived store is read-only.
	h.wantError("POST", base+"/memories", "ro", map[string]any{"path": "/r.md", "content": "x"}, http.StatusForbidden, "permission_denied")
	h.mustDo("POST", base+"/archive", "std", nil, http.StatusOK, nil)
	h.wantError("POST", base+"/memories", "std", map[string]any{"path": "/new.md", "content": "x"}, http.StatusConflict, "conflict")
	h.wantError("GET", "/v1/memory_stores/memstore_nope", "std", nil, http.StatusNotFound, "not_found")
	var stores struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	h.mustDo("GET", "/v1/memory_stores", "std2", nil, http.StatusOK, &stores)
	if len(stores.Data) != 1 || stores.Data[0].ID != st.ID {
		t.Fatalf("stores: %+v", stores)
	}
}

// The version list filters of the public API: created_at[gte|lte]
// (inclusive), api_key_id (the writer, a memgate principal id) and
// session_id (memgate records no session actors, so it matches none).
func TestMemoryVersionFilters(t *testing.T) {
	h := newHarness(t, nil)
	var st struct {
		ID string `json:"id"`
	}
	h.mustDo("POST", "/v1/memory_stores", "op", map[string]any{"name": "shared"}, http.StatusOK, &st)
	base := "/v1/memory_stores/" + st.ID
	var mine, theirs storeMemory
	h.mustDo("POST", base+"/memories", "std", map[string]any{"path": "/mine.md", "content": "one"}, http.StatusOK, &mine)
	for _, c := range []string{"two", "three"} {
		h.clock.Advance(time.Minute)
		h.mustDo("POST", base+"/memories/"+mine.ID, "std", map[string]any{"content": c}, http.StatusOK, nil)
	}
	h.mustDo("POST", base+"/memories", "std2", map[string]any{"path": "/theirs.md", "content": "other"}, http.StatusOK, &theirs)
	type version struct {
		ID        string `json:"id"`
		MemoryID  string `json:"memory_id"`
		CreatedAt string `json:"created_at"`
		CreatedBy struct {
			APIKeyID string `json:"api_key_id"`
		} `json:"created_by"`
	}
	list := func(q url.Values) []version {
		t.Helper()
		var out struct {
			Data []version `json:"data"`
		}
		h.mustDo("GET", base+"/memory_versions?"+q.Encode(), "std", nil, http.StatusOK, &out)
		return out.Data
	}
	all := list(url.Values{"memory_id": {mine.ID}}) // newest first
	if len(all) != 3 {
		t.Fatalf("versions: %+v", all)
	}
	ids := func(vs []version) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.ID)
		}
		return strings.Join(out, ",")
	}
	mid := all[1].CreatedAt
	if got, want := ids(list(url.Values{"memory_id": {mine.ID}, "created_at[gte]": {mid}})), ids(all[:2]); got != want {
		t.Fatalf("created_at[gte]: %s, want %s", got, want)
	}
	if got, want := ids(list(url.Values{"memory_id": {mine.ID}, "created_at[lte]": {mid}})), ids(all[1:]); got != want {
		t.Fatalf("created_at[lte]: %s, want %s", got, want)
	}
	if got, want := ids(list(url.Values{"memory_id": {mine.ID}, "created_at[gte]": {mid}, "created_at[lte]": {mid}})), ids(all[1:2]); got != want {
		t.Fatalf("created_at[gte]=[lte]: %s, want %s", got, want)
	}
	h.wantError("GET", base+"/memory_versions?created_at%5Bgte%5D=yesterday", "std", nil, http.StatusBadRequest, "invalid_argument")

	// api_key_id: the store's versions written by one principal.
	writer := all[0].CreatedBy.APIKeyID
	byWriter := list(url.Values{"api_key_id": {writer}})
	if len(byWriter) != 3 || ids(byWriter) != ids(all) {
		t.Fatalf("api_key_id %s: %+v", writer, byWriter)
	}
	if other := list(url.Values{}); len(other) != 4 {
		t.Fatalf("unfiltered: %d versions, want 4", len(other))
	}
	if got := list(url.Values{"session_id": {"sesn_any"}}); len(got) != 0 {
		t.Fatalf("session_id: %+v", got)
	}
}
