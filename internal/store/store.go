// Package store declares the persistence contract every memgate backend
// implements (SQLite, embedded; PostgreSQL, for replicas) and the query types that cross
// it. All SQL lives in the backend packages; the shared contract test suite
// in storetest runs against each of them.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/memory"
)

// Sentinel errors. Backends wrap them with %w; callers test with errors.Is.
var (
	// ErrNotFound: the addressed row does not exist in the workspace.
	ErrNotFound = errors.New("not found")
	// ErrVersionConflict: an update's expected version is not the head's.
	ErrVersionConflict = errors.New("version conflict")
	// ErrExists: a unique key (workspace id, principal name) is taken.
	ErrExists = errors.New("already exists")
	// ErrUnavailable: the database cannot serve the request right now
	// (disk full, connection lost); callers answer 503.
	ErrUnavailable = errors.New("database unavailable")
)

// Store is a backend. Reads outside Tx see committed data; Tx runs fn in
// one write transaction that commits only if fn returns nil. If fn
// returns an error, Tx returns it unchanged; if fn panics, the
// transaction is rolled back and the panic continues; if ctx is done, Tx
// fails with an error wrapping ctx.Err(). Backends serialise audit
// appends per workspace so the hash chain never forks.
type Store interface {
	Reader
	Tx(ctx context.Context, fn func(Tx) error) error
	// Ping reports whether the database answers.
	Ping(ctx context.Context) error
	// Scrub makes data deleted by committed transactions unrecoverable
	// from the database files as far as the backend can (SQLite:
	// secure_delete is always on, and Scrub checkpoints and truncates the
	// write-ahead log, which still holds the old pages; PostgreSQL: VACUUM
	// FULL rewrites the tables without the dead row versions, while WAL
	// and backups follow the operator's retention). Every erasure calls
	// it (core/erase.go).
	Scrub(ctx context.Context) error
	Close() error
}

