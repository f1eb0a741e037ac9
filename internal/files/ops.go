package files

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// CreateRequest creates a file.
type CreateRequest struct {
	Path    string        `json:"path"`
	Content string        `json:"content"`
	Scope   memory.Scope  `json:"scope"`
	Pinned  bool          `json:"pinned,omitempty"`
	Access  memory.Access `json:"access,omitempty"`
}

// UpdateRequest changes a file; absent fields are unchanged.
type UpdateRequest struct {
	Content *string `json:"content,omitempty"`
	Pinned  *bool   `json:"pinned,omitempty"`
	// Path, when set, moves the file (the destination must be free).
	Path *string `json:"path,omitempty"`
	// ExpectedSHA256, when set, must be the current content's sha256;
	// otherwise the update is a conflict (HTTP 409) and writes nothing.
	ExpectedSHA256 string `json:"expected_content_sha256,omitempty"`
}

// Create writes a new file through the gate. A live file at the same path
// and scope is a conflict.
func (s *Service) Create(ctx context.Context, p memory.Principal, req CreateRequest) (Result, error) {
	path, err := CleanPath(req.Path)
	if err != nil {
		return Result{}, err
	}
	if err := s.checkContent(req.Content); err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncLocked(ctx); err != nil {
		return Result{}, err
	}
	if _, taken := s.ix[p.Workspace][key{req.Scope, path}]; taken {
		return Result{}, pathTaken("a file already exists at this path")
	}
	res, err := s.core.Write(ctx, p, core.WriteRequest{
		Type: memory.Resource, Category: Category, Content: req.Content, Scope: req.Scope, Access: req.Access,
		Metadata: metaJSON(meta{Path: path, Pinned: req.Pinned}), Addressed: true,
		Claim: claim(p.Workspace, req.Scope, path, "", "a file already exists at this path"),
	})
	if err != nil {
		return Result{}, err
	}
	s.index(p.Workspace, res.Record)
	return result(res), nil
}

// head returns the current version of the live file at path, read under
// the principal's access; sensitive files only for a change, which core
// checks again (as for records, a read never shows a sensitive file).
func (s *Service) head(ctx context.Context, p memory.Principal, sc memory.Scope, rawPath string, write bool) (memory.Record, error) {
	path, err := CleanPath(rawPath)
	if err != nil {
		return memory.Record{}, err
	}
	id, err := s.lookup(ctx, p.Workspace, sc, path)
	if err != nil {
		return memory.Record{}, err
	}
	if id == "" {
		return memory.Record{}, notFound()
	}
	r, err := s.core.Get(ctx, p, id, core.GetOptions{IncludeSensitive: write})
	if err != nil {
		if fault.CodeOf(err) == fault.NotFound {
			return memory.Record{}, notFound()
		}
		return memory.Record{}, err
	}
	return r, nil
}

// Read returns the current version of a file.
func (s *Service) Read(ctx context.Context, p memory.Principal, sc memory.Scope, path string) (File, error) {
	r, err := s.head(ctx, p, sc, path, false)
	if err != nil {
		return File{}, err
	}
	return toFile(r), nil
}

// ReadID returns a file by record id at a version (0: current).
func (s *Service) ReadID(ctx context.Context, p memory.Principal, id string, version int) (File, error) {
	r, err := s.core.Get(ctx, p, id, core.GetOptions{Version: version})
	if err != nil {
		return File{}, err
	}
	if _, ok := isFile(r); !ok {
		return File{}, notFound()
	}
	return toFile(r), nil
}

func conflictSHA(cur string) error {
	return fault.New(fault.Conflict, "the file's content is not the expected version: expected_content_sha256 does not match").
		With("field", "expected_content_sha256").With("content_sha256", cur)
}

// patch writes the next version of a file through core.Patch, which
// checks ownership, the gate and the version; a concurrent change in
// between is a version conflict.
func (s *Service) patch(ctx context.Context, p memory.Principal, head memory.Record, content *string, m meta, invalidate bool) (Result, error) {
	v := head.Version
	req := core.PatchRequest{ExpectedVersion: &v, Content: content, Metadata: metaJSON(m), Invalidate: invalidate}
	if old, _ := isFile(head); m.Path != old.Path {
		req.Claim = claim(p.Workspace, head.Scope, m.Path, head.ID, "a file already exists at the destination")
	}
	res, err := s.core.Patch(ctx, p, head.ID, req)
	if err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	s.index(p.Workspace, res.Record)
	s.mu.Unlock()
	return result(res), nil
}

