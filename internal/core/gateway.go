package core

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
)

// The Memory Gateway contract (SPEC §6) as service calls. The HTTP
// adapter validates shapes and authenticates; these calls enforce the
// rules.

// Gateway scopes.
const (
	ScopeCurrentChat   = "current_chat"
	ScopeResources     = "resources"
	ScopeAllUserMemory = "all_user_memory"
)

// GatewayScopes lists the scopes in the order results are attributed.
var GatewayScopes = []string{ScopeCurrentChat, ScopeResources, ScopeAllUserMemory}

// The gateway contract's bounds and defaults. Transports take them from
// here; the service enforces them whatever the transport checked.
const (
	// DefaultTopK and MaxTopK bound a gateway search.
	DefaultTopK = 8
	MaxTopK     = 100
	// MaxAddMessages bounds the messages of one add.
	MaxAddMessages = 100
	// DefaultGroupApp is the app and the project of a call that names
	// none.
	DefaultGroupApp = "default"
	// MaxGatewayKeyBytes bounds the ids and scope keys of gateway bodies
	// (app, project, session, sender).
	MaxGatewayKeyBytes = 256
	// MaxConversationIDBytes bounds a conversation id: it becomes the
	// session ChatSession(id), itself a key.
	MaxConversationIDBytes = MaxGatewayKeyBytes - len(chatPrefix)
)

// GatewayWorkspace is the workspace of gateway users whose keys predate
// keys that name their principal (and so their workspace).
const GatewayWorkspace = memory.DefaultWorkspace

const chatPrefix = "chat:"

// ChatSession is the session id of a gateway conversation.
func ChatSession(conversationID string) string { return chatPrefix + conversationID }

// GatewayGroup is the app and project a gateway call works in: the ones
// it names, DefaultGroupApp for one it leaves out.
func GatewayGroup(app, project string) (string, string) {
	if app == "" {
		app = DefaultGroupApp
	}
	if project == "" {
		project = DefaultGroupApp
	}
	return app, project
}

// AuthenticateGatewayUser is AuthenticateUser for the gateway: keys that
// name no principal are looked up in GatewayWorkspace.
func (s *Service) AuthenticateGatewayUser(ctx context.Context, userID, key string) (memory.Principal, error) {
	return s.AuthenticateUser(ctx, GatewayWorkspace, userID, key)
}

// CheckAddCount is the contract's bound on the messages of one add.
// Transports call it before decoding each message so the count is
// reported first; GatewayAdd applies it again.
func CheckAddCount(n int) error {
	if n == 0 {
		return fault.Field("messages", "must be a non-empty list")
	}
	if n > MaxAddMessages {
		return fault.Field("messages", "at most "+strconv.Itoa(MaxAddMessages)+" messages per add")
	}
	return nil
}

// MaxMessageContentBytes bounds a message's content: its episode's
// content is "sender: content", within the policy's content limit.
func (s *Service) MaxMessageContentBytes() int {
	return s.policy.Limits.MaxContentBytes - MaxGatewayKeyBytes - len(": ")
}

// GatewayMessage is one message of an add.
type GatewayMessage struct {
	SenderID  string `json:"sender_id"`
	Role      string `json:"role"`
	Timestamp int64  `json:"timestamp"`
	Content   string `json:"content"`
}

// GatewayRoles are the message roles of the Memory Gateway contract
// (SPEC §6): who spoke, the user or the assistant.
var GatewayRoles = []string{"user", "assistant"}

// checkMessages applies the contract's rules to messages a transport has
// decoded: a known role, and a timestamp in Unix epoch milliseconds no
// earlier than the policy's limits.min_message_timestamp_ms (default
// 2000-01-01), so seconds sent by mistake are refused, not dated 1970.
func (s *Service) checkMessages(msgs []GatewayMessage) error {
	if err := CheckAddCount(len(msgs)); err != nil {
		return err
	}
	lo := s.policy.Limits.MinMessageTimestampMs
	maxContent := s.MaxMessageContentBytes()
	for i, m := range msgs {
		at := "messages[" + strconv.Itoa(i) + "]."
		if len(m.Content) > maxContent {
			return fault.Field(at+"content", "must be at most "+strconv.Itoa(maxContent)+" bytes")
		}
		if strings.TrimSpace(m.Content) == "" {
			return fault.Field(at+"content", "must not be blank")
		}
		if !slices.Contains(GatewayRoles, m.Role) {
			return fault.Field(at+"role", "must be one of "+strings.Join(GatewayRoles, ", "))
		}
		if m.Timestamp < lo || m.Timestamp > gate.MaxMessageTimestampMs {
			msg := "must be Unix epoch milliseconds between " + time.UnixMilli(lo).UTC().Format(time.RFC3339) + " and 9999-12-31"
			if m.Timestamp > 0 && m.Timestamp < lo && m.Timestamp*1000 >= lo {
				msg += "; this looks like seconds (multiply by 1000)"
			}
			return fault.Field(at+"timestamp", msg).With("min", lo).With("max", int64(gate.MaxMessageTimestampMs))
		}
	}
	return nil
}

