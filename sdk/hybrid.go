package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory modes of a chat runtime.
const (
	// ModeCurated keeps memory to the runtime's own curated files; the
	// helper makes no HTTP calls.
	ModeCurated = "curated"
	// ModeHybrid adds memgate recall and persistence through the Memory
	// Gateway contract.
	ModeHybrid = "hybrid"
)

// Defaults applied by LoadHybrid.
const (
	DefaultTopK    = 8
	DefaultTimeout = 10 * time.Second
	DefaultAppID   = "default"
	// DefaultAssistantSenderID is the sender of persisted assistant
	// messages when PersistInput.AssistantSenderID is empty.
	DefaultAssistantSenderID = "assistant"
)

// DefaultScopes is what recall searches when HybridConfig.Scopes is
// empty: the current conversation and everything else the user told this
// app and project. Add ScopeResources to search uploaded documents too.
func DefaultScopes() []string { return []string{ScopeCurrentChat, ScopeAllUserMemory} }

// HybridConfig is the memory section of a chat runtime's configuration.
// Its JSON (and YAML) form uses snake_case keys and a Go duration string
// for timeout, e.g.
//
//	{"mode": "hybrid", "base_url": "http://127.0.0.1:8080", "user_id": "u1",
//	 "user_key_file": "/run/secrets/memgate_user_key", "scopes": ["current_chat"],
//	 "top_k": 8, "timeout": "10s"}
//
// Printing or logging a HybridConfig shows the key as "[redacted]".
type HybridConfig struct {
	// Mode is ModeHybrid, ModeCurated, or empty: implicit hybrid, which
	// degrades to curated (with one warning) when credentials are missing.
	Mode    string `json:"mode,omitempty" yaml:"mode,omitempty"`
	BaseURL string `json:"base_url,omitempty" yaml:"base_url,omitempty"`
	UserID  string `json:"user_id,omitempty" yaml:"user_id,omitempty"`
	UserKey string `json:"user_key,omitempty" yaml:"user_key,omitempty"`
	// UserKeyFile names a file holding the user key; it is read by
	// LoadHybrid when UserKey is empty. Surrounding whitespace is trimmed.
	UserKeyFile string `json:"user_key_file,omitempty" yaml:"user_key_file,omitempty"`
	// Scopes is a non-empty subset of ScopeCurrentChat, ScopeResources and
	// ScopeAllUserMemory, without duplicates; empty means DefaultScopes.
	Scopes []string `json:"scopes,omitempty" yaml:"scopes,omitempty"`
	// TopK is 1..100; 0 means DefaultTopK.
	TopK int `json:"top_k,omitempty" yaml:"top_k,omitempty"`
	// Timeout bounds each gateway request; 0 means DefaultTimeout.
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// AppID and ProjectID default to "default".
	AppID     string `json:"app_id,omitempty" yaml:"app_id,omitempty"`
	ProjectID string `json:"project_id,omitempty" yaml:"project_id,omitempty"`
}

type hybridConfigAlias HybridConfig

// UnmarshalJSON reads timeout as a Go duration string ("10s", "500ms").
func (c *HybridConfig) UnmarshalJSON(b []byte) error {
	aux := struct {
		*hybridConfigAlias
		Timeout json.RawMessage `json:"timeout,omitempty"`
	}{hybridConfigAlias: (*hybridConfigAlias)(c)}
	if err := json.Unmarshal(b, &aux); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &ConfigError{Field: te.Field, Problem: "has the wrong JSON type"}
		}
		return &ConfigError{Field: "(section)", Problem: "is not a JSON object of the documented shape"}
	}
	c.Timeout = 0
	if len(aux.Timeout) > 0 && string(aux.Timeout) != "null" {
		var s string
		if err := json.Unmarshal(aux.Timeout, &s); err != nil {
			return &ConfigError{Field: "timeout", Problem: `must be a duration string such as "10s"`}
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return &ConfigError{Field: "timeout", Problem: `must be a duration string such as "10s"`}
		}
		c.Timeout = d
	}
	return nil
}

// MarshalJSON writes timeout as a Go duration string. The key is written
// as it is: this is the configuration's own encoding.
func (c HybridConfig) MarshalJSON() ([]byte, error) {
	aux := struct {
		hybridConfigAlias
		Timeout string `json:"timeout,omitempty"`
	}{hybridConfigAlias: hybridConfigAlias(c)}
	if c.Timeout != 0 {
		aux.Timeout = c.Timeout.String()
	}
	return json.Marshal(aux)
}

