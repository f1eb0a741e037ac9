package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Gateway search scopes (SPEC §6).
const (
	ScopeCurrentChat   = "current_chat"    // memories of session "chat:<conversation_id>"
	ScopeResources     = "resources"       // the user's uploaded documents
	ScopeAllUserMemory = "all_user_memory" // everything of the user in this app and project
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// SessionID returns the gateway session id of a chat conversation,
// "chat:<conversationID>", the session the current_chat scope searches.
func SessionID(conversationID string) string { return "chat:" + conversationID }

// GatewayClient speaks the Memory Gateway contract (SPEC §6): the
// end user's credentials travel in each request body, not in a header.
// It is safe for concurrent use and never retries a request.
type GatewayClient struct {
	t *transport
}

// NewGatewayClient returns a gateway client for the server at baseURL.
func NewGatewayClient(baseURL string, opts ...Option) (*GatewayClient, error) {
	t, err := newTransport(baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &GatewayClient{t: t}, nil
}

// SearchRequest is the body of POST /memories/search. Empty optional
// fields are omitted and the server applies its defaults (top_k 8,
// app_id and project_id "default").
type SearchRequest struct {
	UserID         string   `json:"user_id"`
	UserKey        string   `json:"user_key"`
	ConversationID string   `json:"conversation_id,omitempty"`
	Query          string   `json:"query"`
	Scope          []string `json:"scope,omitempty"` // subset of the Scope* constants
	TopK           int      `json:"top_k,omitempty"` // 1..100
	// MinRelevance (0..1, a memgate extension) drops results less
	// relevant than this and makes each result carry its Relevance; 0
	// keeps them all and asks for the contract's answer alone.
	MinRelevance float64 `json:"min_relevance,omitempty"`
	AppID        string  `json:"app_id,omitempty"`
	ProjectID    string  `json:"project_id,omitempty"`
}

// SearchResult is one item of a gateway search answer.
type SearchResult struct {
	ID          string          `json:"id"`
	SessionID   string          `json:"session_id"`
	Text        string          `json:"text"`
	Score       float64         `json:"score"`
	Relevance   float64         `json:"relevance"` // memgate extension: 0..1, comparable across queries; sent only when MinRelevance is set
	SourceScope string          `json:"source_scope"`
	ResourceURI *string         `json:"resource_uri"` // null unless a resource chunk
	Raw         json.RawMessage `json:"raw"`
}

// SearchResponse is the answer to POST /memories/search.
type SearchResponse struct {
	Results []SearchResult `json:"results"`
}

// Message is one conversation message of an add.
type Message struct {
	SenderID  string `json:"sender_id"`
	Role      string `json:"role"`      // RoleUser or RoleAssistant
	Timestamp int64  `json:"timestamp"` // Unix epoch milliseconds, positive
	Content   string `json:"content"`
}

// AddRequest is the body of POST /memories/add.
type AddRequest struct {
	UserID    string    `json:"user_id"`
	UserKey   string    `json:"user_key"`
	SessionID string    `json:"session_id"`
	AppID     string    `json:"app_id,omitempty"`
	ProjectID string    `json:"project_id,omitempty"`
	Messages  []Message `json:"messages"`
}

// FlushRequest is the body of POST /memories/flush.
type FlushRequest struct {
	UserID    string `json:"user_id"`
	UserKey   string `json:"user_key"`
	SessionID string `json:"session_id"`
	AppID     string `json:"app_id,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
}

// FlushResponse is the 202 answer to a flush: the extraction job queued.
type FlushResponse struct {
	JobID  string `json:"job_id"`
	Status string `json:"status"` // "queued"
}

// JobRequest is the body of POST /memories/jobs/get.
type JobRequest struct {
	UserID  string `json:"user_id"`
	UserKey string `json:"user_key"`
	JobID   string `json:"job_id"`
}

// Job is the state of a flush's extraction job.
type Job struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error"` // empty when null
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CreateUserRequest is the body of POST /users. UserID may be empty to
// let the server choose one.
type CreateUserRequest struct {
	UserID string `json:"user_id,omitempty"`
}

// User is a gateway user and its key, as returned once by CreateUser.
type User struct {
	UserID  string `json:"user_id"`
	UserKey string `json:"user_key"`
}

// Search is POST /memories/search. A 200 without a "results" list is an
// error wrapping ErrBadResponse.
func (g *GatewayClient) Search(ctx context.Context, req SearchRequest) (SearchResponse, error) {
	res, _, err := g.search(ctx, req)
	return res, err
}

func (g *GatewayClient) search(ctx context.Context, req SearchRequest) (SearchResponse, int, error) {
	var env struct {
		Results *[]SearchResult `json:"results"`
	}
	status, err := g.t.do(ctx, call{method: http.MethodPost, path: "/memories/search", body: req, secrets: []string{req.UserKey}}, &env)
	if err != nil {
		return SearchResponse{}, status, err
	}
	if env.Results == nil {
		return SearchResponse{}, status, badResponse(http.MethodPost, "/memories/search", status, `"results" is missing`)
	}
	return SearchResponse{Results: *env.Results}, status, nil
}

// Add is POST /memories/add. Any 2xx answer is success; its body is not
// read. Add is never retried here: re-sending is the caller's decision
// (the server treats an identical message as a no-op).
func (g *GatewayClient) Add(ctx context.Context, req AddRequest) error {
	_, err := g.add(ctx, req)
	return err
}

func (g *GatewayClient) add(ctx context.Context, req AddRequest) (int, error) {
	return g.t.do(ctx, call{method: http.MethodPost, path: "/memories/add", body: req, secrets: []string{req.UserKey}}, nil)
}

// Flush is POST /memories/flush: it queues extraction of the session's
// turns added since the last flush. An answer without a job_id is an
// error wrapping ErrBadResponse.
func (g *GatewayClient) Flush(ctx context.Context, req FlushRequest) (FlushResponse, error) {
	res, _, err := g.flush(ctx, req)
	return res, err
}

func (g *GatewayClient) flush(ctx context.Context, req FlushRequest) (FlushResponse, int, error) {
	var res FlushResponse
	status, err := g.t.do(ctx, call{method: http.MethodPost, path: "/memories/flush", body: req, secrets: []string{req.UserKey}}, &res)
	if err != nil {
		return FlushResponse{}, status, err
	}
	if res.JobID == "" {
		return FlushResponse{}, status, badResponse(http.MethodPost, "/memories/flush", status, `"job_id" is missing`)
	}
	return res, status, nil
}

// Job reads a flush job's status: POST /memories/jobs/get.
func (g *GatewayClient) Job(ctx context.Context, req JobRequest) (Job, error) {
	var env struct {
		Job *Job `json:"job"`
	}
	status, err := g.t.do(ctx, call{method: http.MethodPost, path: "/memories/jobs/get", body: req, secrets: []string{req.UserKey}}, &env)
	if err != nil {
		return Job{}, err
	}
	if env.Job == nil || env.Job.ID == "" {
		return Job{}, badResponse(http.MethodPost, "/memories/jobs/get", status, `"job" is missing`)
	}
	return *env.Job, nil
}

// CreateUser creates a gateway user: POST /users with an operator's
// bearer token. The key in the answer is shown once; store it as a
// secret.
func (g *GatewayClient) CreateUser(ctx context.Context, operatorToken string, req CreateUserRequest) (User, error) {
	operatorToken = strings.TrimSpace(operatorToken)
	if operatorToken == "" || !validHeaderValue(operatorToken) {
		return User{}, errors.New("memgate: create user: a valid operator token is required")
	}
	var u User
	status, err := g.t.do(ctx, call{method: http.MethodPost, path: "/users", bearer: operatorToken, body: req, secrets: []string{operatorToken}}, &u)
	if err != nil {
		return User{}, err
	}
	if u.UserID == "" || u.UserKey == "" {
		return User{}, badResponse(http.MethodPost, "/users", status, `"user_id" or "user_key" is missing`)
	}
	return u, nil
}

// Printing or logging a value that holds a user key shows "[redacted]"
// in its place. (JSON encoding, which is how the key travels, is not
// affected.)

const redacted = "[redacted]"

func redact(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// String implements fmt.Stringer with the key redacted.
func (r SearchRequest) String() string {
	type plain SearchRequest
	r.UserKey = redact(r.UserKey)
	return fmt.Sprintf("%+v", plain(r))
}

// GoString implements fmt.GoStringer with the key redacted.
func (r SearchRequest) GoString() string { return r.String() }

// LogValue implements slog.LogValuer with the key redacted.
func (r SearchRequest) LogValue() slog.Value { return slog.StringValue(r.String()) }

// String implements fmt.Stringer with the key redacted.
func (r AddRequest) String() string {
	return fmt.Sprintf("{UserID:%s UserKey:%s SessionID:%s AppID:%s ProjectID:%s Messages:%d}",
		r.UserID, redact(r.UserKey), r.SessionID, r.AppID, r.ProjectID, len(r.Messages))
}

// GoString implements fmt.GoStringer with the key redacted.
func (r AddRequest) GoString() string { return r.String() }

// LogValue implements slog.LogValuer with the key redacted.
func (r AddRequest) LogValue() slog.Value { return slog.StringValue(r.String()) }

// String implements fmt.Stringer with the key redacted.
func (r FlushRequest) String() string {
	type plain FlushRequest
	r.UserKey = redact(r.UserKey)
	return fmt.Sprintf("%+v", plain(r))
}

// GoString implements fmt.GoStringer with the key redacted.
func (r FlushRequest) GoString() string { return r.String() }

// LogValue implements slog.LogValuer with the key redacted.
func (r FlushRequest) LogValue() slog.Value { return slog.StringValue(r.String()) }

// String implements fmt.Stringer with the key redacted.
func (r JobRequest) String() string {
	type plain JobRequest
	r.UserKey = redact(r.UserKey)
	return fmt.Sprintf("%+v", plain(r))
}

// GoString implements fmt.GoStringer with the key redacted.
func (r JobRequest) GoString() string { return r.String() }

// LogValue implements slog.LogValuer with the key redacted.
func (r JobRequest) LogValue() slog.Value { return slog.StringValue(r.String()) }

// String implements fmt.Stringer with the key redacted.
func (u User) String() string {
	return fmt.Sprintf("{UserID:%s UserKey:%s}", u.UserID, redact(u.UserKey))
}

// GoString implements fmt.GoStringer with the key redacted.
func (u User) GoString() string { return u.String() }

// LogValue implements slog.LogValuer with the key redacted.
func (u User) LogValue() slog.Value { return slog.StringValue(u.String()) }
