package memory

import (
	"encoding/json"
	"time"
)

// DefaultWorkspace is created on first start.
const DefaultWorkspace = "default"

// Workspace is the hard isolation boundary. Its ID is its name.
type Workspace struct {
	ID        string          `json:"id"`
	Settings  json.RawMessage `json:"settings"`
	CreatedAt time.Time       `json:"created_at"`
}

// PrincipalKind says what a principal is.
type PrincipalKind string

const (
	KindOperator PrincipalKind = "operator"
	KindAgent    PrincipalKind = "agent"
	KindUser     PrincipalKind = "user"   // a gateway user
	KindSystem   PrincipalKind = "system" // memgate itself (jobs)
)

// Trust is an agent's trust level.
type Trust string

const (
	Trusted    Trust = "trusted"
	Standard   Trust = "standard"
	Restricted Trust = "restricted"
	ReadOnly   Trust = "read_only"
)

// TrustLevels lists every trust level, most trusted first.
var TrustLevels = []Trust{Trusted, Standard, Restricted, ReadOnly}

// DefaultTrust is the trust of an agent created without one.
const DefaultTrust = Restricted

// Principal is an operator or agent credential holder. TokenHash is the
// sha256 of the token's secret part and never leaves the store layer in
// any serialised form.
type Principal struct {
	ID        string        `json:"id"`
	Workspace string        `json:"workspace"`
	Kind      PrincipalKind `json:"kind"`
	Name      string        `json:"name"`
	Trust     Trust         `json:"trust,omitempty"`
	TokenHash []byte        `json:"-"`
	CreatedAt time.Time     `json:"created_at"`
	RevokedAt *time.Time    `json:"revoked_at"`
}

// Revoked reports whether the principal's token was revoked.
func (p Principal) Revoked() bool { return p.RevokedAt != nil }

// ApprovalKind says why an item waits for an operator.
type ApprovalKind string

const (
	ApprovalPending    ApprovalKind = "pending_write" // provisional or queued write
	ApprovalQuarantine ApprovalKind = "quarantine"    // PII screen hit
	ApprovalConflict   ApprovalKind = "conflict"      // contradicts an active record
)

// ApprovalStatus is an approval item's state.
type ApprovalStatus string

const (
	ApprovalOpen     ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalRejected ApprovalStatus = "rejected"
	ApprovalExpired  ApprovalStatus = "expired"
)

// Approval is one item of the approval queue.
type Approval struct {
	ID        string         `json:"id"`
	Workspace string         `json:"workspace"`
	RecordID  string         `json:"record_id"`
	Kind      ApprovalKind   `json:"kind"`
	Reason    string         `json:"reason"`
	Status    ApprovalStatus `json:"status"`
	CreatedAt time.Time      `json:"created_at"`
	ExpiresAt time.Time      `json:"expires_at"`
	DecidedAt *time.Time     `json:"decided_at"`
	DecidedBy string         `json:"decided_by,omitempty"`
	// DecisionReason is the operator's reason for rejecting the item,
	// kept readable for reviewers. It is operator free text that may
	// quote the erased content, so forgetting the record or a subject it
	// named erases it too (core/erase.go).
	DecisionReason string `json:"decision_reason,omitempty"`
	// ReasonSubjects is the sha256 (hex) of each subject ("label:key")
	// the record named when the reason was written: how forget_subject
	// finds the reason once the record is a tombstone. Never shown.
	ReasonSubjects []string `json:"-"`
}
