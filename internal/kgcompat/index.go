package kgcompat

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The knowledge-graph index (issue 14): an in-memory view of each
// workspace's compatibility graph — entity and placeholder nodes with
// their grants, observation records with what their visibility depends
// on, and live edges — so read_graph, search_nodes and open_nodes answer
// without reading the whole store per call (search_nodes used to list
// every node and every observation record on each call).
//
// A workspace is loaded on its first read. Before every read the index
// applies the store's record and graph change logs written since (two
// indexed queries when nothing changed), fetching the current row of
// each change, so it reflects every commit of this process and of every
// other process on the database — the same state the store queries it
// replaces would have read. Who may see what is decided per read, with
// the same rules as the store queries (kgObVisible, core.NodeVisibleTo).

// kgIndex is the Service's knowledge-graph index. The zero value is
// ready: workspaces load on first use.
type kgIndex struct {
	syncMu sync.Mutex // one catch-up at a time

	mu               sync.RWMutex
	recSeq, graphSeq int64 // change log positions applied
	started          bool
	spaces           map[string]*kgSpace
}

// kgSpace is one workspace's graph.
type kgSpace struct {
	nodes map[string]*kgNode // by node id
	byRef map[string]*kgNode // by entity reference "entity:<key>"
	ents  []*kgNode          // live entity nodes, in the reference's order
	obs   map[string]*kgOb   // observation records by id
	refOb map[string][]*kgOb // by entity reference, by record id
	edges map[string]*kgEdge // live edges by id
	adj   map[string][]*kgEdge
	grams kgGrams // trigrams of the nodes' blobs (grams.go)
	// loading defers the trigram index to the end of kgLoad, which then
	// builds it in one pass.
	loading bool
}

// kgNode is an indexed node.
type kgNode struct {
	n           memory.Node // with its grants
	ref         string
	name, lname string
	typ, ltyp   string
	order       string
	live        bool // kgLive and provisional or active
	placeholder bool
	// blob is the lowercased name, type and every observation, joined by
	// NUL: one substring test tells whether the node can match a query.
	blob string
	slot uint32 // in the trigram index; 0 before it is listed
}

// kgOb is an indexed observation record.
type kgOb struct {
	id      string
	content string
	refs    []string
	// texts and ltexts are, per ref, the observation as that entity's
	// reads show it, and lowercased as JavaScript does.
	texts, ltexts []string
	status        memory.Status
	access        memory.Access
	principalID   string
	agent         string
}

// kgEdge is an indexed live edge.
type kgEdge struct {
	e        memory.Edge
	rts, ids []string
}

func newKGSpace() *kgSpace {
	return &kgSpace{nodes: map[string]*kgNode{}, byRef: map[string]*kgNode{}, obs: map[string]*kgOb{},
		refOb: map[string][]*kgOb{}, edges: map[string]*kgEdge{}, adj: map[string][]*kgEdge{},
		grams: newKGGrams()}
}

// kgIndexed reports whether a record belongs in the index: a live
// observation of a status some reader of observations may see.
func kgIndexed(r memory.Record) bool {
	return r.Type == memory.Entity && r.Category == ObservationCategory && r.InvalidatedAt == nil &&
		(r.Status == memory.Active || r.Status == memory.Provisional || r.Status == memory.Quarantined)
}

// kgObVisible reports whether p reads an observation: the rule of
// observationRecords' store queries, applied in memory.
func kgObVisible(p memory.Principal, o *kgOb) bool {
	if o.status == memory.Active || o.status == memory.Provisional {
		f := core.ReadAccess(p)
		if slices.Contains(f.Levels, o.access) || (f.OwnAgent != "" && o.access == memory.AgentOnly && o.principalID == f.OwnAgent) {
			return true
		}
	}
	switch p.Kind {
	case memory.KindOperator:
		return o.status == memory.Quarantined && o.access != memory.System && slices.Contains(memory.AccessLevels, o.access)
	case memory.KindAgent:
		return o.access == memory.Sensitive && o.agent == p.Name
	}
	return false
}

