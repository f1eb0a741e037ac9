package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/memgate/memgate/internal/backoff"
	"github.com/memgate/memgate/internal/remote"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// PromptVersion names the prompts of the LLM extractor and reconciler;
// the caller stores it on every record they produce.
const PromptVersion = "extract-v1"

// Sentinel errors of the LLM client.
var (
	// ErrMalformed: the model answered, but not with the JSON asked for.
	ErrMalformed = errors.New("extract: malformed model output")
	// ErrUnavailable: the endpoint could not be reached or kept failing
	// (timeouts, 429, 5xx) until the retries ran out.
	ErrUnavailable = errors.New("extract: model endpoint unavailable")
)

// Defaults of LLMConfig.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxRetries  = 4
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
)

// ConfidenceLLM is the confidence of facts the model extracts (SPEC §3:
// inferred).
const ConfidenceLLM = 0.6

const (
	maxResponseBody = 16 << 20
	maxErrorBody    = 8 << 10
	maxErrorMessage = 200
)

// LLMConfig configures the client of an OpenAI-compatible chat-completions
// endpoint (POST {BaseURL}/chat/completions).
type LLMConfig struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1".
	BaseURL string
	// Model is the model name sent with each request.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <key>". It is
	// never logged and never appears in an error.
	APIKey string
	// Timeout bounds each request attempt (default 30s).
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt (network error,
	// timeout, 429, 5xx) is retried (default 4; negative: no retries).
	MaxRetries int
	// BackoffBase is the first retry's backoff; each retry doubles it,
	// with jitter (default 500ms). A Retry-After header takes precedence.
	BackoffBase time.Duration
	// MaxBackoff caps any single wait, Retry-After included (default 30s).
	MaxBackoff time.Duration
	// HTTPClient is the client to use; nil means a fresh http.Client.
	HTTPClient *http.Client
}

