// Package memory holds memgate's domain model: memory records and their
// enums, principals, workspaces and approval items. It has no behaviour
// beyond validation and defaults, so every other package can depend on it.
package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
)

// Type discriminates memory records (SPEC §3).
type Type string

const (
	Belief     Type = "belief"
	Decision   Type = "decision"
	Episode    Type = "episode"
	Skill      Type = "skill"
	Entity     Type = "entity"
	Preference Type = "preference"
	Reflection Type = "reflection"
	Resource   Type = "resource"
)

// Types lists every record type in a stable order.
var Types = []Type{Belief, Decision, Episode, Skill, Entity, Preference, Reflection, Resource}

// Status is a record's lifecycle state.
type Status string

const (
	Provisional Status = "provisional"
	Active      Status = "active"
	Quarantined Status = "quarantined"
	Archived    Status = "archived"
	Superseded  Status = "superseded"
	Forgotten   Status = "forgotten"
)

// Statuses lists every status in a stable order.
var Statuses = []Status{Provisional, Active, Quarantined, Archived, Superseded, Forgotten}

// Access is a record's access level (SPEC §2).
type Access string

const (
	Public    Access = "public"
	AgentOnly Access = "agent"
	UserOnly  Access = "user"
	System    Access = "system"
	Sensitive Access = "sensitive"
)

// AccessLevels lists every access level in a stable order.
var AccessLevels = []Access{Public, AgentOnly, UserOnly, System, Sensitive}

// WritableAccessLevels are the levels a writer may ask for, in a stable
// order: system is memgate's own (the gate refuses it from anyone else),
// so the tools' schemas do not offer it.
var WritableAccessLevels = []Access{Public, AgentOnly, UserOnly, Sensitive}

// Names returns the values of a string enum list as plain strings, for
// schemas and messages that list them.
func Names[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// SourceKind says how the writer came to know a record.
type SourceKind string

const (
	Observed SourceKind = "observed"
	Told     SourceKind = "told"
	Inferred SourceKind = "inferred"
)

// SourceKinds lists every source kind.
var SourceKinds = []SourceKind{Observed, Told, Inferred}

// DefaultConfidence is the confidence given to a record whose writer did
// not state one.
func DefaultConfidence(k SourceKind) float64 {
	switch k {
	case Observed:
		return 0.9
	case Told:
		return 0.75
	case Inferred:
		return 0.6
	}
	return 0.75
}

// Gate decisions (SPEC §4 step 6).
const (
	DecisionAccepted    = "accepted"
	DecisionProvisional = "provisional"
	DecisionQueued      = "queued"
	DecisionQuarantined = "quarantined"
	// DecisionFlagged: stored active but only for its writer (a gateway
	// user) and operators, at access "user", and listed for review: the
	// user's own turn carrying its contact details (docs/gate.md).
	DecisionFlagged   = "flagged"
	DecisionDuplicate = "duplicate"
	DecisionRejected  = "rejected"
)

// Gate origins.
const (
	OriginExternal      = "external"
	OriginConsolidation = "consolidation"
	OriginMaintenance   = "maintenance"
)

// Paths.
const (
	PathFast = "fast"
	PathSlow = "slow"
)

// Source is the provenance of a record.
type Source struct {
	// Agent is the writer's name, for people to read; PrincipalID is the
	// writer's principal id, which is what ownership (access "agent",
	// patch and forget by agents) follows: names are free text, an id
	// never names anyone else.
	Agent       string     `json:"agent"`
	PrincipalID string     `json:"principal_id"`
	Kind        SourceKind `json:"kind"`
	Confidence  float64    `json:"confidence"`
	Evidence    []string   `json:"evidence"`
}

// Scope holds a record's optional scope keys. Empty means unset.
type Scope struct {
	UserID    string `json:"user_id,omitempty"`
	AgentID   string `json:"agent_id,omitempty"`
	AppID     string `json:"app_id,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
	SessionID string `json:"session_id,omitempty"`
}

// IsZero reports whether no scope key is set.
func (s Scope) IsZero() bool { return s == Scope{} }

// GateInfo records the gate decision that admitted a version.
type GateInfo struct {
	DecisionID string `json:"decision_id"`
	Decision   string `json:"decision"`
	Origin     string `json:"origin"`
}

// Record is one memory at one version. The same struct serves as the head
// (current state) and as a historical version snapshot.
//
// Times are UTC and truncated to microseconds so that every backend stores
// and returns them identically.
type Record struct {
	ID             string          `json:"id"`
	Type           Type            `json:"type"`
	Category       string          `json:"category"`
	Content        string          `json:"content"`
	ContentSHA256  string          `json:"content_sha256"`
	Metadata       json.RawMessage `json:"metadata"`
	Entities       []string        `json:"entities"`
	Version        int             `json:"version"`
	SupersededBy   *string         `json:"superseded_by"`
	Supersedes     *string         `json:"supersedes"`
	Status         Status          `json:"status"`
	Source         Source          `json:"source"`
	Scope          Scope           `json:"scope"`
	ValidFrom      *time.Time      `json:"valid_from"`
	ValidUntil     *time.Time      `json:"valid_until"`
	IngestedAt     time.Time       `json:"ingested_at"`
	InvalidatedAt  *time.Time      `json:"invalidated_at"`
	Access         Access          `json:"access"`
	Classification string          `json:"classification"`
	Gate           GateInfo        `json:"gate"`
	DecayScore     float64         `json:"decay_score"`
	Path           string          `json:"path"`
	// Usage counters live on the head only; versions carry the values at
	// the time the version was written.
	LastRetrievedAt *time.Time `json:"last_retrieved_at"`
	RetrievalCount  int64      `json:"retrieval_count"`
	CreatedAt       time.Time  `json:"created_at"`
	// UpdatedAt is the transaction time at which this version was written.
	UpdatedAt time.Time `json:"updated_at"`
	// ModifiedBy is the principal id that wrote this version (the writer
	// for version 1, then whoever patched or approved it), so history
	// never attributes one principal's text to another. Empty on versions
	// written before it was recorded, and on tombstones.
	ModifiedBy string `json:"modified_by"`
}

// SHA256Hex returns the lowercase hex sha256 of s.
func SHA256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Tombstone returns the record with everything but identity, type,
// timestamps and the content hash erased, as kept after forgetting.
func (r Record) Tombstone(at time.Time) Record {
	return Record{
		ID:            r.ID,
		Type:          r.Type,
		ContentSHA256: r.ContentSHA256,
		Metadata:      json.RawMessage(`{}`),
		Entities:      []string{},
		Version:       r.Version,
		Status:        Forgotten,
		Source:        Source{Evidence: []string{}},
		IngestedAt:    r.IngestedAt,
		Access:        r.Access,
		Gate:          r.Gate,
		Path:          r.Path,
		CreatedAt:     r.CreatedAt,
		UpdatedAt:     at,
	}
}

// Citation returns the stable citation of this version; a knowledge
// chunk cites its lines instead (ResourceCitation).
func (r Record) Citation() string {
	if c := chunkCitation(r); c != "" {
		return c
	}
	return "mem://" + r.ID + "@v" + strconv.Itoa(r.Version)
}

// Canon returns t in the canonical storage precision: UTC, microseconds.
func Canon(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// CanonPtr is Canon for optional times.
func CanonPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := Canon(*t)
	return &c
}
