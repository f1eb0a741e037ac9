package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Document is one document to ingest.
type Document struct {
	// URI is where the document comes from (file:///…, https://…); with
	// the scope it makes the resource id. Required.
	URI string `json:"uri"`
	// MediaType is one of the chunkers' types; empty means by the URI's
	// extension, else plain text.
	MediaType string        `json:"media_type,omitempty"`
	Content   []byte        `json:"-"`
	Scope     memory.Scope  `json:"scope"`
	Access    memory.Access `json:"access,omitempty"`
}

// Ingest outcomes.
const (
	Created   = "created"
	Updated   = "updated"
	Unchanged = "unchanged"
	Retired   = "retired"
)

// ChunkResult is one chunk an ingestion wrote.
type ChunkResult struct {
	ID         string `json:"id"`
	Version    int    `json:"version"`
	Key        string `json:"key"`
	Citation   string `json:"citation"`
	Decision   string `json:"decision"`
	Reason     string `json:"reason,omitempty"`
	Status     string `json:"status"`
	ApprovalID string `json:"approval_id,omitempty"`
	Retired    bool   `json:"retired,omitempty"`
}

// Result is the answer to one document's ingestion.
type Result struct {
	ResourceID string `json:"resource_id"`
	URI        string `json:"uri"`
	MediaType  string `json:"media_type"`
	SHA256     string `json:"content_sha256"`
	Version    int    `json:"version"`
	Outcome    string `json:"outcome"`
	// Counts of chunks: written new, given a new version, retired, left
	// as they were.
	Added       int `json:"added"`
	Changed     int `json:"changed"`
	RetiredN    int `json:"retired"`
	Kept        int `json:"unchanged"`
	Quarantined int `json:"quarantined,omitempty"`
	Pending     int `json:"pending_approval,omitempty"`
	// Chunks are the chunks written, in document order.
	Chunks []ChunkResult `json:"chunks,omitempty"`
}

// MediaTypeFor returns doc's media type: its own, else by its URI's
// extension, else plain text.
func MediaTypeFor(uri, mt string) string {
	if mt != "" {
		if i := strings.IndexByte(mt, ';'); i >= 0 {
			mt = strings.TrimSpace(mt[:i])
		}
		return strings.ToLower(mt)
	}
	u := uri
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if t := MediaTypeOf(u); t != "" {
		return t
	}
	return Plain
}

// Skip is the fault of a document that is not ingested (binary, invalid
// UTF-8, malformed PDF, too large): InvalidArgument or TooLarge, field
// content, with a reason an ingest summary shows.
func skip(reason string) error {
	return fault.Field("content", reason).With("reason", reason)
}

// Ingest ingests one document as p: its chunks are written through the
// gate as resource records in one transaction. A document already
// ingested is compared chunk by chunk: chunks whose text or place changed
// get a new version, chunks gone are retired, the rest are not touched; an
// unchanged document writes nothing.
func (s *Service) Ingest(ctx context.Context, p memory.Principal, doc Document) (Result, error) {
	mt, err := s.checkDocument(p, doc)
	if err != nil {
		return Result{}, err
	}
	docSHA := sha(string(doc.Content))
	rid := ResourceID(doc.Scope, doc.URI)
	res := Result{ResourceID: rid, URI: doc.URI, MediaType: mt, SHA256: docSHA}

	// One ingestion of a document at a time in this process (the index
	// says what to change); ingestions of different documents run
	// concurrently, and their commits share fsyncs.
	unlock := s.lockResource(rid)
	defer unlock()
	s.mu.Lock()
	old, err := s.lookup(ctx, p.Workspace, rid)
	var oldLive []chunkEntry
	oldVersion, oldSHA := 0, ""
	if old != nil {
		oldLive, oldVersion, oldSHA = old.liveChunks(), old.version, old.docSHA
	}
	s.mu.Unlock()
	if err != nil {
		return Result{}, err
	}
	if old != nil && oldSHA == docSHA && len(oldLive) > 0 {
		res.Version, res.Outcome, res.Kept = oldVersion, Unchanged, len(oldLive)
		return res, nil
	}
	text, chunks, err := Split(mt, doc.Content, s.maxTokens)
	var bad *Malformed
	if errors.As(err, &bad) {
		return Result{}, skip(bad.Reason)
	}
	if err != nil {
		return Result{}, err
	}
	version := 1
	if old != nil {
		version = oldVersion + 1
	}
	base := chunkMeta{ResourceID: rid, SourceURI: doc.URI, MediaType: mt, DocSHA256: docSHA, DocVersion: version, DocLines: len(splitLines(text))}
	changes := diffChunks(base, chunks, oldLive, &res)
	if len(changes) == 0 {
		res.Version, res.Outcome = oldVersion, Unchanged
		return res, nil
	}
	outs, err := s.core.ApplyResource(ctx, p, core.ResourceChanges{Lock: rid, Scope: doc.Scope, Access: doc.Access, Changes: changes})
	if err != nil {
		if fault.CodeOf(err) == fault.VersionConflict {
			s.mu.Lock()
			s.follow.Invalidate() // another process changed the document: rebuild the index
			s.mu.Unlock()
		}
		return Result{}, err
	}
	res.Version, res.Outcome = version, Created
	if old != nil {
		res.Outcome = Updated
	}
	s.applied(p, changes, outs, &res)
	return res, nil
}

