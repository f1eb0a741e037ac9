package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls memgate's REST v1 API as one principal (an agent or an
// operator) identified by a bearer token. It is safe for concurrent use.
type Client struct {
	t     *transport
	token string
}

// NewClient returns a REST v1 client for the server at baseURL (for
// example "http://127.0.0.1:8080"; a path prefix is kept) that
// authenticates with token. Errors never contain the token or the URL.
func NewClient(baseURL, token string, opts ...Option) (*Client, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, errors.New("memgate: token is required")
	}
	if !validHeaderValue(token) {
		return nil, errors.New("memgate: token contains characters that cannot travel in an HTTP header")
	}
	t, err := newTransport(baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &Client{t: t, token: token}, nil
}

func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	_, err := c.t.do(ctx, call{method: method, path: path, query: q, bearer: c.token, body: in, secrets: []string{c.token}}, out)
	return err
}

func recordPath(id string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", errors.New("memgate: record id is required")
	}
	return "/v1/records/" + url.PathEscape(id), nil
}

// Write proposes a record to the gate: POST /v1/records. The result's
// Decision says what the gate did (accepted, provisional, queued,
// quarantined or duplicate); a rejection is an *Error with status 422 and
// code gate_rejected.
func (c *Client) Write(ctx context.Context, req WriteRequest) (WriteResult, error) {
	var res WriteResult
	err := c.do(ctx, http.MethodPost, "/v1/records", nil, req, &res)
	return res, err
}

// Get reads a record: GET /v1/records/{id}. opts may be nil (the current
// version). The returned record's Citation is set.
func (c *Client) Get(ctx context.Context, id string, opts *GetOptions) (Record, error) {
	p, err := recordPath(id)
	if err != nil {
		return Record{}, err
	}
	q := url.Values{}
	if opts != nil {
		if opts.Version > 0 {
			q.Set("version", strconv.Itoa(opts.Version))
		}
		setTime(q, "known_at", opts.KnownAt)
		if opts.IncludeSensitive {
			q.Set("include_sensitive", "true")
		}
	}
	var rec Record
	err = c.do(ctx, http.MethodGet, p, q, nil, &rec)
	return rec, err
}

// Patch writes version req.ExpectedVersion+1 of a record: PATCH
// /v1/records/{id}. A stale ExpectedVersion is an *Error with status 409
// (see IsConflict) and nothing is written.
func (c *Client) Patch(ctx context.Context, id string, req PatchRequest) (WriteResult, error) {
	p, err := recordPath(id)
	if err != nil {
		return WriteResult{}, err
	}
	if req.ExpectedVersion < 1 {
		return WriteResult{}, errors.New("memgate: patch: expected_version is required")
	}
	var res WriteResult
	err = c.do(ctx, http.MethodPatch, p, nil, req, &res)
	return res, err
}

// Forget forgets a record, keeping a tombstone: DELETE /v1/records/{id}.
// It returns the tombstone; forgetting twice is not an error.
func (c *Client) Forget(ctx context.Context, id string) (Record, error) {
	p, err := recordPath(id)
	if err != nil {
		return Record{}, err
	}
	var env struct {
		Record Record `json:"record"`
	}
	err = c.do(ctx, http.MethodDelete, p, nil, nil, &env)
	return env.Record, err
}

// History returns every version of a record, oldest first: GET
// /v1/records/{id}/history.
func (c *Client) History(ctx context.Context, id string, includeSensitive bool) ([]Record, error) {
	p, err := recordPath(id)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	if includeSensitive {
		q.Set("include_sensitive", "true")
	}
	var env struct {
		Versions *[]Record `json:"versions"`
	}
	if err := c.do(ctx, http.MethodGet, p+"/history", q, nil, &env); err != nil {
		return nil, err
	}
	if env.Versions == nil {
		return nil, badResponse(http.MethodGet, "/v1/records/{id}/history", http.StatusOK, `"versions" is missing`)
	}
	return *env.Versions, nil
}

// List returns one page of records, newest first: GET /v1/records. Pass
// the result's NextCursor as req.Cursor for the next page; Records walks
// every page for you.
func (c *Client) List(ctx context.Context, req ListRequest) (ListResult, error) {
	var res ListResult
	err := c.do(ctx, http.MethodGet, "/v1/records", req.query(), nil, &res)
	return res, err
}

// Records iterates over every record matching req, fetching pages as
// needed. Iteration stops at the first error, which is yielded once.
func (c *Client) Records(ctx context.Context, req ListRequest) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for {
			page, err := c.List(ctx, req)
			if err != nil {
				yield(Record{}, err)
				return
			}
			for _, r := range page.Records {
				if !yield(r, nil) {
					return
				}
			}
			if page.NextCursor == "" || page.NextCursor == req.Cursor {
				return
			}
			req.Cursor = page.NextCursor
		}
	}
}

