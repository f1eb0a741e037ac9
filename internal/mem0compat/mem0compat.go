// Package mem0compat serves the mem0 platform API's memory operations on
// memgate's own records, so an application using the official mem0
// clients switches by changing the client's host. Every operation is a
// call of the core service as the authenticated principal: writes pass
// the gate and the audit log, reads the same access check as REST.
//
// The wire shapes (paths, field names, the "Token <key>" scheme) follow
// the mem0ai npm client (3.x); docs/mem0.md lists what differs.
package mem0compat

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Service adapts mem0 requests to a core service.
type Service struct {
	svc *core.Service
	now func() time.Time
}

// New returns the adapter over svc.
func New(svc *core.Service) *Service { return &Service{svc: svc, now: time.Now} }

// Category is the category of records written with infer=false, so they
// can be told apart from memgate's own writes.
const Category = "mem0"

// maxScan bounds how many records a list or delete-all walks, since
// metadata filters are applied after memgate's own filters.
const maxScan = 10000

// Entities are mem0's entity ids; they map to memgate scope keys
// (run_id is the session).
type Entities struct {
	UserID  string `json:"user_id,omitempty"`
	AgentID string `json:"agent_id,omitempty"`
	AppID   string `json:"app_id,omitempty"`
	RunID   string `json:"run_id,omitempty"`
}

func (e Entities) scope() memory.Scope {
	return memory.Scope{UserID: e.UserID, AgentID: e.AgentID, AppID: e.AppID, SessionID: e.RunID}
}

func (e Entities) empty() bool { return e == Entities{} }

// Message is one message of an add.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// AddRequest is the body of POST /v3/memories/add/.
type AddRequest struct {
	Entities
	Messages json.RawMessage `json:"messages"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Infer defaults to true: extraction runs on the messages.
	Infer *bool `json:"infer,omitempty"`
	// Timestamp, Unix seconds, dates the messages (default now).
	Timestamp *int64 `json:"timestamp,omitempty"`
}

// Memory is a memory in mem0's shape.
type Memory struct {
	ID             string          `json:"id"`
	Memory         string          `json:"memory"`
	UserID         *string         `json:"user_id"`
	AgentID        *string         `json:"agent_id"`
	AppID          *string         `json:"app_id"`
	RunID          *string         `json:"run_id"`
	Hash           string          `json:"hash"`
	Metadata       json.RawMessage `json:"metadata"`
	Categories     []string        `json:"categories"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	ExpirationDate *string         `json:"expiration_date"`
	Score          *float64        `json:"score,omitempty"`
	// MemoryType and Status are memgate's record type and status.
	MemoryType string `json:"memory_type"`
	Status     string `json:"status"`
	Version    int    `json:"version"`
}

// AddResult is one memory an add created (or found already stored).
type AddResult struct {
	ID     string     `json:"id"`
	Memory string     `json:"memory"`
	Event  string     `json:"event"` // ADD, NOOP
	Data   MemoryData `json:"data"`
	// Decision is the gate's decision; ApprovalID is set when the write
	// waits in the approval queue (Status PENDING).
	Decision   string `json:"decision"`
	Status     string `json:"status"` // SUCCEEDED, PENDING
	ApprovalID string `json:"approval_id,omitempty"`
}

// MemoryData is mem0's {"memory": text}.
type MemoryData struct {
	Memory string `json:"memory"`
}

// AddResponse answers an add: the v1.1 results plus the v3 event fields.
// Status is PENDING when extraction was queued (EventID is the job) or
// when any write waits for approval, SUCCEEDED otherwise.
type AddResponse struct {
	Results []AddResult `json:"results"`
	Message string      `json:"message"`
	Status  string      `json:"status"`
	EventID *string     `json:"event_id"`
}

func pick(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// toMemory shapes a record as a mem0 memory.
func toMemory(r memory.Record) Memory {
	m := Memory{ID: r.ID, Memory: r.Content, UserID: pick(r.Scope.UserID), AgentID: pick(r.Scope.AgentID), AppID: pick(r.Scope.AppID),
		RunID: pick(r.Scope.SessionID), Hash: r.ContentSHA256, Metadata: r.Metadata, Categories: []string{},
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, MemoryType: string(r.Type), Status: string(r.Status), Version: r.Version}
	if len(m.Metadata) == 0 {
		m.Metadata = json.RawMessage("null")
	}
	if r.Category != "" {
		m.Categories = []string{r.Category}
	}
	if r.ValidUntil != nil {
		m.ExpirationDate = pick(r.ValidUntil.UTC().Format(time.DateOnly))
	}
	return m
}

// checkMetadata requires a JSON object (or nothing).
func checkMetadata(field string, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil, fault.Field(field, "must be a JSON object")
	}
	return raw, nil
}

