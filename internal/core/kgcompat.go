package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The knowledge-graph compatibility layer: the operations of the reference
// MCP memory server (npm @modelcontextprotocol/server-memory) — entities
// with observations, and relations between them — mapped onto memgate's
// graph and records, so that MCP clients written for it work unchanged
// and what they store is governed, versioned, audited and searchable like
// every other memory.
//
// The mapping:
//
//   - An entity is the graph node with label KGLabel and a natural key
//     that encodes its name (KGNodeKey): names are unique per workspace, as
//     in the reference, and case-sensitive. The node's properties hold
//     "name" (which lets the search's graph signal recognise it in
//     queries) and "entity_type".
//   - An observation is a record of type entity, category KGCategory,
//     whose content is "<name>: <observation>" and whose entities name the
//     node. It is written through the gate like any record, so it can be
//     queued, quarantined or refused, and memory_query finds it.
//   - A relation is a live edge between two entity nodes. memgate's
//     relations are an enum (SPEC §8): relationType is normalised to one
//     (NormalizeRelation: "depends on" is DEPENDS_ON) or stored as
//     RELATED_TO, and the exact relationTypes the edge stands for are kept
//     in its properties ("relation_types"), so they read back as given.
//   - Deleting never erases: deleted observations are invalidated (kept as
//     history, hidden from default reads), deleted relations' edges are
//     invalidated, and a deleted entity's node is archived with its
//     observations and edges invalidated. Erasure is memory_forget or an
//     operator's forget_subject.
//
// Reads see nodes that are active or provisional, and observations that
// are active or provisional (a restricted agent's writes wait for review
// but are shown), never invalidated ones, and only records the principal
// may read.

// KGLabel is the node label of compatibility entities.
const KGLabel = "entity"

// KGCategory is the category of observation records.
const KGCategory = "observation"

// kgRelationTypes is the edge property holding the relationTypes an edge
// stands for.
const kgRelationTypes = "relation_types"

// KGMaxNames bounds open_nodes. read_graph and search_nodes answer every
// entity, as the reference server does, unless the caller passes a limit
// (memgate's own extension).
const KGMaxNames = 100000

// kgPlaceholder is the node property marking the node of a name that a
// relation names but no entity has yet: the reference server stores such
// relations, so memgate keeps their end as a node that reads do not list
// as an entity until create_entities creates it.
const kgPlaceholder = "kg_placeholder"

// kgSeq is the node property that orders entities as the reference server
// does: by when each was (last) created, so a re-created entity comes last.
const kgSeq = "kg_seq"

// kgRelationIDs is the edge property parallel to relation_types holding an
// ordering id per relationType, so relations read back in creation order.
const kgRelationIDs = "relation_ids"

// KGEntity is an entity of the reference memory server's graph.
type KGEntity struct {
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
	// Held lists the observations among Observations that the gate holds
	// for review (personal data): shown to their writer and operators
	// only, flagged by the transports outside the reference's shape.
	Held []string `json:"-"`
}

// KGRelation is a directed, typed relation between two entities, by name.
type KGRelation struct {
	From         string `json:"from"`
	To           string `json:"to"`
	RelationType string `json:"relationType"`
}

// KGGraph is a view of the graph: entities and the relations that touch
// them.
type KGGraph struct {
	Entities  []KGEntity   `json:"entities"`
	Relations []KGRelation `json:"relations"`
	// Omitted counts the entities a caller's limit left out (0 when
	// nothing was cut); the transports say so next to the result.
	Omitted int `json:"-"`
}

// KGObservations adds or deletes observations of one entity.
type KGObservations struct {
	EntityName string
	Contents   []string
}

// KGAdded reports the observations an add stored for one entity.
type KGAdded struct {
	EntityName        string   `json:"entityName"`
	AddedObservations []string `json:"addedObservations"`
	// Held lists the added observations the gate holds for review.
	Held []string `json:"-"`
}

