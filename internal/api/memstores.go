package api

import (
	"net/http"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/memory"
)

// The memory-stores-compatible API (/v1/memory_stores): the field names,
// id prefixes, pagination (data, next_page, page) and 409 error types of
// Anthropic's memory stores API, over memory files. Errors keep memgate's
// one envelope; details.type carries the public API's error type. See
// docs/files.md for what differs.

// queryView reads view (basic or full); def is the endpoint's default.
func queryView(r *http.Request, def bool) (bool, error) {
	switch r.URL.Query().Get("view") {
	case "":
		return def, nil
	case "full":
		return true, nil
	case "basic":
		return false, nil
	}
	return false, fault.Field("view", "must be basic or full").With("type", "invalid_request_error")
}

type storeBody struct {
	Name        *string           `json:"name,omitempty"`
	Description *string           `json:"description,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

func (b storeBody) req() files.StoreRequest {
	return files.StoreRequest{Name: b.Name, Description: b.Description, Metadata: b.Metadata}
}

func (s *Server) createMemoryStore(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var b storeBody
	if err := Decode(r, &b); err != nil {
		return err
	}
	st, err := s.files.CreateStore(r.Context(), p, b.req())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

func (s *Server) listMemoryStores(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	limit, err := queryInt(r, "limit")
	if err != nil {
		return err
	}
	page, err := s.files.ListStores(r.Context(), p, limit, r.URL.Query().Get("page"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

func (s *Server) getMemoryStore(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	st, err := s.files.GetStore(r.Context(), p, r.PathValue("store"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

func (s *Server) updateMemoryStore(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var b storeBody
	if err := Decode(r, &b); err != nil {
		return err
	}
	st, err := s.files.UpdateStore(r.Context(), p, r.PathValue("store"), b.req(), false)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

func (s *Server) archiveMemoryStore(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	st, err := s.files.UpdateStore(r.Context(), p, r.PathValue("store"), files.StoreRequest{}, true)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

func (s *Server) deleteMemoryStore(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	id := r.PathValue("store")
	if err := s.files.DeleteStore(r.Context(), p, id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"id": id, "type": "memory_store_deleted"})
}

type memoryCreateBody struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (s *Server) createStoreMemory(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	full, err := queryView(r, false)
	if err != nil {
		return err
	}
	var b memoryCreateBody
	if err := Decode(r, &b); err != nil {
		return err
	}
	m, res, err := s.files.CreateMemory(r.Context(), p, r.PathValue("store"), b.Path, b.Content, full)
	if err != nil {
		return err
	}
	// A write the gate holds back (approval queue, quarantine) is 202, as
	// for records; the memory exists but is not yet active.
	return writeJSON(w, fileStatus(res.Decision, false), m)
}

func (s *Server) listStoreMemories(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	full, err := queryView(r, false)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	req := files.MemoryListRequest{PathPrefix: q.Get("path_prefix"), Page: q.Get("page"), Full: full}
	if req.Depth, err = queryInt(r, "depth"); err != nil {
		return err
	}
	if req.Limit, err = queryInt(r, "limit"); err != nil {
		return err
	}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		req.Desc = true
	default:
		return fault.Field("order", "must be asc or desc").With("type", "invalid_request_error")
	}
	if ob := q.Get("order_by"); ob != "" && ob != "path" {
		return fault.Field("order_by", "must be path").With("type", "invalid_request_error")
	}
	page, err := s.files.ListMemories(r.Context(), p, r.PathValue("store"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

func (s *Server) getStoreMemory(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	full, err := queryView(r, true)
	if err != nil {
		return err
	}
	m, err := s.files.GetMemory(r.Context(), p, r.PathValue("store"), r.PathValue("memory"), full)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, m)
}

func (s *Server) updateStoreMemory(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	full, err := queryView(r, false)
	if err != nil {
		return err
	}
	var b files.MemoryUpdate
	if err := Decode(r, &b); err != nil {
		return err
	}
	m, err := s.files.UpdateMemory(r.Context(), p, r.PathValue("store"), r.PathValue("memory"), b, full)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, m)
}

func (s *Server) deleteStoreMemory(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	id := r.PathValue("memory")
	if err := s.files.DeleteMemory(r.Context(), p, r.PathValue("store"), id, r.URL.Query().Get("expected_content_sha256")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"id": id, "type": "memory_deleted"})
}

func (s *Server) listMemoryVersions(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	full, err := queryView(r, false)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	req := files.VersionListRequest{MemoryID: q.Get("memory_id"), Operation: q.Get("operation"), Page: q.Get("page"), Full: full,
		APIKeyID: q.Get("api_key_id"), SessionID: q.Get("session_id")}
	if req.Limit, err = queryInt(r, "limit"); err != nil {
		return err
	}
	if req.CreatedGTE, err = queryTime(r, "created_at[gte]"); err != nil {
		return err
	}
	if req.CreatedLTE, err = queryTime(r, "created_at[lte]"); err != nil {
		return err
	}
	page, err := s.files.ListVersions(r.Context(), p, r.PathValue("store"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

func (s *Server) getMemoryVersion(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	full, err := queryView(r, true)
	if err != nil {
		return err
	}
	v, err := s.files.GetVersion(r.Context(), p, r.PathValue("store"), r.PathValue("version"), full)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}

func (s *Server) redactMemoryVersion(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	v, err := s.files.RedactVersion(r.Context(), p, r.PathValue("store"), r.PathValue("version"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, v)
}
