package knowledge

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// DefaultMaxBytes is the default limit on a document's size.
const DefaultMaxBytes = 8 << 20

// Options configure a Service.
type Options struct {
	// MaxBytes limits a document (0: DefaultMaxBytes).
	MaxBytes int
	// MaxTokens is the soft maximum of a chunk (0: DefaultMaxTokens).
	MaxTokens int
	// Reranker, when set, reorders the fused top hits of Search.
	Reranker *Reranker
}

// Service ingests, cites and searches documents over a core service.
type Service struct {
	core      *core.Service
	maxBytes  int
	maxTokens int
	// rerank is the optional second stage (nil: off); SetReranker
	// changes it while searches run.
	rerank atomic.Pointer[Reranker]

	// mu guards the resource index and serialises ingestions in this
	// process; ApplyResource's lock serialises them across processes.
	mu  sync.Mutex
	ix  map[string]map[string]*resource // workspace → resource id → resource
	rev map[string]map[string]string    // workspace → chunk record id → resource id
	// follow keeps the index up to the change log (it only pulls).
	follow store.Follower

	// docLocks serialise the ingestions of one document (striped by
	// resource id).
	docLocks [64]sync.Mutex
}

func (s *Service) lockResource(rid string) func() {
	h := fnv.New32a()
	h.Write([]byte(rid))
	m := &s.docLocks[h.Sum32()%uint32(len(s.docLocks))]
	m.Lock()
	return m.Unlock
}

// New returns the knowledge service over svc.
func New(svc *core.Service, o Options) *Service {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	s := &Service{core: svc, maxBytes: o.MaxBytes, maxTokens: o.MaxTokens}
	s.rerank.Store(o.Reranker)
	return s
}

// SetReranker turns the rerank stage of Search on with r, or off with
// nil (the server's configuration: docs/knowledge.md).
func (s *Service) SetReranker(r *Reranker) { s.rerank.Store(r) }

// chunkMeta is what a chunk record keeps in its metadata.
type chunkMeta struct {
	ResourceID  string `json:"resource_id"`
	SourceURI   string `json:"source_uri"`
	MediaType   string `json:"media_type"`
	DocSHA256   string `json:"doc_sha256"`
	DocVersion  int    `json:"doc_version"`
	DocLines    int    `json:"doc_lines"`
	Key         string `json:"chunk_key"`
	Heading     string `json:"heading,omitempty"`
	Page        int    `json:"page,omitempty"`
	LineStart   int    `json:"line_start"`
	LineEnd     int    `json:"line_end"`
	SpanStart   int    `json:"span_start"`
	SpanEnd     int    `json:"span_end"`
	ChunkSHA256 string `json:"chunk_sha256"`
}

func (m chunkMeta) locator() string {
	b, _ := json.Marshal([]any{m.Heading, m.Page, m.LineStart, m.LineEnd, m.SpanStart, m.SpanEnd})
	return string(b)
}

// resource is the index's view of one ingested document.
type resource struct {
	id, uri, media string
	scope          memory.Scope
	docSHA         string // of the newest version written
	version        int    // newest document version
	chunks         map[string]chunkEntry
}

type chunkEntry struct {
	id      string
	key     string
	version int // record version
	meta    chunkMeta
	live    bool
}

// chunkOf reports whether r is a knowledge chunk and returns its meta.
func chunkOf(r memory.Record) (chunkMeta, bool) {
	if r.Type != memory.Resource || r.Category != core.ChunkCategory {
		return chunkMeta{}, false
	}
	var m chunkMeta
	if json.Unmarshal(r.Metadata, &m) != nil || m.ResourceID == "" {
		return chunkMeta{}, false
	}
	return m, true
}

func live(r memory.Record) bool {
	if r.InvalidatedAt != nil {
		return false
	}
	switch r.Status {
	case memory.Active, memory.Provisional, memory.Quarantined:
		return true
	}
	return false
}

// ResourceID is the stable id of the document at uri in scope: the same
// document ingested again is the same resource.
func ResourceID(sc memory.Scope, uri string) string {
	return "res_" + sha(strings.Join([]string{sc.UserID, sc.AgentID, sc.AppID, sc.ProjectID, sc.SessionID, uri}, "\x00"))[:24]
}

// syncLocked brings the index up to the store's change log: a scan of
// the records once, then the change log every process appends to.
func (s *Service) syncLocked(ctx context.Context) error {
	err := s.follow.Sync(ctx, s.core.Store(), store.FollowIndex{
		Reset:   func() { s.ix, s.rev = map[string]map[string]*resource{}, map[string]map[string]string{} },
		Index:   s.index,
		Unindex: s.unindex,
	})
	if err != nil {
		return storeErr(err)
	}
	return nil
}

func (s *Service) unindex(ws, id string) {
	rid, ok := s.rev[ws][id]
	if !ok {
		return
	}
	delete(s.rev[ws], id)
	if res := s.ix[ws][rid]; res != nil {
		for k, c := range res.chunks {
			if c.id == id {
				delete(res.chunks, k)
			}
		}
		if len(res.chunks) == 0 {
			delete(s.ix[ws], rid)
		}
	}
}

// index records r's current state.
func (s *Service) index(ws string, r memory.Record) {
	m, ok := chunkOf(r)
	if !ok {
		if r.Status == memory.Forgotten {
			s.unindex(ws, r.ID)
		}
		return
	}
	if r.Status == memory.Forgotten {
		s.unindex(ws, r.ID)
		return
	}
	if s.ix[ws] == nil {
		s.ix[ws], s.rev[ws] = map[string]*resource{}, map[string]string{}
	}
	s.rev[ws][r.ID] = m.ResourceID
	res := s.ix[ws][m.ResourceID]
	if res == nil {
		res = &resource{id: m.ResourceID, chunks: map[string]chunkEntry{}}
		s.ix[ws][m.ResourceID] = res
	}
	if m.DocVersion >= res.version {
		res.version, res.docSHA, res.uri, res.media, res.scope = m.DocVersion, m.DocSHA256, m.SourceURI, m.MediaType, r.Scope
	}
	e := chunkEntry{id: r.ID, key: m.Key, version: r.Version, meta: m, live: live(r)}
	// A key names one live chunk; a retired chunk keeps its entry (under
	// its id) until a live one takes the key.
	for k, c := range res.chunks {
		if c.id == r.ID {
			delete(res.chunks, k)
		}
	}
	k := m.Key
	if !e.live {
		k = "\x00" + r.ID
	}
	if old, ok := res.chunks[k]; ok && old.id != r.ID && old.live && e.live {
		res.chunks["\x00"+old.id] = old // two live chunks claim a key: keep both
	}
	res.chunks[k] = e
}

// liveChunks returns a resource's live chunks in document order.
func (r *resource) liveChunks() []chunkEntry {
	var out []chunkEntry
	for _, c := range r.chunks {
		if c.live {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].meta.SpanStart < out[j].meta.SpanStart })
	return out
}

// lookup returns the resource rid of ws (synced), or nil.
func (s *Service) lookup(ctx context.Context, ws, rid string) (*resource, error) {
	if err := s.syncLocked(ctx); err != nil {
		return nil, err
	}
	return s.ix[ws][rid], nil
}

// storeErr maps a store error (fault.StoreUnavailable).
func storeErr(err error) error { return fault.StoreUnavailable(err) }

func notFound() error { return fault.New(fault.NotFound, "resource not found") }