// checkDocument checks doc and p's right to write it, and returns its
// media type.
func (s *Service) checkDocument(p memory.Principal, doc Document) (string, error) {
	if doc.URI == "" {
		return "", fault.Field("uri", "is required")
	}
	if len(doc.URI) > 2048 || !utf8.ValidString(doc.URI) || strings.ContainsAny(doc.URI, "\x00\n\r") {
		return "", fault.Field("uri", "must be valid UTF-8 of at most 2048 bytes, on one line")
	}
	mt := MediaTypeFor(doc.URI, doc.MediaType)
	if !Known(mt) {
		return "", fault.Field("media_type", "must be one of text/markdown, text/plain, text/html, application/pdf or a source code type (docs/knowledge.md)")
	}
	if len(doc.Content) > s.maxBytes {
		return "", (&fault.Error{Code: fault.TooLarge, Message: "content: exceeds the document limit of " + strconv.Itoa(s.maxBytes) + " bytes",
			Details: map[string]any{"field": "content", "limit": s.maxBytes, "reason": "too large"}})
	}
	if err := s.core.CheckResourceWrite(p, doc.Scope, doc.Access); err != nil {
		return "", err
	}
	return mt, nil
}

// diffChunks compares the new chunks with the live chunks of the
// document's previous version, counting in res: a new version for each
// chunk whose text or place changed, a new record for each new chunk, a
// retirement for each chunk gone (in document order); chunks unchanged
// are left alone. base holds the new version's document-level metadata.
func diffChunks(base chunkMeta, chunks []Chunk, oldLive []chunkEntry, res *Result) []core.ChunkChange {
	prev := map[string]chunkEntry{}
	for _, c := range oldLive {
		prev[c.key] = c
	}
	var changes []core.ChunkChange
	for _, c := range chunks {
		m := base
		m.Key, m.Heading, m.Page, m.LineStart, m.LineEnd, m.SpanStart, m.SpanEnd = c.Key, c.Heading, c.Page, c.Start, c.End, c.SpanStart, c.SpanEnd
		m.ChunkSHA256 = sha(c.Text)
		raw, _ := json.Marshal(m)
		if o, ok := prev[c.Key]; ok {
			delete(prev, c.Key)
			if o.meta.ChunkSHA256 == m.ChunkSHA256 && o.meta.locator() == m.locator() && o.meta.SourceURI == m.SourceURI {
				res.Kept++
				continue
			}
			changes = append(changes, core.ChunkChange{ID: o.id, Version: o.version, Content: c.Text, Metadata: raw})
			res.Changed++
		} else {
			changes = append(changes, core.ChunkChange{Content: c.Text, Metadata: raw})
			res.Added++
		}
	}
	gone := make([]chunkEntry, 0, len(prev))
	for _, c := range prev {
		gone = append(gone, c)
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].meta.SpanStart < gone[j].meta.SpanStart })
	for _, c := range gone {
		m := c.meta
		m.DocSHA256, m.DocVersion, m.DocLines = base.DocSHA256, base.DocVersion, base.DocLines
		raw, _ := json.Marshal(m)
		changes = append(changes, core.ChunkChange{ID: c.id, Version: c.version, Metadata: raw, Retire: true})
		res.RetiredN++
	}
	return changes
}