// messages decodes the messages of an add: an array of {role, content}
// with text content, or one string (mem0 accepts both).
func messages(raw json.RawMessage) ([]Message, []string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if strings.TrimSpace(one) == "" {
			return nil, nil, fault.Field("messages", "must not be empty")
		}
		return []Message{{Role: "user"}}, []string{one}, nil
	}
	var ms []Message
	if json.Unmarshal(raw, &ms) != nil || len(ms) == 0 {
		return nil, nil, fault.Field("messages", "must be a non-empty array of {role, content} objects")
	}
	if len(ms) > core.MaxAddMessages {
		return nil, nil, fault.Field("messages", "must hold at most "+strconv.Itoa(core.MaxAddMessages)+" messages")
	}
	texts := make([]string, len(ms))
	for i, m := range ms {
		at := "messages[" + strconv.Itoa(i) + "]"
		if json.Unmarshal(m.Content, &texts[i]) != nil {
			return nil, nil, fault.Field(at+".content", "must be text (images and other parts are not supported)")
		}
		if strings.TrimSpace(texts[i]) == "" {
			return nil, nil, fault.Field(at+".content", "must not be empty")
		}
		if m.Role == "" {
			ms[i].Role = "user"
		}
	}
	return ms, texts, nil
}

// Add stores messages. With infer (the default) the messages are added
// to the conversation of the entity ids and extraction is queued (the
// Memory Gateway's add and flush); without, each message's text is
// written as one record through the gate.
func (s *Service) Add(ctx context.Context, p memory.Principal, req AddRequest) (AddResponse, error) {
	if req.Entities.empty() {
		return AddResponse{}, fault.Field("user_id", "one of user_id, agent_id, app_id or run_id is required")
	}
	ms, texts, err := messages(req.Messages)
	if err != nil {
		return AddResponse{}, err
	}
	meta, err := checkMetadata("metadata", req.Metadata)
	if err != nil {
		return AddResponse{}, err
	}
	at := s.now()
	if req.Timestamp != nil {
		if *req.Timestamp <= 0 {
			return AddResponse{}, fault.Field("timestamp", "must be Unix seconds")
		}
		at = time.Unix(*req.Timestamp, 0)
	}
	if req.Infer == nil || *req.Infer {
		return s.addInfer(ctx, p, req.Entities, ms, texts, at)
	}
	out := AddResponse{Results: []AddResult{}, Status: "SUCCEEDED"}
	queued := 0
	for i, text := range texts {
		at := at.UTC()
		wr, err := s.svc.Write(ctx, p, core.WriteRequest{Type: memory.Belief, Category: Category, Content: text, Metadata: meta,
			Source: &core.SourceInput{Kind: memory.Told}, Scope: req.Entities.scope(), ValidFrom: &at})
		if err != nil {
			if fe := fault.As(err); fe != nil && i > 0 {
				// Earlier messages are stored; say how far the add got.
				return AddResponse{}, fe.With("stored_messages", i)
			}
			return AddResponse{}, err
		}
		r := AddResult{ID: wr.Record.ID, Memory: text, Event: "ADD", Data: MemoryData{Memory: text}, Decision: wr.Decision,
			Status: "SUCCEEDED", ApprovalID: wr.ApprovalID}
		switch wr.Decision {
		case "duplicate":
			r.Event = "NOOP"
		case "queued":
			r.Status = "PENDING"
			queued++
		}
		out.Results = append(out.Results, r)
	}
	out.Message = "ok"
	if queued > 0 {
		out.Status = "PENDING"
		out.Message = strconv.Itoa(queued) + " write(s) wait in memgate's approval queue; each result names its approval_id"
	}
	return out, nil
}

