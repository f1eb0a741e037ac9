package kgcompat

// read_graph, search_nodes and open_nodes, answered from the
// knowledge-graph index (index.go).

import (
	"cmp"
	"context"
	"encoding/base64"
	"slices"
	"strconv"
	"strings"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// kgRanked bounds the entities search_nodes adds by ranking when no
// entity contains the query, and kgMinRelevance is the relevance (see
// docs/retrieval.md) an observation needs to bring its entity in: about
// a fifth of the query's weighted terms, so unrelated entities stay out.
const (
	kgRanked       = 10
	kgMinRelevance = 0.4
)

// ReadGraph returns every entity, in the reference's order, and every
// relation — or, with a limit (memgate's extension; 0 for all), the first
// limit entities with the relations touching them, Omitted saying how many
// were left out.
func (s *Service) ReadGraph(ctx context.Context, p memory.Principal, limit int) (Graph, error) {
	return s.ReadGraphPage(ctx, p, limit, "")
}

// ReadGraphPage is read_graph with a cursor: the entities after the
// one cursor names (a Next of an earlier page; "" for the first), at most
// limit of them, with the relations touching them; Next names the last
// when more follow. Without limit and cursor it is the whole graph, as
// the reference answers.
func (s *Service) ReadGraphPage(ctx context.Context, p memory.Principal, limit int, cursor string) (Graph, error) {
	defer s.svc.Foreground()() // background embedding yields (yield.go)
	limit, err := kgLimit(limit)
	if err != nil {
		return Graph{}, err
	}
	after, err := kgDecodeCursor(cursor)
	if err != nil {
		return Graph{}, err
	}
	sp, err := s.kgSpace(ctx, p.Workspace)
	if err != nil {
		return Graph{}, err
	}
	s.kg.mu.RLock()
	defer s.kg.mu.RUnlock()
	start := 0
	if after != nil {
		start, _ = slices.BinarySearchFunc(sp.ents, after, kgCompareNodes)
		if start < len(sp.ents) && kgCompareNodes(sp.ents[start], after) == 0 {
			start++
		}
	}
	g := Graph{Entities: []Entity{}}
	var page []*kgNode
	for i := start; i < len(sp.ents); i++ {
		k := sp.ents[i]
		if !core.NodeVisibleTo(p, k.n) {
			continue
		}
		if limit > 0 && len(page) == limit {
			g.Omitted++
			continue
		}
		page = append(page, k)
		g.Entities = append(g.Entities, sp.entityFor(p, k))
	}
	// An uncut graph has the relations between placeholders too, as the
	// reference's whole graph does.
	whole := g.Omitted == 0 && after == nil
	g.Relations = sp.relationsOf(p, page, whole)
	if g.Omitted > 0 {
		g.Next = kgEncodeCursor(page[len(page)-1])
	}
	return g, nil
}

// kgEncodeCursor names an entity's place in the reference's order.
func kgEncodeCursor(k *kgNode) string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.order + "\x00" + k.n.ID))
}

// kgDecodeCursor returns a stand-in node at the cursor's place (nil for
// no cursor).
func kgDecodeCursor(c string) (*kgNode, error) {
	if c == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	order, id, ok := strings.Cut(string(raw), "\x00")
	if err != nil || !ok || len(c) > 512 {
		return nil, fault.Field("cursor", "is not a cursor this server gave")
	}
	return &kgNode{order: order, n: memory.Node{ID: id}}, nil
}

// SearchNodes returns the entities whose name, type or an observation
// contains query, both lowercased as JavaScript's toLowerCase does (the
// reference's matching), best first — the name equal to the query, then
// names containing it, then types, then observations, more matching
// observations first, ties in the reference's order — at most limit (0
// for all; Omitted counts the rest), with the relations that touch them.
// When no entity contains the query (a question, typically), the
// entities whose observations the hybrid search ranks as answering it
// (relevance at least kgMinRelevance, at most kgRanked) are returned
// instead, best first, Ranked saying so.
func (s *Service) SearchNodes(ctx context.Context, p memory.Principal, query string, limit int) (Graph, error) {
	defer s.svc.Foreground()() // background embedding yields (yield.go)
	limit, err := kgLimit(limit)
	if err != nil {
		return Graph{}, err
	}
	if len(query) > 4096 {
		return Graph{}, fault.Field("query", "at most 4096 bytes")
	}
	sp, err := s.kgSpace(ctx, p.Workspace)
	if err != nil {
		return Graph{}, err
	}
	g, found := s.kgMatch(sp, p, query, limit)
	if found == 0 && strings.TrimSpace(query) != "" && s.svc.Searchable() {
		return s.kgRankedSearch(ctx, sp, p, query, limit)
	}
	return g, nil
}