// AddResult reports an add: the episode record of each message, in
// order, whether it was new or a re-sent duplicate.
type AddResult struct {
	Added      int      `json:"added"`
	Duplicates int      `json:"duplicates"`
	MemoryIDs  []string `json:"memory_ids"`
	// Decisions counts the gate's decisions on the new messages' episodes
	// (accepted, quarantined, or duplicate when the gate's policy
	// deduplicates episodes).
	Decisions map[string]int `json:"decisions"`
}

// GatewayAdd stores messages durably and makes each searchable at once as
// an episode record (SPEC §6, §7). A message identical to a stored one
// (same conversation, sender, timestamp and content) is a no-op that
// answers the stored episode's id. The whole add is one transaction.
func (s *Service) GatewayAdd(ctx context.Context, p memory.Principal, cv store.Conversation, msgs []GatewayMessage) (AddResult, error) {
	if err := s.checkMessages(msgs); err != nil {
		return AddResult{}, err
	}
	if err := s.rateLimit(p); err != nil {
		return AddResult{}, err
	}
	now := s.clock()
	names := make([][]string, len(msgs))
	for i, m := range msgs {
		names[i] = turnNames(cv.UserID, m.Role, m.Content, s.policy.Graph.ConversationNames)
	}
	var res AddResult
	err := s.tx(ctx, "message", func(tx store.Tx) error {
		// The name nodes one turn ensured, the next need not look up.
		known := map[string]memory.Node{}
		if err := lockNames(ctx, tx, p.Workspace, cv.UserID, names); err != nil {
			return err
		}
		res = AddResult{MemoryIDs: make([]string, 0, len(msgs)), Decisions: map[string]int{}}
		for i, m := range msgs {
			msg := store.Message{Workspace: p.Workspace, ID: memory.NewID(), Conversation: cv, SenderID: m.SenderID, Role: m.Role,
				Timestamp: m.Timestamp, Content: m.Content, ContentSHA256: memory.SHA256Hex(m.Content), CreatedAt: now}
			old, err := tx.FindMessage(ctx, p.Workspace, msg)
			if err == nil {
				res.Duplicates++
				res.MemoryIDs = append(res.MemoryIDs, old.RecordID)
				continue
			}
			if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			req := episodeRequest(msg)
			req.Entities = names[i]
			req.ownTurn = true
			req.nodes = known
			wr, err := s.writeIn(ctx, tx, p, req, now)
			if err != nil {
				if isRefusal(err) {
					fe := *fault.As(err)
					fe.Message = "messages[" + strconv.Itoa(i) + "]: " + fe.Message
					return &fe
				}
				return err
			}
			msg.RecordID = wr.Record.ID
			if err := tx.InsertMessage(ctx, msg); err != nil {
				return err
			}
			res.Added++
			res.Decisions[wr.Decision]++
			res.MemoryIDs = append(res.MemoryIDs, wr.Record.ID)
		}
		return nil
	})
	if err != nil {
		return AddResult{}, err
	}
	s.logMoved(ctx)
	return res, nil
}

// episodeRequest is the episode a message becomes: the speaker's words
// prefixed with the speaker, at the message's own time.
func episodeRequest(m store.Message) WriteRequest {
	at := time.UnixMilli(m.Timestamp).UTC()
	meta, _ := json.Marshal(map[string]any{"speaker": m.SenderID, "role": m.Role, "timestamp": m.Timestamp,
		"message_id": m.ID, "session_date": at.Format(time.DateOnly)})
	return WriteRequest{
		Type: memory.Episode, Category: "conversation", Content: m.SenderID + ": " + m.Content, Metadata: meta,
		Source: &SourceInput{Kind: memory.Observed}, ValidFrom: &at,
		Scope: memory.Scope{UserID: m.UserID, AppID: m.AppID, ProjectID: m.ProjectID, SessionID: m.SessionID},
	}
}

