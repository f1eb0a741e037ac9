package api

import (
	"net/http"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// The memory graph over REST (SPEC §8): /v1/graph/...

func (s *Server) upsertNode(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var in core.NodeInput
	if err := Decode(r, &in); err != nil {
		return err
	}
	res, err := s.svc.UpsertNode(r.Context(), p, in)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, res)
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	limit, err := queryPositive(r, "limit")
	if err != nil {
		return err
	}
	arch, err := queryBool(r, "include_archived")
	if err != nil {
		return err
	}
	page, err := s.svc.NodesByLabels(r.Context(), p, queryList(r, "label"), arch, r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

func (s *Server) getNode(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	arch, err := queryBool(r, "include_archived")
	if err != nil {
		return err
	}
	n, err := s.svc.GetNode(r.Context(), p, r.PathValue("ref"), arch)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, n)
}

func (s *Server) archiveNode(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	n, err := s.svc.ArchiveNode(r.Context(), p, r.PathValue("ref"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, n)
}

func (s *Server) neighbors(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	depth, err := queryPositive(r, "depth")
	if err != nil {
		return err
	}
	limit, err := queryPositive(r, "limit")
	if err != nil {
		return err
	}
	arch, err := queryBool(r, "include_archived")
	if err != nil {
		return err
	}
	ns, err := s.svc.Neighbors(r.Context(), p, core.NeighborRequest{Node: r.PathValue("ref"), Depth: depth, Limit: limit,
		Relations: queryList(r, "relation"), Direction: r.URL.Query().Get("direction"), IncludeArchived: arch})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"neighbors": ns})
}

func (s *Server) graphPath(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	q := r.URL.Query()
	depth, err := queryPositive(r, "max_depth")
	if err != nil {
		return err
	}
	if q.Get("from") == "" || q.Get("to") == "" {
		field := "from"
		if q.Get("from") != "" {
			field = "to"
		}
		return fault.Field(field, "is required: a node id or label:key")
	}
	res, err := s.svc.Path(r.Context(), p, q.Get("from"), q.Get("to"), depth, queryList(r, "relation"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) upsertEdge(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var in core.EdgeInput
	if err := Decode(r, &in); err != nil {
		return err
	}
	res, err := s.svc.UpsertEdge(r.Context(), p, in)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return writeJSON(w, status, res)
}

func (s *Server) invalidateEdge(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	e, err := s.svc.InvalidateEdge(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, e)
}

func (s *Server) graphHealth(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	h, err := s.svc.GraphHealthcheck(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, h)
}

// ForgetPreview is a forget_subject preview's answer: the counts the
// erasure would have, marked as a preview (nothing was erased).
type ForgetPreview struct {
	core.ForgetReport
	Preview bool `json:"preview"`
}

type forgetSubjectRequest struct {
	Subject string `json:"subject"`
	// Preview counts what would be erased and erases nothing.
	Preview bool `json:"preview,omitempty"`
}

func (s *Server) forgetSubject(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req forgetSubjectRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	if req.Preview {
		rep, err := s.svc.PreviewForgetSubject(r.Context(), p, req.Subject)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, ForgetPreview{ForgetReport: rep, Preview: true})
	}
	rep, err := s.svc.ForgetSubject(r.Context(), p, req.Subject)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, rep)
}