// kgMatch is the reference's matching over the index; found counts the
// matching entities before the limit.
func (s *Service) kgMatch(sp *kgSpace, p memory.Principal, query string, limit int) (Graph, int) {
	s.kg.mu.RLock()
	defer s.kg.mu.RUnlock()
	q := jsLower(query)
	nul := strings.IndexByte(q, 0) >= 0 // the blob's separator: test each part
	type hit struct {
		k           *kgNode
		entity      Entity
		tier, count int
	}
	var hits []hit
	find := newKGFinder(q)
	for _, k := range sp.matchCandidates(q) {
		if !nul && !find.contains(k.blob) {
			continue
		}
		if !core.NodeVisibleTo(p, k.n) {
			continue
		}
		e, count := sp.entityMatch(p, k, q)
		h := hit{k: k, entity: e, count: count}
		switch {
		case k.lname == q:
			h.tier = 4
		case strings.Contains(k.lname, q):
			h.tier = 3
		case strings.Contains(k.ltyp, q):
			h.tier = 2
		}
		if q == "" {
			h.count = len(e.Observations) // "" is in every string
		}
		if h.tier == 0 && h.count > 0 {
			h.tier = 1
		}
		if h.tier > 0 {
			hits = append(hits, h)
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Or(b.tier-a.tier, b.count-a.count) })
	found := len(hits)
	g := Graph{Entities: make([]Entity, 0, len(hits))}
	if limit > 0 && len(hits) > limit {
		g.Omitted, hits = len(hits)-limit, hits[:limit]
	}
	matched := make([]*kgNode, 0, len(hits))
	for _, h := range hits {
		g.Entities = append(g.Entities, h.entity)
		matched = append(matched, h.k)
	}
	g.Relations = sp.relationsOf(p, matched, false)
	return g, found
}

// kgPickRatio: candidates fewer than one entity in kgPickRatio are
// sorted; more are picked out of the ordered entity list. A variable so
// tests take both ways on small corpora.
var kgPickRatio = 64

// matchCandidates returns, in the reference's order, the live entities
// whose text may contain the lowercased query q: those the trigram index
// lists for it, or every entity when q has no trigram to go by or only
// common ones.
func (sp *kgSpace) matchCandidates(q string) []*kgNode {
	if !kgUsesGrams(q) {
		return sp.ents
	}
	slots, ok := sp.grams.candidates(q)
	if !ok {
		return sp.ents
	}
	out := make([]*kgNode, 0, len(slots))
	if len(slots)*kgPickRatio < len(sp.ents) {
		for _, slot := range slots {
			if k := sp.grams.slots[slot-1]; k != nil && k.live && !k.placeholder {
				out = append(out, k)
			}
		}
		slices.SortFunc(out, kgCompareNodes)
		return out
	}
	// Many candidates: picking them out of the ordered list costs less
	// than sorting them.
	in := make([]bool, len(sp.grams.slots)+1)
	for _, slot := range slots {
		in[slot] = true
	}
	for _, k := range sp.ents {
		if in[k.slot] {
			out = append(out, k)
		}
	}
	return out
}

// kgRankedSearch answers a query no entity contains with the entities of
// the observations the hybrid search (lexical and dense, over the
// observations' text, which starts with the entity's name) ranks first,
// through Search and so its access checks.
func (s *Service) kgRankedSearch(ctx context.Context, sp *kgSpace, p memory.Principal, query string, limit int) (Graph, error) {
	want := kgRanked
	if limit > 0 {
		want = min(want, limit)
	}
	res, err := s.svc.Search(ctx, p, core.SearchRequest{Query: query, K: 4 * kgRanked, Types: []memory.Type{memory.Entity},
		Category: ObservationCategory, Statuses: []memory.Status{memory.Active, memory.Provisional}, MinRelevance: kgMinRelevance})
	if err != nil {
		return Graph{}, err
	}
	s.kg.mu.RLock()
	defer s.kg.mu.RUnlock()
	g := Graph{Entities: []Entity{}}
	var nodes []*kgNode
	seen := map[*kgNode]bool{}
	for _, h := range res.Results {
		for _, ref := range h.Record.Entities {
			k := sp.byRef[ref]
			if k == nil || seen[k] || !k.live || k.placeholder || !core.NodeVisibleTo(p, k.n) {
				continue
			}
			seen[k] = true
			if len(nodes) < want {
				nodes = append(nodes, k)
				g.Entities = append(g.Entities, sp.entityFor(p, k))
			}
		}
	}
	g.Ranked = len(nodes)
	g.Relations = sp.relationsOf(p, nodes, false)
	return g, nil
}

// OpenNodes returns the named entities that exist, in the reference's
// order, with the relations that touch them.
func (s *Service) OpenNodes(ctx context.Context, p memory.Principal, names []string) (Graph, error) {
	defer s.svc.Foreground()() // background embedding yields (yield.go)
	if len(names) > MaxNames {
		return Graph{}, fault.Field("names", "at most "+strconv.Itoa(MaxNames)+" names")
	}
	sp, err := s.kgSpace(ctx, p.Workspace)
	if err != nil {
		return Graph{}, err
	}
	s.kg.mu.RLock()
	defer s.kg.mu.RUnlock()
	var nodes []*kgNode
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] || checkKGName(name, "names") != nil {
			continue
		}
		seen[name] = true
		k := sp.byRef[kgEntityRef(name)]
		if k != nil && k.live && !k.placeholder && core.NodeVisibleTo(p, k.n) {
			nodes = append(nodes, k)
		}
	}
	slices.SortStableFunc(nodes, kgCompareNodes)
	g := Graph{Entities: make([]Entity, 0, len(nodes))}
	for _, k := range nodes {
		g.Entities = append(g.Entities, sp.entityFor(p, k))
	}
	g.Relations = sp.relationsOf(p, nodes, false)
	return g, nil
}
