// Package files is memgate's memory files: path-addressed text files
// (SPEC §11 curated blocks such as /memories/MEMORY.md) that agents and
// people read and edit, and the adapters' one service for them (REST, the
// Claude memory tool, MCP block tools, the CLI).
//
// A file is a record: type resource, category "file", its path and pinned
// flag in the metadata. Every change is a new version of that record
// written by core's gated Write or Patch, so files get the gate (schema,
// trust and the approval queue, the PII and secret screen, rate limits),
// the audit log, versions, search, export and import, and forget_subject
// from records, and every read goes through core's access check. This
// package adds only path rules and a path→record index.
package files

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Category is the record category of memory files.
const Category = "file"

// Root is the directory every memory file lives under.
const Root = "/memories"

// DefaultMaxBytes is the default limit on a file's content.
const DefaultMaxBytes = 100 * 1024

// MaxPathBytes bounds a path.
const MaxPathBytes = 1024

// File is one memory file at one version.
type File struct {
	ID            string `json:"id"`
	Path          string `json:"path"`
	Content       string `json:"content"`
	ContentSHA256 string `json:"content_sha256"`
	SizeBytes     int    `json:"size_bytes"`
	Version       int    `json:"version"`
	Pinned        bool   `json:"pinned"`
	Deleted       bool   `json:"deleted,omitempty"`
	// Redacted marks a version whose content was erased (its hash stays).
	Redacted bool          `json:"redacted,omitempty"`
	Scope    memory.Scope  `json:"scope"`
	Status   memory.Status `json:"status"`
	Access   memory.Access `json:"access"`
	// Author is the principal id that wrote this version.
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Citation  string    `json:"citation"`
}

// Result is the gate's answer to a file change.
type Result struct {
	File       File     `json:"file"`
	Decision   string   `json:"decision"`
	Reason     string   `json:"reason,omitempty"`
	ApprovalID string   `json:"approval_id,omitempty"`
	PIIKinds   []string `json:"pii_kinds,omitempty"`
}