// String implements fmt.Stringer with the key redacted.
func (c HybridConfig) String() string {
	c.UserKey = redact(c.UserKey)
	return fmt.Sprintf("%+v", hybridConfigAlias(c))
}

// GoString implements fmt.GoStringer with the key redacted.
func (c HybridConfig) GoString() string { return c.String() }

// LogValue implements slog.LogValuer with the key redacted.
func (c HybridConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

// ConfigError is an invalid memory configuration. It names the field and
// never holds a configured value.
type ConfigError struct {
	Field   string // JSON name of the field, e.g. "user_key"
	Problem string
}

// Error implements error.
func (e *ConfigError) Error() string {
	return "memgate: hybrid memory config: " + e.Field + ": " + e.Problem
}

// normalize validates c and fills in defaults. It does not decide the
// mode from the credentials; LoadHybrid does.
func (c HybridConfig) normalize() (HybridConfig, error) {
	c.Mode = strings.TrimSpace(c.Mode)
	switch c.Mode {
	case "", ModeHybrid, ModeCurated:
	default:
		return c, &ConfigError{Field: "mode", Problem: `must be "hybrid" or "curated"`}
	}
	if len(c.Scopes) == 0 {
		c.Scopes = DefaultScopes()
	} else {
		seen := make([]string, 0, len(c.Scopes))
		for _, s := range c.Scopes {
			switch s {
			case ScopeCurrentChat, ScopeResources, ScopeAllUserMemory:
			default:
				return c, &ConfigError{Field: "scopes", Problem: "must hold only current_chat, resources and all_user_memory"}
			}
			if slices.Contains(seen, s) {
				return c, &ConfigError{Field: "scopes", Problem: "must not repeat a scope"}
			}
			seen = append(seen, s)
		}
		c.Scopes = seen
	}
	switch {
	case c.TopK == 0:
		c.TopK = DefaultTopK
	case c.TopK < 1 || c.TopK > 100:
		return c, &ConfigError{Field: "top_k", Problem: "must be between 1 and 100"}
	}
	switch {
	case c.Timeout == 0:
		c.Timeout = DefaultTimeout
	case c.Timeout < 0:
		return c, &ConfigError{Field: "timeout", Problem: "must be positive"}
	}
	c.AppID = strings.TrimSpace(c.AppID)
	if c.AppID == "" {
		c.AppID = DefaultAppID
	}
	c.ProjectID = strings.TrimSpace(c.ProjectID)
	if c.ProjectID == "" {
		c.ProjectID = DefaultAppID
	}
	c.BaseURL = strings.TrimSpace(c.BaseURL)
	if c.BaseURL != "" {
		if _, err := parseBaseURL(c.BaseURL); err != nil {
			return c, &ConfigError{Field: "base_url", Problem: "must be an absolute http or https URL"}
		}
	}
	c.UserID = strings.TrimSpace(c.UserID)
	c.UserKey = strings.TrimSpace(c.UserKey)
	if c.UserKey != "" && c.UserKeyFile != "" {
		return c, &ConfigError{Field: "user_key_file", Problem: "must not be set together with user_key"}
	}
	if c.UserKey == "" && c.UserKeyFile != "" {
		b, err := os.ReadFile(c.UserKeyFile)
		if err != nil {
			return c, &ConfigError{Field: "user_key_file", Problem: "cannot be read"}
		}
		c.UserKey = strings.TrimSpace(string(b))
		if c.UserKey == "" {
			return c, &ConfigError{Field: "user_key_file", Problem: "is empty"}
		}
	}
	return c, nil
}

// missingCredentials names the credential fields that are empty.
func (c HybridConfig) missingCredentials() []string {
	var m []string
	if c.BaseURL == "" {
		m = append(m, "base_url")
	}
	if c.UserID == "" {
		m = append(m, "user_id")
	}
	if c.UserKey == "" {
		m = append(m, "user_key")
	}
	return m
}

// LoadHybrid builds the hybrid-memory helper from a runtime's memory
// configuration section; section is nil when the section is missing.
//
//   - A missing section, or one with an empty Mode, is implicit hybrid:
//     with base_url, user_id and user_key all set the helper is enabled;
//     otherwise it degrades to curated-only and LoadHybrid returns exactly
//     one warning naming the missing fields.
//   - Mode "hybrid" requires the three credentials; a missing one is a
//     *ConfigError naming it.
//   - Mode "curated" returns a helper that does nothing.
//   - Any other mode, or an invalid scope list, top_k, timeout or base_url,
//     is a *ConfigError. These are checked in every mode.
//
// sink receives every Event; it may be nil. Warnings and errors never
// contain the user key or any other configured value.
func LoadHybrid(section *HybridConfig, sink func(Event), opts ...Option) (*Hybrid, []string, error) {
	var raw HybridConfig
	if section != nil {
		raw = *section
	}
	cfg, err := raw.normalize()
	if err != nil {
		return nil, nil, err
	}
	h := &Hybrid{cfg: cfg, sink: sink, now: time.Now}
	missing := cfg.missingCredentials()
	var warnings []string
	switch cfg.Mode {
	case ModeCurated:
		h.cfg.Mode = ModeCurated
		return h, nil, nil
	case ModeHybrid:
		if len(missing) > 0 {
			return nil, nil, &ConfigError{Field: missing[0], Problem: "is required when mode is hybrid (missing: " + strings.Join(missing, ", ") + ")"}
		}
	default:
		if len(missing) > 0 {
			h.cfg.Mode = ModeCurated
			warnings = append(warnings, "memgate: hybrid memory is not configured (missing "+strings.Join(missing, ", ")+"); using curated memory only")
			return h, warnings, nil
		}
	}
	gw, err := NewGatewayClient(cfg.BaseURL, opts...)
	if err != nil {
		return nil, nil, &ConfigError{Field: "base_url", Problem: "must be an absolute http or https URL"}
	}
	h.cfg.Mode = ModeHybrid
	h.gw = gw
	return h, warnings, nil
}

// Event names, one per outcome of a gateway operation.
const (
	EventRecallSucceeded = "memory_gateway_recall_succeeded"
	EventRecallFailed    = "memory_gateway_recall_failed"
	EventAddSucceeded    = "memory_gateway_add_succeeded"
	EventAddFailed       = "memory_gateway_add_failed"
	EventFlushSucceeded  = "memory_gateway_flush_succeeded"
	EventFlushFailed     = "memory_gateway_flush_failed"
)

// Event operations.
const (
	OpSearch = "search"
	OpAdd    = "add"
	OpFlush  = "flush"
)

// Failure categories of an Event.
const (
	CategoryTimeout      = "timeout"       // the configured timeout (or the caller's deadline) passed
	CategoryCanceled     = "canceled"      // the caller's context was canceled
	CategoryUnauthorized = "unauthorized"  // 401 or 403
	CategoryRateLimited  = "rate_limited"  // 429
	CategoryServerError  = "server_error"  // 5xx
	CategoryClientError  = "client_error"  // another 4xx
	CategoryBadResponse  = "bad_response"  // 2xx with a body not of the documented shape, or an unexpected status
	CategoryNetwork      = "network"       // no HTTP answer: DNS, connection refused or reset, TLS
	CategoryInvalidInput = "invalid_input" // the helper was called without what it needs; no request was sent
)

// Event reports the outcome of one gateway operation. It holds sanitized
// metadata only: never the user key, the user id, queries, messages or
// any request or response body.
type Event struct {
	Name      string `json:"name"`               // one of the Event* constants
	Operation string `json:"operation"`          // OpSearch, OpAdd or OpFlush
	Category  string `json:"category,omitempty"` // a Category* constant; failures only
	// Status is the HTTP status received, 0 when there was none.
	Status   int    `json:"status,omitempty"`
	Results  int    `json:"results,omitempty"`  // recall: items returned
	Messages int    `json:"messages,omitempty"` // add: messages sent
	JobID    string `json:"job_id,omitempty"`   // flush: the queued job
	// Duration is the time the operation took, request included.
	Duration time.Duration `json:"duration"`
}

// Failed reports whether the event is a failure.
func (e Event) Failed() bool { return e.Category != "" }

// SlogSink returns an event sink that logs each event to l: successes at
// Info, failures at Warn.
func SlogSink(l *slog.Logger) func(Event) {
	return func(e Event) {
		lvl := slog.LevelInfo
		if e.Failed() {
			lvl = slog.LevelWarn
		}
		attrs := []slog.Attr{slog.String("operation", e.Operation), slog.Duration("duration", e.Duration)}
		if e.Category != "" {
			attrs = append(attrs, slog.String("category", e.Category))
		}
		if e.Status != 0 {
			attrs = append(attrs, slog.Int("status", e.Status))
		}
		switch e.Operation {
		case OpSearch:
			attrs = append(attrs, slog.Int("results", e.Results))
		case OpAdd:
			attrs = append(attrs, slog.Int("messages", e.Messages))
		case OpFlush:
			if e.JobID != "" {
				attrs = append(attrs, slog.String("job_id", e.JobID))
			}
		}
		l.LogAttrs(context.Background(), lvl, e.Name, attrs...)
	}
}

// classify maps an error of a gateway call to a category and the HTTP
// status received. parent is the caller's context, to tell the caller's
// cancellation from the helper's own timeout.
func classify(parent context.Context, err error) (string, int) {
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Status == 401 || e.Status == 403:
			return CategoryUnauthorized, e.Status
		case e.Status == 429:
			return CategoryRateLimited, e.Status
		case e.Status >= 500:
			return CategoryServerError, e.Status
		case e.Status >= 400:
			return CategoryClientError, e.Status
		}
		return CategoryBadResponse, e.Status
	}
	var br *badResponseError
	if errors.As(err, &br) {
		return CategoryBadResponse, br.status
	}
	if errors.Is(parent.Err(), context.Canceled) {
		return CategoryCanceled, 0
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return CategoryTimeout, 0
	}
	if errors.Is(err, context.Canceled) {
		return CategoryCanceled, 0
	}
	return CategoryNetwork, 0
}

