package store

import (
	"context"
	"time"

	"github.com/memgate/memgate/internal/audit"
)

// Session is a signed-in operator console session (internal/console).
// IDHash is the sha256 (hex) of the session id the cookie carries; the
// id itself is never stored, so the table holds nothing a cookie could
// be made from.
type Session struct {
	IDHash      string
	Workspace   string
	PrincipalID string
	CSRF        string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// SessionReader reads console sessions. Sessions are not scoped to a
// workspace: a cookie names its session, the session its workspace.
type SessionReader interface {
	// GetSession returns the session by id hash, expired or not (the
	// caller compares ExpiresAt with its clock), or ErrNotFound.
	GetSession(ctx context.Context, idHash string) (Session, error)
}

// SessionWriter changes console sessions.
type SessionWriter interface {
	// InsertSession stores a new session; ErrExists if its hash is taken.
	InsertSession(ctx context.Context, s Session) error
	// DeleteSession removes a session; no error when there is none.
	DeleteSession(ctx context.Context, idHash string) error
	// DeleteExpiredSessions removes every session with ExpiresAt <= now
	// and returns how many it removed.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}

// ReasonErasure selects the decision reasons EraseApprovalReasons
// erases: those of the approvals of RecordID, and those written about a
// subject whose sha256 (hex of "label:key") is SubjectSHA256. An empty
// field selects nothing.
type ReasonErasure struct {
	RecordID      string
	SubjectSHA256 string
}

// JobQuery selects durable jobs for ListJobs: Status and Kind filter
// when set; Before is a job id (a cursor: jobs are listed newest id
// first, after it); Limit as the other list methods.
type JobQuery struct {
	Status JobStatus
	Kind   string
	Before string
	Limit  int
}

// AuditQuery selects audit entries for ListAuditWhere: entries with
// seq > AfterSeq, ascending, up to Limit. Every set field must match:
// ActorID and ActorKind exactly; Event exactly, or EventPrefix as a
// prefix (e.g. "approval.").
type AuditQuery struct {
	AfterSeq    int64
	Limit       int
	ActorID     string
	ActorKind   string
	Event       string
	EventPrefix string
}

// ListingReader lists what the operator console's screens page
// through.
type ListingReader interface {
	// ListJobs returns the workspace's jobs matching q, newest first.
	ListJobs(ctx context.Context, ws string, q JobQuery) ([]Job, error)
	// ListAuditWhere returns the entries q selects, by ascending seq.
	ListAuditWhere(ctx context.Context, ws string, q AuditQuery) ([]audit.Entry, error)
}
