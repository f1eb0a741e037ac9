package api

import (
	"io"
	"net/http"
	"strconv"

	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

func (s *Server) createRecord(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req core.WriteRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	res, err := s.svc.Write(r.Context(), p, req)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	switch res.Decision {
	case memory.DecisionDuplicate:
		status = http.StatusOK
	case memory.DecisionQueued, memory.DecisionProvisional, memory.DecisionQuarantined:
		status = http.StatusAccepted
	}
	w.Header().Set("Location", "/v1/records/"+res.Record.ID)
	return writeJSON(w, status, res)
}

func (s *Server) listRecords(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	q := r.URL.Query()
	req := core.ListRequest{
		Category: q.Get("category"),
		Entity:   q.Get("entity"),
		Cursor:   q.Get("cursor"),
		Scope: memory.Scope{
			UserID: q.Get("user_id"), AgentID: q.Get("agent_id"), AppID: q.Get("app_id"),
			ProjectID: q.Get("project_id"), SessionID: q.Get("session_id"),
		},
	}
	for _, t := range queryList(r, "type") {
		req.Types = append(req.Types, memory.Type(t))
	}
	for _, st := range queryList(r, "status") {
		req.Statuses = append(req.Statuses, memory.Status(st))
	}
	var err error
	if req.AsOf, err = queryTime(r, "as_of"); err != nil {
		return err
	}
	if req.KnownAt, err = queryTime(r, "known_at"); err != nil {
		return err
	}
	if req.Limit, err = queryPositive(r, "limit"); err != nil {
		return err
	}
	if req.MinConfidence, err = queryFloat(r, "min_confidence"); err != nil {
		return err
	}
	if req.IncludeSensitive, err = queryBool(r, "include_sensitive"); err != nil {
		return err
	}
	if req.IncludeInvalidated, err = queryBool(r, "include_invalidated"); err != nil {
		return err
	}
	res, err := s.svc.List(r.Context(), p, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) getRecord(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var o core.GetOptions
	var err error
	if o.Version, err = queryInt(r, "version"); err != nil {
		return err
	}
	if o.KnownAt, err = queryTime(r, "known_at"); err != nil {
		return err
	}
	if o.IncludeSensitive, err = queryBool(r, "include_sensitive"); err != nil {
		return err
	}
	rec, err := s.svc.Get(r.Context(), p, r.PathValue("id"), o)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, recordView{Record: rec, Citation: rec.Citation()})
}

// recordView adds the citation to a record.
type recordView struct {
	memory.Record
	Citation string `json:"citation"`
}

func (s *Server) patchRecord(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req core.PatchRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	res, err := s.svc.Patch(r.Context(), p, r.PathValue("id"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) forgetRecord(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	rec, err := s.svc.Forget(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"record": rec})
}

func (s *Server) appendEvent(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req core.EventRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	res, err := s.svc.AppendEvent(r.Context(), p, r.PathValue("session_id"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, res)
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	limit, err := queryPositive(r, "limit")
	if err != nil {
		return err
	}
	res, err := s.svc.ListEvents(r.Context(), p, r.PathValue("session_id"), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

type outcomeRequest struct {
	Outcome *float64 `json:"outcome"`
}

func (s *Server) recordOutcome(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req outcomeRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	if req.Outcome == nil {
		return fault.Field("outcome", "is required: 1 success, 0 failure")
	}
	res, err := s.svc.ReportOutcome(r.Context(), p, r.PathValue("id"), *req.Outcome)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) restoreRecord(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	rec, err := s.svc.Restore(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"record": rec})
}

func (s *Server) recordHistory(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	sens, err := queryBool(r, "include_sensitive")
	if err != nil {
		return err
	}
	vs, err := s.svc.History(r.Context(), p, r.PathValue("id"), sens)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"versions": vs})
}

type createAgentRequest struct {
	Name  string       `json:"name"`
	Trust memory.Trust `json:"trust,omitempty"`
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req createAgentRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	a, err := s.svc.CreateAgent(r.Context(), p, req.Name, req.Trust)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, a)
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	as, err := s.svc.ListAgents(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"agents": as})
}

func (s *Server) revokeAgent(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	a, err := s.svc.RevokeAgent(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"agent": a})
}

func (s *Server) rotateAgent(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	a, err := s.svc.RotateAgent(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, a)
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	limit, err := queryPositive(r, "limit")
	if err != nil {
		return err
	}
	page, err := s.svc.ListApprovals(r.Context(), p, memory.ApprovalStatus(r.URL.Query().Get("status")), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var edit core.ApprovalEdit
	present, err := decodeOptional(r, &edit)
	if err != nil {
		return err
	}
	var ep *core.ApprovalEdit
	if present {
		ep = &edit
	}
	item, err := s.svc.Approve(r.Context(), p, r.PathValue("id"), ep)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, item)
}

type rejectRequest struct {
	Reason string `json:"reason,omitempty"`
}

func (s *Server) reject(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req rejectRequest
	if _, err := decodeOptional(r, &req); err != nil {
		return err
	}
	item, err := s.svc.Reject(r.Context(), p, r.PathValue("id"), req.Reason)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, item)
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	limit, err := queryPositive(r, "limit")
	if err != nil {
		return err
	}
	after := int64(0)
	if v := r.URL.Query().Get("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return fault.Field("after", "must be a non-negative integer")
		}
	}
	q := r.URL.Query()
	page, err := s.svc.ListAuditWhere(r.Context(), p, core.AuditQuery{After: after, Limit: limit, Actor: q.Get("actor"), Action: q.Get("action")})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

func (s *Server) listDecisions(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	limit, err := queryPositive(r, "limit")
	if err != nil {
		return err
	}
	since, err := queryTime(r, "since")
	if err != nil {
		return err
	}
	qv := r.URL.Query()
	page, err := s.svc.ListDecisions(r.Context(), p, core.DecisionQuery{Source: qv.Get("source"), RecordID: qv.Get("record_id"),
		Event: qv.Get("event"), Decision: qv.Get("decision"), JobID: qv.Get("job_id"), Since: since, Cursor: qv.Get("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

func (s *Server) verifyAudit(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	rep, err := s.svc.VerifyAudit(r.Context(), p.Workspace)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(openapiJSON)
	return err
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req core.SearchRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	res, err := s.svc.Search(r.Context(), p, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

// assembleContext answers JSON, or the Markdown rendering alone with
// ?format=markdown.
func (s *Server) assembleContext(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "markdown" {
		return fault.Field("format", "must be json or markdown")
	}
	var req contextpack.Request
	if err := Decode(r, &req); err != nil {
		return err
	}
	env, err := s.assembler.Assemble(r.Context(), p, req)
	if err != nil {
		return err
	}
	if format == "markdown" {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		_, err := io.WriteString(w, env.Markdown)
		return err
	}
	return writeJSON(w, http.StatusOK, env)
}

func (s *Server) indexStatus(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	st, err := s.svc.IndexStatus(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}