// space returns the workspace's graph, loading it on first use and
// applying the change logs first; callers hold no lock. The returned
// space is read under x.mu.RLock.
func (s *Service) kgSpace(ctx context.Context, ws string) (*kgSpace, error) {
	x := &s.kg
	x.syncMu.Lock()
	defer x.syncMu.Unlock()
	if !x.started {
		rh, err := s.st.ChangeHead(ctx)
		if err != nil {
			return nil, core.StoreError(err, "changes")
		}
		gh, err := s.st.GraphChangeHead(ctx)
		if err != nil {
			return nil, core.StoreError(err, "graph changes")
		}
		x.mu.Lock()
		x.recSeq, x.graphSeq, x.started, x.spaces = rh, gh, true, map[string]*kgSpace{}
		x.mu.Unlock()
	}
	if err := s.kgCatchUp(ctx); err != nil {
		return nil, err
	}
	x.mu.RLock()
	sp := x.spaces[ws]
	x.mu.RUnlock()
	if sp != nil {
		return sp, nil
	}
	sp, err := s.kgLoad(ctx, ws)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	x.spaces[ws] = sp
	x.mu.Unlock()
	// Changes committed during the load are applied again: harmless, as
	// each applies the row as it is now.
	return sp, s.kgCatchUp(ctx)
}

// kgLoad reads a workspace's compatibility graph from the store. It is
// called with x.syncMu held, at or after the change positions applied.
func (s *Service) kgLoad(ctx context.Context, ws string) (*kgSpace, error) {
	sp := newKGSpace()
	sp.loading = true
	nq := store.NodeQuery{Labels: []string{EntityLabel}, Statuses: []memory.NodeStatus{memory.NodeProvisional, memory.NodeActive},
		Limit: store.MaxLimit}
	for {
		page, err := s.st.ListNodes(ctx, ws, nq)
		if err != nil {
			return nil, core.StoreError(err, "nodes")
		}
		for _, n := range page {
			if n, err = core.WithGrants(ctx, s.st, ws, n); err != nil {
				return nil, core.StoreError(err, "nodes")
			}
			sp.putNode(n)
		}
		if len(page) < nq.Limit {
			break
		}
		nq.After = page[len(page)-1].ID
	}
	rq := store.RecordQuery{Types: []memory.Type{memory.Entity}, Category: ObservationCategory,
		Statuses: []memory.Status{memory.Active, memory.Provisional, memory.Quarantined},
		Access:   store.AccessFilter{Levels: memory.AccessLevels}, Limit: store.MaxLimit}
	for {
		page, err := s.st.ListRecords(ctx, ws, rq)
		if err != nil {
			return nil, core.StoreError(err, "observations")
		}
		for _, r := range page {
			sp.putRecord(r)
		}
		if len(page) < rq.Limit {
			break
		}
		rq.Before = page[len(page)-1].ID
	}
	eq := store.EdgeQuery{Limit: store.MaxLimit}
	for {
		page, err := s.st.ListEdges(ctx, ws, eq)
		if err != nil {
			return nil, core.StoreError(err, "relations")
		}
		for _, e := range page {
			sp.putEdge(e)
		}
		if len(page) < eq.Limit {
			break
		}
		eq.After = page[len(page)-1].ID
	}
	sp.loading = false
	for _, n := range sp.nodes {
		sp.reblob(n) // each new slot is the highest: the lists only append
	}
	sp.grams.compact()
	return sp, nil
}

