package api

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/mem0compat"
	"github.com/memgate/memgate/internal/memory"
)

// The mem0-compatible API (internal/mem0compat, docs/mem0.md): handlers
// decode mem0's request shapes, call the adapter as the principal of the
// "Token <key>" (a memgate token) and encode its answer.

func (s *Server) mem0() *mem0compat.Service { return mem0compat.New(s.svc) }

func (s *Server) mem0Ping(w http.ResponseWriter, _ *http.Request, p memory.Principal) error {
	return writeJSON(w, http.StatusOK, s.mem0().Ping(p))
}

func (s *Server) mem0Add(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req mem0compat.AddRequest
	if err := decodeLenient(r, &req); err != nil {
		return err
	}
	res, err := s.mem0().Add(r.Context(), p, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) mem0Search(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req mem0compat.SearchRequest
	if err := decodeLenient(r, &req); err != nil {
		return err
	}
	res, err := s.mem0().Search(r.Context(), p, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

// mem0Int reads a positive integer query parameter, def when absent.
func mem0Int(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fault.Field(name, "must be an integer")
	}
	return n, nil
}

func (s *Server) mem0List(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req mem0compat.ListRequest
	if _, err := decodeOptionalLenient(r, &req); err != nil {
		return err
	}
	page, err := mem0Int(r, "page", 1)
	if err != nil {
		return err
	}
	size, err := mem0Int(r, "page_size", 100)
	if err != nil {
		return err
	}
	res, err := s.mem0().List(r.Context(), p, req, page, size, r.URL.Path)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) mem0Get(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	m, err := s.mem0().Get(r.Context(), p, r.PathValue("memory_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, m)
}

func (s *Server) mem0Update(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req mem0compat.UpdateRequest
	if err := decodeLenient(r, &req); err != nil {
		return err
	}
	m, err := s.mem0().Update(r.Context(), p, r.PathValue("memory_id"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, m)
}

func (s *Server) mem0Delete(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	res, err := s.mem0().Delete(r.Context(), p, r.PathValue("memory_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) mem0DeleteAll(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	q := r.URL.Query()
	e := mem0compat.Entities{UserID: q.Get("user_id"), AgentID: q.Get("agent_id"), AppID: q.Get("app_id"), RunID: q.Get("run_id")}
	res, err := s.mem0().DeleteAll(r.Context(), p, e)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) mem0History(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	hs, err := s.mem0().History(r.Context(), p, r.PathValue("memory_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, hs)
}

func (s *Server) mem0Event(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	ev, err := s.mem0().Event(r.Context(), p, r.PathValue("event_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, ev)
}

// decodeOptionalLenient decodes a body that may be empty, ignoring
// unknown fields.
func decodeOptionalLenient(r *http.Request, v any) (bool, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return false, decodeError(err, nil, nil, false)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return false, nil
	}
	return true, decodeBytes(raw, v, false)
}
