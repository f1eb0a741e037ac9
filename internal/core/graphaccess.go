package core

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Who sees a graph node or edge (docs/graph.md, "Who sees what"). There is
// no second rule set: a grant (an access level and a writer) is visible to
// a principal exactly when a record of that access level by that writer
// is (canRead). A node is visible when one of its grants is:
//
//   - its own grant, when a principal wrote it directly (graph upsert,
//     the drop-in's entities, import; access default public);
//   - the grant of every live record that names it. An approved record
//     (active, superseded, archived) grants its access level and writer;
//     a record waiting for review (provisional) grants only what an
//     agent-level record of its writer would, so its writer and operators
//     see the node, others not until it is approved; quarantined,
//     invalidated and forgotten records grant nothing.
//
// An edge is visible when both of its ends are and, if it has its own
// grant, that grant is. Graph reads never include sensitive grants for
// agents (there is no include_sensitive on graph reads).
//
// A node keeps its record grants on its row (memory.Node.Grants), one
// per distinct level and writer, maintained by every record change in the
// same transaction, so checking a node is a few comparisons and the
// in-memory index filters traversals without reading the store.

// ownerKey is what a principal's own "agent"-level items are keyed by:
// its principal id, which canRead compares with a record's
// source.principal_id (ownership follows ids, never names).
func ownerKey(p memory.Principal) string { return p.ID }

// recordGrant is the grant a record gives the nodes of its entities, or
// false when it gives none.
func recordGrant(r memory.Record) (memory.Grant, bool) {
	switch {
	case r.Status == memory.Forgotten, r.Status == memory.Quarantined, r.InvalidatedAt != nil:
		return memory.Grant{}, false
	case r.Status == memory.Provisional && r.Access == memory.Public:
		return memory.Grant{Access: memory.AgentOnly, Writer: r.Source.PrincipalID}, true
	}
	return memory.Grant{Access: r.Access, Writer: r.Source.PrincipalID}, true
}

// grantVisible reports whether p sees what g guards: whether p may read a
// record of g's access level written by g's writer.
func grantVisible(p memory.Principal, g memory.Grant) bool {
	return canRead(p, memory.Record{Access: g.Access, Source: memory.Source{PrincipalID: g.Writer}}, false)
}

// nodeVisible reports whether p may see n. This is the graph's access
// check; every graph read path applies it (or its index form, viewerOf).
func nodeVisible(p memory.Principal, n memory.Node) bool {
	// nodeGrants' set, walked without building it: the drop-in's reads
	// check every entity of a workspace (issue 14).
	if n.Access == "" && len(n.Grants) == 0 {
		return grantVisible(p, memory.Grant{Access: memory.UserOnly})
	}
	if n.Access != "" && grantVisible(p, memory.Grant{Access: n.Access, Writer: n.Writer}) {
		return true
	}
	for _, g := range n.Grants {
		if grantVisible(p, g) {
			return true
		}
	}
	return false
}

// edgeVisible reports whether p may see e, whose ends are from and to.
func edgeVisible(p memory.Principal, e memory.Edge, from, to memory.Node) bool {
	if e.Access != "" && !grantVisible(p, memory.Grant{Access: e.Access, Writer: e.Writer}) {
		return false
	}
	return nodeVisible(p, from) && nodeVisible(p, to)
}

// levelBit is an access level's bit in the index's visibility sets.
func levelBit(a memory.Access) uint8 {
	if a == memory.Public {
		return graph.Public
	}
	if i := slices.Index(memory.AccessLevels, a); i > 0 {
		return 1 << i
	}
	return 0
}

// viewerOf is p as the graph index sees it: accessFilter, the store form
// of canRead, as level bits and an owner.
func viewerOf(p memory.Principal) *graph.Viewer {
	f := accessFilter(p, false)
	v := &graph.Viewer{Owner: f.OwnAgent}
	for _, a := range f.Levels {
		v.Levels |= levelBit(a)
	}
	return v
}

// visOf is the index form of a set of grants.
func visOf(gs ...memory.Grant) graph.Vis {
	var v graph.Vis
	for _, g := range gs {
		if g.Access == "" {
			continue
		}
		v.Levels |= levelBit(g.Access)
		if g.Access == memory.AgentOnly && g.Writer != "" && !slices.Contains(v.Owners, g.Writer) {
			v.Owners = append(v.Owners, g.Writer)
		}
	}
	return v
}

// nodeGrants lists every grant of n, its own first. A node that nothing
// grants (every record naming it was forgotten or waits in quarantine)
// is seen by operators only, as a record of access "user" is.
func nodeGrants(n memory.Node) []memory.Grant {
	out := make([]memory.Grant, 0, len(n.Grants)+1)
	if n.Access != "" {
		out = append(out, memory.Grant{Access: n.Access, Writer: n.Writer})
	}
	out = append(out, n.Grants...)
	if len(out) == 0 {
		out = append(out, memory.Grant{Access: memory.UserOnly})
	}
	return out
}