// kgCatchUp applies the record and graph change logs to the loaded
// workspaces. Called with x.syncMu held.
func (s *Service) kgCatchUp(ctx context.Context) error {
	x := &s.kg
	const page = 1000
	for {
		chs, err := s.st.ListChanges(ctx, x.recSeq, page)
		if err != nil {
			return core.StoreError(err, "changes")
		}
		for _, ch := range chs {
			x.mu.RLock()
			sp := x.spaces[ch.Workspace]
			x.mu.RUnlock()
			if sp != nil {
				r, err := s.st.GetRecord(ctx, ch.Workspace, ch.RecordID)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return core.StoreError(err, "changes")
				}
				x.mu.Lock()
				if err == nil {
					sp.putRecord(r)
				} else {
					sp.dropRecord(ch.RecordID)
				}
				x.mu.Unlock()
			}
			x.mu.Lock()
			x.recSeq = max(x.recSeq, ch.Seq)
			x.mu.Unlock()
		}
		if len(chs) < page {
			break
		}
	}
	for {
		chs, err := s.st.ListGraphChanges(ctx, x.graphSeq, page)
		if err != nil {
			return core.StoreError(err, "graph changes")
		}
		for _, ch := range chs {
			x.mu.RLock()
			sp := x.spaces[ch.Workspace]
			x.mu.RUnlock()
			if sp != nil {
				if err := s.kgApplyGraph(ctx, sp, ch); err != nil {
					return err
				}
			}
			x.mu.Lock()
			x.graphSeq = max(x.graphSeq, ch.Seq)
			x.mu.Unlock()
		}
		if len(chs) < page {
			return nil
		}
	}
}

func (s *Service) kgApplyGraph(ctx context.Context, sp *kgSpace, ch store.GraphChange) error {
	x := &s.kg
	switch ch.Kind {
	case store.GraphNode:
		n, err := s.st.GetNode(ctx, store.NodeFind{Workspace: ch.Workspace, ID: ch.ID})
		switch {
		case errors.Is(err, store.ErrNotFound):
			x.mu.Lock()
			sp.dropNode(ch.ID)
			x.mu.Unlock()
			return nil
		case err != nil:
			return core.StoreError(err, "graph changes")
		}
		if n.Label != EntityLabel {
			return nil
		}
		if n, err = core.WithGrants(ctx, s.st, ch.Workspace, n); err != nil {
			return core.StoreError(err, "graph changes")
		}
		x.mu.Lock()
		sp.putNode(n)
		sp.reblob(sp.nodes[n.ID])
		x.mu.Unlock()
	case store.GraphEdge:
		e, err := s.st.GetEdge(ctx, ch.Workspace, ch.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			x.mu.Lock()
			sp.dropEdge(ch.ID)
			x.mu.Unlock()
			return nil
		case err != nil:
			return core.StoreError(err, "graph changes")
		}
		x.mu.Lock()
		sp.putEdge(e)
		x.mu.Unlock()
	}
	return nil
}

// kgCompareNodes orders entity nodes as the reference does (kgOrder), ties
// by id.
func kgCompareNodes(a, b *kgNode) int {
	return cmp.Or(strings.Compare(a.order, b.order), strings.Compare(a.n.ID, b.n.ID))
}

func (sp *kgSpace) putNode(n memory.Node) {
	k := &kgNode{n: n, ref: n.EntityKey(), name: EntityName(n.NaturalKey), typ: kgEntityType(n), order: kgOrder(n),
		live: kgLive(n) && (n.Status == memory.NodeProvisional || n.Status == memory.NodeActive), placeholder: kgIsPlaceholder(n)}
	k.lname, k.ltyp = jsLower(k.name), jsLower(k.typ)
	if old := sp.nodes[n.ID]; old != nil {
		sp.unlist(old)
		// The new node takes the old one's place in the trigram index;
		// reblob then lists its text's changes.
		k.slot, k.blob = old.slot, old.blob
		if k.slot != 0 {
			sp.grams.slots[k.slot-1] = k
		}
	}
	sp.nodes[n.ID] = k
	sp.byRef[k.ref] = k
	if k.live && !k.placeholder {
		i, _ := slices.BinarySearchFunc(sp.ents, k, kgCompareNodes)
		sp.ents = slices.Insert(sp.ents, i, k)
	}
}

