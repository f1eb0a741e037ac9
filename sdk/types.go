package sdk

import (
	"encoding/json"
	"time"
)

// Record types (SPEC §3).
const (
	TypeBelief     = "belief"
	TypeDecision   = "decision"
	TypeEpisode    = "episode"
	TypeSkill      = "skill"
	TypeEntity     = "entity"
	TypePreference = "preference"
	TypeReflection = "reflection"
	TypeResource   = "resource"
)

// Record statuses.
const (
	StatusProvisional = "provisional"
	StatusActive      = "active"
	StatusQuarantined = "quarantined"
	StatusArchived    = "archived"
	StatusSuperseded  = "superseded"
	StatusForgotten   = "forgotten"
)

// Access levels (SPEC §2).
const (
	AccessPublic    = "public"
	AccessAgent     = "agent"
	AccessUser      = "user"
	AccessSensitive = "sensitive"
)

// Gate decisions (SPEC §4). A rejection is an *Error, never a decision.
const (
	DecisionAccepted    = "accepted"
	DecisionProvisional = "provisional"
	DecisionQueued      = "queued"
	DecisionQuarantined = "quarantined"
	DecisionDuplicate   = "duplicate"
)

// Scope holds a record's optional scope keys; empty means unset.
type Scope struct {
	UserID    string `json:"user_id,omitempty"`
	AgentID   string `json:"agent_id,omitempty"`
	AppID     string `json:"app_id,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
}

// Source is a record's provenance. Agent is always the writing principal's
// name, PrincipalID its id (which ownership follows).
type Source struct {
	Agent       string   `json:"agent"`
	PrincipalID string   `json:"principal_id"`
	Kind        string   `json:"kind"` // observed, told or inferred
	Confidence  float64  `json:"confidence"`
	Evidence    []string `json:"evidence"`
}

// SourceInput is the writer-supplied part of the provenance.
type SourceInput struct {
	Kind       string   `json:"kind,omitempty"`       // default observed
	Confidence *float64 `json:"confidence,omitempty"` // default depends on Kind
	Evidence   []string `json:"evidence,omitempty"`
}

// GateInfo is the gate decision that admitted a version.
type GateInfo struct {
	DecisionID string `json:"decision_id"`
	Decision   string `json:"decision"`
	Origin     string `json:"origin"` // external, consolidation or maintenance
}

// Record is one memory at one version (SPEC §3).
type Record struct {
	ID              string          `json:"id"`
	Type            string          `json:"type"`
	Category        string          `json:"category"`
	Content         string          `json:"content"`
	ContentSHA256   string          `json:"content_sha256"`
	Metadata        json.RawMessage `json:"metadata"`
	Entities        []string        `json:"entities"`
	Version         int             `json:"version"`
	SupersededBy    *string         `json:"superseded_by"`
	Supersedes      *string         `json:"supersedes"`
	Status          string          `json:"status"`
	Source          Source          `json:"source"`
	Scope           Scope           `json:"scope"`
	ValidFrom       *time.Time      `json:"valid_from"`
	ValidUntil      *time.Time      `json:"valid_until"`
	IngestedAt      time.Time       `json:"ingested_at"`
	InvalidatedAt   *time.Time      `json:"invalidated_at"`
	Access          string          `json:"access"`
	Classification  string          `json:"classification"`
	Gate            GateInfo        `json:"gate"`
	DecayScore      float64         `json:"decay_score"`
	Path            string          `json:"path"` // fast or slow
	LastRetrievedAt *time.Time      `json:"last_retrieved_at"`
	RetrievalCount  int64           `json:"retrieval_count"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	// ModifiedBy is the principal id that wrote this version.
	ModifiedBy string `json:"modified_by"`
	// Citation, "mem://ID@vN", is set by Client.Get only; write results
	// and search hits carry theirs beside the record.
	Citation string `json:"citation,omitempty"`
}

