package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
)

// Claude's memory tool (type memory_20250818) backed by memgate: an
// application that gives Claude the memory tool forwards each tool_use
// block of it to HandleMemoryToolUse and sends the returned tool_result
// back, and the files live in memgate, versioned, gated and audited.

// MemoryToolDefinition is the tool to list in a Messages API request's
// tools: {"type": "memory_20250818", "name": "memory"}.
var MemoryToolDefinition = map[string]string{"type": "memory_20250818", "name": "memory"}

// MemoryToolName is the name Claude calls the memory tool by.
const MemoryToolName = "memory"

// ToolUse is a tool_use content block of a Messages API response.
type ToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResult is the tool_result content block to send back in the next
// user message. IsError marks a failed command, whose Content says why
// in the reference implementation's words.
type ToolResult struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error,omitempty"`
}

// MemoryToolScope selects whose files the tool works on (all optional).
type MemoryToolScope struct {
	UserID, AgentID, AppID, ProjectID, SessionID string
}

func (s *MemoryToolScope) query() url.Values {
	q := url.Values{}
	if s == nil {
		return q
	}
	for k, v := range map[string]string{"user_id": s.UserID, "agent_id": s.AgentID, "app_id": s.AppID, "project_id": s.ProjectID, "session_id": s.SessionID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// HandleMemoryToolUse runs one memory tool call in memgate (POST
// /v1/memory-tool) and returns the tool_result for it. A command that
// fails (a missing path, a refused write) is a result with IsError set,
// not an error; an error means memgate could not be asked or refused the
// request itself (a bad token, say). scope may be nil.
func (c *Client) HandleMemoryToolUse(ctx context.Context, use ToolUse, scope *MemoryToolScope) (ToolResult, error) {
	if use.Name != MemoryToolName {
		return ToolResult{}, errors.New("memgate: not a memory tool call")
	}
	if use.Type == "" {
		use.Type = "tool_use"
	}
	var res ToolResult
	err := c.do(ctx, http.MethodPost, "/v1/memory-tool", scope.query(), use, &res)
	if err != nil {
		return ToolResult{}, err
	}
	res.Type, res.ToolUseID = "tool_result", use.ID
	return res, nil
}
