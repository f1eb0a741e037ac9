package kgcompat

// The knowledge-graph compatibility layer's writes: the kgRun transaction
// frame and its node, observation and relation helpers, and the
// create_entities, create_relations, add_observations and delete_* operations.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// kgRun is the frame of a compatibility write: one governed transaction
// (core.InGraphTx), so a call either takes effect whole or not at all;
// the index reads its changes from the change logs after commit. A write
// the gate refuses inside fn aborts the transaction, and core audits the
// refusal on its own.
type kgRun struct {
	s   *Service
	g   *core.GraphTx
	p   memory.Principal
	now time.Time
}

// kgWrite runs fn in one governed transaction as p; tx reads inside it.
func (s *Service) kgWrite(ctx context.Context, p memory.Principal, fn func(tx store.Reader, k *kgRun) error) error {
	return s.svc.InGraphTx(ctx, p, func(g *core.GraphTx) error {
		return fn(g.Reader(), &kgRun{s: s, g: g, p: p, now: g.Now()})
	})
}

// kgFound is a node lookup's answer: the node of a name with its grants,
// or exists false when the name has none.
type kgFound struct {
	n      memory.Node
	exists bool
}

// lookup returns the node of name, whatever its status and whoever may
// see it.
func (k *kgRun) lookup(ctx context.Context, name string) (kgFound, error) {
	n, ok, err := k.g.FindNode(ctx, EntityLabel, NodeKey(name))
	return kgFound{n: n, exists: ok}, err
}

// live reports whether the node found is live (not archived) and the
// principal may see it.
func (k *kgRun) live(f kgFound) bool {
	return f.exists && f.n.Status != memory.NodeArchived && core.NodeVisibleTo(k.p, f.n)
}

// node returns the live (not archived) node of name, an entity's or a
// placeholder's (kgIsPlaceholder tells which), or found false;
// a node the principal may not see is not found.
func (k *kgRun) node(ctx context.Context, name string) (memory.Node, bool, error) {
	f, err := k.lookup(ctx, name)
	return f.n, err == nil && k.live(f), err
}

// errKGTaken: the name belongs to an entity the principal may not see;
// create_entities skips it, as it skips names that exist.
var errKGTaken = errors.New("kg: entity name taken by an entity the principal may not see")

// kgTakenField turns errKGTaken into a conflict naming field; other
// errors pass unchanged.
func kgTakenField(err error, field string) error {
	if errors.Is(err, errKGTaken) {
		return fault.New(fault.Conflict, field+": an entity of this name exists that this principal may not see").With("field", field)
	}
	return err
}

// entity returns the live entity node of name; a placeholder is no entity.
func (k *kgRun) entity(ctx context.Context, name string) (memory.Node, bool, error) {
	n, ok, err := k.node(ctx, name)
	return n, ok && !kgIsPlaceholder(n), err
}

// kgIsPlaceholder reports whether n stands for a name only relations name.
func kgIsPlaceholder(n memory.Node) bool {
	var props map[string]json.RawMessage
	_ = json.Unmarshal(n.Properties, &props)
	_, ok := props[kgPlaceholder]
	return ok
}

// kgOrder is the key that orders entity nodes: when each was last
// created (kgSeq), else the node id (both are time-ordered ids).
func kgOrder(n memory.Node) string {
	var props struct {
		Seq string `json:"kg_seq"`
	}
	_ = json.Unmarshal(n.Properties, &props)
	if props.Seq != "" {
		return props.Seq
	}
	return n.ID
}

// createNode creates the entity's node, or revives its archived node (or
// turns its placeholder into an entity) with the new type; prior is what
// a lookup of the name in this transaction found.
func (k *kgRun) createNode(ctx context.Context, name, entityType string, prior kgFound) (memory.Node, error) {
	props, _ := json.Marshal(map[string]string{"name": name, "entity_type": entityType, kgSeq: memory.NewID()})
	return k.putNode(ctx, name, props, prior)
}

