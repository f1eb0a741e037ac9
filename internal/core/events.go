package core

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// The session event log: what an agent did in a session, the tool
// results it saw, the outcomes and approvals, appended in order and read
// back by session. Each event is an episode record of category "event"
// scoped to its session, so it passes the gate (the PII screen
// included), is audited, is read under the same access rules as every
// record and is erased by forgetting like any other; the log is
// append-only: events are never patched.

// EventCategory is the category of event records.
const EventCategory = "event"

// Event kinds.
const (
	EventAction     = "action"
	EventToolResult = "tool_result"
	EventOutcome    = "outcome"
	EventApproval   = "approval"
	EventNote       = "note"
)

// EventKinds lists every event kind.
var EventKinds = []string{EventAction, EventToolResult, EventOutcome, EventApproval, EventNote}

// Event outcomes (kind outcome).
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
)

// EventRequest appends one event to a session's log.
type EventRequest struct {
	Kind    string `json:"kind"`
	Content string `json:"content"`
	// Outcome is success or failure, for kind outcome.
	Outcome string `json:"outcome,omitempty"`
	// Tool names the tool of a tool_result.
	Tool     string        `json:"tool,omitempty"`
	Entities []string      `json:"entities,omitempty"`
	Access   memory.Access `json:"access,omitempty"`
	Scope    memory.Scope  `json:"scope"`
}

// EventMeta is the typed metadata of an event record.
type EventMeta struct {
	Event   string `json:"event"`
	Outcome string `json:"outcome,omitempty"`
	Tool    string `json:"tool,omitempty"`
}

// EventOf returns an event record's typed fields; ok is false for
// records that are not events.
func EventOf(r memory.Record) (EventMeta, bool) {
	if r.Type != memory.Episode || r.Category != EventCategory {
		return EventMeta{}, false
	}
	var m EventMeta
	if json.Unmarshal(r.Metadata, &m) != nil || m.Event == "" {
		return EventMeta{}, false
	}
	return m, true
}

// AppendEvent appends an event to session's log through the gate.
func (s *Service) AppendEvent(ctx context.Context, p memory.Principal, session string, req EventRequest) (WriteResult, error) {
	if strings.TrimSpace(session) == "" {
		return WriteResult{}, fault.Field("session_id", "is required")
	}
	if !slices.Contains(EventKinds, req.Kind) {
		return WriteResult{}, fault.Field("kind", "must be one of "+strings.Join(EventKinds, ", "))
	}
	switch {
	case req.Kind == EventOutcome && req.Outcome != OutcomeSuccess && req.Outcome != OutcomeFailure:
		return WriteResult{}, fault.Field("outcome", "must be success or failure for an outcome event")
	case req.Kind != EventOutcome && req.Outcome != "":
		return WriteResult{}, fault.Field("outcome", "only outcome events have one")
	}
	if len(req.Tool) > 128 {
		return WriteResult{}, fault.Field("tool", "at most 128 bytes")
	}
	meta, err := json.Marshal(EventMeta{Event: req.Kind, Outcome: req.Outcome, Tool: req.Tool})
	if err != nil {
		return WriteResult{}, fault.Wrap(fault.Internal, err, "internal error")
	}
	scope := req.Scope
	scope.SessionID = session
	return s.Write(ctx, p, WriteRequest{Type: memory.Episode, Category: EventCategory, Content: req.Content,
		Metadata: meta, Entities: req.Entities, Scope: scope, Access: req.Access,
		Source: &SourceInput{Kind: memory.Observed}})
}

// ListEvents returns a session's events the principal may read, newest
// first, in pages (cursor: the previous page's next_cursor).
func (s *Service) ListEvents(ctx context.Context, p memory.Principal, session, cursor string, limit int) (ListResult, error) {
	if strings.TrimSpace(session) == "" {
		return ListResult{}, fault.Field("session_id", "is required")
	}
	return s.List(ctx, p, ListRequest{Types: []memory.Type{memory.Episode}, Category: EventCategory,
		Scope: memory.Scope{SessionID: session}, Cursor: cursor, Limit: limit})
}