// Search runs a hybrid search: POST /v1/search.
func (c *Client) Search(ctx context.Context, req RecordSearchRequest) (RecordSearchResponse, error) {
	var res RecordSearchResponse
	if err := c.do(ctx, http.MethodPost, "/v1/search", nil, req, &res); err != nil {
		return res, err
	}
	if res.Results == nil {
		return res, badResponse(http.MethodPost, "/v1/search", http.StatusOK, `"results" is missing`)
	}
	return res, nil
}

// Context assembles the bounded, sectioned context memory holds for a
// task: POST /v1/context.
func (c *Client) Context(ctx context.Context, req ContextRequest) (ContextEnvelope, error) {
	var res ContextEnvelope
	if err := c.do(ctx, http.MethodPost, "/v1/context", nil, req, &res); err != nil {
		return res, err
	}
	if res.Sections == nil {
		return res, badResponse(http.MethodPost, "/v1/context", http.StatusOK, `"sections" is missing`)
	}
	return res, nil
}

// WhoAmI returns the principal the token belongs to: GET /v1/whoami.
func (c *Client) WhoAmI(ctx context.Context) (Principal, error) {
	var p Principal
	err := c.do(ctx, http.MethodGet, "/v1/whoami", nil, nil, &p)
	return p, err
}

func setTime(q url.Values, name string, t *time.Time) {
	if t != nil {
		q.Set(name, t.UTC().Format(time.RFC3339Nano))
	}
}

func (req ListRequest) query() url.Values {
	q := url.Values{}
	if len(req.Types) > 0 {
		q.Set("type", strings.Join(req.Types, ","))
	}
	if len(req.Statuses) > 0 {
		q.Set("status", strings.Join(req.Statuses, ","))
	}
	for name, v := range map[string]string{
		"category": req.Category, "entity": req.Entity, "cursor": req.Cursor,
		"user_id": req.Scope.UserID, "agent_id": req.Scope.AgentID, "app_id": req.Scope.AppID,
		"project_id": req.Scope.ProjectID, "session_id": req.Scope.SessionID,
	} {
		if v != "" {
			q.Set(name, v)
		}
	}
	setTime(q, "as_of", req.AsOf)
	setTime(q, "known_at", req.KnownAt)
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.MinConfidence > 0 {
		q.Set("min_confidence", strconv.FormatFloat(req.MinConfidence, 'g', -1, 64))
	}
	if req.IncludeSensitive {
		q.Set("include_sensitive", "true")
	}
	if req.IncludeInvalidated {
		q.Set("include_invalidated", "true")
	}
	return q
}

// PatchRequest changes a record, producing version ExpectedVersion+1.
// Nil or false fields are left unchanged; at least one change is needed.
type PatchRequest struct {
	// ExpectedVersion is the record's current version (required).
	ExpectedVersion int
	Content         *string
	Category        *string
	// Metadata replaces the metadata; json.RawMessage("null") clears it.
	Metadata json.RawMessage
	// Entities replaces the entity list when non-nil; an empty non-nil
	// slice clears it.
	Entities   []string
	Confidence *float64
	// ValidFrom and ValidUntil set the validity window; the Clear flags
	// send null, which clears the bound.
	ValidFrom, ValidUntil           *time.Time
	ClearValidFrom, ClearValidUntil bool
	Access                          *string
	Classification                  *string
	// Invalidate marks the record as no longer true (sets invalidated_at).
	Invalidate bool
}

// MarshalJSON writes the wire shape, where an absent field is unchanged
// and null clears.
func (p PatchRequest) MarshalJSON() ([]byte, error) {
	w := struct {
		ExpectedVersion int             `json:"expected_version"`
		Content         *string         `json:"content,omitempty"`
		Category        *string         `json:"category,omitempty"`
		Metadata        json.RawMessage `json:"metadata,omitempty"`
		Entities        *[]string       `json:"entities,omitempty"`
		Confidence      *float64        `json:"confidence,omitempty"`
		ValidFrom       json.RawMessage `json:"valid_from,omitempty"`
		ValidUntil      json.RawMessage `json:"valid_until,omitempty"`
		Access          *string         `json:"access,omitempty"`
		Classification  *string         `json:"classification,omitempty"`
		Invalidate      bool            `json:"invalidate,omitempty"`
	}{
		ExpectedVersion: p.ExpectedVersion, Content: p.Content, Category: p.Category,
		Metadata: p.Metadata, Confidence: p.Confidence, Access: p.Access,
		Classification: p.Classification, Invalidate: p.Invalidate,
	}
	if p.Entities != nil {
		w.Entities = &p.Entities
	}
	var err error
	if w.ValidFrom, err = optionalTime(p.ValidFrom, p.ClearValidFrom); err != nil {
		return nil, err
	}
	if w.ValidUntil, err = optionalTime(p.ValidUntil, p.ClearValidUntil); err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

func optionalTime(t *time.Time, clear bool) (json.RawMessage, error) {
	switch {
	case clear:
		return json.RawMessage("null"), nil
	case t != nil:
		return json.Marshal(t.UTC())
	}
	return nil, nil
}
