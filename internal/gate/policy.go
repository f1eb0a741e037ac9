// Package gate is memgate's write policy: the policy file, the schema,
// authorization and PII checks every write passes (SPEC §4), and the
// decision they produce. It is pure: duplicate detection, persistence and
// auditing are done by the service around it.
package gate

import (
	"slices"
	"time"

	"github.com/memgate/memgate/internal/memory"
)

// Policy is the validated content of the policy file. Field tags give the
// file's key names; the same names serve YAML and JSON.
type Policy struct {
	Limits     Limits     `yaml:"limits" json:"limits"`
	RateLimit  RateLimits `yaml:"rate_limit" json:"rate_limit"`
	Trust      TrustRules `yaml:"trust" json:"trust"`
	PII        PIIPolicy  `yaml:"pii" json:"pii"`
	Approvals  Approvals  `yaml:"approvals" json:"approvals"`
	Duplicates Duplicates `yaml:"duplicates" json:"duplicates"`
	Conflicts  Conflicts  `yaml:"conflicts" json:"conflicts"`
	Graph      Graph      `yaml:"graph" json:"graph"`
	MCP        MCP        `yaml:"mcp" json:"mcp"`
	// Maintenance configures the maintenance jobs (docs/maintenance.md).
	Maintenance Maintenance `yaml:"maintenance" json:"maintenance"`
}

// Maintenance configures the scheduled maintenance jobs.
type Maintenance struct {
	// HalfLife is, per record type, how long after its last retrieval
	// (or its creation, if never retrieved) a record's decay_score
	// halves; 0 means records of the type never decay.
	HalfLife HalfLives `yaml:"half_life" json:"half_life"`
	// ArchiveBelow archives active records whose decay_score fell below
	// it; 0 disables archiving.
	ArchiveBelow float64 `yaml:"archive_below" json:"archive_below"`
	// ConsolidateMin is how many confirming episodes about the same
	// subject and predicate consolidation needs to propose a belief.
	ConsolidateMin int `yaml:"consolidate_min" json:"consolidate_min"`
}

// HalfLives holds one half-life per record type.
type HalfLives struct {
	Belief     Duration `yaml:"belief" json:"belief"`
	Decision   Duration `yaml:"decision" json:"decision"`
	Episode    Duration `yaml:"episode" json:"episode"`
	Skill      Duration `yaml:"skill" json:"skill"`
	Entity     Duration `yaml:"entity" json:"entity"`
	Preference Duration `yaml:"preference" json:"preference"`
	Reflection Duration `yaml:"reflection" json:"reflection"`
	Resource   Duration `yaml:"resource" json:"resource"`
}

// Of returns the half-life of a type (0: never decays).
func (h HalfLives) Of(t memory.Type) time.Duration {
	switch t {
	case memory.Belief:
		return h.Belief.D()
	case memory.Decision:
		return h.Decision.D()
	case memory.Episode:
		return h.Episode.D()
	case memory.Skill:
		return h.Skill.D()
	case memory.Entity:
		return h.Entity.D()
	case memory.Preference:
		return h.Preference.D()
	case memory.Reflection:
		return h.Reflection.D()
	case memory.Resource:
		return h.Resource.D()
	}
	return 0
}

// MCP configures `memgate mcp` sessions started without --agent: they act
// as an agent named after the MCP client (see docs/mcp.md), created on
// first use with ClientTrust.
type MCP struct {
	ClientTrust memory.Trust `yaml:"client_trust" json:"client_trust"`
}

// Graph configures the nodes writes create for the entities records name
// (SPEC §8): operators' are active; agents' (provenance proposed) and
// extraction's (provenance extracted) take these statuses.
// ConversationNames makes a gateway turn name the names it mentions
// (entities "name:<user_id>/<name>"), so they become graph nodes
// (docs/graph.md).
type Graph struct {
	ProposedStatus    memory.NodeStatus `yaml:"proposed_status" json:"proposed_status"`
	ExtractedStatus   memory.NodeStatus `yaml:"extracted_status" json:"extracted_status"`
	ConversationNames bool              `yaml:"conversation_names" json:"conversation_names"`
}

// Limits bound the size of what a write may carry.
type Limits struct {
	MaxContentBytes  int   `yaml:"max_content_bytes" json:"max_content_bytes"`
	MaxMetadataBytes int   `yaml:"max_metadata_bytes" json:"max_metadata_bytes"`
	MaxEntities      int   `yaml:"max_entities" json:"max_entities"`
	MaxEvidence      int   `yaml:"max_evidence" json:"max_evidence"`
	MaxScopeKeyBytes int   `yaml:"max_scope_key_bytes" json:"max_scope_key_bytes"`
	MaxRequestBytes  int64 `yaml:"max_request_bytes" json:"max_request_bytes"`
	// MaxImportBytes bounds a POST /v1/import body separately: an import
	// is validated whole in memory before anything is written.
	MaxImportBytes int64 `yaml:"max_import_bytes" json:"max_import_bytes"`
	// MinMessageTimestampMs is the earliest gateway message timestamp
	// (Unix epoch milliseconds) accepted. The default, 2000-01-01, catches
	// clients that send seconds, which would otherwise be dated 1970; set
	// it lower (1 accepts any positive time) to import older chats.
	MinMessageTimestampMs int64 `yaml:"min_message_timestamp_ms" json:"min_message_timestamp_ms"`
}

