package sdk

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Memory files (docs/files.md): versioned, gated text files addressed by
// path under /memories, the store behind Claude's memory tool.

// File is a memory file at one version.
type File struct {
	ID            string    `json:"id"`
	Path          string    `json:"path"`
	Content       string    `json:"content"`
	ContentSHA256 string    `json:"content_sha256"`
	SizeBytes     int       `json:"size_bytes"`
	Version       int       `json:"version"`
	Pinned        bool      `json:"pinned"`
	Deleted       bool      `json:"deleted,omitempty"`
	Redacted      bool      `json:"redacted,omitempty"`
	Scope         Scope     `json:"scope"`
	Status        string    `json:"status"`
	Access        string    `json:"access"`
	Author        string    `json:"author"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	Citation      string    `json:"citation"`
}

// FileResult is the gate's answer to a file change.
type FileResult struct {
	File       File     `json:"file"`
	Decision   string   `json:"decision"`
	Reason     string   `json:"reason,omitempty"`
	ApprovalID string   `json:"approval_id,omitempty"`
	PIIKinds   []string `json:"pii_kinds,omitempty"`
}

// FileCreateRequest creates a file; Path and Content are required.
type FileCreateRequest struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Scope   *Scope `json:"scope,omitempty"`
	Pinned  bool   `json:"pinned,omitempty"`
	Access  string `json:"access,omitempty"`
}

// FileUpdateRequest changes a file; nil fields are left as they are.
type FileUpdateRequest struct {
	Content               *string `json:"content,omitempty"`
	Pinned                *bool   `json:"pinned,omitempty"`
	Path                  *string `json:"path,omitempty"`
	ExpectedContentSHA256 string  `json:"expected_content_sha256,omitempty"`
}

// FileListRequest selects files: by exact Path, or by PathPrefix.
type FileListRequest struct {
	Path, PathPrefix string
	PinnedOnly       bool
	Scope            Scope
}

func scopeQuery(q url.Values, s Scope) url.Values {
	for k, v := range map[string]string{"user_id": s.UserID, "agent_id": s.AgentID, "app_id": s.AppID, "project_id": s.ProjectID, "session_id": s.SessionID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// CreateFile creates a memory file through the gate: POST /v1/files.
func (c *Client) CreateFile(ctx context.Context, req FileCreateRequest) (FileResult, error) {
	var res FileResult
	err := c.do(ctx, http.MethodPost, "/v1/files", nil, req, &res)
	return res, err
}

// ListFiles lists files by path prefix, or one by exact path: GET
// /v1/files.
func (c *Client) ListFiles(ctx context.Context, req FileListRequest) ([]File, error) {
	q := scopeQuery(url.Values{}, req.Scope)
	if req.Path != "" {
		q.Set("path", req.Path)
	}
	if req.PathPrefix != "" {
		q.Set("path_prefix", req.PathPrefix)
	}
	if req.PinnedOnly {
		q.Set("pinned", "true")
	}
	var env struct {
		Files *[]File `json:"files"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/files", q, nil, &env); err != nil {
		return nil, err
	}
	if env.Files == nil {
		return nil, badResponse(http.MethodGet, "/v1/files", http.StatusOK, `"files" is missing`)
	}
	return *env.Files, nil
}

// GetFile returns a file, or one of its versions (version > 0): GET
// /v1/files/{id}.
func (c *Client) GetFile(ctx context.Context, id string, version int) (File, error) {
	p, err := pathID("/v1/files/", id, "file id")
	if err != nil {
		return File{}, err
	}
	q := url.Values{}
	if version > 0 {
		q.Set("version", strconv.Itoa(version))
	}
	var env struct {
		File File `json:"file"`
	}
	err = c.do(ctx, http.MethodGet, p, q, nil, &env)
	return env.File, err
}

// UpdateFile writes a new version of a file: PATCH /v1/files/{id}.
func (c *Client) UpdateFile(ctx context.Context, id string, req FileUpdateRequest) (FileResult, error) {
	p, err := pathID("/v1/files/", id, "file id")
	if err != nil {
		return FileResult{}, err
	}
	var res FileResult
	err = c.do(ctx, http.MethodPatch, p, nil, req, &res)
	return res, err
}

// DeleteFile deletes a file (its versions stay): DELETE /v1/files/{id}.
// expectedSHA256, when set, must be the current content's hash.
func (c *Client) DeleteFile(ctx context.Context, id, expectedSHA256 string) (FileResult, error) {
	p, err := pathID("/v1/files/", id, "file id")
	if err != nil {
		return FileResult{}, err
	}
	q := url.Values{}
	if expectedSHA256 != "" {
		q.Set("expected_content_sha256", expectedSHA256)
	}
	var res FileResult
	err = c.do(ctx, http.MethodDelete, p, q, nil, &res)
	return res, err
}

// FileHistory returns every version of a file: GET /v1/files/{id}/history.
func (c *Client) FileHistory(ctx context.Context, id string) ([]File, error) {
	p, err := pathID("/v1/files/", id, "file id")
	if err != nil {
		return nil, err
	}
	var env struct {
		Versions []File `json:"versions"`
	}
	err = c.do(ctx, http.MethodGet, p+"/history", nil, nil, &env)
	return env.Versions, err
}

// RedactFileVersion erases a past version's content for good (its hash
// stays): POST /v1/files/{id}/versions/{version}/redact.
func (c *Client) RedactFileVersion(ctx context.Context, id string, version int) (File, error) {
	p, err := pathID("/v1/files/", id, "file id")
	if err != nil {
		return File{}, err
	}
	var env struct {
		File File `json:"file"`
	}
	err = c.do(ctx, http.MethodPost, p+"/versions/"+strconv.Itoa(version)+"/redact", nil, nil, &env)
	return env.File, err
}