// Hybrid is the hybrid-memory helper for chat runtimes (SPEC §12): recall
// from memgate before each model run, persist each completed turn after
// it. Neither call ever fails the user's turn: every outcome is reported
// as an Event to the sink instead. A Hybrid in curated mode, and a nil
// *Hybrid, do nothing and make no HTTP calls. It is safe for concurrent
// use.
type Hybrid struct {
	cfg  HybridConfig
	gw   *GatewayClient // nil in curated mode
	sink func(Event)
	now  func() time.Time

	mu     sync.Mutex
	lastMS int64 // the last message timestamp handed out
}

// Enabled reports whether the helper talks to memgate.
func (h *Hybrid) Enabled() bool { return h != nil && h.gw != nil }

// Mode returns the effective mode, ModeHybrid or ModeCurated.
func (h *Hybrid) Mode() string {
	if h.Enabled() {
		return ModeHybrid
	}
	return ModeCurated
}

// Config returns the effective configuration, defaults applied.
func (h *Hybrid) Config() HybridConfig {
	if h == nil {
		return HybridConfig{Mode: ModeCurated}
	}
	c := h.cfg
	c.Scopes = slices.Clone(c.Scopes)
	return c
}

// emit sends e to the sink. A panicking sink must not break a turn.
func (h *Hybrid) emit(e Event) {
	if h.sink == nil {
		return
	}
	defer func() { _ = recover() }()
	h.sink(e)
}