// Update writes a new version of a file.
func (s *Service) Update(ctx context.Context, p memory.Principal, sc memory.Scope, path string, req UpdateRequest) (Result, error) {
	head, err := s.head(ctx, p, sc, path, true)
	if err != nil {
		return Result{}, err
	}
	return s.UpdateRecord(ctx, p, head, req)
}

// liveByID returns the head of the live file with record id id, for a
// change.
func (s *Service) liveByID(ctx context.Context, p memory.Principal, id string) (memory.Record, error) {
	head, err := s.core.Get(ctx, p, id, getSensitive)
	if fault.CodeOf(err) == fault.NotFound {
		return memory.Record{}, notFound()
	}
	if err != nil {
		return memory.Record{}, err
	}
	if m, ok := isFile(head); !ok || !live(head, m) {
		return memory.Record{}, notFound()
	}
	return head, nil
}

// UpdateID is Update by record id.
func (s *Service) UpdateID(ctx context.Context, p memory.Principal, id string, req UpdateRequest) (Result, error) {
	head, err := s.liveByID(ctx, p, id)
	if err != nil {
		return Result{}, err
	}
	return s.UpdateRecord(ctx, p, head, req)
}

// DeleteID is Delete by record id.
func (s *Service) DeleteID(ctx context.Context, p memory.Principal, id, expectedSHA string) (Result, error) {
	head, err := s.liveByID(ctx, p, id)
	if err != nil {
		return Result{}, err
	}
	return s.DeleteRecord(ctx, p, head, expectedSHA)
}

// UpdateRecord is Update of a file already read.
func (s *Service) UpdateRecord(ctx context.Context, p memory.Principal, head memory.Record, req UpdateRequest) (Result, error) {
	if req.Content == nil && req.Pinned == nil && req.Path == nil {
		return Result{}, fault.Field("body", "names no field to change")
	}
	if req.Content != nil {
		if err := s.checkContent(*req.Content); err != nil {
			return Result{}, err
		}
	}
	if req.ExpectedSHA256 != "" && req.ExpectedSHA256 != head.ContentSHA256 {
		return Result{}, conflictSHA(head.ContentSHA256)
	}
	m, _ := isFile(head)
	if req.Pinned != nil {
		m.Pinned = *req.Pinned
	}
	if req.Path != nil {
		dst, err := CleanPath(*req.Path)
		if err != nil {
			return Result{}, err
		}
		if dst != m.Path {
			s.mu.Lock()
			err := s.syncLocked(ctx)
			_, taken := s.ix[p.Workspace][key{head.Scope, dst}]
			s.mu.Unlock()
			if err != nil {
				return Result{}, err
			}
			if taken {
				return Result{}, pathTaken("a file already exists at the destination")
			}
			m.Path = dst
		}
	}
	return s.patch(ctx, p, head, req.Content, m, false)
}

// Delete ends a file: a last version marks it deleted, and its history
// stays. expectedSHA, when set, must match the current content.
func (s *Service) Delete(ctx context.Context, p memory.Principal, sc memory.Scope, path, expectedSHA string) (Result, error) {
	head, err := s.head(ctx, p, sc, path, true)
	if err != nil {
		return Result{}, err
	}
	return s.DeleteRecord(ctx, p, head, expectedSHA)
}

// DeleteRecord is Delete of a file already read.
func (s *Service) DeleteRecord(ctx context.Context, p memory.Principal, head memory.Record, expectedSHA string) (Result, error) {
	if expectedSHA != "" && expectedSHA != head.ContentSHA256 {
		return Result{}, conflictSHA(head.ContentSHA256)
	}
	m, _ := isFile(head)
	m.Deleted = true
	return s.patch(ctx, p, head, nil, m, true)
}