// placeholderNode makes sure a node exists for a name a relation names;
// prior is what a lookup of the name in this transaction found.
func (k *kgRun) placeholderNode(ctx context.Context, name string, prior kgFound) (memory.Node, error) {
	props, _ := json.Marshal(map[string]any{"name": name, kgPlaceholder: true})
	return k.putNode(ctx, name, props, prior)
}

func (k *kgRun) putNode(ctx context.Context, name string, props json.RawMessage, prior kgFound) (memory.Node, error) {
	n, err := k.g.UpsertNode(ctx, core.NodeUpsert{Label: EntityLabel, Key: NodeKey(name), Properties: props,
		Prior: prior.n, Exists: prior.exists})
	if errors.Is(err, core.ErrNodeHidden) {
		return memory.Node{}, errKGTaken
	}
	return n, err
}

// observe writes one observation of an entity through the gate. The
// caller has already decided, exactly and within the entity as the
// reference does, that it is new, so the gate does not deduplicate it.
// held is true when the gate holds it for review (personal data): it is
// stored and its writer and operators read it back, flagged. A credential
// or secret is refused, failing the call with an error naming field, and
// so is anything else the gate refuses: nothing is silently dropped.
func (k *kgRun) observe(ctx context.Context, name, observation, field string, nodes map[string]memory.Node) (held bool, err error) {
	req := core.WriteRequest{Type: memory.Entity, Category: ObservationCategory, Content: kgContent(name, observation),
		Entities: []string{kgEntityRef(name)}}
	refused := func(err error) error {
		k.g.Refuse(req)
		fe := *fault.As(err)
		fe.Message = field + ": " + strings.TrimPrefix(fe.Message, "content: ")
		fe.Details = maps.Clone(fe.Details)
		if fe.Details == nil {
			fe.Details = map[string]any{}
		}
		fe.Details["field"] = field
		return &fe
	}
	res, err := k.g.WriteRecord(ctx, req, core.RecordOptions{ExactByCaller: true, Nodes: nodes})
	if err != nil {
		if core.IsRefusal(err) {
			return false, refused(err)
		}
		return false, err
	}
	if res.Decision == memory.DecisionQuarantined && slices.Contains(res.PIIKinds, gate.PIISecret) {
		return false, refused(fault.New(fault.GateRejected, "looks like a credential or secret; the knowledge-graph tools do not store secrets").
			With("reason", gate.ReasonPII).With("pii_kinds", res.PIIKinds))
	}
	return res.Decision == memory.DecisionQuarantined, nil
}