// addGrant returns gs with g added, and whether that changed anything. A
// public grant covers every other: a set holding it holds nothing else.
func addGrant(gs []memory.Grant, g memory.Grant) ([]memory.Grant, bool) {
	if g.Access != memory.AgentOnly {
		g.Writer = "" // only "agent" compares the writer
	}
	for _, h := range gs {
		if h == g || h.Access == memory.Public {
			return gs, false
		}
	}
	if g.Access == memory.Public {
		return []memory.Grant{g}, true
	}
	return append(slices.Clone(gs), g), true
}

// covers reports whether holding a leaves nothing of b to remove.
func covers(a, b memory.Grant) bool {
	return a.Access == memory.Public || (a.Access == b.Access && (a.Access != memory.AgentOnly || a.Writer == b.Writer))
}

// entityNode splits an entity and finds its node; ok is false when there
// is none.
func entityNode(ctx context.Context, r store.Reader, ws, entity string) (memory.Node, bool, error) {
	label, key, ok := strings.Cut(entity, ":")
	if !ok {
		return memory.Node{}, false, nil
	}
	n, err := r.GetNode(ctx, store.NodeFind{Workspace: ws, Label: label, Key: key})
	if errors.Is(err, store.ErrNotFound) {
		return memory.Node{}, false, nil
	}
	return n, err == nil, err
}