// lockNames serialises, across replicas, the adds that name a user's
// names. An add of several turns locks a later turn's name nodes after
// it appended an earlier turn's audit entry, which holds the workspace's
// audit chain head until it commits; meanwhile another add of the same
// user may have inserted one of those nodes and be waiting for the head:
// each would wait for the other (PostgreSQL finds the deadlock and fails
// one). Taken before any node or the head, this lock orders them; name
// nodes are the user's own (turnNames), so other users' adds pass. (On
// SQLite, whose one writer orders every write, it costs nothing.)
func lockNames(ctx context.Context, tx store.Tx, ws, userID string, names [][]string) error {
	for _, n := range names {
		if len(n) > 0 {
			return tx.LockKey(ctx, "gateway.names\x00"+ws+"\x00"+userID)
		}
	}
	return nil
}

// NameLabel is the label of the graph nodes of the names conversation
// turns mention (docs/graph.md).
const NameLabel = "name"

// maxTurnNames bounds the names one turn links to.
const maxTurnNames = 12

// turnNames lists the entities of the names a user's turn mentions,
// recognised as the search index recognises them (retrieve.Names), or
// nil when the policy turns them off. Each is "name:<user>/<name>", the
// name's spaces as '_' (a name holds letters, digits, apostrophes,
// hyphens, '&' and single spaces; a user id is printable ASCII without
// spaces): a user's names are the user's nodes. Shared by every user who
// mentions it, a node would carry a grant for each (a popular name,
// thousands, read by every write that names it), and one user's "Mel" is
// not another's. An assistant's turns name none: their names are the
// assistant's suggestions (a list of ten hotels), not what the user's
// life holds, and they are most of the names and of the cost of linking
// them. A name too long for an entity key is left out, never a reason
// to refuse the turn.
func turnNames(userID, role, content string, on bool) []string {
	if !on || role != "user" || userID == "" {
		return nil
	}
	var out []string
	for _, n := range retrieve.Names(content, maxTurnNames) {
		e := NameLabel + ":" + userID + "/" + strings.ReplaceAll(n, " ", "_")
		if gate.ValidEntityKey(e) {
			out = append(out, e)
		}
	}
	return out
}

// FlushJobKind is the job kind of a gateway flush.
const FlushJobKind = "gateway.flush"

// flushPayload is what a flush job needs to run.
type flushPayload struct {
	store.Conversation
	PrincipalID string `json:"principal_id"`
}

// JobView is a job as its owner sees it.
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

func viewJob(j store.Job) JobView {
	v := JobView{ID: j.ID, Kind: j.Kind, Status: string(j.Status), Attempts: j.Attempts, LastError: j.LastError,
		CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
	if len(j.Result) > 0 && string(j.Result) != "{}" {
		v.Result = j.Result
	}
	return v
}

// FlushSummary is the result stored on a finished flush job.
type FlushSummary struct {
	Messages    int            `json:"messages"`
	Extractor   string         `json:"extractor"`
	Facts       int            `json:"facts"`
	Added       int            `json:"added"`
	Updated     int            `json:"updated"`
	Invalidated int            `json:"invalidated"`
	Noop        int            `json:"noop"`
	Refused     int            `json:"refused"`
	Gatekeeper  map[string]int `json:"gatekeeper"`
}

// FlushResult is the answer to a flush: the queued job.
type FlushResult struct {
	JobID    string `json:"job_id"`
	Status   string `json:"status"`
	Messages int    `json:"messages"`
}

// GatewayFlush queues extraction of every message of the conversation
// added since the last flush and returns at once. The messages are taken
// by the job in the same transaction that enqueues it, so none is lost
// and none is extracted twice.
func (s *Service) GatewayFlush(ctx context.Context, p memory.Principal, cv store.Conversation) (FlushResult, error) {
	if err := s.rateLimit(p); err != nil {
		return FlushResult{}, err
	}
	now := s.clock()
	payload, err := json.Marshal(flushPayload{Conversation: cv, PrincipalID: p.ID})
	if err != nil {
		return FlushResult{}, fault.Wrap(fault.Internal, err, "internal error")
	}
	j := store.Job{ID: memory.NewID(), Workspace: p.Workspace, Kind: FlushJobKind, Payload: payload,
		MaxAttempts: s.jobs.maxAttempts, RunAfter: now, CreatedAt: now, UpdatedAt: now}
	var n int
	err = s.tx(ctx, "job", func(tx store.Tx) error {
		var err error
		if n, err = tx.TakeMessages(ctx, p.Workspace, cv, j.ID); err != nil {
			return err
		}
		if err := tx.InsertJob(ctx, j); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, p.Workspace, p, "", "gateway.flush", now, map[string]any{"job_id": j.ID, "messages": n})
		return err
	})
	if err != nil {
		return FlushResult{}, err
	}
	s.wakeJobs()
	return FlushResult{JobID: j.ID, Status: string(store.JobQueued), Messages: n}, nil
}