// LLM extracts and reconciles facts with a chat model. It is safe for
// concurrent use.
type LLM struct {
	cfg      LLMConfig
	endpoint string
	client   *http.Client
	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// NewLLM validates c, fills in the defaults and returns a client.
func NewLLM(c LLMConfig) (*LLM, error) {
	u, err := url.Parse(c.BaseURL)
	switch {
	case strings.TrimSpace(c.BaseURL) == "":
		return nil, errors.New("extract: llm: BaseURL is empty (want e.g. https://api.openai.com/v1)")
	case err != nil:
		return nil, errors.New("extract: llm: BaseURL is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("extract: llm: BaseURL must be an http:// or https:// URL")
	case u.Host == "":
		return nil, errors.New("extract: llm: BaseURL has no host")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("extract: llm: BaseURL must not have a query or fragment")
	case strings.TrimSpace(c.Model) == "":
		return nil, errors.New("extract: llm: Model is empty")
	case c.Timeout < 0 || c.BackoffBase < 0 || c.MaxBackoff < 0:
		return nil, errors.New("extract: llm: Timeout, BackoffBase and MaxBackoff must not be negative")
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	l := &LLM{
		cfg:      c,
		endpoint: strings.TrimRight(c.BaseURL, "/") + "/chat/completions",
		client:   c.HTTPClient,
		sleep:    sleepCtx,
	}
	if l.client == nil {
		l.client = &http.Client{}
	}
	return l, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

const extractPrompt = `You extract durable facts from a conversation for a long-term memory store.
Prompt version: ` + PromptVersion + `.

Answer with JSON only: {"facts": [{"type": ..., "content": ..., "entities": [...], "event_time": ...}]}.
- type: "preference" (likes, dislikes, how the assistant should answer), "decision" (a choice that was made) or "belief" (any other fact, policy or rule).
- content: one atomic, self-contained sentence in the third person that names the speaker by sender id, e.g. "u1 prefers PostgreSQL for backend work". One fact per statement; no pronouns that need the conversation to be understood.
- entities: lower-case names of the technologies, people, projects and places the fact mentions.
- event_time: for a fact about a specific date, that date as RFC 3339 (resolve "yesterday", "next Tuesday" against the session date); otherwise null.
Only facts the speakers state: no questions, hypotheticals, greetings or small talk. Preferences and rules come from the user; decisions from anyone.
Answer {"facts": []} when nothing is worth remembering.`

const extractSchema = `{"type":"object","additionalProperties":false,"required":["facts"],
"properties":{"facts":{"type":"array","items":{"type":"object","additionalProperties":false,
"required":["type","content","entities","event_time"],
"properties":{"type":{"type":"string","enum":["belief","preference","decision"]},
"content":{"type":"string"},"entities":{"type":"array","items":{"type":"string"}},
"event_time":{"type":["string","null"]}}}}}}`

const reconcilePrompt = `You keep a long-term memory store consistent.
Prompt version: ` + PromptVersion + `.

You get a candidate fact and the existing facts most similar to it. Choose one action:
- "ADD": the candidate is new information.
- "UPDATE": the candidate changes an existing fact (same subject and predicate, different value, e.g. a changed preference); it supersedes that fact.
- "INVALIDATE": the candidate says an existing fact is no longer true (e.g. "no longer uses redis") without replacing it.
- "NOOP": the candidate repeats an existing fact.
Answer with JSON only: {"action": ..., "target_id": ..., "reason": ...}. target_id is the id of the existing fact for UPDATE, INVALIDATE and NOOP, null for ADD. reason is one short sentence.`

const reconcileSchema = `{"type":"object","additionalProperties":false,"required":["action","target_id","reason"],
"properties":{"action":{"type":"string","enum":["ADD","UPDATE","INVALIDATE","NOOP"]},
"target_id":{"type":["string","null"]},"reason":{"type":"string"}}}`

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema struct {
		Name   string          `json:"name"`
		Strict bool            `json:"strict"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

type chatRequest struct {
	Model          string         `json:"model"`
	Messages       []chatMessage  `json:"messages"`
	ResponseFormat responseFormat `json:"response_format"`
	Temperature    float64        `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal string  `json:"refusal"`
		} `json:"message"`
	} `json:"choices"`
}

// Extract asks the model for the facts in turns. Facts with an unknown
// type or an empty or over-long content are dropped; an unreadable
// event_time is dropped from its fact. Every fact's Evidence is the
// MessageIDs of all turns.
func (l *LLM) Extract(ctx context.Context, turns []Turn) ([]Fact, error) {
	if len(turns) == 0 {
		return nil, nil
	}
	content, err := l.complete(ctx, "facts", extractPrompt, transcript(turns), extractSchema)
	if err != nil {
		return nil, err
	}
	var out struct {
		Facts []struct {
			Type      string   `json:"type"`
			Content   string   `json:"content"`
			Entities  []string `json:"entities"`
			EventTime *string  `json:"event_time"`
		} `json:"facts"`
	}
	if err := decodeStrictObject(content, &out); err != nil {
		return nil, err
	}
	var evidence []string
	for _, t := range turns {
		if t.MessageID != "" && !slices.Contains(evidence, t.MessageID) {
			evidence = append(evidence, t.MessageID)
		}
	}
	loc := time.UTC
	if ref := sessionDate(turns); !ref.IsZero() {
		loc = ref.Location()
	}
	facts := make([]Fact, 0, len(out.Facts))
	for _, rf := range out.Facts {
		c := strings.Join(strings.Fields(rf.Content), " ")
		if !validType(rf.Type) || c == "" || utf8.RuneCountInString(c) > maxContent {
			continue
		}
		f := Fact{Type: rf.Type, Content: c, Confidence: ConfidenceLLM, Evidence: slices.Clone(evidence)}
		for _, e := range rf.Entities {
			if e = strings.ToLower(strings.Join(strings.Fields(e), " ")); e != "" {
				if tc, ok := techTable[e]; ok {
					e = tc.name
				}
				f.Entities = append(f.Entities, e)
			}
		}
		slices.Sort(f.Entities)
		f.Entities = slices.Compact(f.Entities)
		for _, e := range f.Entities {
			if _, ok := techTable[e]; ok {
				f.Tags = append(f.Tags, TagTechnology)
				break
			}
		}
		if rf.EventTime != nil {
			if t, ok := parseEventTime(*rf.EventTime, loc); ok {
				f.EventTime = &t
				f.Tags = append(f.Tags, TagTemporal)
			}
		}
		facts = append(facts, f)
	}
	return facts, nil
}

func validType(t string) bool {
	return t == TypeBelief || t == TypePreference || t == TypeDecision
}

func parseEventTime(s string, loc *time.Location) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	if t, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		return t, true
	}
	return time.Time{}, false
}

func sessionDate(turns []Turn) time.Time {
	for _, t := range turns {
		if !t.SessionDate.IsZero() {
			return t.SessionDate
		}
		if !t.Time.IsZero() {
			return t.Time
		}
	}
	return time.Time{}
}