// KGNodeKey returns the natural key of the node of the entity named name:
// the name with spaces as '_', and '%', '_' and other whitespace or
// control characters percent-encoded, so that distinct names have
// distinct keys ("John Smith" is entity:John_Smith).
func KGNodeKey(name string) string {
	if name == "" {
		return "%" // a lone '%' is no encoding of any other name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == ' ':
			b.WriteByte('_')
		case c == '%' || c == '_' || c < ' ' || c == 0x7f:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// KGEntityName is the inverse of KGNodeKey.
func KGEntityName(key string) string {
	if key == "%" {
		return ""
	}
	var b []byte
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '_':
			b = append(b, ' ')
		case c == '%' && i+2 < len(key):
			if v, err := strconv.ParseUint(key[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 2
				continue
			}
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// kgEntityRef is the record entity ("label:key") naming an entity's node.
func kgEntityRef(name string) string { return KGLabel + ":" + KGNodeKey(name) }

// checkKGName validates an entity name; field names it in errors. Any
// string the reference accepts is a name, the empty one included, up to
// the length a node key holds.
func checkKGName(name, field string) error {
	if !utf8.ValidString(name) {
		return fault.Field(field, "must be valid UTF-8")
	}
	if !gate.ValidEntityKey(kgEntityRef(name)) {
		return fault.Field(field, "is too long (at most about 240 bytes)")
	}
	return nil
}

// kgRelation maps a free-text relationType onto memgate's relation enum.
func kgRelation(relationType string) string {
	if r, ok := graph.NormalizeRelation(relationType); ok {
		return r
	}
	return "RELATED_TO"
}

// kgContent is the record content of an observation of an entity.
func kgContent(name, observation string) string { return name + ": " + observation }

// kgObservationText recovers the observation from a record's content.
func kgObservationText(name, content string) string {
	if s, ok := strings.CutPrefix(content, name+": "); ok {
		return s
	}
	return content
}

// kgModifier checks that p may change existing records: operators, and
// agents that may patch (standard and trusted).
func kgModifier(p memory.Principal) error {
	if p.Kind == memory.KindAgent && (p.Trust == memory.Restricted || p.Trust == memory.ReadOnly) {
		return fault.New(fault.PermissionDenied, "agents of trust "+string(p.Trust)+" may not delete; ask an operator, or write a correcting observation")
	}
	if p.Kind != memory.KindAgent && p.Kind != memory.KindOperator {
		return fault.New(fault.PermissionDenied, "this principal may not change the graph")
	}
	return nil
}

// kgRun is the frame of a compatibility write: one transaction, so a call
// either takes effect whole or not at all; its committed records and graph
// changes published afterwards. A write the gate refuses inside fn aborts
// the transaction, and the refusal is then audited on its own (as a
// refused Write is), with the refused record's type and content hash.
type kgRun struct {
	s       *Service
	p       memory.Principal
	now     time.Time
	changed []memory.Record
	fx      graphEffects
	refused *memory.Record
}

func (s *Service) kgWrite(ctx context.Context, p memory.Principal, fn func(tx store.Tx, k *kgRun) error) error {
	if err := s.rateLimit(p); err != nil {
		return err
	}
	k := &kgRun{s: s, p: p, now: s.clock()}
	err := s.tx(ctx, "graph", func(tx store.Tx) error {
		k.changed, k.fx, k.refused = nil, graphEffects{}, nil
		return fn(tx, k)
	})
	if err != nil {
		if k.refused != nil && isRefusal(err) {
			s.auditRejection(ctx, p, memory.NewID(), "record.write", *k.refused, err, k.now)
		}
		return err
	}
	s.publish(p.Workspace, k.changed...)
	s.publishGraph(p.Workspace, k.fx)
	return nil
}

// node returns the live (not archived) node of name, an entity's or a
// placeholder's (kgIsPlaceholder tells which), or found false;
// a node the principal may not see is not found.
func (k *kgRun) node(ctx context.Context, tx store.Tx, name string) (memory.Node, bool, error) {
	n, err := tx.GetNodeByKey(ctx, k.p.Workspace, KGLabel, KGNodeKey(name))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return memory.Node{}, false, nil
	case err != nil:
		return memory.Node{}, false, err
	}
	if n, err = withGrants(ctx, tx, k.p.Workspace, n); err != nil {
		return memory.Node{}, false, err
	}
	return n, n.Status != memory.NodeArchived && nodeVisible(k.p, n), nil
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
// turns its placeholder into an entity) with the new type.
func (k *kgRun) createNode(ctx context.Context, tx store.Tx, name, entityType string) (memory.Node, error) {
	props, _ := json.Marshal(map[string]string{"name": name, "entity_type": entityType, kgSeq: memory.NewID()})
	return k.putNode(ctx, tx, name, props)
}

// placeholderNode makes sure a node exists for a name a relation names.
func (k *kgRun) placeholderNode(ctx context.Context, tx store.Tx, name string) (memory.Node, error) {
	props, _ := json.Marshal(map[string]any{"name": name, kgPlaceholder: true})
	return k.putNode(ctx, tx, name, props)
}

func (k *kgRun) putNode(ctx context.Context, tx store.Tx, name string, props json.RawMessage) (memory.Node, error) {
	prov, status := k.s.nodeOrigin(k.p, "")
	if k.p.Kind == memory.KindAgent && k.p.Trust == memory.Trusted {
		status = memory.NodeActive
	}
	n, err := tx.GetNodeByKey(ctx, k.p.Workspace, KGLabel, KGNodeKey(name))
	created := false
	if errors.Is(err, store.ErrNotFound) {
		var gs []memory.Grant
		if gs, err = recordGrants(ctx, tx, k.p.Workspace, kgEntityRef(name)); err != nil {
			return memory.Node{}, err
		}
		// EnsureNode: a concurrent create of the same entity is not a
		// conflict; this call then revives or retypes its node.
		n, created, err = tx.EnsureNode(ctx, k.p.Workspace, memory.Node{ID: memory.NewID(), Label: KGLabel, NaturalKey: KGNodeKey(name),
			Properties: props, Provenance: prov, Status: status, Access: memory.Public, Writer: ownerKey(k.p), Grants: gs,
			CreatedAt: k.now, UpdatedAt: k.now})
	}
	switch {
	case created:
	case err != nil:
		return memory.Node{}, err
	default:
		if n, err = withGrants(ctx, tx, k.p.Workspace, n); err != nil {
			return memory.Node{}, err
		}
		if !nodeVisible(k.p, n) {
			return memory.Node{}, errKGTaken
		}
		n.Properties, n.Status, n.UpdatedAt = props, status, k.now
		err = tx.UpdateNode(ctx, k.p.Workspace, n)
	}
	if err != nil {
		return memory.Node{}, err
	}
	k.fx.nodes = append(k.fx.nodes, n)
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
func (k *kgRun) observe(ctx context.Context, tx store.Tx, name, observation, field string) (held bool, err error) {
	req := WriteRequest{Type: memory.Entity, Category: KGCategory, Content: kgContent(name, observation),
		Entities: []string{kgEntityRef(name)}, exactByCaller: true}
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
	res, changed, err := k.s.writeIn(ctx, tx, k.p, req, k.now)
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
	k.changed = append(k.changed, changed...)
	k.fx.add(res.graph)
	return res.Decision == memory.DecisionQuarantined, nil
}

// kgStatuses are the record statuses compatibility reads show.
var kgStatuses = []memory.Status{memory.Active, memory.Provisional}

// observationRecords lists the live observation records of an entity that
// p may read (of every entity when ref is "", else of the entity whose
// record entity kgEntityRef gives), oldest first: active and
// provisional ones, and those the gate holds for review (quarantined) that
// p wrote, or all of them for an operator, and p's own sensitive ones (an
// approved quarantine stays sensitive) — a writer always reads back what
// a write reported as stored (docs/mcp-dropin.md).
func (s *Service) observationRecords(ctx context.Context, r store.Reader, p memory.Principal, ref string) ([]memory.Record, error) {
	q := store.RecordQuery{Types: []memory.Type{memory.Entity}, Category: KGCategory, Statuses: kgStatuses,
		Access: accessFilter(p, false), Limit: store.MaxLimit, Entity: ref}
	list := func(q store.RecordQuery, keep func(memory.Record) bool) ([]memory.Record, error) {
		var out []memory.Record
		for {
			page, err := r.ListRecords(ctx, p.Workspace, q)
			if err != nil {
				return nil, err
			}
			for _, rec := range page {
				if keep(rec) {
					out = append(out, rec)
				}
			}
			if len(page) < q.Limit {
				return out, nil
			}
			q.Before = page[len(page)-1].ID
		}
	}
	out, err := list(q, func(memory.Record) bool { return true })
	if err != nil {
		return nil, err
	}
	if p.Kind == memory.KindOperator || p.Kind == memory.KindAgent {
		// An operator's first query read every level but system; an
		// agent's left out its own sensitive records, which a quarantine
		// makes of personal data, approved or not.
		q.Statuses, q.Before = []memory.Status{memory.Quarantined}, ""
		q.Access = store.AccessFilter{Levels: []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.Sensitive}}
		if p.Kind == memory.KindAgent {
			q.Statuses = append(q.Statuses, kgStatuses...)
			q.Access = store.AccessFilter{Levels: []memory.Access{memory.Sensitive}}
		}
		held, err := list(q, func(rec memory.Record) bool {
			return p.Kind == memory.KindOperator || rec.Source.Agent == p.Name
		})
		if err != nil {
			return nil, err
		}
		out = append(out, held...)
	}
	slices.SortFunc(out, func(a, b memory.Record) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// kgObs collects an entity's observations in order, every one (the
// reference keeps repeats), noting those held for review.
type kgObs struct {
	texts, held []string
}

func (o *kgObs) add(name string, rec memory.Record) {
	t := kgObservationText(name, rec.Content)
	o.texts = append(o.texts, t)
	if rec.Status == memory.Quarantined {
		o.held = append(o.held, t)
	}
}

// observationTexts returns an entity's observations, oldest first.
func (s *Service) observationTexts(ctx context.Context, r store.Reader, p memory.Principal, name string) (kgObs, error) {
	recs, err := s.observationRecords(ctx, r, p, kgEntityRef(name))
	if err != nil {
		return kgObs{}, err
	}
	out := kgObs{texts: make([]string, 0, len(recs))}
	for _, rec := range recs {
		out.add(name, rec)
	}
	return out, nil
}

// allObservations returns the observations of every entity p may read, by
// the entity's node ("entity:<key>"), oldest first: one scan of the
// observation records instead of a query per entity.
func (s *Service) allObservations(ctx context.Context, p memory.Principal) (map[string]*kgObs, error) {
	recs, err := s.observationRecords(ctx, s.store, p, "")
	if err != nil {
		return nil, err
	}
	out := map[string]*kgObs{}
	for _, r := range recs {
		for _, ent := range r.Entities {
			if label, key, _ := strings.Cut(ent, ":"); label == KGLabel {
				if out[ent] == nil {
					out[ent] = &kgObs{}
				}
				out[ent].add(KGEntityName(key), r)
			}
		}
	}
	return out, nil
}

// kgEntityType is the entityType a node keeps in its properties.
func kgEntityType(n memory.Node) string {
	var props struct {
		EntityType string `json:"entity_type"`
	}
	_ = json.Unmarshal(n.Properties, &props)
	return props.EntityType
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
			if _, live, err := k.entity(ctx, tx, e.Name); err != nil || live {
				if err != nil {
					return err
				}
				continue
			}
			if _, err := k.createNode(ctx, tx, e.Name, e.EntityType); errors.Is(err, errKGTaken) {
				continue
			} else if err != nil {
				return err
			}
			got := KGEntity{Name: e.Name, EntityType: e.EntityType, Observations: []string{}}
			for j, o := range e.Observations {
				held, err := k.observe(ctx, tx, e.Name, o, fmt.Sprintf("entities[%d].observations[%d]", i, j))
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
			n, ok, err := k.node(ctx, tx, name)
			if err != nil || ok {
				return n, err
			}
			return k.placeholderNode(ctx, tx, name)
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
	k.fx.edges = append(k.fx.edges, e)
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
				held, err := k.observe(ctx, tx, o.EntityName, c, fmt.Sprintf("observations[%d].contents[%d]", i, j))
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
	k.changed = append(k.changed, next)
	nodes, err := regrant(ctx, tx, k.p.Workspace, &head, next)
	if err != nil {
		return err
	}
	k.fx.nodes = append(k.fx.nodes, nodes...)
	_, err = appendAudit(ctx, tx, k.p.Workspace, k.p, decisionID, "record.invalidate", k.now, map[string]any{
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
	k.fx.edges = append(k.fx.edges, e)
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
			k.fx.nodes = append(k.fx.nodes, n)
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
			k.fx.edges = append(k.fx.edges, e)
			if _, err := appendAudit(ctx, tx, p.Workspace, p, "", "graph.edge.upsert", k.now, map[string]any{
				"edge_id": e.ID, "from": e.From, "to": e.To, "relation": e.Relation, "created": false}); err != nil {
				return err
			}
		}
		return nil
	})
}

// kgLive reports whether n is a compatibility node (an entity's or a
// placeholder's) that reads show.
func kgLive(n memory.Node) bool {
	return n.Label == KGLabel && n.Status != memory.NodeArchived && !strings.HasPrefix(n.NaturalKey, "forgotten-")
}

// kgEntityOf returns the entity a node stands for, with its observations.
func (s *Service) kgEntityOf(ctx context.Context, p memory.Principal, n memory.Node) (KGEntity, error) {
	name := KGEntityName(n.NaturalKey)
	obs, err := s.observationTexts(ctx, s.store, p, name)
	if err != nil {
		return KGEntity{}, err
	}
	return KGEntity{Name: name, EntityType: kgEntityType(n), Observations: obs.texts, Held: obs.held}, nil
}

// kgRelationsOf returns the relations p may see at either end of nodes
// whose other end is a live entity or placeholder p sees too, in the
// order they were created.
func (s *Service) kgRelationsOf(ctx context.Context, p memory.Principal, nodes []memory.Node) ([]KGRelation, error) {
	ws := p.Workspace
	seen := map[string]bool{}
	var edges []memory.Edge
	for _, n := range nodes {
		es, err := liveEdges(ctx, s.store, ws, n.ID)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if !seen[e.ID] {
				seen[e.ID] = true
				edges = append(edges, e)
			}
		}
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i].ID < edges[j].ID })
	type named struct {
		name string
		ok   bool // a live entity or placeholder
	}
	names := map[string]named{} // node id -> name
	nameOf := func(id string) (string, bool, error) {
		if v, ok := names[id]; ok {
			return v.name, v.ok, nil
		}
		n, err := s.store.GetNode(ctx, ws, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", false, err
		}
		var v named
		if err == nil && kgLive(n) {
			if n, err = withGrants(ctx, s.store, ws, n); err != nil {
				return "", false, err
			}
			if nodeVisible(p, n) {
				v = named{KGEntityName(n.NaturalKey), true}
			}
		}
		names[id] = v
		return v.name, v.ok, nil
	}
	type ordered struct {
		rel KGRelation
		key string
	}
	var all []ordered
	for _, e := range edges {
		from, ok1, err := nameOf(e.From)
		if err != nil {
			return nil, err
		}
		to, ok2, err := nameOf(e.To)
		if err != nil {
			return nil, err
		}
		if !ok1 || !ok2 || (e.Access != "" && !grantVisible(p, memory.Grant{Access: e.Access, Writer: e.Writer})) {
			continue
		}
		rts := edgeRelationTypes(e)
		ids := edgeRelationIDs(e, len(rts))
		for i, rt := range rts {
			all = append(all, ordered{KGRelation{From: from, To: to, RelationType: rt}, ids[i]})
		}
	}
	slices.SortStableFunc(all, func(a, b ordered) int { return strings.Compare(a.key, b.key) })
	out := make([]KGRelation, len(all))
	for i, o := range all {
		out[i] = o.rel
	}
	return out, nil
}

// kgView assembles the view of nodes (in the given order) with the
// relations touching them or, for a whole graph, touching extra (the
// placeholders) as well.
func (s *Service) kgView(ctx context.Context, p memory.Principal, nodes, extra []memory.Node) (KGGraph, error) {
	g := KGGraph{Entities: make([]KGEntity, 0, len(nodes))}
	for _, n := range nodes {
		e, err := s.kgEntityOf(ctx, p, n)
		if err != nil {
			return KGGraph{}, storeErr(err, "observations")
		}
		g.Entities = append(g.Entities, e)
	}
	rels, err := s.kgRelationsOf(ctx, p, append(slices.Clip(nodes), extra...))
	if err != nil {
		return KGGraph{}, storeErr(err, "relations")
	}
	g.Relations = rels
	return g, nil
}

func kgLimit(limit int) (int, error) {
	if limit < 0 {
		return 0, fault.Field("limit", "must be positive (or 0 for every entity)")
	}
	return limit, nil
}

// kgNodes lists the live entity nodes p may see in the reference's
// order (by when each was last created), and the live placeholder nodes
// p may see.
func (s *Service) kgNodes(ctx context.Context, p memory.Principal) (entities, placeholders []memory.Node, err error) {
	ws := p.Workspace
	q := store.NodeQuery{Labels: []string{KGLabel}, Statuses: []memory.NodeStatus{memory.NodeProvisional, memory.NodeActive},
		Limit: store.MaxLimit}
	for {
		page, err := s.store.ListNodes(ctx, ws, q)
		if err != nil {
			return nil, nil, storeErr(err, "nodes")
		}
		for _, n := range page {
			if kgLive(n) {
				if n, err = withGrants(ctx, s.store, ws, n); err != nil {
					return nil, nil, storeErr(err, "nodes")
				}
			}
			switch {
			case !kgLive(n), !nodeVisible(p, n):
			case kgIsPlaceholder(n):
				placeholders = append(placeholders, n)
			default:
				entities = append(entities, n)
			}
		}
		if len(page) < q.Limit {
			break
		}
		q.After = page[len(page)-1].ID
	}
	slices.SortStableFunc(entities, func(a, b memory.Node) int { return strings.Compare(kgOrder(a), kgOrder(b)) })
	return entities, placeholders, nil
}

// KGReadGraph returns every entity, in the reference's order, and every
// relation — or, with a limit (memgate's extension; 0 for all), the first
// limit entities with the relations touching them, Omitted saying how many
// were left out.
func (s *Service) KGReadGraph(ctx context.Context, p memory.Principal, limit int) (KGGraph, error) {
	limit, err := kgLimit(limit)
	if err != nil {
		return KGGraph{}, err
	}
	nodes, placeholders, err := s.kgNodes(ctx, p)
	if err != nil {
		return KGGraph{}, err
	}
	omitted := 0
	if limit > 0 && len(nodes) > limit {
		omitted, nodes, placeholders = len(nodes)-limit, nodes[:limit], nil
	}
	g, err := s.kgView(ctx, p, nodes, placeholders)
	g.Omitted = omitted
	return g, err
}

// KGSearchNodes returns the entities whose name, type or an observation
// contains query, both lowercased as JavaScript's toLowerCase does (the
// reference's matching), best first — the name equal to the query, then
// names containing it, then types, then observations, more matching
// observations first, ties in the reference's order — at most limit (0
// for all; Omitted counts the rest), with the relations that touch them.
func (s *Service) KGSearchNodes(ctx context.Context, p memory.Principal, query string, limit int) (KGGraph, error) {
	limit, err := kgLimit(limit)
	if err != nil {
		return KGGraph{}, err
	}
	if len(query) > 4096 {
		return KGGraph{}, fault.Field("query", "at most 4096 bytes")
	}
	nodes, _, err := s.kgNodes(ctx, p)
	if err != nil {
		return KGGraph{}, err
	}
	obs, err := s.allObservations(ctx, p)
	if err != nil {
		return KGGraph{}, storeErr(err, "observations")
	}
	q := jsLower(query)
	type hit struct {
		node        memory.Node
		entity      KGEntity
		tier, count int
	}
	var hits []hit
	for _, n := range nodes {
		e := KGEntity{Name: KGEntityName(n.NaturalKey), EntityType: kgEntityType(n), Observations: []string{}}
		if o := obs[n.EntityKey()]; o != nil {
			e.Observations, e.Held = o.texts, o.held
		}
		h := hit{node: n, entity: e}
		name := jsLower(e.Name)
		switch {
		case name == q:
			h.tier = 4
		case strings.Contains(name, q):
			h.tier = 3
		case strings.Contains(jsLower(e.EntityType), q):
			h.tier = 2
		}
		for _, o := range e.Observations {
			if strings.Contains(jsLower(o), q) {
				h.count++
			}
		}
		if h.tier == 0 && h.count > 0 {
			h.tier = 1
		}
		if h.tier > 0 {
			hits = append(hits, h)
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].tier != hits[j].tier {
			return hits[i].tier > hits[j].tier
		}
		return hits[i].count > hits[j].count
	})
	g := KGGraph{Entities: make([]KGEntity, 0, len(hits))}
	if limit > 0 && len(hits) > limit {
		g.Omitted, hits = len(hits)-limit, hits[:limit]
	}
	matched := make([]memory.Node, 0, len(hits))
	for _, h := range hits {
		g.Entities = append(g.Entities, h.entity)
		matched = append(matched, h.node)
	}
	if g.Relations, err = s.kgRelationsOf(ctx, p, matched); err != nil {
		return KGGraph{}, storeErr(err, "relations")
	}
	return g, nil
}

// KGOpenNodes returns the named entities that exist, in the reference's
// order, with the relations that touch them.
func (s *Service) KGOpenNodes(ctx context.Context, p memory.Principal, names []string) (KGGraph, error) {
	if len(names) > KGMaxNames {
		return KGGraph{}, fault.Field("names", "at most "+strconv.Itoa(KGMaxNames)+" names")
	}
	var nodes []memory.Node
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] || checkKGName(name, "names") != nil {
			continue
		}
		seen[name] = true
		n, err := s.store.GetNodeByKey(ctx, p.Workspace, KGLabel, KGNodeKey(name))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err == nil {
			n, err = withGrants(ctx, s.store, p.Workspace, n)
		}
		if err != nil {
			return KGGraph{}, storeErr(err, "node")
		}
		if kgLive(n) && !kgIsPlaceholder(n) && nodeVisible(p, n) {
			nodes = append(nodes, n)
		}
	}
	slices.SortStableFunc(nodes, func(a, b memory.Node) int { return strings.Compare(kgOrder(a), kgOrder(b)) })
	return s.kgView(ctx, p, nodes, nil)
}
