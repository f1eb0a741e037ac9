package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The rest of REST v1 beside records and search: procedures, session
// events, the index, and the operators' routes (agents, approvals, gateway
// users, jobs, audit, decisions). Every failure is an *Error with the
// server's code, as for records.

func pathID(prefix, id, what string) (string, error) {
	if id == "" {
		return "", errors.New("memgate: " + what + " is required")
	}
	return prefix + url.PathEscape(id), nil
}

// Field is the request field a 400 names (details.field), or "".
func (e *Error) Field() string {
	if m, ok := e.Details.(map[string]any); ok {
		if f, ok := m["field"].(string); ok {
			return f
		}
	}
	return ""
}

// OutcomeResult is the skill record after an outcome report, with its
// procedure fields.
type OutcomeResult struct {
	Record    Record          `json:"record"`
	Procedure json.RawMessage `json:"procedure"`
	Citation  string          `json:"citation"`
}

// RecordOutcome reports how following a procedure (a skill record) went,
// 1 success, 0 failure: POST /v1/records/{id}/outcome.
func (c *Client) RecordOutcome(ctx context.Context, id string, outcome float64) (OutcomeResult, error) {
	p, err := recordPath(id)
	if err != nil {
		return OutcomeResult{}, err
	}
	var res OutcomeResult
	err = c.do(ctx, http.MethodPost, p+"/outcome", nil, map[string]float64{"outcome": outcome}, &res)
	return res, err
}

// Restore makes an archived record active again (operators): POST
// /v1/records/{id}/restore.
func (c *Client) Restore(ctx context.Context, id string) (Record, error) {
	p, err := recordPath(id)
	if err != nil {
		return Record{}, err
	}
	var env struct {
		Record Record `json:"record"`
	}
	err = c.do(ctx, http.MethodPost, p+"/restore", nil, nil, &env)
	return env.Record, err
}

// SessionEvent is one entry of a session's append-only log.
type SessionEvent struct {
	Kind     string   `json:"kind"` // action, tool_result, outcome, approval, note
	Content  string   `json:"content"`
	Outcome  *float64 `json:"outcome,omitempty"`
	Tool     string   `json:"tool,omitempty"`
	Entities []string `json:"entities,omitempty"`
}

// AppendEvent appends an event to a session's log: POST
// /v1/sessions/{session_id}/events.
func (c *Client) AppendEvent(ctx context.Context, sessionID string, ev SessionEvent) (WriteResult, error) {
	p, err := pathID("/v1/sessions/", sessionID, "session id")
	if err != nil {
		return WriteResult{}, err
	}
	var res WriteResult
	err = c.do(ctx, http.MethodPost, p+"/events", nil, ev, &res)
	return res, err
}

// ListEvents returns a session's events, newest first: GET
// /v1/sessions/{session_id}/events.
func (c *Client) ListEvents(ctx context.Context, sessionID, cursor string, limit int) (ListResult, error) {
	p, err := pathID("/v1/sessions/", sessionID, "session id")
	if err != nil {
		return ListResult{}, err
	}
	var res ListResult
	err = c.do(ctx, http.MethodGet, p+"/events", pageQuery(cursor, limit), nil, &res)
	return res, err
}

