package core

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

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// kgRun is the frame of a compatibility write: one transaction, so a call
// either takes effect whole or not at all; the indexes read its changes
// from the change logs after commit. A write the gate refuses inside fn aborts
// the transaction, and the refusal is then audited on its own (as a
// refused Write is), with the refused record's type and content hash.
type kgRun struct {
	s       *Service
	p       memory.Principal
	now     time.Time
	refused *memory.Record
}

func (s *Service) kgWrite(ctx context.Context, p memory.Principal, fn func(tx store.Tx, k *kgRun) error) error {
	if err := s.rateLimit(p); err != nil {
		return err
	}
	k := &kgRun{s: s, p: p, now: s.clock()}
	// The compatibility tools take no expected versions: a version
	// conflict is a race with a concurrent transaction (see Write), and
	// the call is run again.
	var err error
	for attempt := 0; ; attempt++ {
		err = s.tx(ctx, "graph", func(tx store.Tx) error {
			k.refused = nil
			return fn(tx, k)
		})
		if attempt == 3 || !errors.Is(err, store.ErrVersionConflict) {
			break
		}
	}
	if err != nil {
		if k.refused != nil && isRefusal(err) {
			s.auditRejection(ctx, p, memory.NewID(), "record.write", *k.refused, err, k.now)
		}
		return err
	}
	s.logMoved(ctx)
	return nil
}

// kgFound is a node lookup's answer: the node of a name with its grants,
// or exists false when the name has none.
type kgFound struct {
	n      memory.Node
	exists bool
}

// lookup returns the node of name, whatever its status and whoever may
// see it.
func (k *kgRun) lookup(ctx context.Context, tx store.Tx, name string) (kgFound, error) {
	n, err := tx.GetNode(ctx, store.NodeFind{Workspace: k.p.Workspace, Label: KGLabel, Key: KGNodeKey(name)})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return kgFound{}, nil
	case err != nil:
		return kgFound{}, err
	}
	if n, err = withGrants(ctx, tx, k.p.Workspace, n); err != nil {
		return kgFound{}, err
	}
	return kgFound{n: n, exists: true}, nil
}

// live reports whether the node found is live (not archived) and the
// principal may see it.
func (k *kgRun) live(f kgFound) bool {
	return f.exists && f.n.Status != memory.NodeArchived && nodeVisible(k.p, f.n)
}

