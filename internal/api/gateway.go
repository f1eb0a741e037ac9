package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The Memory Gateway surface (SPEC §6, EXACT). Credentials travel in the
// body, so these routes authenticate in the handler, after decoding.
// Bodies are decoded leniently — unknown fields are ignored — because the
// clients are other projects' runtimes, which may send more than the
// contract names.

// gatewayIdentity is the part every gateway body shares.
type gatewayIdentity struct {
	UserID    *string `json:"user_id"`
	UserKey   *string `json:"user_key"`
	AppID     *string `json:"app_id"`
	ProjectID *string `json:"project_id"`
}

type gatewaySearchBody struct {
	gatewayIdentity
	ConversationID *string   `json:"conversation_id"`
	Query          *string   `json:"query"`
	Scope          *[]string `json:"scope"`
	TopK           *int      `json:"top_k"`
	// MinRelevance extends the contract; clients that do not send it
	// see the contract's behaviour.
	MinRelevance *float64 `json:"min_relevance"`
	// Context, when present, asks for an assembled context as well.
	Context *gatewayContextBody `json:"context"`
}

// gatewayContextBody asks the gateway's search for a context envelope.
type gatewayContextBody struct {
	BudgetTokens int `json:"budget_tokens"`
}

type gatewayAddBody struct {
	gatewayIdentity
	SessionID *string               `json:"session_id"`
	Messages  *[]gatewayMessageBody `json:"messages"`
}

type gatewayMessageBody struct {
	SenderID  *string      `json:"sender_id"`
	Role      *string      `json:"role"`
	Timestamp *json.Number `json:"timestamp"`
	Content   *string      `json:"content"`
}

type gatewayFlushBody struct {
	gatewayIdentity
	SessionID *string `json:"session_id"`
}

type gatewayJobBody struct {
	gatewayIdentity
	JobID *string `json:"job_id"`
}

type gatewayMemoryBody struct {
	gatewayIdentity
	MemoryID *string `json:"memory_id"`
	Text     *string `json:"text"`
}

type gatewayResourceBody struct {
	gatewayIdentity
	Name        *string `json:"name"`
	URI         *string `json:"uri"`
	ContentType *string `json:"content_type"`
	Content     *string `json:"content"`
}

// decodeLenient decodes one JSON object, ignoring unknown fields.
func decodeLenient(r *http.Request, v any) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err, nil, nil, false)
	}
	return decodeBytes(raw, v, false)
}

// maxKeyBytes bounds scope keys and ids in gateway bodies.
const maxKeyBytes = core.MaxGatewayKeyBytes

// text validates a string field: present (when required), valid UTF-8,
// at most max bytes, no control characters when key is set. Errors name
// the field and never the value.
func text(name string, v *string, required bool, max int, key bool) (string, error) {
	if v == nil || *v == "" {
		if required {
			return "", fault.Field(name, "is required")
		}
		return "", nil
	}
	s := *v
	if !utf8.ValidString(s) {
		return "", fault.Field(name, "must be valid UTF-8")
	}
	if len(s) > max {
		return "", fault.Field(name, "must be at most "+strconv.Itoa(max)+" bytes")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", fault.Field(name, "must not contain NUL characters (U+0000)")
	}
	if key && strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fault.Field(name, "must not contain control characters")
	}
	return s, nil
}

func (id *gatewayIdentity) identity() *gatewayIdentity { return id }

// gatewayBody is any gateway request body.
type gatewayBody interface{ identity() *gatewayIdentity }

// decodeGateway decodes a gateway body, validates its identity fields and
// authenticates the user; it returns the user and the app and project.
func (s *Server) decodeGateway(r *http.Request, b gatewayBody) (memory.Principal, string, string, error) {
	if err := decodeLenient(r, b); err != nil {
		return memory.Principal{}, "", "", err
	}
	return s.identify(r, *b.identity())
}

// conversation is the session a gateway body names, for add and flush.
func conversation(p memory.Principal, app, proj string, session *string) (store.Conversation, error) {
	sess, err := text("session_id", session, true, maxKeyBytes, true)
	if err != nil {
		return store.Conversation{}, err
	}
	return core.UserConversation(p, app, proj, sess), nil
}