func pageQuery(cursor string, limit int) url.Values {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// IndexStats are the search index's sizes and embedding progress.
type IndexStats struct {
	Docs        int    `json:"docs"`
	Vectors     int    `json:"vectors"`
	VectorIndex string `json:"vector_index"`
	Model       string `json:"model,omitempty"`
	Embedded    int    `json:"embedded"`
	Total       int    `json:"total"`
}

// IndexStatus reports the search index: GET /v1/index.
func (c *Client) IndexStatus(ctx context.Context) (IndexStats, error) {
	var res IndexStats
	err := c.do(ctx, http.MethodGet, "/v1/index", nil, nil, &res)
	return res, err
}

// CreatedPrincipal is a new (or rotated) agent with its token, shown once.
type CreatedPrincipal struct {
	Principal
	Token string `json:"token"`
}

// CreateAgent creates an agent (operators): POST /v1/agents. trust is
// trusted, standard, restricted or read_only ("" for the default).
func (c *Client) CreateAgent(ctx context.Context, name, trust string) (CreatedPrincipal, error) {
	body := map[string]string{"name": name}
	if trust != "" {
		body["trust"] = trust
	}
	var res CreatedPrincipal
	err := c.do(ctx, http.MethodPost, "/v1/agents", nil, body, &res)
	return res, err
}

// ListAgents lists the workspace's agents: GET /v1/agents.
func (c *Client) ListAgents(ctx context.Context) ([]Principal, error) {
	var env struct {
		Agents []Principal `json:"agents"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/agents", nil, nil, &env)
	return env.Agents, err
}

// RevokeAgent revokes an agent's token (by id or name): DELETE
// /v1/agents/{id}.
func (c *Client) RevokeAgent(ctx context.Context, idOrName string) (Principal, error) {
	p, err := pathID("/v1/agents/", idOrName, "agent")
	if err != nil {
		return Principal{}, err
	}
	var env struct {
		Agent Principal `json:"agent"`
	}
	err = c.do(ctx, http.MethodDelete, p, nil, nil, &env)
	return env.Agent, err
}

// RotateAgent gives an agent a new token: POST /v1/agents/{id}/rotate.
func (c *Client) RotateAgent(ctx context.Context, idOrName string) (CreatedPrincipal, error) {
	p, err := pathID("/v1/agents/", idOrName, "agent")
	if err != nil {
		return CreatedPrincipal{}, err
	}
	var res CreatedPrincipal
	err = c.do(ctx, http.MethodPost, p+"/rotate", nil, nil, &res)
	return res, err
}

// Approval is an item of the approval queue with the record it concerns.
type Approval struct {
	ID        string     `json:"id"`
	RecordID  string     `json:"record_id"`
	Kind      string     `json:"kind"`
	Reason    string     `json:"reason"`
	Status    string     `json:"status"` // pending, approved, rejected, expired
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	DecidedAt *time.Time `json:"decided_at"`
	DecidedBy string     `json:"decided_by,omitempty"`
	// DecisionReason is the operator's reason for rejecting the item;
	// erased when the record or a subject it named is forgotten.
	DecisionReason string  `json:"decision_reason,omitempty"`
	Record         Record  `json:"record"`
	ConflictsWith  *Record `json:"conflicts_with,omitempty"`
}

// ApprovalPage is one page of the queue.
type ApprovalPage struct {
	Items      []Approval `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// ListApprovals pages through the queue (operators): GET /v1/approvals.
// status may be "" (pending).
func (c *Client) ListApprovals(ctx context.Context, status, cursor string, limit int) (ApprovalPage, error) {
	q := pageQuery(cursor, limit)
	if status != "" {
		q.Set("status", status)
	}
	var res ApprovalPage
	err := c.do(ctx, http.MethodGet, "/v1/approvals", q, nil, &res)
	return res, err
}

// ApprovalEdit changes a queued record before it is approved.
type ApprovalEdit struct {
	Content        *string   `json:"content,omitempty"`
	Category       *string   `json:"category,omitempty"`
	Entities       *[]string `json:"entities,omitempty"`
	Access         *string   `json:"access,omitempty"`
	Classification *string   `json:"classification,omitempty"`
}

// Approve approves an item, editing it first when edit is non-nil: POST
// /v1/approvals/{id}/approve.
func (c *Client) Approve(ctx context.Context, id string, edit *ApprovalEdit) (Approval, error) {
	p, err := pathID("/v1/approvals/", id, "approval id")
	if err != nil {
		return Approval{}, err
	}
	var body any
	if edit != nil {
		body = edit
	}
	var res Approval
	err = c.do(ctx, http.MethodPost, p+"/approve", nil, body, &res)
	return res, err
}

// Reject rejects an item; its content is erased: POST
// /v1/approvals/{id}/reject.
func (c *Client) Reject(ctx context.Context, id, reason string) (Approval, error) {
	p, err := pathID("/v1/approvals/", id, "approval id")
	if err != nil {
		return Approval{}, err
	}
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	var res Approval
	err = c.do(ctx, http.MethodPost, p+"/reject", nil, body, &res)
	return res, err
}

// GatewayUser is a gateway user as listed (never its key).
type GatewayUser struct {
	UserID    string     `json:"user_id"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// CreateUser creates a gateway user (operators): POST /users. userID may
// be "" to let the server choose; the key is shown once.
func (c *Client) CreateUser(ctx context.Context, userID string) (User, error) {
	var res User
	err := c.do(ctx, http.MethodPost, "/users", nil, CreateUserRequest{UserID: userID}, &res)
	return res, err
}

// ListUsers lists the gateway users: GET /users.
func (c *Client) ListUsers(ctx context.Context) ([]GatewayUser, error) {
	var env struct {
		Users []GatewayUser `json:"users"`
	}
	err := c.do(ctx, http.MethodGet, "/users", nil, nil, &env)
	return env.Users, err
}

// RevokeUser revokes a gateway user's key: DELETE /users/{user_id}.
func (c *Client) RevokeUser(ctx context.Context, userID string) (GatewayUser, error) {
	p, err := pathID("/users/", userID, "user id")
	if err != nil {
		return GatewayUser{}, err
	}
	var res GatewayUser
	err = c.do(ctx, http.MethodDelete, p, nil, nil, &res)
	return res, err
}

// RotateUserKey gives a gateway user a new key: POST
// /users/{user_id}/rotate-key.
func (c *Client) RotateUserKey(ctx context.Context, userID string) (User, error) {
	p, err := pathID("/users/", userID, "user id")
	if err != nil {
		return User{}, err
	}
	var res User
	err = c.do(ctx, http.MethodPost, p+"/rotate-key", nil, nil, &res)
	return res, err
}

// JobView is a durable job's state.
type JobView struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Status    string          `json:"status"`
	Attempts  int             `json:"attempts"`
	LastError string          `json:"last_error,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Job returns any job of the workspace (operators): GET /v1/jobs/{id}.
func (c *Client) Job(ctx context.Context, id string) (JobView, error) {
	p, err := pathID("/v1/jobs/", id, "job id")
	if err != nil {
		return JobView{}, err
	}
	var res JobView
	err = c.do(ctx, http.MethodGet, p, nil, nil, &res)
	return res, err
}

// AuditEntry is one link of the audit chain.
type AuditEntry struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	TS        time.Time       `json:"ts"`
	ActorKind string          `json:"actor_kind"`
	ActorID   string          `json:"actor_id"`
	Event     string          `json:"event"`
	Payload   json.RawMessage `json:"payload"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

// AuditPage is one page of the audit log.
type AuditPage struct {
	Entries   []AuditEntry `json:"entries"`
	NextAfter int64        `json:"next_after,omitempty"`
}

// Audit pages through the audit log after a sequence number (operators):
// GET /v1/audit.
func (c *Client) Audit(ctx context.Context, after int64, limit int) (AuditPage, error) {
	q := pageQuery("", limit)
	if after > 0 {
		q.Set("after", strconv.FormatInt(after, 10))
	}
	var res AuditPage
	err := c.do(ctx, http.MethodGet, "/v1/audit", q, nil, &res)
	return res, err
}

// VerifyReport is the result of checking the audit chain.
type VerifyReport struct {
	Workspace string          `json:"workspace"`
	OK        bool            `json:"ok"`
	Entries   int             `json:"entries"`
	Head      string          `json:"head"`
	Broken    json.RawMessage `json:"broken,omitempty"`
}

// VerifyAudit verifies the workspace's audit chain: GET /v1/audit/verify.
func (c *Client) VerifyAudit(ctx context.Context) (VerifyReport, error) {
	var res VerifyReport
	err := c.do(ctx, http.MethodGet, "/v1/audit/verify", nil, nil, &res)
	return res, err
}

// DecisionQuery filters GET /v1/decisions; empty fields are unset.
type DecisionQuery struct {
	Source, RecordID, Event, Decision, JobID, Cursor string
	Since                                            *time.Time
	Limit                                            int
}

// Decision is one gate or extraction decision with its reason.
type Decision struct {
	Source    string `json:"source"`
	ID        string `json:"id"`
	At        string `json:"at"`
	Event     string `json:"event"`
	Decision  string `json:"decision"`
	Reason    string `json:"reason"`
	ActorKind string `json:"actor_kind,omitempty"`
	ActorID   string `json:"actor_id,omitempty"`
	RecordID  string `json:"record_id,omitempty"`
	Type      string `json:"type,omitempty"`
	Code      string `json:"code,omitempty"`
	Field     string `json:"field,omitempty"`
	JobID     string `json:"job_id,omitempty"`
}

// DecisionPage is one page of decisions.
type DecisionPage struct {
	Decisions  []Decision `json:"decisions"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// Decisions lists gate and extraction decisions (operators): GET
// /v1/decisions.
func (c *Client) Decisions(ctx context.Context, dq DecisionQuery) (DecisionPage, error) {
	q := pageQuery(dq.Cursor, dq.Limit)
	for k, v := range map[string]string{"source": dq.Source, "record_id": dq.RecordID, "event": dq.Event, "decision": dq.Decision, "job_id": dq.JobID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	setTime(q, "since", dq.Since)
	var res DecisionPage
	err := c.do(ctx, http.MethodGet, "/v1/decisions", q, nil, &res)
	return res, err
}