// MaxMessageTimestampMs is the last millisecond of year 9999, beyond
// which a time cannot be stored or encoded.
const MaxMessageTimestampMs = 253402300799999

// Bucket configures a token bucket. PerSecond 0 disables limiting.
type Bucket struct {
	PerSecond float64 `yaml:"per_second" json:"per_second"`
	Burst     int     `yaml:"burst" json:"burst"`
}

// RateLimits holds one bucket configuration per principal kind; each
// principal gets its own bucket.
type RateLimits struct {
	Agent    Bucket `yaml:"agent" json:"agent"`
	Operator Bucket `yaml:"operator" json:"operator"`
	User     Bucket `yaml:"user" json:"user"`
}

// TrustRule configures what agents of one trust level may write.
type TrustRule struct {
	// AllowTypes, when non-empty, are the only types the level may write.
	AllowTypes []memory.Type `yaml:"allow_types" json:"allow_types"`
	// AutoAcceptTypes are accepted as active without approval; for the
	// restricted level every other type is queued as provisional.
	AutoAcceptTypes []memory.Type `yaml:"auto_accept_types" json:"auto_accept_types"`
	// AllowAccess are the access levels the level may write.
	AllowAccess []memory.Access `yaml:"allow_access" json:"allow_access"`
}

// TrustRules configures the writing trust levels (read_only never writes).
type TrustRules struct {
	Trusted    TrustRule `yaml:"trusted" json:"trusted"`
	Standard   TrustRule `yaml:"standard" json:"standard"`
	Restricted TrustRule `yaml:"restricted" json:"restricted"`
}

// PII actions.
const (
	PIIQuarantine = "quarantine"
	PIIReject     = "reject"
	// PIIReadable (pii.own_conversation.action only) keeps a gateway
	// user's own turn readable by that user and operators, hidden from
	// agents, and flags it for review.
	PIIReadable = "readable"
)

// PII kinds detected by the screen.
const (
	PIIEmail  = "email"
	PIIPhone  = "phone"
	PIISSN    = "ssn"
	PIICard   = "card"
	PIISecret = "secret"
)

// PIIKinds lists every kind the screen knows.
var PIIKinds = []string{PIIEmail, PIIPhone, PIISSN, PIICard, PIISecret}

// PIIPolicy configures the PII screen.
type PIIPolicy struct {
	Enabled bool     `yaml:"enabled" json:"enabled"`
	Kinds   []string `yaml:"kinds" json:"kinds"`
	Action  string   `yaml:"action" json:"action"`
	// OwnConversation treats a gateway user's own chat turns (episodes
	// the user writes through /memories/add into its own scope) whose
	// hits are all of OwnConversation.Kinds: docs/gate.md.
	OwnConversation OwnConversationPII `yaml:"own_conversation" json:"own_conversation"`
}

// OwnTurnReadable reports whether a gateway user's own turn whose screen
// found kinds stays readable by the user (flagged) rather than being
// quarantined: the action is readable and every kind is listed.
func (p PIIPolicy) OwnTurnReadable(kinds []string) bool {
	own := p.OwnConversation
	return len(kinds) > 0 && own.Action == PIIReadable &&
		!slices.ContainsFunc(kinds, func(k string) bool { return !slices.Contains(own.Kinds, k) })
}

// OwnConversationPII configures PII in a gateway user's own turns.
type OwnConversationPII struct {
	// Action is readable (the default) or quarantine (as any write).
	Action string   `yaml:"action" json:"action"`
	Kinds  []string `yaml:"kinds" json:"kinds"`
}

// Approvals configures the approval queue.
type Approvals struct {
	TTL Duration `yaml:"ttl" json:"ttl"`
}

// Duplicates configures duplicate detection (SPEC §4 step 5).
type Duplicates struct {
	Exact bool `yaml:"exact" json:"exact"`
	// Near treats a live record of the same type and scope whose analysed
	// terms overlap at least NearThreshold (Jaccard) as a duplicate.
	Near          bool    `yaml:"near" json:"near"`
	NearThreshold float64 `yaml:"near_threshold" json:"near_threshold"`
	// IgnoreTypes are never deduplicated: an episode is an event, and the
	// same words said twice are two events.
	IgnoreTypes []memory.Type `yaml:"ignore_types" json:"ignore_types"`
}

// Conflict actions.
const (
	ConflictSupersede = "supersede"
	ConflictQueue     = "queue"
)

// Conflicts configures contradiction detection: a new record of one of
// Types in the same scope that says the same thing about the same subject
// with a different value — term overlap of at least MinSimilarity, at most
// MaxChangedTerms terms differing on each side, and the same entities.
type Conflicts struct {
	Detect          bool          `yaml:"detect" json:"detect"`
	Action          string        `yaml:"action" json:"action"`
	MinSimilarity   float64       `yaml:"min_similarity" json:"min_similarity"`
	MaxChangedTerms int           `yaml:"max_changed_terms" json:"max_changed_terms"`
	Types           []memory.Type `yaml:"types" json:"types"`
}

// Duration is a time.Duration written as a Go duration string ("24h").
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
