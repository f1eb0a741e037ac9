package sdk

import (
	"context"
	"net/http"
	"strconv"
)

// JobQuery selects jobs for ListJobs; every field is optional.
type JobQuery struct {
	// State is queued, running, done or dead.
	State string
	// Kind is a job kind, e.g. flush.
	Kind   string
	Cursor string
	Limit  int
}

// JobPage is one page of jobs, newest first.
type JobPage struct {
	Jobs       []JobView `json:"jobs"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// ListJobs pages through the workspace's durable jobs, newest first
// (operators): GET /v1/jobs.
func (c *Client) ListJobs(ctx context.Context, q JobQuery) (JobPage, error) {
	v := pageQuery(q.Cursor, q.Limit)
	if q.State != "" {
		v.Set("state", q.State)
	}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	var res JobPage
	err := c.do(ctx, http.MethodGet, "/v1/jobs", v, nil, &res)
	return res, err
}

// AuditQuery filters AuditWhere; every field is optional.
type AuditQuery struct {
	After int64
	Limit int
	// Actor is an actor id, or an actor kind (operator, agent, user,
	// system).
	Actor string
	// Action is an event name (approval.reject), or a prefix ending in
	// a dot (approval.).
	Action string
}

// AuditWhere pages through the audit log keeping the entries q selects;
// the server filters, so every page is full (operators):
// GET /v1/audit?actor=&action=.
func (c *Client) AuditWhere(ctx context.Context, q AuditQuery) (AuditPage, error) {
	v := pageQuery("", q.Limit)
	if q.After > 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	if q.Actor != "" {
		v.Set("actor", q.Actor)
	}
	if q.Action != "" {
		v.Set("action", q.Action)
	}
	var res AuditPage
	err := c.do(ctx, http.MethodGet, "/v1/audit", v, nil, &res)
	return res, err
}

// SetAgentTrust changes an agent's trust level (trusted, standard,
// restricted, read_only); audited (operators): PATCH /v1/agents/{id}.
func (c *Client) SetAgentTrust(ctx context.Context, idOrName, trust string) (Principal, error) {
	p, err := pathID("/v1/agents/", idOrName, "agent")
	if err != nil {
		return Principal{}, err
	}
	var env struct {
		Agent Principal `json:"agent"`
	}
	err = c.do(ctx, http.MethodPatch, p, nil, map[string]string{"trust": trust}, &env)
	return env.Agent, err
}