// CreateEntities creates the entities whose names do not exist yet, each
// with its observations (all of them, repeats included, as the reference
// stores them), and returns those it created. Entities whose name exists
// are skipped, as are repeats of a name within the call (the reference
// would keep two entities of one name).
func (s *Service) CreateEntities(ctx context.Context, p memory.Principal, ents []Entity) ([]Entity, error) {
	if err := core.CheckGraphWriter(p); err != nil {
		return nil, err
	}
	for i, e := range ents {
		f := "entities[" + strconv.Itoa(i) + "]"
		if err := checkKGName(e.Name, f+".name"); err != nil {
			return nil, err
		}
		if len(e.EntityType) > 256 {
			return nil, fault.Field(f+".entityType", "at most 256 bytes")
		}
		// The name is the node's key and the type its property: screened
		// as graph writes (observations are records, screened by the gate).
		if err := s.svc.ScreenGraphWrite(ctx, p, "graph.node.upsert", f+".name", e.Name, f+".entityType", []byte(e.EntityType)); err != nil {
			return nil, err
		}
	}
	var out []Entity
	err := s.kgWrite(ctx, p, func(tx store.Reader, k *kgRun) error {
		out = []Entity{}
		seen := map[string]bool{}
		for i, e := range ents {
			if seen[e.Name] {
				continue
			}
			seen[e.Name] = true
			f, err := k.lookup(ctx, e.Name)
			if err != nil {
				return err
			}
			if k.live(f) && !kgIsPlaceholder(f.n) {
				continue // the entity exists
			}
			n, err := k.createNode(ctx, e.Name, e.EntityType, f)
			if errors.Is(err, errKGTaken) {
				continue
			} else if err != nil {
				return err
			}
			// The node as this transaction wrote it: its observations
			// link to it without reading it again.
			nodes := map[string]memory.Node{kgEntityRef(e.Name): n}
			got := Entity{Name: e.Name, EntityType: e.EntityType, Observations: []string{}}
			for j, o := range e.Observations {
				held, err := k.observe(ctx, e.Name, o, fmt.Sprintf("entities[%d].observations[%d]", i, j), nodes)
				if err != nil {
					return err
				}
				got.Observations = append(got.Observations, o)
				if held {
					got.Held = append(got.Held, o)
				}
			}
			out = append(out, got)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CreateRelations creates the relations that do not exist yet and
// returns them; existing (from, to, relationType) triples and repeats
// within the call are skipped. As in the reference, an end need not be an
// entity yet (its name is kept as a placeholder node until an entity of
// that name is created) and an entity may relate to itself.
func (s *Service) CreateRelations(ctx context.Context, p memory.Principal, rels []Relation) ([]Relation, error) {
	if err := core.CheckGraphWriter(p); err != nil {
		return nil, err
	}
	for i, r := range rels {
		f := "relations[" + strconv.Itoa(i) + "]"
		if err := checkKGName(r.From, f+".from"); err != nil {
			return nil, err
		}
		if err := checkKGName(r.To, f+".to"); err != nil {
			return nil, err
		}
		if len(r.RelationType) > 1024 || !utf8.ValidString(r.RelationType) {
			return nil, fault.Field(f+".relationType", "must be valid UTF-8 of at most 1024 bytes")
		}
		if err := s.svc.ScreenGraphWrite(ctx, p, "graph.edge.upsert", "", "", f+".relationType", []byte(r.RelationType)); err != nil {
			return nil, err
		}
	}
	var out []Relation
	err := s.kgWrite(ctx, p, func(tx store.Reader, k *kgRun) error {
		out = []Relation{}
		end := func(name string) (memory.Node, error) {
			f, err := k.lookup(ctx, name)
			if err != nil || k.live(f) {
				return f.n, err
			}
			return k.placeholderNode(ctx, name, f)
		}
		for i, r := range rels {
			from, err := end(r.From)
			if err != nil {
				return kgTakenField(err, "relations["+strconv.Itoa(i)+"].from")
			}
			to, err := end(r.To)
			if err != nil {
				return kgTakenField(err, "relations["+strconv.Itoa(i)+"].to")
			}
			added, err := k.relate(ctx, tx, from, to, r.RelationType)
			if err != nil {
				return err
			}
			if added {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// edgeRelationTypes returns the relationTypes an edge stands for: its
// relation_types property, or its relation when it has none (an edge
// made by graph_upsert_edge).
func edgeRelationTypes(e memory.Edge) []string {
	var props map[string]json.RawMessage
	_ = json.Unmarshal(e.Properties, &props)
	var rts []string
	if raw, ok := props[kgRelationTypes]; ok && json.Unmarshal(raw, &rts) == nil && len(rts) > 0 {
		return rts
	}
	return []string{e.Relation}
}

// edgeRelationIDs returns the ordering ids of an edge's relationTypes
// (parallel to edgeRelationTypes); an edge without them orders by its id.
func edgeRelationIDs(e memory.Edge, n int) []string {
	var props struct {
		IDs []string `json:"relation_ids"`
	}
	_ = json.Unmarshal(e.Properties, &props)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = e.ID
		if i < len(props.IDs) {
			ids[i] = props.IDs[i]
		}
	}
	return ids
}

// withRelationTypes returns e's properties with relation_types set to rts
// and relation_ids to ids, keeping every other property.
func withRelationTypes(e memory.Edge, rts, ids []string) json.RawMessage {
	props := map[string]json.RawMessage{}
	_ = json.Unmarshal(e.Properties, &props)
	if props == nil {
		props = map[string]json.RawMessage{}
	}
	raw, _ := json.Marshal(rts)
	props[kgRelationTypes] = raw
	raw, _ = json.Marshal(ids)
	props[kgRelationIDs] = raw
	out, _ := json.Marshal(props)
	return out
}

// relate adds relationType to the live edge from -> to of its mapped
// relation, creating the edge if needed; added is false when the edge
// already stands for it.
func (k *kgRun) relate(ctx context.Context, tx store.Reader, from, to memory.Node, relationType string) (bool, error) {
	rel := kgRelation(relationType)
	e, err := tx.FindLiveEdge(ctx, k.p.Workspace, from.ID, to.ID, rel)
	if errors.Is(err, store.ErrNotFound) {
		// EnsureEdge: a concurrent create of the same relation is not a
		// conflict; this call then adds its type to that edge.
		props := withRelationTypes(memory.Edge{}, []string{relationType}, []string{memory.NewID()})
		var created bool
		if e, created, err = k.g.EnsureEdge(ctx, from, to, rel, props); created || err != nil {
			return err == nil, err
		}
	}
	switch {
	case err != nil:
		return false, err
	case !core.EdgeVisibleTo(k.p, e, from, to):
		return false, fault.New(fault.Conflict, "relationType: these entities are already related by an edge this principal may not see").
			With("field", "relationType")
	}
	rts := edgeRelationTypes(e)
	if slices.Contains(rts, relationType) {
		return false, nil
	}
	ids := edgeRelationIDs(e, len(rts))
	e.Properties = withRelationTypes(e, append(rts, relationType), append(ids, memory.NewID()))
	e.ObservedAt, e.UpdatedAt = k.now, k.now
	if err := k.g.UpdateEdge(ctx, e); err != nil {
		return false, err
	}
	return true, nil
}

// AddObservations adds observations to existing entities and reports,
// per input item, the ones that were new: as in the reference, those the
// entity did not have before the item (a repeat within one item is added
// twice). An entity that does not exist fails the whole call, which then
// stores nothing.
func (s *Service) AddObservations(ctx context.Context, p memory.Principal, obs []Observations) ([]Added, error) {
	if err := core.CheckGraphWriter(p); err != nil {
		return nil, err
	}
	for i, o := range obs {
		f := "observations[" + strconv.Itoa(i) + "]"
		if err := checkKGName(o.EntityName, f+".entityName"); err != nil {
			return nil, err
		}
	}
	var out []Added
	err := s.kgWrite(ctx, p, func(tx store.Reader, k *kgRun) error {
		out = make([]Added, 0, len(obs))
		have := map[string][]string{}
		for i, o := range obs {
			f := "observations[" + strconv.Itoa(i) + "].entityName"
			if _, ok, err := k.entity(ctx, o.EntityName); err != nil || !ok {
				if err != nil {
					return err
				}
				return fault.New(fault.NotFound, f+": no entity with this name; create it with create_entities first").With("field", f)
			}
			cur, ok := have[o.EntityName]
			if !ok {
				obs, err := s.observationTexts(ctx, tx, p, o.EntityName)
				if err != nil {
					return err
				}
				cur = obs.texts
			}
			res := Added{EntityName: o.EntityName, AddedObservations: []string{}}
			for j, c := range o.Contents {
				if slices.Contains(cur, c) {
					continue
				}
				held, err := k.observe(ctx, o.EntityName, c, fmt.Sprintf("observations[%d].contents[%d]", i, j), nil)
				if err != nil {
					return err
				}
				res.AddedObservations = append(res.AddedObservations, c)
				if held {
					res.Held = append(res.Held, c)
				}
			}
			have[o.EntityName] = append(cur, res.AddedObservations...)
			out = append(out, res)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// invalidate ends a live observation record (core.GraphTx.InvalidateRecord).
func (k *kgRun) invalidate(ctx context.Context, head memory.Record) error {
	return k.g.InvalidateRecord(ctx, head, "kg_delete")
}

// liveEdges lists the live edges at either end of a node.
func liveEdges(ctx context.Context, r store.Reader, ws, nodeID string) ([]memory.Edge, error) {
	q := store.EdgeQuery{Node: nodeID, Limit: store.MaxLimit}
	var out []memory.Edge
	for {
		page, err := r.ListEdges(ctx, ws, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			return out, nil
		}
		q.After = page[len(page)-1].ID
	}
}

// DeleteEntities deletes the named entities: their observations and
// the edges at either end are invalidated and their nodes archived. As in
// the reference, the relations of a name that is no entity (a
// placeholder) are deleted too. Names that do not exist are ignored.
func (s *Service) DeleteEntities(ctx context.Context, p memory.Principal, names []string) error {
	if err := kgModifier(p); err != nil {
		return err
	}
	return s.kgWrite(ctx, p, func(tx store.Reader, k *kgRun) error {
		for _, name := range names {
			if checkKGName(name, "entityNames") != nil {
				continue
			}
			n, ok, err := k.node(ctx, name)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			recs, err := s.observationRecords(ctx, tx, p, kgEntityRef(name))
			if err != nil {
				return err
			}
			for _, r := range recs {
				if !core.CanChange(p, r) { // another writer's observation stays
					continue
				}
				if err := k.invalidate(ctx, r); err != nil {
					return err
				}
			}
			es, err := liveEdges(ctx, tx, p.Workspace, n.ID)
			if err != nil {
				return err
			}
			for _, e := range es {
				if err := k.g.InvalidateEdge(ctx, e); err != nil {
					return err
				}
			}
			if err := k.g.ArchiveNode(ctx, n); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteObservations deletes (invalidates) the given observations of
// entities. Entities and observations that do not exist are ignored.
func (s *Service) DeleteObservations(ctx context.Context, p memory.Principal, dels []Observations) error {
	if err := kgModifier(p); err != nil {
		return err
	}
	return s.kgWrite(ctx, p, func(tx store.Reader, k *kgRun) error {
		for _, d := range dels {
			if checkKGName(d.EntityName, "entityName") != nil {
				continue
			}
			if _, ok, err := k.node(ctx, d.EntityName); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
			recs, err := s.observationRecords(ctx, tx, p, kgEntityRef(d.EntityName))
			if err != nil {
				return err
			}
			for _, r := range recs {
				if core.CanChange(p, r) && slices.Contains(d.Contents, kgObservationText(d.EntityName, r.Content)) {
					if err := k.invalidate(ctx, r); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// DeleteRelations deletes the given relations. An edge that stands for
// no relationType any more is invalidated. Relations that do not exist
// are ignored.
func (s *Service) DeleteRelations(ctx context.Context, p memory.Principal, rels []Relation) error {
	if err := core.CheckGraphWriter(p); err != nil {
		return err
	}
	return s.kgWrite(ctx, p, func(tx store.Reader, k *kgRun) error {
		for _, r := range rels {
			if checkKGName(r.From, "from") != nil || checkKGName(r.To, "to") != nil {
				continue
			}
			from, ok1, err := k.node(ctx, r.From)
			if err != nil {
				return err
			}
			to, ok2, err := k.node(ctx, r.To)
			if err != nil {
				return err
			}
			if !ok1 || !ok2 {
				continue
			}
			e, err := tx.FindLiveEdge(ctx, p.Workspace, from.ID, to.ID, kgRelation(r.RelationType))
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			rts := edgeRelationTypes(e)
			i := slices.Index(rts, r.RelationType)
			if i < 0 {
				continue
			}
			ids := edgeRelationIDs(e, len(rts))
			rts, ids = slices.Delete(rts, i, i+1), slices.Delete(ids, i, i+1)
			if len(rts) == 0 {
				if err := k.g.InvalidateEdge(ctx, e); err != nil {
					return err
				}
				continue
			}
			e.Properties = withRelationTypes(e, rts, ids)
			e.UpdatedAt = k.now
			if err := k.g.UpdateEdge(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
}