// Reader is the read half of the contract, available inside and outside
// transactions. Every method is scoped to one workspace.
type Reader interface {
	EventReader
	SessionReader
	ListingReader
	GetWorkspace(ctx context.Context, id string) (memory.Workspace, error)
	ListWorkspaces(ctx context.Context) ([]memory.Workspace, error)

	GetPrincipal(ctx context.Context, ws, id string) (memory.Principal, error)
	// GetPrincipalByName finds an agent or operator by its unique name.
	GetPrincipalByName(ctx context.Context, ws, name string) (memory.Principal, error)
	// FindPrincipal finds a principal by id in any workspace; used only to
	// authenticate a token, whose id part names the principal.
	FindPrincipal(ctx context.Context, id string) (memory.Principal, error)
	// ListPrincipals lists principals of one kind ("" for every kind).
	ListPrincipals(ctx context.Context, ws string, kind memory.PrincipalKind) ([]memory.Principal, error)

	// GetRecord returns the head (current version) of a record, including
	// forgotten tombstones.
	GetRecord(ctx context.Context, ws, id string) (memory.Record, error)
	// GetRecords returns the heads of the records among ids that exist
	// (forgotten tombstones included), keyed by id; an id not found is
	// absent from the map. It is GetRecord for many ids in one read (a
	// search's hits), never nil.
	GetRecords(ctx context.Context, ws string, ids []string) (map[string]memory.Record, error)
	// GetRecordVersion returns one historical version.
	GetRecordVersion(ctx context.Context, ws, id string, version int) (memory.Record, error)
	// GetRecordKnownAt returns the version that was current at transaction
	// time t: the highest version whose UpdatedAt <= t. ErrNotFound if the
	// record did not exist yet.
	GetRecordKnownAt(ctx context.Context, ws, id string, t time.Time) (memory.Record, error)
	// ListVersions returns every version of a record, oldest first;
	// ErrNotFound if the record does not exist.
	ListVersions(ctx context.Context, ws, id string) ([]memory.Record, error)
	// ListRecords returns records matching q, newest id first.
	ListRecords(ctx context.Context, ws string, q RecordQuery) ([]memory.Record, error)
	// FindDuplicate returns an active or provisional record of the same
	// type, identical scope and identical content hash that is not
	// invalidated (memgate no longer believes an invalidated record, so
	// stating it again is news), or ErrNotFound.
	FindDuplicate(ctx context.Context, ws string, typ memory.Type, contentSHA256 string, scope memory.Scope) (memory.Record, error)

	GetApproval(ctx context.Context, ws, id string) (memory.Approval, error)
	// ListApprovals returns items with the given status ("" = any), oldest
	// first, starting after the cursor id.
	ListApprovals(ctx context.Context, ws string, status memory.ApprovalStatus, after string, limit int) ([]memory.Approval, error)
	// ListExpiredApprovals returns pending items whose ExpiresAt <= now, in
	// every workspace, oldest first.
	ListExpiredApprovals(ctx context.Context, now time.Time, limit int) ([]memory.Approval, error)

	// ListAudit returns entries with seq > afterSeq, ascending.
	ListAudit(ctx context.Context, ws string, afterSeq int64, limit int) ([]audit.Entry, error)

	// ScanRecords calls fn with the head of every record of every
	// workspace, forgotten tombstones included, in ascending id order. fn
	// must not use the store. It is how in-memory indexes are built.
	ScanRecords(ctx context.Context, fn func(ws string, r memory.Record) error) error
	// ListMissingVectors returns up to limit heads, in ascending id order
	// after the cursor id, that are not forgotten and have no vector for
	// model computed from their current content.
	ListMissingVectors(ctx context.Context, model, after string, limit int) ([]VectorTask, error)
	// CountVectors reports how many non-forgotten heads have a current
	// vector for model, and how many non-forgotten heads there are.
	CountVectors(ctx context.Context, model string) (have, total int, err error)
	// ScanVectors calls fn with every stored vector of model whose
	// content hash matches its record's current content, ascending by
	// record id. fn must not use the store and must copy vec to keep it.
	ScanVectors(ctx context.Context, model string, fn func(ws, id string, vec []float32) error) error

	// GetSetting returns a setting of the whole database (see PutSetting);
	// ErrNotFound if it was never set.
	GetSetting(ctx context.Context, key string) (string, error)
	// ListChanges returns record changes with seq > after, ascending: the
	// ordered change log that keeps other processes' in-memory indexes
	// current. Every InsertRecord, UpdateRecord and PurgeRecord appends
	// one entry in its transaction.
	ListChanges(ctx context.Context, after int64, limit int) ([]Change, error)
	// ChangeHead returns the highest change seq (0 when there is none).
	ChangeHead(ctx context.Context) (int64, error)
	// GetCachedEmbeddings returns the cached vectors of model for the
	// given content hashes; absent hashes are absent from the map.
	GetCachedEmbeddings(ctx context.Context, model string, hashes []string) (map[string][]float32, error)

	// FindMessage returns the stored message with the same conversation,
	// sender, timestamp and content hash as m, or ErrNotFound.
	FindMessage(ctx context.Context, ws string, m Message) (Message, error)
	// ListJobMessages returns the messages a flush job took, by
	// timestamp then id.
	ListJobMessages(ctx context.Context, ws, jobID string) ([]Message, error)
	// GetJob returns one job; ErrNotFound if absent from the workspace.
	GetJob(ctx context.Context, ws, id string) (Job, error)
	// ListGatekeeper returns the gatekeeper log of a job, oldest first.
	ListGatekeeper(ctx context.Context, ws, jobID string) ([]GatekeeperEntry, error)
	// ListGatekeeperLog pages through a workspace's whole gatekeeper log
	// by id (ids are time-ordered), with optional filters.
	ListGatekeeperLog(ctx context.Context, ws string, q GatekeeperQuery) ([]GatekeeperEntry, error)

	// GetNode returns a graph node; ErrNotFound if absent.
	GetNode(ctx context.Context, ws, id string) (memory.Node, error)
	// GetNodeByKey returns the node with a label and natural key.
	GetNodeByKey(ctx context.Context, ws, label, key string) (memory.Node, error)
	// ListNodes returns nodes matching q, by id.
	ListNodes(ctx context.Context, ws string, q NodeQuery) ([]memory.Node, error)
	// GetEdge returns an edge, live or invalidated.
	GetEdge(ctx context.Context, ws, id string) (memory.Edge, error)
	// FindLiveEdge returns the live edge from one node to another by a
	// relation, or ErrNotFound.
	FindLiveEdge(ctx context.Context, ws, from, to, relation string) (memory.Edge, error)
	// MentioningRecords returns the ids of up to limit heads whose
	// entities include entity, newest first: the records that link to a
	// node.
	MentioningRecords(ctx context.Context, ws, entity string, limit int) ([]string, error)
	// ListEdges returns edges matching q, by id.
	ListEdges(ctx context.Context, ws string, q EdgeQuery) ([]memory.Edge, error)
	// ScanGraph calls fn with every node of every workspace, by id, then
	// every edge, by id (exactly one of n and e is set). fn must not use
	// the store. It is how the in-memory graph index is built.
	ScanGraph(ctx context.Context, fn func(ws string, n *memory.Node, e *memory.Edge) error) error
	// ListGraphChanges returns graph changes with seq > after, ascending:
	// the graph's change log, which keeps other processes' in-memory
	// graph indexes current. Every InsertNode, UpdateNode, InsertEdge,
	// UpdateEdge and DeleteEdge appends one entry in its transaction.
	ListGraphChanges(ctx context.Context, after int64, limit int) ([]GraphChange, error)
	// GraphChangeHead returns the highest graph change seq (0 when none).
	GraphChangeHead(ctx context.Context) (int64, error)
}