func (s *Service) addInfer(ctx context.Context, p memory.Principal, e Entities, ms []Message, texts []string, at time.Time) (AddResponse, error) {
	if e.UserID == "" && e.RunID == "" {
		return AddResponse{}, fault.Field("user_id", "infer needs user_id or run_id (extraction runs per conversation)")
	}
	cv := store.Conversation{UserID: e.UserID, AppID: e.AppID, SessionID: e.RunID}
	if cv.AppID == "" {
		cv.AppID = core.DefaultGroupApp
	}
	sender := e.UserID
	if sender == "" {
		sender = "user"
	}
	gm := make([]core.GatewayMessage, len(ms))
	base := at.UnixMilli()
	for i, m := range ms {
		role := m.Role
		who := sender
		if role != "user" {
			role, who = "assistant", "assistant"
		}
		gm[i] = core.GatewayMessage{SenderID: who, Role: role, Timestamp: base + int64(i), Content: texts[i]}
	}
	if _, err := s.svc.GatewayAdd(ctx, p, cv, gm); err != nil {
		return AddResponse{}, err
	}
	fr, err := s.svc.GatewayFlush(ctx, p, cv)
	if err != nil {
		return AddResponse{}, err
	}
	return AddResponse{Results: []AddResult{}, Message: "extraction queued; poll the event or list memories", Status: "PENDING", EventID: &fr.JobID}, nil
}

// Event is a queued extraction as mem0's event. Metadata is the job's
// result (counts of facts added, updated, refused); the memories it
// wrote are listed by get all.
type Event struct {
	ID        string          `json:"id"`
	EventType string          `json:"event_type"`
	Status    string          `json:"status"` // PENDING, RUNNING, SUCCEEDED, FAILED
	Results   []any           `json:"results"`
	Metadata  json.RawMessage `json:"metadata"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Event reports an extraction job the principal queued.
func (s *Service) Event(ctx context.Context, p memory.Principal, id string) (Event, error) {
	j, err := s.svc.GatewayJob(ctx, p, id)
	if err != nil {
		return Event{}, err
	}
	st := map[string]string{"queued": "PENDING", "running": "RUNNING", "done": "SUCCEEDED", "dead": "FAILED"}[j.Status]
	if st == "" {
		st = strings.ToUpper(j.Status)
	}
	meta := j.Result
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	return Event{ID: j.ID, EventType: "ADD", Status: st, Results: []any{}, Metadata: meta, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}, nil
}

// Get returns one memory.
func (s *Service) Get(ctx context.Context, p memory.Principal, id string) (Memory, error) {
	r, err := s.svc.Get(ctx, p, id, core.GetOptions{})
	if err != nil {
		return Memory{}, err
	}
	if r.Status == memory.Forgotten {
		return Memory{}, fault.New(fault.NotFound, "memory not found")
	}
	return toMemory(r), nil
}

// UpdateRequest is the body of PUT /v1/memories/{id}/.
type UpdateRequest struct {
	Text           *string         `json:"text,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	ExpirationDate *string         `json:"expiration_date,omitempty"`
}

// Update writes a new version of a memory (through the gate, against
// the version it read).
func (s *Service) Update(ctx context.Context, p memory.Principal, id string, req UpdateRequest) (Memory, error) {
	meta, err := checkMetadata("metadata", req.Metadata)
	if err != nil {
		return Memory{}, err
	}
	head, err := s.Get(ctx, p, id)
	if err != nil {
		return Memory{}, err
	}
	pr := core.PatchRequest{ExpectedVersion: &head.Version, Content: req.Text, Metadata: meta}
	if req.ExpirationDate != nil {
		t, err := time.Parse(time.DateOnly, *req.ExpirationDate)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, *req.ExpirationDate); err != nil {
				return Memory{}, fault.Field("expiration_date", "must be a date (YYYY-MM-DD) or an RFC 3339 time")
			}
		}
		pr.ValidUntil = core.OptionalTime{Set: true, Value: &t}
	}
	if req.Text == nil && meta == nil && req.ExpirationDate == nil {
		return Memory{}, fault.Field("text", "one of text, metadata or expiration_date is required")
	}
	wr, err := s.svc.Patch(ctx, p, id, pr)
	if err != nil {
		return Memory{}, err
	}
	return toMemory(wr.Record), nil
}

// Deleted is mem0's {"message": ...}.
type Deleted struct {
	Message string `json:"message"`
	// Deleted counts the memories forgotten (delete all).
	Deleted int `json:"deleted,omitempty"`
}

