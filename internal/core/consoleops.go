package core

import (
	"context"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Operator reads and changes the console's screens need beyond the
// approval queue: the durable jobs, the audit log filtered on the
// server, and an agent's trust level.

// JobQuery selects jobs for ListJobs.
type JobQuery struct {
	// Status is queued, running, done or dead; "" for every status.
	Status string
	// Kind is a job kind (flush, embed, ...); "" for every kind.
	Kind string
	// Cursor is a NextCursor of an earlier page.
	Cursor string
	Limit  int
}

// JobPage is one page of jobs, newest first.
type JobPage struct {
	Jobs       []JobView `json:"jobs"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

var jobStatuses = []string{string(store.JobQueued), string(store.JobRunning), string(store.JobDone), string(store.JobDead)}

// ListJobs pages through the durable jobs of the operator's workspace,
// newest first.
func (s *Service) ListJobs(ctx context.Context, by memory.Principal, q JobQuery) (JobPage, error) {
	if err := requireOperator(by); err != nil {
		return JobPage{}, err
	}
	if q.Status != "" && !slices.Contains(jobStatuses, q.Status) {
		return JobPage{}, fault.Field("state", "must be one of queued, running, done, dead")
	}
	if len(q.Kind) > 64 {
		return JobPage{}, fault.Field("kind", "at most 64 bytes")
	}
	if q.Cursor != "" && !memory.ValidID(q.Cursor) {
		return JobPage{}, fault.Field("cursor", "is not a cursor returned by this API")
	}
	limit, err := pageSize(q.Limit)
	if err != nil {
		return JobPage{}, err
	}
	js, err := s.store.ListJobs(ctx, by.Workspace, store.JobQuery{Status: store.JobStatus(q.Status), Kind: q.Kind, Before: q.Cursor, Limit: limit + 1})
	if err != nil {
		return JobPage{}, storeErr(err, "jobs")
	}
	page := JobPage{Jobs: []JobView{}}
	if len(js) > limit {
		js = js[:limit]
		page.NextCursor = js[limit-1].ID
	}
	for _, j := range js {
		page.Jobs = append(page.Jobs, viewJob(j))
	}
	return page, nil
}

func pageSize(n int) (int, error) {
	if n == 0 {
		return store.DefaultLimit, nil
	}
	if n < 0 || n > store.MaxLimit {
		return 0, fault.Field("limit", "must be between 1 and 500")
	}
	return n, nil
}

// AuditQuery filters ListAuditWhere.
type AuditQuery struct {
	After int64
	Limit int
	// Actor is an actor id, or an actor kind (operator, agent, user,
	// system) for every actor of that kind.
	Actor string
	// Action is an event name (approval.reject), or a prefix ending in
	// "." (approval.) for every event under it.
	Action string
}

var actorKinds = []string{audit.ActorAgent, audit.ActorUser, audit.ActorOperator, audit.ActorSystem}

// ListAuditWhere pages through the operator's workspace's audit log,
// oldest first, keeping the entries q selects: the filter runs in the
// database, so a page is full whatever the filter.
func (s *Service) ListAuditWhere(ctx context.Context, by memory.Principal, q AuditQuery) (AuditPage, error) {
	if err := requireOperator(by); err != nil {
		return AuditPage{}, err
	}
	if q.After < 0 {
		return AuditPage{}, fault.Field("after", "must be a non-negative integer")
	}
	limit, err := pageSize(q.Limit)
	if err != nil {
		return AuditPage{}, err
	}
	if len(q.Actor) > 128 {
		return AuditPage{}, fault.Field("actor", "at most 128 bytes")
	}
	if len(q.Action) > 128 {
		return AuditPage{}, fault.Field("action", "at most 128 bytes")
	}
	sq := store.AuditQuery{AfterSeq: q.After, Limit: limit}
	if slices.Contains(actorKinds, q.Actor) {
		sq.ActorKind = q.Actor
	} else {
		sq.ActorID = q.Actor
	}
	if strings.HasSuffix(q.Action, ".") {
		sq.EventPrefix = q.Action
	} else {
		sq.Event = q.Action
	}
	es, err := s.store.ListAuditWhere(ctx, by.Workspace, sq)
	if err != nil {
		return AuditPage{}, storeErr(err, "audit log")
	}
	p := AuditPage{Entries: es}
	if len(es) == limit {
		p.NextSeq = es[len(es)-1].Seq
	}
	return p, nil
}

// SetAgentTrust changes an agent's trust level (by id or name). The
// next request the agent makes is gated at the new level: a principal
// is read again on every request. Audited as agent.trust with both
// levels; setting the level it has changes and audits nothing.
func (s *Service) SetAgentTrust(ctx context.Context, by memory.Principal, idOrName string, trust memory.Trust) (memory.Principal, error) {
	if err := requireOperator(by); err != nil {
		return memory.Principal{}, err
	}
	if !slices.Contains(memory.TrustLevels, trust) {
		return memory.Principal{}, fault.Field("trust", "must be one of trusted, standard, restricted, read_only")
	}
	var out memory.Principal
	err := s.tx(ctx, "agent", func(tx store.Tx) error {
		p, err := agentByRef(ctx, tx, by.Workspace, idOrName)
		if err != nil {
			return err
		}
		out = p
		if p.Trust == trust {
			return nil
		}
		if err := tx.SetTrust(ctx, by.Workspace, p.ID, trust); err != nil {
			return err
		}
		out.Trust = trust
		_, err = appendAudit(ctx, tx, by.Workspace, by, "", "agent.trust", s.clock(), map[string]any{
			"principal_id": p.ID, "name": p.Name, "from": string(p.Trust), "to": string(trust)})
		return err
	})
	out.TokenHash = nil
	return out, err
}