// GraphChange is one entry of the graph's change log: the node or edge
// whose row changed. Readers fetch its current state (an edge that is no
// longer there was deleted).
type GraphChange struct {
	Seq       int64
	Workspace string
	Kind      GraphItem
	ID        string
}

// GraphItem says which kind of graph row a change names.
type GraphItem string

// Graph change kinds.
const (
	GraphNode GraphItem = "node"
	GraphEdge GraphItem = "edge"
)

// Change is one entry of the change log.
type Change struct {
	Seq       int64
	Workspace string
	RecordID  string
}

// VectorTask is a record that needs a vector.
type VectorTask struct {
	Workspace     string
	ID            string
	Content       string
	ContentSHA256 string
}

// Vector is an embedding of one record's content.
type Vector struct {
	Workspace     string
	RecordID      string
	ContentSHA256 string
	Vec           []float32
}

// Tx is a write transaction.
type Tx interface {
	Reader
	EventWriter

	// CreateWorkspace inserts a workspace; ErrExists if present.
	CreateWorkspace(ctx context.Context, w memory.Workspace) error

	// InsertPrincipal inserts a principal; ErrExists if the name is taken
	// in the workspace.
	InsertPrincipal(ctx context.Context, p memory.Principal) error
	// RevokePrincipal sets RevokedAt; ErrNotFound if absent.
	RevokePrincipal(ctx context.Context, ws, id string, at time.Time) error
	// SetTrust changes a principal's trust level; ErrNotFound if absent.
	SetTrust(ctx context.Context, ws, id string, trust memory.Trust) error
	// SetCredential replaces a principal's token hash (or user key hash)
	// and clears RevokedAt; ErrNotFound if absent.
	SetCredential(ctx context.Context, ws, id string, hash []byte) error

	// InsertRecord inserts a new record at version 1 (head and version row).
	InsertRecord(ctx context.Context, ws string, r memory.Record) error
	// UpdateRecord writes r as the new head, whose Version must be
	// expectedVersion+1, and appends it as a version row; the previous
	// version's transaction-time interval ends at r.UpdatedAt.
	// ErrVersionConflict if the head is not at expectedVersion, and then
	// nothing is written.
	UpdateRecord(ctx context.Context, ws string, r memory.Record, expectedVersion int) error
	// PurgeRecord replaces the head and every version of a record with
	// tombstones (memory.Record.Tombstone), erasing content, metadata,
	// entities and source from every stored copy. It also deletes the
	// record's vectors and the cached embeddings of every version's
	// content. The head keeps its
	// version number plus one and status forgotten; each older version
	// keeps its own version number, UpdatedAt and content hash.
	PurgeRecord(ctx context.Context, ws, id string, at time.Time) error
	// RedactVersion erases the content of one past version of a record
	// (not the head): its content becomes empty and its status forgotten,
	// keeping its content hash, metadata and times, so history shows that
	// a version existed and the audit chain still names its hash. It also
	// deletes the cached embeddings of that content and a vector of the
	// record still computed from it (one the embedding job has not yet
	// replaced), unless the head holds the same content. ErrNotFound if the
	// version does not exist; ErrVersionConflict if it is the head.
	RedactVersion(ctx context.Context, ws, id string, version int) error
	// LockKey takes a lock named by key, held until the transaction ends,
	// so that writers which check and then write under one key (a memory
	// file's path) are serialised across processes sharing the database.
	// PostgreSQL: a transaction-scoped advisory lock; SQLite: nothing to
	// do, its one writer already serialises write transactions.
	LockKey(ctx context.Context, key string) error
	// FindByMeta returns, by id, the ids of the heads in ws of category
	// cat and scope sc, not invalidated, whose metadata field holds the
	// JSON string value.
	FindByMeta(ctx context.Context, ws, cat, field, value string, sc memory.Scope) ([]string, error)
	// PutVectors stores vectors of model, replacing earlier ones of the
	// same record. A vector whose ContentSHA256 no longer matches its
	// record's current content (the record changed meanwhile, or was
	// forgotten) is silently dropped.
	PutVectors(ctx context.Context, model string, vs []Vector) error
	// PutSetting sets a setting of the whole database, such as the
	// embedder its vectors are made with, replacing an earlier value.
	PutSetting(ctx context.Context, key, value string) error
	// PutCachedEmbeddings stores vectors by (model, content hash).
	PutCachedEmbeddings(ctx context.Context, model string, byHash map[string][]float32) error
	// TouchRecords bumps usage counters on heads (retrieval bookkeeping);
	// it writes no version. Ids that do not exist are ignored.
	TouchRecords(ctx context.Context, ws string, ids []string, at time.Time) error
	// SetDecayScores sets decay_score on heads (maintenance bookkeeping,
	// derived from usage like the counters); it writes no version and no
	// change-log entry. Ids that do not exist are ignored.
	SetDecayScores(ctx context.Context, ws string, scores map[string]float64) error

	InsertApproval(ctx context.Context, a memory.Approval) error
	// UpdateApproval overwrites status, decided_at, decided_by, the
	// decision reason and its subjects.
	UpdateApproval(ctx context.Context, a memory.Approval) error
	// EraseApprovalReasons blanks the decision reasons (and their
	// subjects) e selects and returns how many it blanked.
	EraseApprovalReasons(ctx context.Context, ws string, e ReasonErasure) (int, error)
	SessionWriter

	// InsertMessage stores a message; ErrExists if one with the same key
	// (see FindMessage) is stored.
	InsertMessage(ctx context.Context, m Message) error
	// TakeMessages assigns every message of the conversation that no job
	// has taken yet to jobID and returns how many it took.
	TakeMessages(ctx context.Context, ws string, c Conversation, jobID string) (int, error)
	// InsertJob enqueues a job (status queued).
	InsertJob(ctx context.Context, j Job) error
	// ClaimJob takes the oldest claimable job of one of kinds, in any
	// workspace — queued with RunAfter <= now, or running with an expired
	// lease (its worker died) — marks it running under owner's lease
	// until now+lease and counts the attempt. ok is false when there is
	// none; that is not an error, so the transaction still commits the
	// jobs it found abandoned on their last attempt and marked dead. Two
	// concurrent claims never take the same job.
	ClaimJob(ctx context.Context, kinds []string, owner string, now time.Time, lease time.Duration) (j Job, ok bool, err error)
	// FinishJob ends the attempt owner holds on job id. It fails with
	// ErrVersionConflict, writing nothing, when the job is no longer
	// running under owner's lease (the lease expired and another worker
	// took it), so a slow worker's effects roll back with it.
	FinishJob(ctx context.Context, ws, id, owner string, u JobUpdate) error
	// InsertGatekeeper appends a gatekeeper log row.
	InsertGatekeeper(ctx context.Context, e GatekeeperEntry) error

	// InsertNode inserts a node; ErrExists if its id or its (label,
	// natural key) is taken in the workspace.
	InsertNode(ctx context.Context, ws string, n memory.Node) error
	// EnsureNode inserts n unless the workspace already has a node with
	// n's label and natural key, and returns the node stored under that
	// key and whether this call inserted it. Node creation is idempotent
	// under concurrency: transactions that introduce the same new key at
	// the same time all succeed, and all get the one node. ErrExists only
	// when n's id is taken by another node.
	EnsureNode(ctx context.Context, ws string, n memory.Node) (memory.Node, bool, error)
	// UpdateNode overwrites a node by id (label and key included);
	// ErrNotFound if absent, ErrExists if the new key is taken.
	UpdateNode(ctx context.Context, ws string, n memory.Node) error
	// InsertEdge inserts an edge; ErrNotFound if an endpoint is not a node
	// of the workspace, ErrExists if a live edge already joins the same
	// nodes by the same relation.
	InsertEdge(ctx context.Context, ws string, e memory.Edge) error
	// EnsureEdge inserts the live edge e unless a live edge already joins
	// the same nodes by the same relation, and returns the live edge and
	// whether this call inserted it. Like EnsureNode it is idempotent
	// under concurrency. e must be live (InvalidatedAt nil).
	EnsureEdge(ctx context.Context, ws string, e memory.Edge) (memory.Edge, bool, error)
	// UpdateEdge overwrites an edge by id; ErrNotFound if absent.
	UpdateEdge(ctx context.Context, ws string, e memory.Edge) error
	// DeleteEdge removes an edge row for good (subject forgetting);
	// ErrNotFound if absent.
	DeleteEdge(ctx context.Context, ws, id string) error
	// DeleteMessages removes for good the messages of a gateway user
	// (userID != "") and those that became one of recordIDs, and returns
	// how many it removed (subject forgetting).
	DeleteMessages(ctx context.Context, ws, userID string, recordIDs []string) (int, error)

	// AppendAudit seals e onto the workspace's chain: it assigns Seq and
	// PrevHash from the chain head, computes Hash with audit.Seal, stores
	// it and returns the sealed entry. e.ID, TS, actor, event and payload
	// are the caller's.
	AppendAudit(ctx context.Context, ws string, e audit.Entry) (audit.Entry, error)
}