// WriteRequest proposes a new record. Type and Content are required.
type WriteRequest struct {
	Type           string          `json:"type"`
	Category       string          `json:"category,omitempty"`
	Content        string          `json:"content"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	Entities       []string        `json:"entities,omitempty"`
	Source         *SourceInput    `json:"source,omitempty"`
	Scope          Scope           `json:"scope"`
	ValidFrom      *time.Time      `json:"valid_from,omitempty"`
	ValidUntil     *time.Time      `json:"valid_until,omitempty"`
	Access         string          `json:"access,omitempty"`
	Classification string          `json:"classification,omitempty"`
	// Status may be empty (the gate decides) or "provisional".
	Status string `json:"status,omitempty"`
	// Supersedes names an active record this one replaces.
	Supersedes string `json:"supersedes,omitempty"`
	Path       string `json:"path,omitempty"`
}

// WriteResult is the gate's answer to a write or a patch.
type WriteResult struct {
	Decision   string   `json:"decision"`
	Reason     string   `json:"reason,omitempty"`
	Record     Record   `json:"record"`
	Citation   string   `json:"citation"`
	ApprovalID string   `json:"approval_id,omitempty"`
	PIIKinds   []string `json:"pii_kinds,omitempty"`
}

// GetOptions selects what Client.Get reads.
type GetOptions struct {
	Version          int        // 0: the current version
	KnownAt          *time.Time // the record as memgate knew it then
	IncludeSensitive bool
}

// ListRequest filters Client.List. Zero fields do not filter.
type ListRequest struct {
	Types              []string
	Statuses           []string
	Category           string
	Entity             string
	Scope              Scope
	AsOf               *time.Time
	KnownAt            *time.Time
	Limit              int // 0: the server's default page size
	Cursor             string
	MinConfidence      float64
	IncludeSensitive   bool
	IncludeInvalidated bool
}

// ListResult is one page of records, newest first.
type ListResult struct {
	Records []Record `json:"records"`
	// NextCursor is empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// RecordSearchRequest is a hybrid search over records (POST /v1/search).
// Only Query is required.
type RecordSearchRequest struct {
	Query         string     `json:"query"`
	K             int        `json:"k,omitempty"` // 1..100, default 10
	Types         []string   `json:"types,omitempty"`
	Statuses      []string   `json:"statuses,omitempty"`
	Scope         Scope      `json:"scope"`
	Category      string     `json:"category,omitempty"`
	Entity        string     `json:"entity,omitempty"`
	AsOf          *time.Time `json:"as_of,omitempty"`
	KnownAt       *time.Time `json:"known_at,omitempty"`
	MinConfidence float64    `json:"min_confidence,omitempty"`
	// MinRelevance (0..1) drops hits less relevant than this, so an
	// empty result means nothing relevant is stored.
	MinRelevance       float64 `json:"min_relevance,omitempty"`
	IncludeSensitive   bool    `json:"include_sensitive,omitempty"`
	IncludeInvalidated bool    `json:"include_invalidated,omitempty"`
	Explain            bool    `json:"explain,omitempty"`
	// Route forces a route: skip, simple, multi_hop or exploratory.
	Route string `json:"route,omitempty"`
	// Signals restricts the candidate generators: lexical, dense, graph.
	Signals         []string           `json:"signals,omitempty"`
	MMR             *float64           `json:"mmr,omitempty"`
	RecencyHalfLife string             `json:"recency_half_life,omitempty"` // Go duration, e.g. "720h"
	RecencyWeight   float64            `json:"recency_weight,omitempty"`
	Weights         map[string]float64 `json:"weights,omitempty"`
	Context         *float64           `json:"context,omitempty"`
	Feedback        *float64           `json:"feedback,omitempty"`
	// Opening (0..10; server default 0.5) lifts the user's opening turn
	// of each session for questions asking for every instance ("how
	// many", "all the"); 0 turns it off.
	Opening *float64 `json:"opening,omitempty"`
	// Ranker re-orders a turns-only search's fused top results with the
	// built-in learned ranker (server default on); false keeps the fused
	// order.
	Ranker *bool `json:"ranker,omitempty"`
}

// SignalScore is one retrieval signal's contribution to a hit.
type SignalScore struct {
	Rank  int     `json:"rank"`
	Score float64 `json:"score"`
}

// RecordHit is one search result. Score orders one query's results;
// Relevance (0..1, the estimated probability that the record answers the
// query) means the same in every query.
type RecordHit struct {
	Record    Record                 `json:"record"`
	Score     float64                `json:"score"`
	Relevance float64                `json:"relevance"`
	Citation  string                 `json:"citation"`
	Explain   map[string]SignalScore `json:"explain,omitempty"`
	// Evidence (with Explain) is what Relevance is computed from.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Evidence is what a hit's relevance is computed from: the query–record
// cosine (nil without a vector) and the idf-weighted share of the query's
// terms the record holds.
type Evidence struct {
	Dense    *float64 `json:"dense,omitempty"`
	Coverage float64  `json:"coverage"`
}

// RecordSearchResponse is the answer to Client.Search.
type RecordSearchResponse struct {
	Route   string      `json:"route"`
	Signals []string    `json:"signals"`
	Results []RecordHit `json:"results"`
	// Degraded names what the search had to do without (e.g. the
	// embedder), when anything.
	Degraded []string `json:"degraded,omitempty"`
}

// Principal is an operator or an agent.
type Principal struct {
	ID        string     `json:"id"`
	Workspace string     `json:"workspace"`
	Kind      string     `json:"kind"`
	Name      string     `json:"name"`
	Trust     string     `json:"trust,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// ContextRequest asks for the context of a task: POST /v1/context. Only
// Query is required; zero values mean the server's defaults (2000
// tokens; 20 constraints, 3 procedures, 6 knowledge items, 10 facts, 3
// recent items; 400 tokens an item).
type ContextRequest struct {
	Query          string `json:"query"`
	Scope          Scope  `json:"scope"`
	BudgetTokens   int    `json:"budget_tokens,omitempty"`
	MaxConstraints int    `json:"max_constraints,omitempty"`
	MaxProcedures  int    `json:"max_procedures,omitempty"`
	MaxChunks      int    `json:"max_chunks,omitempty"`
	MaxFacts       int    `json:"max_facts,omitempty"`
	MaxRecent      int    `json:"max_recent,omitempty"`
	MaxItemTokens  int    `json:"max_item_tokens,omitempty"`
}

// ContextItem is one entry of a context section. Kind is pinned, rule,
// procedure, record, chunk, fact or activity.
type ContextItem struct {
	Kind        string   `json:"kind"`
	ID          string   `json:"id,omitempty"`
	Type        string   `json:"type,omitempty"`
	Path        string   `json:"path,omitempty"`
	Content     string   `json:"content"`
	Citation    string   `json:"citation,omitempty"`
	ResourceURI string   `json:"resource_uri,omitempty"`
	Score       float64  `json:"score,omitempty"`
	Confidence  float64  `json:"confidence,omitempty"`
	SuccessRate *float64 `json:"success_rate,omitempty"`
	UseCount    *int64   `json:"use_count,omitempty"`
	Truncated   bool     `json:"truncated,omitempty"`
	Tokens      int      `json:"tokens"`
}

// ContextSection is one of the five sections: constraints, procedures,
// knowledge, facts, recent.
type ContextSection struct {
	Name    string        `json:"name"`
	Items   []ContextItem `json:"items"`
	Tokens  int           `json:"tokens"`
	Omitted int           `json:"omitted,omitempty"`
}

// ContextEnvelope is an assembled context; Markdown is what goes into a
// prompt, never more than BudgetTokens (estimated).
type ContextEnvelope struct {
	Query        string           `json:"query"`
	BudgetTokens int              `json:"budget_tokens"`
	Tokens       int              `json:"tokens"`
	Sufficiency  string           `json:"sufficiency"`
	Sections     []ContextSection `json:"sections"`
	Markdown     string           `json:"markdown"`
	Degraded     []string         `json:"degraded,omitempty"`
}