// identify validates the identity fields and authenticates the user. An
// unknown user and a wrong key get the same 401.
func (s *Server) identify(r *http.Request, id gatewayIdentity) (memory.Principal, string, string, error) {
	uid, err := text("user_id", id.UserID, true, 128, true)
	if err != nil {
		return memory.Principal{}, "", "", err
	}
	if id.UserKey == nil || *id.UserKey == "" {
		return memory.Principal{}, "", "", fault.Field("user_key", "is required")
	}
	app, err := text("app_id", id.AppID, false, maxKeyBytes, true)
	if err != nil {
		return memory.Principal{}, "", "", err
	}
	proj, err := text("project_id", id.ProjectID, false, maxKeyBytes, true)
	if err != nil {
		return memory.Principal{}, "", "", err
	}
	app, proj = core.GatewayGroup(app, proj)
	p, err := s.svc.AuthenticateGatewayUser(r.Context(), uid, *id.UserKey)
	return p, app, proj, err
}

func (s *Server) gatewaySearch(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	var b gatewaySearchBody
	p, app, proj, err := s.decodeGateway(r, &b)
	if err != nil {
		return err
	}
	// Shapes are checked here; the contract's rules (defaults, bounds,
	// scopes) in core.GatewaySearch.
	req := core.GatewaySearchRequest{AppID: app, ProjectID: proj, TopK: b.TopK}
	if req.Query, err = text("query", b.Query, true, 8<<10, false); err != nil {
		return err
	}
	if req.ConversationID, err = text("conversation_id", b.ConversationID, false, core.MaxConversationIDBytes, true); err != nil {
		return err
	}
	if b.MinRelevance != nil {
		req.MinRelevance, req.WithRelevance = *b.MinRelevance, true
	}
	if b.Scope != nil {
		req.Scopes = append([]string{}, *b.Scope...) // non-nil: the client named its scopes
	}
	hits, err := s.svc.GatewaySearch(r.Context(), p, req)
	if err != nil {
		return err
	}
	out := map[string]any{"results": hits}
	if b.Context != nil {
		if n := b.Context.BudgetTokens; n < 0 || n > contextpack.MaxBudget {
			return fault.Field("context.budget_tokens", "must be between 1 and 100000 (0 or absent: the default)")
		}
		sc := memory.Scope{UserID: core.UserConversation(p, app, proj, "").UserID, AppID: app, ProjectID: proj}
		if req.ConversationID != "" {
			sc.SessionID = core.ChatSession(req.ConversationID)
		}
		env, err := s.assembler.Assemble(r.Context(), p, contextpack.Request{Query: req.Query, Scope: sc,
			BudgetTokens: b.Context.BudgetTokens})
		if err != nil {
			return err
		}
		out["context"] = env
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) gatewayAdd(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	var b gatewayAddBody
	p, app, proj, err := s.decodeGateway(r, &b)
	if err != nil {
		return err
	}
	cv, err := conversation(p, app, proj, b.SessionID)
	if err != nil {
		return err
	}
	if b.Messages == nil {
		return core.CheckAddCount(0)
	}
	if err := core.CheckAddCount(len(*b.Messages)); err != nil {
		return err
	}
	maxContent := s.svc.MaxMessageContentBytes()
	msgs := make([]core.GatewayMessage, 0, len(*b.Messages))
	for i, m := range *b.Messages {
		at := "messages[" + strconv.Itoa(i) + "]."
		var gm core.GatewayMessage
		if gm.SenderID, err = text(at+"sender_id", m.SenderID, true, maxKeyBytes, true); err != nil {
			return err
		}
		if gm.Role, err = text(at+"role", m.Role, true, 32, true); err != nil {
			return err
		}
		if gm.Content, err = text(at+"content", m.Content, true, maxContent, false); err != nil {
			return err
		}
		if strings.TrimSpace(gm.Content) == "" {
			return fault.Field(at+"content", "must not be blank") // here too, so it is reported before the timestamp
		}
		if m.Timestamp == nil {
			return fault.Field(at+"timestamp", "is required")
		}
		// The range (no seconds, nothing past 9999) is the service's rule.
		ts, err := strconv.ParseInt(m.Timestamp.String(), 10, 64)
		if err != nil {
			return fault.Field(at+"timestamp", "must be an integer of Unix epoch milliseconds")
		}
		gm.Timestamp = ts
		msgs = append(msgs, gm)
	}
	res, err := s.svc.GatewayAdd(r.Context(), p, cv, msgs)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}

func (s *Server) gatewayFlush(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	var b gatewayFlushBody
	p, app, proj, err := s.decodeGateway(r, &b)
	if err != nil {
		return err
	}
	cv, err := conversation(p, app, proj, b.SessionID)
	if err != nil {
		return err
	}
	res, err := s.svc.GatewayFlush(r.Context(), p, cv)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, res)
}

