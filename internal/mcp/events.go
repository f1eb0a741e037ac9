package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

type eventAppendIn struct {
	SessionID string   `json:"session_id" jsonschema:"the session whose log this is"`
	Kind      string   `json:"kind" jsonschema:"action, tool_result, outcome, approval or note"`
	Content   string   `json:"content" jsonschema:"what happened, in a sentence or two"`
	Outcome   string   `json:"outcome,omitempty" jsonschema:"success or failure; required for kind outcome"`
	Tool      string   `json:"tool,omitempty" jsonschema:"the tool, for a tool_result"`
	Entities  []string `json:"entities,omitempty" jsonschema:"label:key subjects the event is about"`
}

type eventAppendOut struct {
	Decision string    `json:"decision"`
	Record   recordOut `json:"record"`
	Citation string    `json:"citation"`
}

type eventListIn struct {
	SessionID string `json:"session_id" jsonschema:"the session"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many events (1-500, default 50)"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

type eventListOut struct {
	Events     []recordOut `json:"events" jsonschema:"newest first"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

func (s *server) addEventTools(srv *sdk.Server) {
	add(srv, &sdk.Tool{
		Name:  "event_append",
		Title: "Log a session event",
		Description: "Append to this session's event log what you just did (action), what a tool returned (tool_result), how a task ended " +
			"(outcome: success or failure), or an approval. The log is append-only. Reported failures are turned into proposed lessons " +
			"for review.",
		InputSchema: schemaFor[eventAppendIn](true, nil),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, handler(s, "event_append", func(ctx context.Context, p memory.Principal, in eventAppendIn) (eventAppendOut, error) {
		res, err := s.svc.AppendEvent(ctx, p, in.SessionID, core.EventRequest{Kind: in.Kind, Content: in.Content,
			Outcome: in.Outcome, Tool: in.Tool, Entities: in.Entities})
		if err != nil {
			return eventAppendOut{}, err
		}
		return eventAppendOut{Decision: res.Decision, Record: viewRecord(res.Record), Citation: res.Citation}, nil
	}))
	add(srv, &sdk.Tool{
		Name:        "event_list",
		Title:       "Read a session's events",
		Description: "Read a session's event log, newest first: what was done, tool results, outcomes. " + untrustedDoc,
		InputSchema: schemaFor[eventListIn](true, nil),
		Annotations: readHints(),
	}, handler(s, "event_list", func(ctx context.Context, p memory.Principal, in eventListIn) (eventListOut, error) {
		res, err := s.svc.ListEvents(ctx, p, in.SessionID, in.Cursor, in.Limit)
		if err != nil {
			return eventListOut{}, err
		}
		out := eventListOut{Events: make([]recordOut, 0, len(res.Records)), NextCursor: res.NextCursor}
		for _, r := range res.Records {
			out.Events = append(out.Events, viewRecord(r))
		}
		return out, nil
	}))
}
