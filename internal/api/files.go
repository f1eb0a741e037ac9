package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/memory"
)

// Memory files (internal/files): REST adapters over files.Service, and
// the Claude memory tool's endpoint.

// queryScope reads the scope keys a file route takes in its query.
func queryScope(r *http.Request) memory.Scope {
	q := r.URL.Query()
	return memory.Scope{UserID: q.Get("user_id"), AgentID: q.Get("agent_id"), AppID: q.Get("app_id"),
		ProjectID: q.Get("project_id"), SessionID: q.Get("session_id")}
}

// fileStatus is a change's HTTP status, as for records.
func fileStatus(decision string, created bool) int {
	switch decision {
	case memory.DecisionQueued, memory.DecisionProvisional, memory.DecisionQuarantined:
		return http.StatusAccepted
	}
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

func (s *Server) createFile(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req files.CreateRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	res, err := s.files.Create(r.Context(), p, req)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/files/"+res.File.ID)
	return writeJSON(w, fileStatus(res.Decision, true), res)
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	pinned, err := queryBool(r, "pinned")
	if err != nil {
		return err
	}
	sc := queryScope(r)
	if path := r.URL.Query().Get("path"); path != "" {
		f, err := s.files.Read(r.Context(), p, sc, path)
		out := []files.File{}
		if err == nil && (!pinned || f.Pinned) {
			out = append(out, f)
		} else if err != nil && fault.CodeOf(err) != fault.NotFound {
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]any{"files": out})
	}
	fs, err := s.files.List(r.Context(), p, files.ListRequest{Prefix: r.URL.Query().Get("path_prefix"), Scope: sc, PinnedOnly: pinned})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"files": fs})
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	v, err := queryInt(r, "version")
	if err != nil {
		return err
	}
	f, err := s.files.ReadID(r.Context(), p, r.PathValue("id"), v)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"file": f})
}

func (s *Server) patchFile(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var req files.UpdateRequest
	if err := Decode(r, &req); err != nil {
		return err
	}
	res, err := s.files.UpdateID(r.Context(), p, r.PathValue("id"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, fileStatus(res.Decision, false), res)
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	res, err := s.files.DeleteID(r.Context(), p, r.PathValue("id"), r.URL.Query().Get("expected_content_sha256"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) fileHistory(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	vs, err := s.files.HistoryID(r.Context(), p, r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"versions": vs})
}

// memoryToolRequest is a memory tool call: a tool_use block (its input
// and id), or the input object itself.
type memoryToolRequest struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// memoryToolResult is the tool_result block to send back to the model.
type memoryToolResult struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

func (s *Server) memoryTool(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var raw json.RawMessage
	if err := Decode(r, &raw); err != nil {
		return err
	}
	var req memoryToolRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return fault.Field("body", "must be a tool_use block or a memory tool input object")
	}
	input := raw
	if req.Type == "tool_use" {
		if req.Name != "" && req.Name != "memory" {
			return fault.Field("name", "must be memory")
		}
		input = req.Input
	}
	res, err := s.files.Tool(r.Context(), p, queryScope(r), input)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, memoryToolResult{Type: "tool_result", ToolUseID: req.ID, Content: res.Content, IsError: res.IsError})
}

func (s *Server) redactFileVersion(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	v, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || v < 1 {
		return fault.Field("version", "must be a positive integer")
	}
	f, err := s.files.Redact(r.Context(), p, r.PathValue("id"), v)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"file": f})
}