// applied indexes the records written for changes and adds each chunk's
// outcome to res.
func (s *Service) applied(p memory.Principal, changes []core.ChunkChange, outs []core.ChunkOutcome, res *Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range outs {
		s.index(p.Workspace, o.Record)
		cr := ChunkResult{ID: o.Record.ID, Version: o.Record.Version, Citation: o.Record.Citation(), Decision: o.Decision, Reason: o.Reason,
			Status: string(o.Record.Status), ApprovalID: o.ApprovalID, Retired: changes[i].Retire}
		if m, ok := chunkOf(o.Record); ok {
			cr.Key = m.Key
		}
		switch {
		case o.Decision == memory.DecisionQuarantined:
			res.Quarantined++
		case o.ApprovalID != "":
			res.Pending++
		}
		res.Chunks = append(res.Chunks, cr)
	}
}

// Retire retires every live chunk of the resource at uri in scope (its
// file was deleted): they leave search and keep their history.
func (s *Service) Retire(ctx context.Context, p memory.Principal, sc memory.Scope, uri string) (Result, error) {
	rid := ResourceID(sc, uri)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.lookup(ctx, p.Workspace, rid)
	if err != nil {
		return Result{}, err
	}
	if r == nil || len(r.liveChunks()) == 0 {
		return Result{}, notFound()
	}
	return s.retireLocked(ctx, p, r)
}

func (s *Service) retireLocked(ctx context.Context, p memory.Principal, r *resource) (Result, error) {
	var changes []core.ChunkChange
	version := r.version + 1
	for _, c := range r.liveChunks() {
		m := c.meta
		m.DocVersion, m.DocSHA256 = version, ""
		raw, _ := json.Marshal(m)
		changes = append(changes, core.ChunkChange{ID: c.id, Version: c.version, Metadata: raw, Retire: true})
	}
	outs, err := s.core.ApplyResource(ctx, p, core.ResourceChanges{Lock: r.id, Scope: r.scope, Changes: changes})
	if err != nil {
		return Result{}, err
	}
	for _, o := range outs {
		s.index(p.Workspace, o.Record)
	}
	return Result{ResourceID: r.id, URI: r.uri, MediaType: r.media, Version: version, Outcome: Retired, RetiredN: len(outs)}, nil
}

// RetireMissing retires the resources of scope sc whose URI starts with
// prefix and is not in keep: the files a directory sync no longer found.
func (s *Service) RetireMissing(ctx context.Context, p memory.Principal, sc memory.Scope, prefix string, keep map[string]bool) ([]Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncLocked(ctx); err != nil {
		return nil, err
	}
	var gone []*resource
	for _, r := range s.ix[p.Workspace] {
		if r.scope == sc && strings.HasPrefix(r.uri, prefix) && !keep[r.uri] && len(r.liveChunks()) > 0 {
			gone = append(gone, r)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].uri < gone[j].uri })
	var out []Result
	for _, r := range gone {
		res, err := s.retireLocked(ctx, p, r)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

// ForgetResult says what forgetting a resource did.
type ForgetResult struct {
	ResourceID string `json:"resource_id"`
	Forgotten  int    `json:"forgotten_chunks"`
	// Remaining counts chunks the caller may not change (e.g. a
	// quarantined chunk is sensitive: only an operator or a trusted
	// agent sees it); an operator's forget erases them too.
	Remaining int `json:"remaining_chunks"`
}

// Forget erases a resource: every chunk, each with all its versions,
// vectors and index entries, through core's Forget (SPEC §3 tombstones).
func (s *Service) Forget(ctx context.Context, p memory.Principal, rid string) (ForgetResult, error) {
	out := ForgetResult{ResourceID: rid}
	s.mu.Lock()
	r, err := s.lookup(ctx, p.Workspace, rid)
	var ids []string
	if r != nil {
		for _, c := range r.chunks {
			ids = append(ids, c.id)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return out, err
	}
	if len(ids) == 0 {
		return out, notFound()
	}
	sort.Strings(ids)
	for _, id := range ids {
		if _, err := s.core.Forget(ctx, p, id); err != nil {
			if c := fault.CodeOf(err); c == fault.NotFound || c == fault.PermissionDenied {
				out.Remaining++
				continue
			}
			return out, err
		}
		out.Forgotten++
	}
	if out.Forgotten == 0 {
		return out, notFound()
	}
	s.mu.Lock()
	err = s.syncLocked(ctx)
	s.mu.Unlock()
	return out, err
}
