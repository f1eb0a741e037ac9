package store

import (
	"encoding/json"
	"time"
)

// Message is one conversation turn received through the Memory Gateway
// contract. Messages are stored durably before anything is derived from
// them; their key (conversation, sender, timestamp, content hash) is
// unique, which makes a re-sent add a no-op.
type Message struct {
	Workspace string
	ID        string
	Conversation
	SenderID      string
	Role          string
	Timestamp     int64 // Unix epoch milliseconds, as sent
	Content       string
	ContentSHA256 string
	// RecordID is the episode record the turn became.
	RecordID string
	// JobID is the flush job that took the message ("" until a flush).
	JobID     string
	CreatedAt time.Time
}

// Conversation names one session of one gateway user.
type Conversation struct {
	UserID    string
	AppID     string
	ProjectID string
	SessionID string
}

// JobStatus is where a durable job is in its life.
type JobStatus string

// Job statuses. A job is queued until a worker claims it (running, under
// a lease); it ends done, or dead after its last allowed attempt failed.
const (
	JobQueued  JobStatus = "queued"
	JobRunning JobStatus = "running"
	JobDone    JobStatus = "done"
	JobDead    JobStatus = "dead"
)

// Job is a unit of durable background work.
type Job struct {
	ID          string
	Workspace   string
	Kind        string
	Payload     json.RawMessage
	Status      JobStatus
	Attempts    int
	MaxAttempts int
	// RunAfter is when the job may next be claimed.
	RunAfter   time.Time
	LeaseOwner string
	LeaseUntil *time.Time
	LastError  string
	Result     json.RawMessage
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// JobUpdate ends a claimed attempt: Status done, dead, or queued again
// (a retry, claimable from RunAfter).
type JobUpdate struct {
	Status    JobStatus
	RunAfter  time.Time
	LastError string
	Result    json.RawMessage
	At        time.Time
}

// GatekeeperEntry records one evaluation of a turn by the extraction
// gatekeeper (SPEC §7).
type GatekeeperEntry struct {
	ID        string
	Workspace string
	JobID     string
	MessageID string
	Decision  string // skip | ingest_pattern | ingest_llm | ingest_failopen
	Reason    string
	Pattern   string
	Facts     int
	CreatedAt time.Time
}

// GatekeeperQuery filters ListGatekeeperLog. Empty fields do not filter;
// After is the id of the last row of the previous page.
type GatekeeperQuery struct {
	JobID    string
	Decision string
	Since    time.Time
	After    string
	Limit    int
}