// unlist removes a node from the ordered entity list.
func (sp *kgSpace) unlist(k *kgNode) {
	if i, ok := slices.BinarySearchFunc(sp.ents, k, kgCompareNodes); ok && sp.ents[i] == k {
		sp.ents = slices.Delete(sp.ents, i, i+1)
	}
}

func (sp *kgSpace) dropNode(id string) {
	k := sp.nodes[id]
	if k == nil {
		return
	}
	sp.unlist(k)
	sp.grams.drop(k)
	delete(sp.nodes, id)
	if sp.byRef[k.ref] == k {
		delete(sp.byRef, k.ref)
	}
}

// reblob recomputes a node's search text.
func (sp *kgSpace) reblob(k *kgNode) {
	if k == nil || sp.loading {
		return
	}
	var b strings.Builder
	b.WriteString(k.lname)
	b.WriteByte(0)
	b.WriteString(k.ltyp)
	for _, o := range sp.refOb[k.ref] {
		b.WriteByte(0)
		b.WriteString(o.ltext(k.ref))
	}
	old := k.blob
	k.blob = b.String()
	sp.grams.update(k, old)
}

func (sp *kgSpace) putRecord(r memory.Record) {
	sp.dropRecord(r.ID)
	if !kgIndexed(r) {
		return
	}
	o := &kgOb{id: r.ID, status: r.Status, access: r.Access,
		principalID: r.Source.PrincipalID, agent: r.Source.Agent}
	for _, ent := range r.Entities {
		if label, _, _ := strings.Cut(ent, ":"); label == EntityLabel && !slices.Contains(o.refs, ent) {
			o.refs = append(o.refs, ent)
		}
	}
	for _, ref := range o.refs {
		t := kgObservationText(EntityName(strings.TrimPrefix(ref, EntityLabel+":")), r.Content)
		o.texts, o.ltexts = append(o.texts, t), append(o.ltexts, jsLower(t))
	}
	sp.obs[r.ID] = o
	for _, ref := range o.refs {
		list := sp.refOb[ref]
		i, _ := slices.BinarySearchFunc(list, o.id, func(a *kgOb, id string) int { return strings.Compare(a.id, id) })
		sp.refOb[ref] = slices.Insert(list, i, o)
		sp.reblob(sp.byRef[ref])
	}
}

func (sp *kgSpace) dropRecord(id string) {
	o := sp.obs[id]
	if o == nil {
		return
	}
	delete(sp.obs, id)
	for _, ref := range o.refs {
		list := sp.refOb[ref]
		if i, ok := slices.BinarySearchFunc(list, id, func(a *kgOb, id string) int { return strings.Compare(a.id, id) }); ok {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) == 0 {
			delete(sp.refOb, ref)
		} else {
			sp.refOb[ref] = list
		}
		sp.reblob(sp.byRef[ref])
	}
}

func (sp *kgSpace) putEdge(e memory.Edge) {
	sp.dropEdge(e.ID)
	if e.InvalidatedAt != nil {
		return
	}
	rts := edgeRelationTypes(e)
	ke := &kgEdge{e: e, rts: rts, ids: edgeRelationIDs(e, len(rts))}
	sp.edges[e.ID] = ke
	sp.adj[e.From] = append(sp.adj[e.From], ke)
	if e.To != e.From {
		sp.adj[e.To] = append(sp.adj[e.To], ke)
	}
}

func (sp *kgSpace) dropEdge(id string) {
	ke := sp.edges[id]
	if ke == nil {
		return
	}
	delete(sp.edges, id)
	for _, end := range []string{ke.e.From, ke.e.To} {
		list := slices.DeleteFunc(sp.adj[end], func(x *kgEdge) bool { return x == ke })
		if len(list) == 0 {
			delete(sp.adj, end)
		} else {
			sp.adj[end] = list
		}
	}
}

// ltext returns the observation as the entity of ref shows it,
// lowercased.
func (o *kgOb) ltext(ref string) string { return o.ltexts[slices.Index(o.refs, ref)] }