// Rename moves a file to a new path (a new version). The destination
// must be free.
func (s *Service) Rename(ctx context.Context, p memory.Principal, sc memory.Scope, from, to string) (Result, error) {
	head, err := s.head(ctx, p, sc, from, true)
	if err != nil {
		return Result{}, err
	}
	return s.UpdateRecord(ctx, p, head, UpdateRequest{Path: &to})
}

// History returns every version of a file, oldest first, each under the
// principal's access.
func (s *Service) History(ctx context.Context, p memory.Principal, sc memory.Scope, path string) ([]File, error) {
	head, err := s.head(ctx, p, sc, path, false)
	if err != nil {
		return nil, err
	}
	return s.HistoryID(ctx, p, head.ID)
}

// HistoryID is History by record id (deleted files included).
func (s *Service) HistoryID(ctx context.Context, p memory.Principal, id string) ([]File, error) {
	head, err := s.core.Get(ctx, p, id, core.GetOptions{})
	if err != nil {
		return nil, err
	}
	if _, ok := isFile(head); !ok {
		return nil, notFound()
	}
	vs, err := s.core.History(ctx, p, id, false)
	if err != nil {
		return nil, err
	}
	out := make([]File, 0, len(vs))
	for _, v := range vs {
		out = append(out, toFile(v))
	}
	return out, nil
}

// ListRequest lists files under a prefix.
type ListRequest struct {
	Prefix string
	Scope  memory.Scope
	// PinnedOnly keeps pinned files.
	PinnedOnly bool
}

// List returns the live files under a prefix that the principal may read,
// by path.
func (s *Service) List(ctx context.Context, p memory.Principal, req ListRequest) ([]File, error) {
	prefix, err := CleanPrefix(req.Prefix)
	if err != nil {
		return nil, err
	}
	ids, err := s.paths(ctx, p.Workspace, req.Scope)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ids))
	for path := range ids {
		if strings.HasPrefix(path, prefix) {
			names = append(names, path)
		}
	}
	slices.Sort(names)
	out := make([]File, 0, len(names))
	for _, path := range names {
		r, err := s.core.Get(ctx, p, ids[path], core.GetOptions{})
		if fault.CodeOf(err) == fault.NotFound {
			continue // not readable by p, or gone since the index saw it
		}
		if err != nil {
			return nil, err
		}
		m, ok := isFile(r)
		if !ok || !live(r, m) || m.Path != path || (req.PinnedOnly && !m.Pinned) {
			continue
		}
		out = append(out, toFile(r))
	}
	return out, nil
}

// Pinned returns the pinned files of a scope that p may read, by path:
// what context assembly includes in every context.
func (s *Service) Pinned(ctx context.Context, p memory.Principal, sc memory.Scope) ([]File, error) {
	return s.List(ctx, p, ListRequest{Scope: sc, PinnedOnly: true})
}

var getSensitive = core.GetOptions{IncludeSensitive: true}

// Redact erases the content of one past version of a file for good,
// keeping its hash (core.RedactVersion). The current version cannot be
// redacted.
func (s *Service) Redact(ctx context.Context, p memory.Principal, id string, version int) (File, error) {
	if _, err := s.HistoryID(ctx, p, id); err != nil {
		return File{}, err
	}
	r, err := s.core.RedactVersion(ctx, p, id, version)
	if err != nil {
		return File{}, err
	}
	return toFile(r), nil
}

// ContextPinned is s as context assembly's source of pinned files
// (internal/contextpack), so every context starts with them.
func (s *Service) ContextPinned() contextpack.PinnedSource { return pinnedSource{s} }

type pinnedSource struct{ s *Service }

func (ps pinnedSource) Pinned(ctx context.Context, p memory.Principal, sc memory.Scope) ([]contextpack.PinnedFile, error) {
	fs, err := ps.s.Pinned(ctx, p, sc)
	if err != nil {
		return nil, err
	}
	out := make([]contextpack.PinnedFile, 0, len(fs))
	for _, f := range fs {
		out = append(out, contextpack.PinnedFile{Path: f.Path, Content: f.Content,
			Citation: "mem://" + f.ID + "@v" + strconv.Itoa(f.Version)})
	}
	return out, nil
}