// RecallInput is what RecallBeforeRun searches for.
type RecallInput struct {
	ConversationID string // required; current_chat searches "chat:<ConversationID>"
	Query          string // required; usually the user's prompt
}

// ReferenceItem is a recalled memory for the model's context. It is
// reference material from storage, not an instruction: Untrusted is
// always true and runtimes should present items as quoted data.
type ReferenceItem struct {
	ID          string  `json:"id"`
	SessionID   string  `json:"session_id"`
	Text        string  `json:"text"`
	Score       float64 `json:"score"`
	SourceScope string  `json:"source_scope"`
	ResourceURI string  `json:"resource_uri,omitempty"`
	Untrusted   bool    `json:"untrusted"`
}

// RecallBeforeRun searches memgate with the configured scopes and top_k
// and returns at most top_k items, with the gateway's raw payloads
// dropped. It never fails: on any error it returns an empty, non-nil
// slice and reports EventRecallFailed. It makes no request when the
// conversation id or the query is blank (reported as invalid_input).
func (h *Hybrid) RecallBeforeRun(ctx context.Context, in RecallInput) []ReferenceItem {
	items := []ReferenceItem{}
	if !h.Enabled() {
		return items
	}
	start := time.Now()
	if strings.TrimSpace(in.ConversationID) == "" || strings.TrimSpace(in.Query) == "" {
		h.emit(Event{Name: EventRecallFailed, Operation: OpSearch, Category: CategoryInvalidInput})
		return items
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	res, status, err := h.gw.search(cctx, SearchRequest{
		UserID: h.cfg.UserID, UserKey: h.cfg.UserKey, ConversationID: in.ConversationID,
		Query: in.Query, Scope: h.cfg.Scopes, TopK: h.cfg.TopK,
		AppID: h.cfg.AppID, ProjectID: h.cfg.ProjectID,
	})
	if err != nil {
		cat, st := classify(ctx, err)
		h.emit(Event{Name: EventRecallFailed, Operation: OpSearch, Category: cat, Status: orStatus(st, status), Duration: time.Since(start)})
		return items
	}
	for _, r := range res.Results {
		if len(items) == h.cfg.TopK {
			break
		}
		it := ReferenceItem{ID: r.ID, SessionID: r.SessionID, Text: r.Text, Score: r.Score, SourceScope: r.SourceScope, Untrusted: true}
		if r.ResourceURI != nil {
			it.ResourceURI = *r.ResourceURI
		}
		items = append(items, it)
	}
	h.emit(Event{Name: EventRecallSucceeded, Operation: OpSearch, Status: status, Results: len(items), Duration: time.Since(start)})
	return items
}

// PersistInput is one completed turn.
type PersistInput struct {
	ConversationID string // required; the turn is stored in session "chat:<ConversationID>"
	UserPrompt     string // required
	FinalAnswer    string // required: only completed runs are persisted
	// UserSenderID defaults to the configured user id;
	// AssistantSenderID to DefaultAssistantSenderID.
	UserSenderID      string
	AssistantSenderID string
}

// nextTimestamps returns two message timestamps in Unix milliseconds,
// positive and strictly increasing across every call on h, even when the
// wall clock stands still or steps back.
func (h *Hybrid) nextTimestamps() (user, assistant int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	next := func() int64 {
		ms := h.now().UnixMilli()
		if ms <= h.lastMS {
			ms = h.lastMS + 1
		}
		if ms < 1 {
			ms = 1
		}
		h.lastMS = ms
		return ms
	}
	user = next()
	return user, next()
}

// PersistAfterRun stores a completed turn: exactly one add holding the
// user prompt then the final answer, and, only if the add succeeded, one
// flush to queue extraction. Neither is retried (a lost answer to an add
// is reported, not resent). It never returns an error; it reports
// EventAddSucceeded or EventAddFailed, then EventFlushSucceeded or
// EventFlushFailed when a flush was sent.
//
// The turn is persisted even when ctx is canceled (the turn is complete
// by then); each request is bounded by the configured timeout. Values of
// ctx are kept.
func (h *Hybrid) PersistAfterRun(ctx context.Context, in PersistInput) {
	if !h.Enabled() {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if strings.TrimSpace(in.ConversationID) == "" || strings.TrimSpace(in.UserPrompt) == "" || strings.TrimSpace(in.FinalAnswer) == "" {
		h.emit(Event{Name: EventAddFailed, Operation: OpAdd, Category: CategoryInvalidInput})
		return
	}
	userSender := orDefault(in.UserSenderID, h.cfg.UserID)
	botSender := orDefault(in.AssistantSenderID, DefaultAssistantSenderID)
	userTS, botTS := h.nextTimestamps()
	session := SessionID(in.ConversationID)
	msgs := []Message{
		{SenderID: userSender, Role: RoleUser, Timestamp: userTS, Content: in.UserPrompt},
		{SenderID: botSender, Role: RoleAssistant, Timestamp: botTS, Content: in.FinalAnswer},
	}

	start := time.Now()
	actx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	status, err := h.gw.add(actx, AddRequest{
		UserID: h.cfg.UserID, UserKey: h.cfg.UserKey, SessionID: session,
		AppID: h.cfg.AppID, ProjectID: h.cfg.ProjectID, Messages: msgs,
	})
	cancel()
	if err != nil {
		cat, st := classify(ctx, err)
		h.emit(Event{Name: EventAddFailed, Operation: OpAdd, Category: cat, Status: orStatus(st, status), Messages: len(msgs), Duration: time.Since(start)})
		return
	}
	h.emit(Event{Name: EventAddSucceeded, Operation: OpAdd, Status: status, Messages: len(msgs), Duration: time.Since(start)})

	start = time.Now()
	fctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	res, status, err := h.gw.flush(fctx, FlushRequest{
		UserID: h.cfg.UserID, UserKey: h.cfg.UserKey, SessionID: session,
		AppID: h.cfg.AppID, ProjectID: h.cfg.ProjectID,
	})
	if err != nil {
		cat, st := classify(ctx, err)
		h.emit(Event{Name: EventFlushFailed, Operation: OpFlush, Category: cat, Status: orStatus(st, status), Duration: time.Since(start)})
		return
	}
	h.emit(Event{Name: EventFlushSucceeded, Operation: OpFlush, Status: status, JobID: res.JobID, Duration: time.Since(start)})
}

func orStatus(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func orDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return v
}