// entityFor returns the entity of a node as p sees it: its observations
// p may read, oldest first, those held for review noted.
func (sp *kgSpace) entityFor(p memory.Principal, k *kgNode) Entity {
	e, _ := sp.entityMatch(p, k, "")
	return e
}

// entityMatch is entityFor also counting the observations shown that
// contain the lowercased query q ("": none counted).
func (sp *kgSpace) entityMatch(p memory.Principal, k *kgNode, q string) (Entity, int) {
	e := Entity{Name: k.name, EntityType: k.typ, Observations: []string{}}
	count := 0
	for _, o := range sp.refOb[k.ref] {
		if !kgObVisible(p, o) {
			continue
		}
		i := slices.Index(o.refs, k.ref)
		t := o.texts[i]
		e.Observations = append(e.Observations, t)
		if o.status == memory.Quarantined {
			e.Held = append(e.Held, t)
		}
		if q != "" && strings.Contains(o.ltexts[i], q) {
			count++
		}
	}
	return e, count
}

// visible reports whether p sees node k as a live entity or placeholder.
func (k *kgNode) visibleTo(p memory.Principal) bool {
	return k != nil && k.live && core.NodeVisibleTo(p, k.n)
}

// relationsOf returns the relations p may see at either end of nodes
// (all of them when all is set) whose other end is a live entity or
// placeholder p sees too, in creation order: kgRelationsOf, from memory.
func (sp *kgSpace) relationsOf(p memory.Principal, nodes []*kgNode, all bool) []Relation {
	seen := map[string]bool{}
	var edges []*kgEdge
	if all {
		edges = make([]*kgEdge, 0, len(sp.edges))
		for _, e := range sp.edges {
			edges = append(edges, e)
		}
	} else {
		for _, k := range nodes {
			for _, e := range sp.adj[k.n.ID] {
				if !seen[e.e.ID] {
					seen[e.e.ID] = true
					edges = append(edges, e)
				}
			}
		}
	}
	slices.SortFunc(edges, func(a, b *kgEdge) int { return strings.Compare(a.e.ID, b.e.ID) })
	type ordered struct {
		rel Relation
		key string
	}
	var out []ordered
	for _, ke := range edges {
		e := ke.e
		from, to := sp.nodes[e.From], sp.nodes[e.To]
		if from == nil || to == nil || !from.live || !to.live || !core.EdgeVisibleTo(p, e, from.n, to.n) {
			continue
		}
		for i, rt := range ke.rts {
			out = append(out, ordered{Relation{From: from.name, To: to.name, RelationType: rt}, ke.ids[i]})
		}
	}
	// The key is unique per relation but for edges without ordering ids;
	// the edge id then breaks ties as kgRelationsOf's stable sort did.
	slices.SortStableFunc(out, func(a, b ordered) int { return strings.Compare(a.key, b.key) })
	rels := make([]Relation, len(out))
	for i, o := range out {
		rels[i] = o.rel
	}
	return rels
}

// indexStore is what the index reads of the store: the change logs and
// the rows they name.
type indexStore interface {
	ChangeHead(ctx context.Context) (int64, error)
	ListChanges(ctx context.Context, after int64, limit int) ([]store.Change, error)
	GetRecord(ctx context.Context, ws, id string) (memory.Record, error)
	ListRecords(ctx context.Context, ws string, q store.RecordQuery) ([]memory.Record, error)
	GraphChangeHead(ctx context.Context) (int64, error)
	ListGraphChanges(ctx context.Context, after int64, limit int) ([]store.GraphChange, error)
	GetNode(ctx context.Context, f store.NodeFind) (memory.Node, error)
	ListNodes(ctx context.Context, ws string, q store.NodeQuery) ([]memory.Node, error)
	GetEdge(ctx context.Context, ws, id string) (memory.Edge, error)
	ListEdges(ctx context.Context, ws string, q store.EdgeQuery) ([]memory.Edge, error)
}