// recordGrants computes the grants of the records that name entity, from
// every head that does. It stops at the first public grant, which covers
// the rest.
func recordGrants(ctx context.Context, r RecordLister, ws, entity string) ([]memory.Grant, error) {
	q := store.RecordQuery{Entity: entity, Statuses: everyStatus, Access: store.AccessFilter{Levels: memory.AccessLevels},
		IncludeInvalidated: true, Limit: store.MaxLimit}
	gs := []memory.Grant{}
	if n, ok := r.(store.EntityNamer); ok {
		named, err := n.NamesEntity(ctx, ws, entity)
		if err != nil || !named {
			return gs, err
		}
	}
	for {
		page, err := r.ListRecords(ctx, ws, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range page {
			if g, ok := recordGrant(rec); ok {
				gs, _ = addGrant(gs, g)
				if g.Access == memory.Public {
					return gs, nil
				}
			}
		}
		if len(page) < q.Limit {
			return gs, nil
		}
		q.Before = page[len(page)-1].ID
	}
}

// regrant brings the grants of the nodes named by a record's old head
// (nil when the record is new) and its new head up to date, inside the
// transaction that wrote the new head. A grant that only grows is added
// in place; one that may have shrunk (forget, rejection, access lowered,
// an entity removed) is recomputed from the records that name the node.
func regrant(ctx context.Context, tx store.Tx, ws string, old *memory.Record, next memory.Record) error {
	return regrantKnown(ctx, tx, ws, old, next, nil)
}

// regrantKnown is regrant with the entity nodes linkEntities just read or
// created in tx (known, by entity), which it does not read again.
func regrantKnown(ctx context.Context, tx store.Tx, ws string, old *memory.Record, next memory.Record, known map[string]memory.Node) error {
	newG, newOK := recordGrant(next)
	var oldG memory.Grant
	oldOK := false
	var ents []string
	if old != nil {
		oldG, oldOK = recordGrant(*old)
		ents = append(ents, old.Entities...)
	}
	for _, e := range next.Entities {
		if !slices.Contains(ents, e) {
			ents = append(ents, e)
		}
	}
	for _, e := range ents {
		n, ok := known[e]
		var err error
		if !ok {
			if n, ok, err = entityNode(ctx, tx, ws, e); err != nil {
				return err
			}
		}
		if !ok {
			continue
		}
		inNew := newOK && slices.Contains(next.Entities, e)
		shrinks := oldOK && slices.Contains(old.Entities, e) && !(inNew && covers(newG, oldG))
		var gs []memory.Grant
		dirty := false
		switch {
		case n.Grants == nil || shrinks:
			if gs, err = recordGrants(ctx, tx, ws, e); err != nil {
				return err
			}
			dirty = n.Grants == nil || !slices.Equal(gs, n.Grants)
		case inNew:
			gs, dirty = addGrant(n.Grants, newG)
		}
		if !dirty {
			continue
		}
		n.Grants = gs
		if err := tx.UpdateNode(ctx, ws, n); err != nil {
			return err
		}
		if _, ok := known[e]; ok {
			known[e] = n
		}
	}
	return nil
}

// regrantEntities recomputes the grants of the nodes of entities (after
// an operation that rewrote many records at once: subject forgetting,
// import) and returns the nodes it changed.
func regrantEntities(ctx context.Context, tx store.Tx, ws string, entities []string) ([]memory.Node, error) {
	var changed []memory.Node
	seen := map[string]bool{}
	for _, e := range entities {
		if seen[e] {
			continue
		}
		seen[e] = true
		n, ok, err := entityNode(ctx, tx, ws, e)
		if err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		gs, err := recordGrants(ctx, tx, ws, e)
		if err != nil {
			return nil, err
		}
		if n.Grants != nil && slices.Equal(gs, n.Grants) {
			continue
		}
		n.Grants = gs
		if err := tx.UpdateNode(ctx, ws, n); err != nil {
			return nil, err
		}
		changed = append(changed, n)
	}
	return changed, nil
}

// computeMissingGrants fills in the grants of nodes that have none yet
// (written before memgate kept them, or imported), in one transaction
// per workspace, and returns the nodes it changed.
func (s *Service) computeMissingGrants(ctx context.Context, pending map[string][]string) ([]memory.Node, []string, error) {
	var nodes []memory.Node
	var wss []string
	for ws, ents := range pending {
		var changed []memory.Node
		err := s.tx(ctx, "graph", func(tx store.Tx) error {
			var err error
			changed, err = regrantEntities(ctx, tx, ws, ents)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		for range changed {
			wss = append(wss, ws)
		}
		nodes = append(nodes, changed...)
	}
	return nodes, wss, nil
}

// checkNodeVisible answers "no such node" for a node p may not see, as
// for one that does not exist, so its existence does not leak.
func checkNodeVisible(p memory.Principal, n memory.Node, field string) error {
	if nodeVisible(p, n) {
		return nil
	}
	return errNoNode(field)
}

func errNoNode(field string) error {
	return fault.New(fault.NotFound, field+": no such node").With("field", field)
}

// withGrants returns n with its record grants computed when the store
// has none for it yet (a node written before memgate kept them; the
// graph index's load stores them).
func withGrants(ctx context.Context, r RecordLister, ws string, n memory.Node) (memory.Node, error) {
	if n.Grants != nil {
		return n, nil
	}
	gs, err := recordGrants(ctx, r, ws, n.EntityKey())
	if err != nil {
		return n, err
	}
	n.Grants = gs
	return n, nil
}

// visibleNode resolves a node reference for p: a node p may not see is
// "no such node".
func visibleNode(ctx context.Context, r store.Reader, p memory.Principal, ref, field string) (memory.Node, error) {
	n, err := resolveNode(ctx, r, p.Workspace, ref, field)
	if err != nil {
		return n, err
	}
	if n, err = withGrants(ctx, r, p.Workspace, n); err != nil {
		return n, storeErr(err, "node")
	}
	return n, checkNodeVisible(p, n, field)
}

// edgeVisibleIn reports whether p may see e, reading its ends from r.
func (s *Service) edgeVisibleIn(ctx context.Context, r store.Reader, p memory.Principal, e memory.Edge) (bool, error) {
	var ends [2]memory.Node
	for i, id := range []string{e.From, e.To} {
		n, err := r.GetNode(ctx, store.NodeFind{Workspace: p.Workspace, ID: id})
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err == nil {
			n, err = withGrants(ctx, r, p.Workspace, n)
		}
		if err != nil {
			return false, storeErr(err, "node")
		}
		ends[i] = n
	}
	return edgeVisible(p, e, ends[0], ends[1]), nil
}

// graphAccess checks an access level a graph write gives ("" keeps the
// default): a level p may give records.
func (s *Service) graphAccess(p memory.Principal, a memory.Access) error {
	if a == "" {
		return nil
	}
	if !slices.Contains(memory.AccessLevels, a) {
		return fault.Field("access", "must be one of public, agent, user, system, sensitive")
	}
	if err := s.policy.AuthorizeAccess(p, a); err != nil {
		return fault.As(err).With("field", "access")
	}
	return nil
}

// screenGraphWrite runs the PII screen over what a graph write stores: a
// node key (credentials only, see gate.ScreenKey) and free-text properties
// (every kind). A hit refuses the write (422 naming the field, never the
// value) and is audited as a rejected decision.
func (s *Service) screenGraphWrite(ctx context.Context, p memory.Principal, event, keyField, key, propsField string, props []byte) error {
	var err error
	if kinds := s.policy.ScreenKey(key); keyField != "" && len(kinds) > 0 {
		err = gate.GraphRefusal(keyField, kinds)
	} else if kinds := s.policy.ScreenGraph(string(props)); len(kinds) > 0 {
		err = gate.GraphRefusal(propsField, kinds)
	}
	if err != nil {
		s.auditRejection(ctx, p, memory.NewID(), event, memory.Record{}, err, s.clock())
	}
	return err
}

// NodeVisible reports whether p may see n on the graph's read paths: the
// graph's one access check (nodeVisible), with n's record grants read
// from the store when n does not carry them yet. Tests that check every
// path against the access rules call it.
func (s *Service) NodeVisible(ctx context.Context, p memory.Principal, n memory.Node) (bool, error) {
	n, err := withGrants(ctx, s.store, p.Workspace, n)
	if err != nil {
		return false, storeErr(err, "node")
	}
	return nodeVisible(p, n), nil
}

// EdgeVisible reports whether p may see e: its own grant, if it has one,
// and both of its ends (NodeVisible).
func (s *Service) EdgeVisible(ctx context.Context, p memory.Principal, e memory.Edge) (bool, error) {
	return s.edgeVisibleIn(ctx, s.store, p, e)
}