// transcript renders turns as the user message of an extraction request.
func transcript(turns []Turn) string {
	var b strings.Builder
	if ref := sessionDate(turns); !ref.IsZero() {
		fmt.Fprintf(&b, "Session date: %s (%s)\n", ref.Format("2006-01-02"), ref.Weekday())
	}
	if turns[0].SessionID != "" {
		fmt.Fprintf(&b, "Session: %s\n", turns[0].SessionID)
	}
	b.WriteString("\nConversation:\n")
	for _, t := range turns {
		b.WriteString("[")
		if !t.Time.IsZero() {
			b.WriteString(t.Time.Format(time.RFC3339))
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s (%s)] %s\n", cmpOr(t.SenderID, "unknown"), cmpOr(t.Role, "unknown"), t.Text)
	}
	return b.String()
}

// Existing is a stored fact a candidate is reconciled against.
type Existing struct {
	ID, Type, Content string
	Entities          []string
}

// Action is what reconciliation does with a candidate fact.
type Action string

// Reconciliation actions.
const (
	ActionAdd        Action = "ADD"        // store the candidate as a new fact
	ActionUpdate     Action = "UPDATE"     // the candidate supersedes TargetID
	ActionInvalidate Action = "INVALIDATE" // set invalidated_at on TargetID (the candidate negates it)
	ActionNoop       Action = "NOOP"       // the candidate repeats TargetID
)

// Reconciliation is the verdict on one candidate fact.
type Reconciliation struct {
	Action   Action
	TargetID string // for UPDATE, INVALIDATE and NOOP
	Reason   string
}

// Reconcile asks the model what to do with candidate given the existing
// facts most similar to it (the caller passes about 5). With no existing
// facts the answer is ADD without a request. An unknown action, or a
// target_id that is not one of existing, is an error wrapping
// ErrMalformed.
func (l *LLM) Reconcile(ctx context.Context, candidate Fact, existing []Existing) (Reconciliation, error) {
	if len(existing) == 0 {
		return Reconciliation{Action: ActionAdd, Reason: "no similar existing fact"}, nil
	}
	type fact struct {
		ID       string   `json:"id,omitempty"`
		Type     string   `json:"type"`
		Content  string   `json:"content"`
		Entities []string `json:"entities,omitempty"`
	}
	in := struct {
		Candidate fact   `json:"candidate"`
		Existing  []fact `json:"existing"`
	}{Candidate: fact{Type: candidate.Type, Content: candidate.Content, Entities: candidate.Entities}}
	for _, e := range existing {
		in.Existing = append(in.Existing, fact{ID: e.ID, Type: e.Type, Content: e.Content, Entities: e.Entities})
	}
	user, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return Reconciliation{}, fmt.Errorf("extract: llm: encoding facts: %w", err)
	}
	content, err := l.complete(ctx, "reconciliation", reconcilePrompt, string(user), reconcileSchema)
	if err != nil {
		return Reconciliation{}, err
	}
	var out struct {
		Action   string  `json:"action"`
		TargetID *string `json:"target_id"`
		Reason   string  `json:"reason"`
	}
	if err := decodeStrictObject(content, &out); err != nil {
		return Reconciliation{}, err
	}
	r := Reconciliation{Action: Action(strings.ToUpper(strings.TrimSpace(out.Action))), Reason: strings.TrimSpace(out.Reason)}
	switch r.Action {
	case ActionAdd:
		return r, nil
	case ActionUpdate, ActionInvalidate, ActionNoop:
	default:
		return Reconciliation{}, fmt.Errorf("%w: unknown action %q", ErrMalformed, clip(out.Action))
	}
	if out.TargetID == nil || !slices.ContainsFunc(existing, func(e Existing) bool { return e.ID == *out.TargetID }) {
		got := "null"
		if out.TargetID != nil {
			got = strconv.Quote(clip(*out.TargetID))
		}
		return Reconciliation{}, fmt.Errorf("%w: %s target_id %s is not one of the existing facts", ErrMalformed, r.Action, got)
	}
	r.TargetID = *out.TargetID
	return r, nil
}

// decodeStrictObject parses a model answer as one JSON object, allowing a
// surrounding Markdown code fence.
func decodeStrictObject(content string, v any) error {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimPrefix(s, "json")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		return fmt.Errorf("%w: answer is not a JSON object", ErrMalformed)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: text after the JSON object", ErrMalformed)
	}
	return nil
}