// GatewayJob returns a job the user queued; other jobs are not found.
func (s *Service) GatewayJob(ctx context.Context, p memory.Principal, id string) (JobView, error) {
	j, err := s.store.GetJob(ctx, p.Workspace, id)
	if err != nil {
		return JobView{}, storeErr(err, "job")
	}
	var pl flushPayload
	if json.Unmarshal(j.Payload, &pl) != nil || pl.PrincipalID != p.ID {
		return JobView{}, fault.New(fault.NotFound, "job not found")
	}
	return viewJob(j), nil
}

// Job returns any job of the operator's workspace.
func (s *Service) Job(ctx context.Context, by memory.Principal, id string) (JobView, error) {
	if err := requireOperator(by); err != nil {
		return JobView{}, err
	}
	j, err := s.store.GetJob(ctx, by.Workspace, id)
	if err != nil {
		return JobView{}, storeErr(err, "job")
	}
	return viewJob(j), nil
}

// GatewaySearchRequest is a recall (SPEC §6).
type GatewaySearchRequest struct {
	AppID, ProjectID string
	ConversationID   string
	Query            string
	// Scopes, nil when the client named none: all_user_memory, with
	// current_chat first when there is a conversation. A client's empty
	// list is refused.
	Scopes []string
	// TopK, nil when the client named none: DefaultTopK.
	TopK *int
	// MinRelevance, an extension of the contract (absent: 0), drops hits
	// below that relevance.
	MinRelevance float64
	// WithRelevance adds each hit's relevance to the answer. Only a
	// client that sent min_relevance gets it: the contract's answer stays
	// byte for byte what SPEC §6 says for everyone else.
	WithRelevance bool
}

// check applies the contract's rules to a search: top_k's bounds, the
// scopes (default, known, not repeated), min_relevance's range, and a
// conversation for current_chat. It returns k and the scopes to search.
func (req GatewaySearchRequest) check() (int, []string, error) {
	if len(req.ConversationID) > MaxConversationIDBytes {
		return 0, nil, fault.Field("conversation_id", "must be at most "+strconv.Itoa(MaxConversationIDBytes)+" bytes")
	}
	k := DefaultTopK
	if req.TopK != nil {
		if *req.TopK < 1 || *req.TopK > MaxTopK {
			return 0, nil, fault.Field("top_k", "must be between 1 and "+strconv.Itoa(MaxTopK))
		}
		k = *req.TopK
	}
	if !(req.MinRelevance >= 0 && req.MinRelevance <= 1) {
		return 0, nil, fault.Field("min_relevance", "must be between 0 and 1")
	}
	var scopes []string
	if req.Scopes == nil {
		scopes = []string{ScopeAllUserMemory}
		if req.ConversationID != "" {
			scopes = []string{ScopeCurrentChat, ScopeAllUserMemory}
		}
	} else {
		if len(req.Scopes) == 0 {
			return 0, nil, fault.Field("scope", "must be a non-empty list of "+strings.Join(GatewayScopes, ", "))
		}
		for i, sc := range req.Scopes {
			if !slices.Contains(GatewayScopes, sc) {
				return 0, nil, fault.Field("scope["+strconv.Itoa(i)+"]", "must be one of "+strings.Join(GatewayScopes, ", "))
			}
			if slices.Contains(scopes, sc) {
				return 0, nil, fault.Field("scope["+strconv.Itoa(i)+"]", "is repeated")
			}
			scopes = append(scopes, sc)
		}
	}
	if slices.Contains(scopes, ScopeCurrentChat) && req.ConversationID == "" {
		return 0, nil, fault.Field("conversation_id", "is required when scope includes current_chat")
	}
	return k, scopes, nil
}

// GatewayHit is one recalled memory.
type GatewayHit struct {
	ID          string        `json:"id"`
	SessionID   string        `json:"session_id"`
	Text        string        `json:"text"`
	Score       float64       `json:"score"`
	Relevance   *float64      `json:"relevance,omitempty"` // only when asked (WithRelevance)
	SourceScope string        `json:"source_scope"`
	ResourceURI *string       `json:"resource_uri"`
	Raw         memory.Record `json:"raw"`
}