func (s *Server) gatewayJob(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	var b gatewayJobBody
	p, _, _, err := s.decodeGateway(r, &b)
	if err != nil {
		return err
	}
	id, err := text("job_id", b.JobID, true, 64, true)
	if err != nil {
		return err
	}
	if !memory.ValidID(id) {
		return fault.New(fault.NotFound, "job not found")
	}
	j, err := s.svc.GatewayJob(r.Context(), p, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"job": j})
}

func (s *Server) gatewayUpdate(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	var b gatewayMemoryBody
	p, app, proj, err := s.decodeGateway(r, &b)
	if err != nil {
		return err
	}
	id, err := text("memory_id", b.MemoryID, true, 64, true)
	if err != nil {
		return err
	}
	txt, err := text("text", b.Text, true, s.svc.Policy().Limits.MaxContentBytes, false)
	if err != nil {
		return err
	}
	res, err := s.svc.GatewayUpdate(r.Context(), p, app, proj, id, txt)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": res.Record.ID, "version": res.Record.Version,
		"decision": res.Decision, "text": res.Record.Content})
}

func (s *Server) gatewayDelete(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	var b gatewayMemoryBody
	p, app, proj, err := s.decodeGateway(r, &b)
	if err != nil {
		return err
	}
	id, err := text("memory_id", b.MemoryID, true, 64, true)
	if err != nil {
		return err
	}
	rec, err := s.svc.GatewayDelete(r.Context(), p, app, proj, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "deleted": true})
}

func (s *Server) gatewayResource(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	var b gatewayResourceBody
	p, app, proj, err := s.decodeGateway(r, &b)
	if err != nil {
		return err
	}
	var req core.ResourceRequest
	req.AppID, req.ProjectID = app, proj
	if req.Name, err = text("name", b.Name, true, 256, true); err != nil {
		return err
	}
	if req.URI, err = text("uri", b.URI, false, 1024, true); err != nil {
		return err
	}
	ct, err := text("content_type", b.ContentType, false, 64, true)
	if err != nil {
		return err
	}
	switch ct {
	case "", "text/markdown":
		req.Markdown = true
	case "text/plain":
	default:
		return fault.Field("content_type", "must be text/markdown or text/plain")
	}
	if req.Content, err = text("content", b.Content, true, int(s.maxBody), false); err != nil {
		return err
	}
	res, err := s.svc.GatewayResource(r.Context(), p, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, res)
}

type createUserBody struct {
	UserID string `json:"user_id"`
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	var b createUserBody
	if err := Decode(r, &b); err != nil {
		return err
	}
	u, err := s.svc.CreateUser(r.Context(), p, b.UserID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, u)
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	us, err := s.svc.ListUsers(r.Context(), p)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"users": us})
}

func (s *Server) revokeUser(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	u, err := s.svc.RevokeUser(r.Context(), p, r.PathValue("user_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, u)
}

func (s *Server) rotateUserKey(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	u, err := s.svc.RotateUserKey(r.Context(), p, r.PathValue("user_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, u)
}

// maxJobWait bounds a long-poll for a job's end.
const maxJobWait = 60 * time.Second

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	id := r.PathValue("id")
	if !memory.ValidID(id) {
		return fault.New(fault.NotFound, "job not found")
	}
	j, err := s.svc.Job(r.Context(), p, id)
	if err != nil {
		return err
	}
	if v := r.URL.Query().Get("wait"); v != "" && j.Status != "done" && j.Status != "dead" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxJobWait {
			return fault.Field("wait", "must be a duration up to 60s, e.g. 30s")
		}
		// The wait may outlast the server's WriteTimeout: the answer gets
		// its own deadline, counted from the end of the wait.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + s.streamWindow))
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		// Timing out is not an error: the answer is the job as it is.
		if jv, err := s.svc.WaitJob(ctx, p.Workspace, id); err == nil || ctx.Err() != nil {
			j = jv
		} else {
			return err
		}
	}
	return writeJSON(w, http.StatusOK, j)
}