func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	cut := 40
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// APIError is a non-2xx answer of the endpoint that is not worth retrying
// (e.g. 400, 401, 404).
type APIError struct {
	StatusCode int
	Message    string // the server's message, at most 200 bytes, API key removed
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("extract: llm: HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// retryable marks an attempt's failure worth retrying.
type retryable struct {
	err        error
	retryAfter time.Duration
	hasAfter   bool
}

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

// complete sends one chat-completions request with structured output and
// returns choices[0].message.content, retrying temporary failures.
func (l *LLM) complete(ctx context.Context, name, system, user, schema string) (string, error) {
	req := chatRequest{
		Model:    l.cfg.Model,
		Messages: []chatMessage{{Role: "system", Content: system}, {Role: "user", Content: user}},
	}
	req.ResponseFormat.Type = "json_schema"
	req.ResponseFormat.JSONSchema.Name = name
	req.ResponseFormat.JSONSchema.Strict = true
	req.ResponseFormat.JSONSchema.Schema = json.RawMessage(schema)
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("extract: llm: encoding request: %w", err)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("extract: llm: %w", err)
		}
		content, err := l.post(ctx, body)
		if err == nil {
			return content, nil
		}
		var re *retryable
		if !errors.As(err, &re) {
			return "", err
		}
		if attempt >= l.cfg.MaxRetries {
			return "", fmt.Errorf("%w: giving up after %d attempts: %w", ErrUnavailable, attempt+1, re.err)
		}
		wait := l.backoff(attempt, re)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			// The retries fit the caller's deadline: a wait that would
			// outlast it only hides the failure until then.
			return "", fmt.Errorf("%w: giving up after %d attempts, the deadline leaves no time to retry: %w", ErrUnavailable, attempt+1, re.err)
		}
		if err := l.sleep(ctx, wait); err != nil {
			return "", fmt.Errorf("extract: llm: %w while waiting to retry (last error: %v)", err, re.err)
		}
	}
}

// backoff is the wait before retry attempt+1: Retry-After when the server
// sent it, else BackoffBase·2^attempt with equal jitter; both capped by
// MaxBackoff.
func (l *LLM) backoff(attempt int, re *retryable) time.Duration {
	if re.hasAfter {
		return min(re.retryAfter, l.cfg.MaxBackoff)
	}
	return backoff.Delay(l.cfg.BackoffBase, l.cfg.MaxBackoff, attempt)
}

// post makes one attempt. Its errors never contain the API key or the
// request body; temporary ones are *retryable.
func (l *LLM) post(ctx context.Context, body []byte) (string, error) {
	actx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	req, err := remote.NewPost(actx, l.endpoint, l.cfg.APIKey, body)
	if err != nil {
		return "", errors.New("extract: llm: cannot build the request")
	}
	resp, err := l.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("extract: llm: %w", ctx.Err())
		}
		if actx.Err() != nil {
			return "", &retryable{err: fmt.Errorf("extract: llm: POST %s: timed out after %v", remote.RedactedURL(l.endpoint, l.cfg.APIKey), l.cfg.Timeout)}
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", &retryable{err: fmt.Errorf("extract: llm: POST %s: %s", remote.RedactedURL(l.endpoint, l.cfg.APIKey), remote.Redact(l.cfg.APIKey, err.Error()))}
	}
	defer remote.Drain(resp.Body, maxErrorBody)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		f := remote.ReadFailure(resp, l.cfg.APIKey, maxErrorBody, maxErrorMessage)
		apiErr := &APIError{StatusCode: f.Status, Message: f.Message}
		if f.Status == http.StatusTooManyRequests || f.Status >= 500 || f.Status == http.StatusRequestTimeout {
			return "", &retryable{err: apiErr, retryAfter: f.RetryAfter, hasAfter: f.HasRetryAfter}
		}
		return "", apiErr
	}
	var cr chatResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBody)).Decode(&cr); err != nil {
		switch {
		case ctx.Err() != nil:
			return "", fmt.Errorf("extract: llm: %w", ctx.Err())
		case actx.Err() != nil:
			return "", &retryable{err: fmt.Errorf("extract: llm: reading the answer timed out after %v", l.cfg.Timeout)}
		case errors.Is(err, io.ErrUnexpectedEOF):
			return "", &retryable{err: errors.New("extract: llm: answer cut short")}
		}
		return "", fmt.Errorf("%w: response is not a chat completion: %v", ErrMalformed, err)
	}
	if len(cr.Choices) == 0 {
		return "", fmt.Errorf("%w: response has no choices", ErrMalformed)
	}
	m := cr.Choices[0].Message
	if m.Content == nil || strings.TrimSpace(*m.Content) == "" {
		if m.Refusal != "" {
			return "", fmt.Errorf("%w: the model refused: %s", ErrMalformed, clip(remote.Redact(l.cfg.APIKey, m.Refusal)))
		}
		return "", fmt.Errorf("%w: empty message content", ErrMalformed)
	}
	return *m.Content, nil
}