// node returns the live (not archived) node of name, an entity's or a
// placeholder's (kgIsPlaceholder tells which), or found false;
// a node the principal may not see is not found.
func (k *kgRun) node(ctx context.Context, tx store.Tx, name string) (memory.Node, bool, error) {
	f, err := k.lookup(ctx, tx, name)
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
func (k *kgRun) entity(ctx context.Context, tx store.Tx, name string) (memory.Node, bool, error) {
	n, ok, err := k.node(ctx, tx, name)
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
func (k *kgRun) createNode(ctx context.Context, tx store.Tx, name, entityType string, prior kgFound) (memory.Node, error) {
	props, _ := json.Marshal(map[string]string{"name": name, "entity_type": entityType, kgSeq: memory.NewID()})
	return k.putNode(ctx, tx, name, props, prior)
}

// placeholderNode makes sure a node exists for a name a relation names;
// prior is what a lookup of the name in this transaction found.
func (k *kgRun) placeholderNode(ctx context.Context, tx store.Tx, name string, prior kgFound) (memory.Node, error) {
	props, _ := json.Marshal(map[string]any{"name": name, kgPlaceholder: true})
	return k.putNode(ctx, tx, name, props, prior)
}

func (k *kgRun) putNode(ctx context.Context, tx store.Tx, name string, props json.RawMessage, prior kgFound) (memory.Node, error) {
	prov, status := k.s.nodeOrigin(k.p, "")
	if k.p.Kind == memory.KindAgent && k.p.Trust == memory.Trusted {
		status = memory.NodeActive
	}
	n := prior.n
	created := false
	var err error
	if !prior.exists {
		var gs []memory.Grant
		if gs, err = recordGrants(ctx, tx, k.p.Workspace, kgEntityRef(name)); err != nil {
			return memory.Node{}, err
		}
		// EnsureNode: a concurrent create of the same entity is not a
		// conflict; this call then revives or retypes its node.
		n, created, err = tx.EnsureNode(ctx, k.p.Workspace, memory.Node{ID: memory.NewID(), Label: KGLabel, NaturalKey: KGNodeKey(name),
			Properties: props, Provenance: prov, Status: status, Access: memory.Public, Writer: ownerKey(k.p), Grants: gs,
			CreatedAt: k.now, UpdatedAt: k.now})
		if err == nil && !created {
			n, err = withGrants(ctx, tx, k.p.Workspace, n)
		}
	}
	switch {
	case created:
	case err != nil:
		return memory.Node{}, err
	default:
		if !nodeVisible(k.p, n) {
			return memory.Node{}, errKGTaken
		}
		n.Properties, n.Status, n.UpdatedAt = props, status, k.now
		err = tx.UpdateNode(ctx, k.p.Workspace, n)
	}
	if err != nil {
		return memory.Node{}, err
	}
	_, err = appendAudit(ctx, tx, k.p.Workspace, k.p, "", "graph.node.upsert", k.now, map[string]any{
		"node_id": n.ID, "label": n.Label, "created": created, "status": string(n.Status),
		"properties_sha256": memory.SHA256Hex(string(n.Properties))})
	return n, err
}

// observe writes one observation of an entity through the gate. The
// caller has already decided, exactly and within the entity as the
// reference does, that it is new, so the gate does not deduplicate it.
// held is true when the gate holds it for review (personal data): it is
// stored and its writer and operators read it back, flagged. A credential
// or secret is refused, failing the call with an error naming field, and
// so is anything else the gate refuses: nothing is silently dropped.
func (k *kgRun) observe(ctx context.Context, tx store.Tx, name, observation, field string, nodes map[string]memory.Node) (held bool, err error) {
	req := WriteRequest{Type: memory.Entity, Category: KGCategory, Content: kgContent(name, observation),
		Entities: []string{kgEntityRef(name)}, exactByCaller: true, nodes: nodes}
	refused := func(err error) error {
		k.refused = &memory.Record{Type: req.Type, ContentSHA256: memory.SHA256Hex(req.Content)}
		fe := *fault.As(err)
		fe.Message = field + ": " + strings.TrimPrefix(fe.Message, "content: ")
		fe.Details = maps.Clone(fe.Details)
		if fe.Details == nil {
			fe.Details = map[string]any{}
		}
		fe.Details["field"] = field
		return &fe
	}
	res, err := k.s.writeIn(ctx, tx, k.p, req, k.now)
	if err != nil {
		if isRefusal(err) {
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

// KGCreateEntities creates the entities whose names do not exist yet, each
// with its observations (all of them, repeats included, as the reference
// stores them), and returns those it created. Entities whose name exists
// are skipped, as are repeats of a name within the call (the reference
// would keep two entities of one name).
func (s *Service) KGCreateEntities(ctx context.Context, p memory.Principal, ents []KGEntity) ([]KGEntity, error) {
	if err := graphWriter(p); err != nil {
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
		if err := s.screenGraphWrite(ctx, p, "graph.node.upsert", f+".name", e.Name, f+".entityType", []byte(e.EntityType)); err != nil {
			return nil, err
		}
	}
	var out []KGEntity
	err := s.kgWrite(ctx, p, func(tx store.Tx, k *kgRun) error {
		out = []KGEntity{}
		seen := map[string]bool{}
		for i, e := range ents {
			if seen[e.Name] {
				continue
			}
			seen[e.Name] = true
			f, err := k.lookup(ctx, tx, e.Name)
			if err != nil {
				return err
			}
			if k.live(f) && !kgIsPlaceholder(f.n) {
				continue // the entity exists
			}
			n, err := k.createNode(ctx, tx, e.Name, e.EntityType, f)
			if errors.Is(err, errKGTaken) {
				continue
			} else if err != nil {
				return err
			}
			// The node as this transaction wrote it: its observations
			// link to it without reading it again.
			nodes := map[string]memory.Node{kgEntityRef(e.Name): n}
			got := KGEntity{Name: e.Name, EntityType: e.EntityType, Observations: []string{}}
			for j, o := range e.Observations {
				held, err := k.observe(ctx, tx, e.Name, o, fmt.Sprintf("entities[%d].observations[%d]", i, j), nodes)
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

// KGCreateRelations creates the relations that do not exist yet and
// returns them; existing (from, to, relationType) triples and repeats
// within the call are skipped. As in the reference, an end need not be an
// entity yet (its name is kept as a placeholder node until an entity of
// that name is created) and an entity may relate to itself.
func (s *Service) KGCreateRelations(ctx context.Context, p memory.Principal, rels []KGRelation) ([]KGRelation, error) {
	if err := graphWriter(p); err != nil {
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
		if err := s.screenGraphWrite(ctx, p, "graph.edge.upsert", "", "", f+".relationType", []byte(r.RelationType)); err != nil {
			return nil, err
		}
	}
	var out []KGRelation
	err := s.kgWrite(ctx, p, func(tx store.Tx, k *kgRun) error {
		out = []KGRelation{}
		end := func(name string) (memory.Node, error) {
			f, err := k.lookup(ctx, tx, name)
			if err != nil || k.live(f) {
				return f.n, err
			}
			return k.placeholderNode(ctx, tx, name, f)
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
func (k *kgRun) relate(ctx context.Context, tx store.Tx, from, to memory.Node, relationType string) (bool, error) {
	ws := k.p.Workspace
	rel := kgRelation(relationType)
	e, err := tx.FindLiveEdge(ctx, ws, from.ID, to.ID, rel)
	created := false
	if errors.Is(err, store.ErrNotFound) {
		e = memory.Edge{ID: memory.NewID(), From: from.ID, To: to.ID, Relation: rel, Weight: 1, ObservedAt: k.now,
			CreatedAt: k.now, UpdatedAt: k.now, Access: memory.Public, Writer: ownerKey(k.p)}
		e.Properties = withRelationTypes(e, []string{relationType}, []string{memory.NewID()})
		// EnsureEdge: a concurrent create of the same relation is not a
		// conflict; this call then adds its type to that edge.
		e, created, err = tx.EnsureEdge(ctx, ws, e)
	}
	switch {
	case created:
	case err != nil:
		return false, err
	case !edgeVisible(k.p, e, from, to):
		return false, fault.New(fault.Conflict, "relationType: these entities are already related by an edge this principal may not see").
			With("field", "relationType")
	default:
		rts := edgeRelationTypes(e)
		if slices.Contains(rts, relationType) {
			return false, nil
		}
		ids := edgeRelationIDs(e, len(rts))
		e.Properties = withRelationTypes(e, append(rts, relationType), append(ids, memory.NewID()))
		e.ObservedAt, e.UpdatedAt = k.now, k.now
		err = tx.UpdateEdge(ctx, ws, e)
	}
	if err != nil {
		return false, err
	}
	_, err = appendAudit(ctx, tx, ws, k.p, "", "graph.edge.upsert", k.now, map[string]any{
		"edge_id": e.ID, "from": e.From, "to": e.To, "relation": e.Relation, "created": created})
	return err == nil, err
}

// KGAddObservations adds observations to existing entities and reports,
// per input item, the ones that were new: as in the reference, those the
// entity did not have before the item (a repeat within one item is added
// twice). An entity that does not exist fails the whole call, which then
// stores nothing.
func (s *Service) KGAddObservations(ctx context.Context, p memory.Principal, obs []KGObservations) ([]KGAdded, error) {
	if err := graphWriter(p); err != nil {
		return nil, err
	}
	for i, o := range obs {
		f := "observations[" + strconv.Itoa(i) + "]"
		if err := checkKGName(o.EntityName, f+".entityName"); err != nil {
			return nil, err
		}
	}
	var out []KGAdded
	err := s.kgWrite(ctx, p, func(tx store.Tx, k *kgRun) error {
		out = make([]KGAdded, 0, len(obs))
		have := map[string][]string{}
		for i, o := range obs {
			f := "observations[" + strconv.Itoa(i) + "].entityName"
			if _, ok, err := k.entity(ctx, tx, o.EntityName); err != nil || !ok {
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
			res := KGAdded{EntityName: o.EntityName, AddedObservations: []string{}}
			for j, c := range o.Contents {
				if slices.Contains(cur, c) {
					continue
				}
				held, err := k.observe(ctx, tx, o.EntityName, c, fmt.Sprintf("observations[%d].contents[%d]", i, j), nil)
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

// invalidate ends a live observation record: a new version with
// invalidated_at set, audited. Open approval items of the record are
// closed, since there is nothing left to approve.
func (k *kgRun) invalidate(ctx context.Context, tx store.Tx, head memory.Record) error {
	decisionID := memory.NewID()
	next := head
	next.Version++
	next.UpdatedAt = k.now
	now := k.now
	next.InvalidatedAt = &now
	next.ModifiedBy = k.p.ID
	next.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionAccepted, Origin: memory.OriginExternal}
	if err := closeApprovals(ctx, tx, k.p, head.ID, memory.ApprovalRejected, k.now); err != nil {
		return err
	}
	if err := tx.UpdateRecord(ctx, k.p.Workspace, next, head.Version); err != nil {
		return err
	}
	if err := regrant(ctx, tx, k.p.Workspace, &head, next); err != nil {
		return err
	}
	_, err := appendAudit(ctx, tx, k.p.Workspace, k.p, decisionID, "record.invalidate", k.now, map[string]any{
		"decision": memory.DecisionAccepted, "reason": "kg_delete", "record_id": head.ID, "version": next.Version})
	return err
}

// invalidateEdge ends a live edge, audited.
func (k *kgRun) invalidateEdge(ctx context.Context, tx store.Tx, e memory.Edge) error {
	now := k.now
	e.InvalidatedAt, e.UpdatedAt = &now, now
	if err := tx.UpdateEdge(ctx, k.p.Workspace, e); err != nil {
		return err
	}
	_, err := appendAudit(ctx, tx, k.p.Workspace, k.p, "", "graph.edge.invalidate", now, map[string]any{"edge_id": e.ID, "relation": e.Relation})
	return err
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

// KGDeleteEntities deletes the named entities: their observations and
// the edges at either end are invalidated and their nodes archived. As in
// the reference, the relations of a name that is no entity (a
// placeholder) are deleted too. Names that do not exist are ignored.
func (s *Service) KGDeleteEntities(ctx context.Context, p memory.Principal, names []string) error {
	if err := kgModifier(p); err != nil {
		return err
	}
	return s.kgWrite(ctx, p, func(tx store.Tx, k *kgRun) error {
		for _, name := range names {
			if checkKGName(name, "entityNames") != nil {
				continue
			}
			n, ok, err := k.node(ctx, tx, name)
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
				if !canChange(p, r) { // another writer's observation stays
					continue
				}
				if err := k.invalidate(ctx, tx, r); err != nil {
					return err
				}
			}
			es, err := liveEdges(ctx, tx, p.Workspace, n.ID)
			if err != nil {
				return err
			}
			for _, e := range es {
				if err := k.invalidateEdge(ctx, tx, e); err != nil {
					return err
				}
			}
			n.Status, n.UpdatedAt = memory.NodeArchived, k.now
			if err := tx.UpdateNode(ctx, p.Workspace, n); err != nil {
				return err
			}
			if _, err := appendAudit(ctx, tx, p.Workspace, p, "", "graph.node.archive", k.now, map[string]any{"node_id": n.ID, "label": n.Label}); err != nil {
				return err
			}
		}
		return nil
	})
}

// KGDeleteObservations deletes (invalidates) the given observations of
// entities. Entities and observations that do not exist are ignored.
func (s *Service) KGDeleteObservations(ctx context.Context, p memory.Principal, dels []KGObservations) error {
	if err := kgModifier(p); err != nil {
		return err
	}
	return s.kgWrite(ctx, p, func(tx store.Tx, k *kgRun) error {
		for _, d := range dels {
			if checkKGName(d.EntityName, "entityName") != nil {
				continue
			}
			if _, ok, err := k.node(ctx, tx, d.EntityName); err != nil || !ok {
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
				if canChange(p, r) && slices.Contains(d.Contents, kgObservationText(d.EntityName, r.Content)) {
					if err := k.invalidate(ctx, tx, r); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// KGDeleteRelations deletes the given relations. An edge that stands for
// no relationType any more is invalidated. Relations that do not exist
// are ignored.
func (s *Service) KGDeleteRelations(ctx context.Context, p memory.Principal, rels []KGRelation) error {
	if err := graphWriter(p); err != nil {
		return err
	}
	return s.kgWrite(ctx, p, func(tx store.Tx, k *kgRun) error {
		for _, r := range rels {
			if checkKGName(r.From, "from") != nil || checkKGName(r.To, "to") != nil {
				continue
			}
			from, ok1, err := k.node(ctx, tx, r.From)
			if err != nil {
				return err
			}
			to, ok2, err := k.node(ctx, tx, r.To)
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
				if err := k.invalidateEdge(ctx, tx, e); err != nil {
					return err
				}
				continue
			}
			e.Properties = withRelationTypes(e, rts, ids)
			e.UpdatedAt = k.now
			if err := tx.UpdateEdge(ctx, p.Workspace, e); err != nil {
				return err
			}
			if _, err := appendAudit(ctx, tx, p.Workspace, p, "", "graph.edge.upsert", k.now, map[string]any{
				"edge_id": e.ID, "from": e.From, "to": e.To, "relation": e.Relation, "created": false}); err != nil {
				return err
			}
		}
		return nil
	})
}