// meta is what a file record keeps in its metadata.
type meta struct {
	Path    string `json:"file_path"`
	Pinned  bool   `json:"pinned,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
}

// Options configure a Service.
type Options struct {
	// MaxBytes limits a file's content (0: DefaultMaxBytes). The gate's
	// own content limit applies as well.
	MaxBytes int
}

// Service is the memory files service over a core service.
type Service struct {
	core     *core.Service
	maxBytes int

	// mu guards the path index and serialises the changes that claim or
	// move a path (create, rename), so two creates of one path in this
	// process cannot both succeed.
	mu  sync.Mutex
	ix  map[string]map[key]string // workspace → key → record id
	rev map[string]map[string]key // workspace → record id → key
	// follow keeps the index up to the change log (it only pulls).
	follow store.Follower
}

// key addresses a live file: its scope and path.
type key struct {
	scope memory.Scope
	path  string
}

// New returns the files service over svc.
func New(svc *core.Service, o Options) *Service {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	return &Service{core: svc, maxBytes: o.MaxBytes}
}

// CleanPath checks a file path and returns it in canonical form (NFC). It
// must be absolute, under Root, at most MaxPathBytes, with no empty, "."
// or ".." segment. Paths are case-sensitive.
func CleanPath(p string) (string, error) {
	if !utf8.ValidString(p) {
		return "", fault.Field("path", "must be valid UTF-8")
	}
	p = norm.NFC.String(p)
	if len(p) > MaxPathBytes {
		return "", fault.Field("path", "must be at most 1024 bytes")
	}
	if !strings.HasPrefix(p, Root+"/") {
		return "", fault.Field("path", "must be a file under "+Root+"/")
	}
	for _, seg := range strings.Split(p[len(Root)+1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fault.Field("path", "must not have empty, '.' or '..' segments")
		}
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fault.Field("path", "must not contain control characters")
	}
	return p, nil
}

// CleanPrefix checks a listing prefix: Root, or a path under it, with or
// without a trailing slash. It returns the directory form ending in "/".
func CleanPrefix(p string) (string, error) {
	if p == "" || p == Root || p == Root+"/" {
		return Root + "/", nil
	}
	c, err := CleanPath(strings.TrimSuffix(p, "/"))
	if err != nil {
		return "", fault.Field("path_prefix", "must be "+Root+" or a directory under it")
	}
	return c + "/", nil
}

func (s *Service) checkContent(content string) error {
	if len(content) > s.maxBytes {
		return (&fault.Error{Code: fault.TooLarge, Message: "content: exceeds the file limit of " + strconv.Itoa(s.maxBytes) + " bytes",
			Details: map[string]any{"field": "content", "limit": s.maxBytes}})
	}
	return nil
}

// isFile reports whether r is a memory file record and returns its meta.
func isFile(r memory.Record) (meta, bool) {
	if r.Type != memory.Resource || r.Category != Category {
		return meta{}, false
	}
	var m meta
	if json.Unmarshal(r.Metadata, &m) != nil || m.Path == "" {
		return meta{}, false
	}
	return m, true
}

// live reports whether a file record currently occupies its path.
func live(r memory.Record, m meta) bool {
	if m.Deleted || r.InvalidatedAt != nil {
		return false
	}
	switch r.Status {
	case memory.Active, memory.Provisional, memory.Quarantined:
		return true
	}
	return false
}

func toFile(r memory.Record) File {
	m, _ := isFile(r)
	redacted := r.Status == memory.Forgotten && r.Content == ""
	return File{Redacted: redacted,
		ID: r.ID, Path: m.Path, Content: r.Content, ContentSHA256: r.ContentSHA256, SizeBytes: len(r.Content),
		Version: r.Version, Pinned: m.Pinned, Deleted: m.Deleted || r.InvalidatedAt != nil, Scope: r.Scope, Status: r.Status,
		Access: r.Access, Author: r.ModifiedBy, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Citation: r.Citation(),
	}
}

func metaJSON(m meta) json.RawMessage {
	raw, _ := json.Marshal(m)
	return raw
}

func result(res core.WriteResult) Result {
	return Result{File: toFile(res.Record), Decision: res.Decision, Reason: res.Reason, ApprovalID: res.ApprovalID, PIIKinds: res.PIIKinds}
}

// syncLocked brings the path index up to the store's change log. The
// index is built from a scan of the file records once, then follows the
// change log, which every process writing the database appends to.
func (s *Service) syncLocked(ctx context.Context) error {
	err := s.follow.Sync(ctx, s.core.Store(), store.FollowIndex{
		Reset:   func() { s.ix, s.rev = map[string]map[key]string{}, map[string]map[string]key{} },
		Index:   s.index,
		Unindex: s.unindex,
	})
	if err != nil {
		return storeErr(err)
	}
	return nil
}

func (s *Service) unindex(ws, id string) {
	if k, ok := s.rev[ws][id]; ok {
		delete(s.rev[ws], id)
		if s.ix[ws][k] == id {
			delete(s.ix[ws], k)
		}
	}
}

// index records r's current state in the path index.
func (s *Service) index(ws string, r memory.Record) {
	s.unindex(ws, r.ID)
	m, ok := isFile(r)
	if !ok || !live(r, m) {
		return
	}
	if s.ix[ws] == nil {
		s.ix[ws], s.rev[ws] = map[key]string{}, map[string]key{}
	}
	k := key{r.Scope, m.Path}
	s.ix[ws][k] = r.ID
	s.rev[ws][r.ID] = k
}

// lookup returns the id of the live file at path in scope.
func (s *Service) lookup(ctx context.Context, ws string, sc memory.Scope, path string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncLocked(ctx); err != nil {
		return "", err
	}
	return s.ix[ws][key{sc, path}], nil
}

// paths returns the live paths of a workspace and scope with their ids.
func (s *Service) paths(ctx context.Context, ws string, sc memory.Scope) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncLocked(ctx); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, id := range s.ix[ws] {
		if k.scope == sc {
			out[k.path] = id
		}
	}
	return out, nil
}

// pathTaken is the conflict of a path held by another live file.
func pathTaken(msg string) error {
	return fault.New(fault.Conflict, msg).With("field", "path")
}

// claim is the core.WriteRequest.Claim of a file at path in scope sc of
// ws (self: the file moving there, or ""): under a lock on the path, no
// other live file may hold it in the database. The in-memory index is
// only a fast answer; this check inside the write transaction is what
// keeps a path unique when several processes share the database.
func claim(ws string, sc memory.Scope, path, self, msg string) func(context.Context, store.Tx) error {
	return func(ctx context.Context, tx store.Tx) error {
		k := strings.Join([]string{"file", ws, sc.UserID, sc.AgentID, sc.AppID, sc.ProjectID, sc.SessionID, path}, "\x00")
		if err := tx.LockKey(ctx, k); err != nil {
			return err
		}
		ids, err := tx.FindByMeta(ctx, ws, Category, "file_path", path, sc)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if id == self {
				continue
			}
			r, err := tx.GetRecord(ctx, ws, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if m, ok := isFile(r); ok && m.Path == path && live(r, m) {
				return pathTaken(msg)
			}
		}
		return nil
	}
}

// storeErr maps a store error (fault.StoreUnavailable).
func storeErr(err error) error { return fault.StoreUnavailable(err) }

func notFound() error { return fault.New(fault.NotFound, "file not found") }
