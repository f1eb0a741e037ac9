package files

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Memory is a memory of a store (a memory file), at its current version.
type Memory struct {
	ID               string    `json:"id"`
	Type             string    `json:"type"`
	MemoryStoreID    string    `json:"memory_store_id"`
	MemoryVersionID  string    `json:"memory_version_id"`
	Path             string    `json:"path"`
	Content          *string   `json:"content"`
	ContentSHA256    string    `json:"content_sha256"`
	ContentSizeBytes int       `json:"content_size_bytes"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// MemoryListItem is a memory or, below the listing's depth, a prefix.
type MemoryListItem struct {
	*Memory
	Prefix *MemoryPrefixItem
}

// MarshalJSON encodes the memory or the prefix.
func (it MemoryListItem) MarshalJSON() ([]byte, error) {
	if it.Prefix != nil {
		return json.Marshal(it.Prefix)
	}
	return json.Marshal(it.Memory)
}

// MemoryPrefixItem stands for the memories below a path.
type MemoryPrefixItem struct {
	Type string `json:"type"`
	Path string `json:"path"`
}

// Actor says who wrote or redacted a version: memgate's principal id.
type Actor struct {
	Type     string `json:"type"`
	APIKeyID string `json:"api_key_id"`
}

// MemoryVersion is one version of a memory.
type MemoryVersion struct {
	ID               string     `json:"id"`
	Type             string     `json:"type"`
	MemoryID         string     `json:"memory_id"`
	MemoryStoreID    string     `json:"memory_store_id"`
	Operation        string     `json:"operation"`
	Path             string     `json:"path"`
	Content          *string    `json:"content"`
	ContentSHA256    string     `json:"content_sha256"`
	ContentSizeBytes *int       `json:"content_size_bytes"`
	CreatedAt        time.Time  `json:"created_at"`
	CreatedBy        *Actor     `json:"created_by"`
	RedactedAt       *time.Time `json:"redacted_at"`
	RedactedBy       *Actor     `json:"redacted_by"`
}

func storePath(filePath string) string { return strings.TrimPrefix(filePath, Root) }

func memoryOf(f File, storeID string, full bool) Memory {
	m := Memory{ID: MemoryPrefix + f.ID, Type: "memory", MemoryStoreID: storeID, MemoryVersionID: versionID(f.ID, f.Version),
		Path: storePath(f.Path), ContentSHA256: f.ContentSHA256, ContentSizeBytes: f.SizeBytes, CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
	if full {
		c := f.Content
		m.Content = &c
	}
	return m
}

func versionID(id string, v int) string { return VersionPrefix + id + "_" + strconv.Itoa(v) }

func parseVersionID(s string) (string, int, error) {
	rest, ok := strings.CutPrefix(s, VersionPrefix)
	id, n, ok2 := strings.Cut(rest, "_")
	v, err := strconv.Atoi(n)
	if !ok || !ok2 || err != nil || v < 1 || !memory.ValidID(id) {
		return "", 0, fault.New(fault.NotFound, "memory version not found").With("type", "not_found_error")
	}
	return id, v, nil
}

func versionOf(f File, storeID string, full bool) MemoryVersion {
	op := "modified"
	switch {
	case f.Version == 1:
		op = "created"
	case f.Deleted:
		op = "deleted"
	}
	v := MemoryVersion{ID: versionID(f.ID, f.Version), Type: "memory_version", MemoryID: MemoryPrefix + f.ID, MemoryStoreID: storeID,
		Operation: op, Path: storePath(f.Path), ContentSHA256: f.ContentSHA256, CreatedAt: f.UpdatedAt}
	if f.Author != "" {
		v.CreatedBy = &Actor{Type: "api_actor", APIKeyID: f.Author}
	}
	if !f.Redacted {
		n := f.SizeBytes
		v.ContentSizeBytes = &n
		if full {
			c := f.Content
			v.Content = &c
		}
	}
	return v
}

// memPath checks a store path and returns the file path.
func memPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fault.Field("path", "must start with /").With("type", "invalid_request_error")
	}
	fp, err := CleanPath(Root + p)
	if err != nil {
		return "", fault.Field("path", "must have no empty, '.' or '..' segments and be at most 1,024 bytes").With("type", "invalid_request_error")
	}
	return fp, nil
}

// writableStore returns the store, refusing archived stores.
func (s *Service) writableStore(ctx context.Context, p memory.Principal, storeID string) (Store, error) {
	_, st, err := s.storeRecord(ctx, p, storeID)
	if err != nil {
		return Store{}, err
	}
	if st.ArchivedAt != nil {
		return Store{}, fault.New(fault.Conflict, "the memory store is archived and read-only").With("type", "conflict_error")
	}
	return st, nil
}

func (s *Service) pathConflict(ctx context.Context, ws, storeID, fp string) error {
	id, _ := s.lookup(ctx, ws, memory.Scope{AppID: storeID}, fp)
	e := storeErr409("memory_path_conflict_error", "a memory already exists at this path").With("conflicting_path", storePath(fp))
	if id != "" {
		e = e.With("conflicting_memory_id", MemoryPrefix+id)
	}
	return e
}

// CreateMemory creates a memory in a store.
func (s *Service) CreateMemory(ctx context.Context, p memory.Principal, storeID, path, content string, full bool) (Memory, Result, error) {
	st, err := s.writableStore(ctx, p, storeID)
	if err != nil {
		return Memory{}, Result{}, err
	}
	fp, err := memPath(path)
	if err != nil {
		return Memory{}, Result{}, err
	}
	res, err := s.Create(ctx, p, CreateRequest{Path: fp, Content: content, Scope: memory.Scope{AppID: st.ID}})
	if fault.CodeOf(err) == fault.Conflict {
		return Memory{}, Result{}, s.pathConflict(ctx, p.Workspace, st.ID, fp)
	}
	if err != nil {
		return Memory{}, Result{}, err
	}
	return memoryOf(res.File, st.ID, full), res, nil
}

// storeMemory returns the live file behind a memory id of a store.
func (s *Service) storeMemory(ctx context.Context, p memory.Principal, storeID, memID string, write bool) (Store, File, error) {
	_, st, err := s.storeRecord(ctx, p, storeID)
	if err != nil {
		return Store{}, File{}, err
	}
	id, err := recordID(memID, MemoryPrefix, "memory")
	if err != nil {
		return Store{}, File{}, err
	}
	var f File
	if write {
		r, err := s.liveByID(ctx, p, id)
		if err != nil {
			return Store{}, File{}, fault.New(fault.NotFound, "memory not found").With("type", "not_found_error")
		}
		f = toFile(r)
	} else {
		f, err = s.ReadID(ctx, p, id, 0)
		if err != nil || f.Deleted {
			return Store{}, File{}, fault.New(fault.NotFound, "memory not found").With("type", "not_found_error")
		}
	}
	if f.Scope.AppID != st.ID {
		return Store{}, File{}, fault.New(fault.NotFound, "memory not found").With("type", "not_found_error")
	}
	return st, f, nil
}

// GetMemory returns a memory.
func (s *Service) GetMemory(ctx context.Context, p memory.Principal, storeID, memID string, full bool) (Memory, error) {
	st, f, err := s.storeMemory(ctx, p, storeID, memID, false)
	if err != nil {
		return Memory{}, err
	}
	return memoryOf(f, st.ID, full), nil
}

// MemoryUpdate changes a memory's content and/or path.
type MemoryUpdate struct {
	Content      *string       `json:"content,omitempty"`
	Path         *string       `json:"path,omitempty"`
	Precondition *Precondition `json:"precondition,omitempty"`
}

// Precondition is an update's optimistic-concurrency condition.
type Precondition struct {
	Type          string `json:"type"`
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

// UpdateMemory writes a new version of a memory. A precondition whose
// hash does not match is memory_precondition_failed_error (409), unless
// the memory already holds exactly the requested content and path.
func (s *Service) UpdateMemory(ctx context.Context, p memory.Principal, storeID, memID string, req MemoryUpdate, full bool) (Memory, error) {
	if _, err := s.writableStore(ctx, p, storeID); err != nil {
		return Memory{}, err
	}
	st, f, err := s.storeMemory(ctx, p, storeID, memID, true)
	if err != nil {
		return Memory{}, err
	}
	var fp *string
	if req.Path != nil {
		c, err := memPath(*req.Path)
		if err != nil {
			return Memory{}, err
		}
		fp = &c
	}
	if pc := req.Precondition; pc != nil {
		if pc.Type != "content_sha256" {
			return Memory{}, fault.Field("precondition.type", "must be content_sha256").With("type", "invalid_request_error")
		}
		if pc.ContentSHA256 != f.ContentSHA256 {
			same := (req.Content == nil || *req.Content == f.Content) && (fp == nil || *fp == f.Path)
			if same {
				return memoryOf(f, st.ID, full), nil
			}
			return Memory{}, storeErr409("memory_precondition_failed_error", "the memory's content_sha256 does not match the precondition")
		}
	}
	if (req.Content == nil || *req.Content == f.Content) && (fp == nil || *fp == f.Path) {
		return memoryOf(f, st.ID, full), nil // nothing to change
	}
	up := UpdateRequest{Path: fp, ExpectedSHA256: f.ContentSHA256}
	if req.Content != nil && *req.Content != f.Content {
		up.Content = req.Content
	}
	res, err := s.UpdateID(ctx, p, f.ID, up)
	switch {
	case fault.CodeOf(err) == fault.Conflict && fp != nil && fault.As(err).Details["field"] == "path":
		return Memory{}, s.pathConflict(ctx, p.Workspace, st.ID, *fp)
	case fault.CodeOf(err) == fault.Conflict, fault.CodeOf(err) == fault.VersionConflict:
		return Memory{}, storeErr409("memory_precondition_failed_error", "the memory changed meanwhile")
	case err != nil:
		return Memory{}, err
	}
	return memoryOf(res.File, st.ID, full), nil
}

// DeleteMemory deletes a memory; its versions stay.
func (s *Service) DeleteMemory(ctx context.Context, p memory.Principal, storeID, memID, expectedSHA string) error {
	if _, err := s.writableStore(ctx, p, storeID); err != nil {
		return err
	}
	_, f, err := s.storeMemory(ctx, p, storeID, memID, true)
	if err != nil {
		return err
	}
	if expectedSHA != "" && expectedSHA != f.ContentSHA256 {
		return storeErr409("memory_precondition_failed_error", "the memory's content_sha256 does not match expected_content_sha256")
	}
	_, err = s.DeleteID(ctx, p, f.ID, f.ContentSHA256)
	if fault.CodeOf(err) == fault.Conflict || fault.CodeOf(err) == fault.VersionConflict {
		return storeErr409("memory_precondition_failed_error", "the memory changed meanwhile")
	}
	return err
}

// MemoryListRequest lists a store's memories.
type MemoryListRequest struct {
	PathPrefix string
	Depth      int
	Limit      int
	Desc       bool
	Page       string
	Full       bool
}

// ListMemories lists a store's live memories by path: memories up to
// Depth segments below PathPrefix (a raw string prefix), deeper ones
// rolled up into memory_prefix items.
func (s *Service) ListMemories(ctx context.Context, p memory.Principal, storeID string, req MemoryListRequest) (Page[MemoryListItem], error) {
	_, st, err := s.storeRecord(ctx, p, storeID)
	if err != nil {
		return Page[MemoryListItem]{}, err
	}
	max := 100
	if req.Full {
		max = 20
	}
	limit, err := pageLimit(req.Limit, max)
	if err != nil {
		return Page[MemoryListItem]{}, err
	}
	if req.Depth < 0 {
		return Page[MemoryListItem]{}, fault.Field("depth", "must not be negative").With("type", "invalid_request_error")
	}
	after := ""
	if req.Page != "" {
		if after, err = decodePage(req.Page); err != nil {
			return Page[MemoryListItem]{}, err
		}
	}
	ids, err := s.paths(ctx, p.Workspace, memory.Scope{AppID: st.ID})
	if err != nil {
		return Page[MemoryListItem]{}, err
	}
	files := map[string]string{} // store path → record id
	prefixes := map[string]bool{}
	for fp, id := range ids {
		sp := storePath(fp)
		if !strings.HasPrefix(sp, req.PathPrefix) {
			continue
		}
		if req.Depth > 0 {
			rest := strings.TrimPrefix(sp[len(req.PathPrefix):], "/")
			segs := strings.Split(rest, "/")
			if len(segs) > req.Depth {
				prefixes[sp[:len(sp)-len(rest)]+strings.Join(segs[:req.Depth], "/")+"/"] = true
				continue
			}
		}
		files[sp] = id
	}
	keys := make([]string, 0, len(files)+len(prefixes))
	for k := range files {
		keys = append(keys, k)
	}
	for k := range prefixes {
		keys = append(keys, k)
	}
	sortPaths(keys, req.Desc)
	out := Page[MemoryListItem]{Data: []MemoryListItem{}}
	for _, k := range keys {
		if after != "" && (!req.Desc && k <= after || req.Desc && k >= after) {
			continue
		}
		if len(out.Data) == limit {
			out.NextPage = encodePage(after)
			break
		}
		if prefixes[k] {
			out.Data = append(out.Data, MemoryListItem{Prefix: &MemoryPrefixItem{Type: "memory_prefix", Path: k}})
			after = k
			continue
		}
		f, err := s.ReadID(ctx, p, files[k], 0)
		if fault.CodeOf(err) == fault.NotFound {
			continue
		}
		if err != nil {
			return Page[MemoryListItem]{}, err
		}
		m := memoryOf(f, st.ID, req.Full)
		out.Data = append(out.Data, MemoryListItem{Memory: &m})
		after = k
	}
	return out, nil
}

// VersionListRequest lists versions.
type VersionListRequest struct {
	MemoryID  string
	Operation string
	// CreatedGTE and CreatedLTE bound created_at, inclusive.
	CreatedGTE, CreatedLTE *time.Time
	// APIKeyID keeps versions whose created_by is that api_actor (a
	// memgate principal id).
	APIKeyID string
	// SessionID keeps versions created by that session actor: memgate
	// records every version as written by an api_actor (its principal),
	// never by a session, so a session_id filter matches no version.
	SessionID string
	Limit     int
	Page      string
	Full      bool
}

// keeps reports whether v passes the request's filters.
func (req VersionListRequest) keeps(v MemoryVersion) bool {
	switch {
	case req.Operation != "" && v.Operation != req.Operation,
		req.CreatedGTE != nil && v.CreatedAt.Before(*req.CreatedGTE),
		req.CreatedLTE != nil && v.CreatedAt.After(*req.CreatedLTE),
		req.APIKeyID != "" && (v.CreatedBy == nil || v.CreatedBy.APIKeyID != req.APIKeyID),
		req.SessionID != "":
		return false
	}
	return true
}

// ListVersions lists versions, newest first: of one memory, or of every
// live memory of the store.
func (s *Service) ListVersions(ctx context.Context, p memory.Principal, storeID string, req VersionListRequest) (Page[MemoryVersion], error) {
	_, st, err := s.storeRecord(ctx, p, storeID)
	if err != nil {
		return Page[MemoryVersion]{}, err
	}
	limit, err := pageLimit(req.Limit, 100)
	if err != nil {
		return Page[MemoryVersion]{}, err
	}
	switch req.Operation {
	case "", "created", "modified", "deleted":
	default:
		return Page[MemoryVersion]{}, fault.Field("operation", "must be created, modified or deleted").With("type", "invalid_request_error")
	}
	var ids []string
	if req.MemoryID != "" {
		id, err := recordID(req.MemoryID, MemoryPrefix, "memory")
		if err != nil {
			return Page[MemoryVersion]{}, err
		}
		ids = []string{id}
	} else {
		live, err := s.paths(ctx, p.Workspace, memory.Scope{AppID: st.ID})
		if err != nil {
			return Page[MemoryVersion]{}, err
		}
		for _, id := range live {
			ids = append(ids, id)
		}
	}
	var all []MemoryVersion
	for _, id := range ids {
		hist, err := s.HistoryID(ctx, p, id)
		if fault.CodeOf(err) == fault.NotFound {
			continue
		}
		if err != nil {
			return Page[MemoryVersion]{}, err
		}
		for _, f := range hist {
			if f.Scope.AppID != st.ID && !f.Redacted {
				continue
			}
			if v := versionOf(f, st.ID, req.Full); req.keeps(v) {
				all = append(all, v)
			}
		}
	}
	// Newest first; ties by id for a stable order.
	sortVersions(all)
	after := ""
	if req.Page != "" {
		if after, err = decodePage(req.Page); err != nil {
			return Page[MemoryVersion]{}, err
		}
	}
	out := Page[MemoryVersion]{Data: []MemoryVersion{}}
	skipping := after != ""
	for _, v := range all {
		if skipping {
			skipping = v.ID != after
			continue
		}
		if len(out.Data) == limit {
			out.NextPage = encodePage(out.Data[len(out.Data)-1].ID)
			break
		}
		out.Data = append(out.Data, v)
	}
	return out, nil
}

func sortVersions(vs []MemoryVersion) {
	for i := 1; i < len(vs); i++ {
		for j := i; j > 0 && newer(vs[j], vs[j-1]); j-- {
			vs[j], vs[j-1] = vs[j-1], vs[j]
		}
	}
}

func newer(a, b MemoryVersion) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ID > b.ID
}

// GetVersion returns one version.
func (s *Service) GetVersion(ctx context.Context, p memory.Principal, storeID, verID string, full bool) (MemoryVersion, error) {
	_, st, err := s.storeRecord(ctx, p, storeID)
	if err != nil {
		return MemoryVersion{}, err
	}
	id, n, err := parseVersionID(verID)
	if err != nil {
		return MemoryVersion{}, err
	}
	hist, err := s.HistoryID(ctx, p, id)
	if err != nil || n > len(hist) || hist[n-1].Version != n || hist[len(hist)-1].Scope.AppID != st.ID {
		return MemoryVersion{}, fault.New(fault.NotFound, "memory version not found").With("type", "not_found_error")
	}
	return versionOf(hist[n-1], st.ID, full), nil
}

// RedactVersion erases a version's content (see Redact).
func (s *Service) RedactVersion(ctx context.Context, p memory.Principal, storeID, verID string) (MemoryVersion, error) {
	if _, err := s.GetVersion(ctx, p, storeID, verID, false); err != nil {
		return MemoryVersion{}, err
	}
	_, st, _ := s.storeRecord(ctx, p, storeID)
	id, n, _ := parseVersionID(verID)
	f, err := s.Redact(ctx, p, id, n)
	if err != nil {
		return MemoryVersion{}, err
	}
	v := versionOf(f, st.ID, false)
	now := time.Now().UTC().Truncate(time.Microsecond)
	v.RedactedAt, v.RedactedBy = &now, &Actor{Type: "api_actor", APIKeyID: p.ID}
	return v, nil
}