// AccessFilter restricts reads to the access levels a principal may see.
// Levels are always visible; records with access "agent" are additionally
// visible when their writer's principal id (source.principal_id) equals
// OwnAgent, which is a principal id, never a name; with OwnUser, records
// with access "user" of that writer are visible too (a gateway user's own
// turns the PII policy flagged, docs/access.md). The zero filter admits
// nothing.
type AccessFilter struct {
	Levels   []memory.Access
	OwnAgent string
	OwnUser  bool
}

// OwnLevels are the levels visible to f.OwnAgent as the records' writer.
func (f AccessFilter) OwnLevels() []memory.Access {
	if f.OwnUser {
		return []memory.Access{memory.AgentOnly, memory.UserOnly}
	}
	return []memory.Access{memory.AgentOnly}
}

// RecordQuery filters ListRecords. Zero values mean "no filter", except
// Statuses, which defaults to active only, and Limit, which defaults to 50.
type RecordQuery struct {
	Types    []memory.Type
	Statuses []memory.Status
	Category string
	// Scope keys that are non-empty must match exactly.
	Scope memory.Scope
	// Entity, when set, matches records whose entities contain it.
	Entity string
	Access AccessFilter
	// AsOf keeps records valid in the world at that time:
	// valid_from <= AsOf (or null) and valid_until > AsOf (or null).
	AsOf *time.Time
	// KnownAt evaluates the query against the versions that were current
	// at that transaction time instead of the heads.
	KnownAt *time.Time
	// IncludeInvalidated keeps records whose invalidated_at is set; by
	// default they are hidden, since memgate no longer believes them.
	IncludeInvalidated bool
	MinConfidence      float64
	// Before is a pagination cursor: only ids strictly less than it.
	Before string
	Limit  int
}

// DefaultLimit and MaxLimit bound list queries. ListRecords caps Limit at
// MaxLimit+1: a caller serving pages of up to MaxLimit asks for one more
// record to learn whether a next page exists. ListApprovals, ListExpiredApprovals and ListAudit return at
// most limit items, uncapped, and DefaultLimit items when limit <= 0.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Backuper is a backend that copies its database while it serves
// (SQLite; PostgreSQL is backed up with pg_dump, docs/backup.md).
type Backuper interface {
	// Backend names the backend ("sqlite").
	Backend() string
	// BackupTo writes a consistent copy of the whole database, as one
	// moment's committed state, to dest, a file that must not exist.
	// Writes go on meanwhile. progress, if not nil, is called now and
	// then with the bytes written and the bytes expected.
	BackupTo(ctx context.Context, dest string, progress func(done, total int64)) error
	// OpenCopy opens a copy BackupTo made, to read what it holds.
	OpenCopy(ctx context.Context, path string) (Store, error)
	// SchemaVersion is the database's schema version.
	SchemaVersion(ctx context.Context) (int, error)
}
