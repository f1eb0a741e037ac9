package api

import (
	"net/http"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// The routes the operator console's screens need beyond the queue
// (docs/console.md): the jobs list of the Health screen and changing an
// agent's trust level. The audit log's actor and action filters are on
// GET /v1/audit (listAudit).

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	limit, err := queryPositive(r, "limit")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := s.svc.ListJobs(r.Context(), p, core.JobQuery{Status: q.Get("state"), Kind: q.Get("kind"), Cursor: q.Get("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

type patchAgentRequest struct {
	Trust memory.Trust `json:"trust"`
}

func (s *Server) patchAgent(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req patchAgentRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	if req.Trust == "" {
		return fault.Field("trust", "is required")
	}
	a, err := s.svc.SetAgentTrust(r.Context(), p, r.PathValue("id"), req.Trust)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"agent": a})
}