// Delete forgets a memory (a tombstone remains, as for every forget).
func (s *Service) Delete(ctx context.Context, p memory.Principal, id string) (Deleted, error) {
	if _, err := s.Get(ctx, p, id); err != nil {
		return Deleted{}, err
	}
	if _, err := s.svc.Forget(ctx, p, id); err != nil {
		return Deleted{}, err
	}
	return Deleted{Message: "Memory deleted successfully!"}, nil
}

// DeleteAll forgets every memory of the entity ids the principal may
// read. Unlike mem0, at least one entity id is required.
func (s *Service) DeleteAll(ctx context.Context, p memory.Principal, e Entities) (Deleted, error) {
	if e.empty() {
		return Deleted{}, fault.Field("user_id", "one of user_id, agent_id, app_id or run_id is required")
	}
	rs, err := s.scan(ctx, p, e.scope(), nil)
	if err != nil {
		return Deleted{}, err
	}
	n := 0
	for _, r := range rs {
		if _, err := s.svc.Forget(ctx, p, r.ID); err != nil {
			if fault.CodeOf(err) == fault.NotFound || fault.CodeOf(err) == fault.PermissionDenied {
				continue // gone meanwhile, or readable but not the principal's to forget
			}
			return Deleted{}, err
		}
		n++
	}
	return Deleted{Message: "Memories deleted successfully!", Deleted: n}, nil
}

// HistoryEntry is one change of a memory in mem0's shape.
type HistoryEntry struct {
	ID         string    `json:"id"`
	MemoryID   string    `json:"memory_id"`
	Input      []Message `json:"input"`
	OldMemory  *string   `json:"old_memory"`
	NewMemory  *string   `json:"new_memory"`
	UserID     *string   `json:"user_id"`
	Categories []string  `json:"categories"`
	Event      string    `json:"event"` // ADD, UPDATE, DELETE
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	Version    int       `json:"version"`
}

// History lists a memory's versions, oldest first, as mem0 events: the
// first is ADD, a tombstone DELETE, the others UPDATE. A delete is
// memgate's forget, which erases the text of every version, so after it
// the texts are null.
func (s *Service) History(ctx context.Context, p memory.Principal, id string) ([]HistoryEntry, error) {
	vs, err := s.svc.History(ctx, p, id, false)
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, 0, len(vs))
	var prev *string
	for i, v := range vs {
		h := HistoryEntry{ID: v.ID + "@v" + strconv.Itoa(v.Version), MemoryID: v.ID, Input: []Message{}, OldMemory: prev,
			UserID: pick(v.Scope.UserID), Categories: []string{}, Event: "UPDATE", CreatedAt: v.UpdatedAt, UpdatedAt: v.UpdatedAt, Version: v.Version}
		if v.Category != "" {
			h.Categories = []string{v.Category}
		}
		h.NewMemory = pick(v.Content)
		switch {
		case i == len(vs)-1 && v.Status == memory.Forgotten:
			h.Event, h.NewMemory = "DELETE", nil
		case i == 0:
			h.Event, h.OldMemory = "ADD", nil
		}
		prev = h.NewMemory
		out = append(out, h)
	}
	return out, nil
}

// Ping answers the key check.
type Ping struct {
	Status string `json:"status"`
	OrgID  string `json:"org_id"`
	// Principal is the memgate principal the key authenticates as.
	Principal string `json:"principal"`
}

// Ping reports that the key is valid.
func (s *Service) Ping(p memory.Principal) Ping {
	return Ping{Status: "ok", OrgID: p.Workspace, Principal: p.Name}
}

// readableTypes are the record types mem0 calls memories: everything but
// the raw conversation turns an infer add stores as episodes.
var readableTypes = slices.DeleteFunc(slices.Clone(memory.Types), func(t memory.Type) bool { return t == memory.Episode })

// scan lists active records in scope, newest first, keeping those whose
// metadata matches.
func (s *Service) scan(ctx context.Context, p memory.Principal, sc memory.Scope, meta map[string]any) ([]memory.Record, error) {
	var out []memory.Record
	req := core.ListRequest{Types: readableTypes, Statuses: []memory.Status{memory.Active, memory.Provisional}, Scope: sc, Limit: 200}
	seen := 0
	for {
		page, err := s.svc.List(ctx, p, req)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Records {
			if metaMatches(r.Metadata, meta) {
				out = append(out, r)
			}
		}
		seen += len(page.Records)
		if page.NextCursor == "" || seen >= maxScan {
			return out, nil
		}
		req.Cursor = page.NextCursor
	}
}