// GatewaySearch searches each requested scope of the user's memory and
// merges the hits by score; a memory found in several scopes is reported
// once, under the first scope in GatewayScopes order.
func (s *Service) GatewaySearch(ctx context.Context, p memory.Principal, req GatewaySearchRequest) ([]GatewayHit, error) {
	k, scopes, err := req.check()
	if err != nil {
		return nil, err
	}
	req.Scopes = scopes
	uid := userOf(p)
	base := memory.Scope{UserID: uid, AppID: req.AppID, ProjectID: req.ProjectID}
	var hits []GatewayHit
	seen := map[string]bool{}
	for _, sc := range GatewayScopes {
		if !slices.Contains(req.Scopes, sc) {
			continue
		}
		sr := SearchRequest{Query: req.Query, K: k, Scope: base, MinRelevance: req.MinRelevance}
		switch sc {
		case ScopeCurrentChat:
			sr.Scope.SessionID = ChatSession(req.ConversationID)
		case ScopeResources:
			sr.Types = []memory.Type{memory.Resource}
		}
		resp, err := s.Search(ctx, p, sr)
		if err != nil {
			return nil, err
		}
		for _, h := range resp.Results {
			if seen[h.Record.ID] {
				continue
			}
			seen[h.Record.ID] = true
			hit := GatewayHit{ID: h.Record.ID, SessionID: h.Record.Scope.SessionID, Text: h.Record.Content,
				Score: h.Score, SourceScope: sc, ResourceURI: resourceURI(h.Record), Raw: h.Record}
			if req.WithRelevance {
				rel := h.Relevance
				hit.Relevance = &rel
			}
			hits = append(hits, hit)
		}
	}
	slices.SortStableFunc(hits, func(a, b GatewayHit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	if hits == nil {
		hits = []GatewayHit{}
	}
	return hits, nil
}

func resourceURI(r memory.Record) *string {
	if r.Type != memory.Resource {
		return nil
	}
	var m struct {
		URI string `json:"resource_uri"`
	}
	if json.Unmarshal(r.Metadata, &m) != nil || m.URI == "" {
		return nil
	}
	return &m.URI
}

// ownRecord loads a head the gateway user may change: one scoped to the
// user in the given app and project. Anything else is not found.
func (s *Service) ownRecord(ctx context.Context, p memory.Principal, appID, projectID, id string) (memory.Record, error) {
	if !memory.ValidID(id) {
		return memory.Record{}, fault.New(fault.NotFound, "memory not found")
	}
	r, err := s.store.GetRecord(ctx, p.Workspace, id)
	if err != nil || r.Scope.UserID != userOf(p) || r.Scope.AppID != appID || r.Scope.ProjectID != projectID || !canRead(p, r, false) {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return memory.Record{}, storeErr(err, "memory")
		}
		return memory.Record{}, fault.New(fault.NotFound, "memory not found")
	}
	return r, nil
}

// GatewayUpdate overrides a memory's text: a new version through the gate.
func (s *Service) GatewayUpdate(ctx context.Context, p memory.Principal, appID, projectID, id, text string) (WriteResult, error) {
	r, err := s.ownRecord(ctx, p, appID, projectID, id)
	if err != nil {
		return WriteResult{}, err
	}
	v := r.Version
	return s.Patch(ctx, p, id, PatchRequest{ExpectedVersion: &v, Content: &text})
}

// GatewayDelete forgets a memory of the user (a tombstone remains).
// Forgetting is idempotent on every surface: deleting a memory that is
// already forgotten answers as the first delete did, as REST, MCP and the
// CLI do. The tombstone keeps no scope to match the user against, so any
// tombstone the user could read counts; it tells nothing but that the id
// is forgotten.
func (s *Service) GatewayDelete(ctx context.Context, p memory.Principal, appID, projectID, id string) (memory.Record, error) {
	if _, err := s.ownRecord(ctx, p, appID, projectID, id); err != nil {
		if fault.Is(err, fault.NotFound) && memory.ValidID(id) {
			r, gerr := s.store.GetRecord(ctx, p.Workspace, id)
			if gerr == nil && r.Status == memory.Forgotten && canRead(p, r, false) {
				return r, nil
			}
		}
		return memory.Record{}, err
	}
	return s.Forget(ctx, p, id)
}
