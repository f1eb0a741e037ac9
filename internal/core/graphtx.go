package core

// The seam for capability packages (internal/kgcompat) that write graph
// nodes, edges and records in one governed transaction. Such a package
// decides what to write; core keeps every rule of how: the rate limit,
// the gate, node provenance and grants, ownership, the audit entries
// (the same events and payloads as core's own graph and record writes),
// the refusal audit and the index catch-up after commit. Nothing here
// lets a caller write past those rules: GraphTx offers reads of the
// transaction and gated, audited writes only.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// GraphTx is one governed graph transaction, handed to the callback of
// InGraphTx. It is valid only inside that callback.
type GraphTx struct {
	s       *Service
	tx      store.Tx
	p       memory.Principal
	now     time.Time
	refused *memory.Record
	written txWrites // the records this attempt wrote, for the hand-off (follow.go)
}

// InGraphTx runs fn in one transaction as p, so a call either takes effect
// whole or not at all: the rate limit first; a version conflict (a race
// with a concurrent transaction, since such callers take no expected
// versions, see Write) runs fn again, up to three more times. A write the
// gate refuses inside fn (WriteRecord, or one the caller refuses with
// Refuse) aborts the transaction, and the refusal is then audited on its
// own, as a refused Write is, with the refused record's type and content
// hash. After commit the change feeds learn of the writes (logMoved).
func (s *Service) InGraphTx(ctx context.Context, p memory.Principal, fn func(g *GraphTx) error) error {
	if err := s.rateLimit(p); err != nil {
		return err
	}
	g := &GraphTx{s: s, p: p, now: s.clock()}
	var err error
	for attempt := 0; ; attempt++ {
		err = s.tx(ctx, "graph", func(tx store.Tx) error {
			g.tx, g.refused, g.written = tx, nil, g.written[:0]
			return fn(g)
		})
		if attempt == 3 || !errors.Is(err, store.ErrVersionConflict) {
			break
		}
	}
	g.tx = nil
	if err != nil {
		if g.refused != nil && isRefusal(err) {
			s.auditRejection(ctx, p, memory.NewID(), "record.write", *g.refused, err, g.now)
		}
		return err
	}
	s.handed.put(g.written)
	s.logMoved(ctx)
	return nil
}

// Now is the time of the transaction: every write in it carries it.
func (g *GraphTx) Now() time.Time { return g.now }

// Reader reads inside the transaction (its own writes included).
func (g *GraphTx) Reader() store.Reader { return g.tx }

// FindNode returns the node of label and key with its grants, whatever
// its status and whoever may see it (check NodeVisibleTo), or found false.
func (g *GraphTx) FindNode(ctx context.Context, label, key string) (n memory.Node, found bool, err error) {
	n, err = g.tx.GetNode(ctx, store.NodeFind{Workspace: g.p.Workspace, Label: label, Key: key})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return memory.Node{}, false, nil
	case err != nil:
		return memory.Node{}, false, err
	}
	n, err = withGrants(ctx, g.tx, g.p.Workspace, n)
	return n, err == nil, err
}

// ErrNodeHidden is UpsertNode's answer when the node exists but the
// principal may not see it: the caller must not learn more of it.
var ErrNodeHidden = errors.New("graph: the node exists and the principal may not see it")

// NodeUpsert is a node UpsertNode writes.
type NodeUpsert struct {
	Label, Key string
	Properties json.RawMessage
	// Prior is what FindNode found for Label and Key in this
	// transaction; Exists false when it found nothing.
	Prior  memory.Node
	Exists bool
}

// UpsertNode creates the node, or updates the one found (reviving an
// archived one) with the new properties, as p: provenance and status as
// p's graph writes get them (a trusted agent's node is active at once),
// public with p as writer and the grants of the records that name it.
// A concurrent create of the same node is not a conflict: the node it
// made is updated. Audited as graph.node.upsert.
func (g *GraphTx) UpsertNode(ctx context.Context, u NodeUpsert) (memory.Node, error) {
	p, ws := g.p, g.p.Workspace
	prov, status := g.s.nodeOrigin(p, "")
	if p.Kind == memory.KindAgent && p.Trust == memory.Trusted {
		status = memory.NodeActive
	}
	n, created := u.Prior, false
	var err error
	if !u.Exists {
		ref := memory.Node{Label: u.Label, NaturalKey: u.Key}
		var gs []memory.Grant
		if gs, err = recordGrants(ctx, g.tx, ws, ref.EntityKey()); err != nil {
			return memory.Node{}, err
		}
		n, created, err = g.tx.EnsureNode(ctx, ws, memory.Node{ID: memory.NewID(), Label: u.Label, NaturalKey: u.Key,
			Properties: u.Properties, Provenance: prov, Status: status, Access: memory.Public, Writer: ownerKey(p), Grants: gs,
			CreatedAt: g.now, UpdatedAt: g.now})
		if err == nil && !created {
			n, err = withGrants(ctx, g.tx, ws, n)
		}
	}
	switch {
	case created:
	case err != nil:
		return memory.Node{}, err
	default:
		if !nodeVisible(p, n) {
			return memory.Node{}, ErrNodeHidden
		}
		n.Properties, n.Status, n.UpdatedAt = u.Properties, status, g.now
		err = g.tx.UpdateNode(ctx, ws, n)
	}
	if err != nil {
		return memory.Node{}, err
	}
	_, err = appendAudit(ctx, g.tx, ws, p, "", "graph.node.upsert", g.now, map[string]any{
		"node_id": n.ID, "label": n.Label, "created": created, "status": string(n.Status),
		"properties_sha256": memory.SHA256Hex(string(n.Properties))})
	return n, err
}

// ArchiveNode archives n, audited as graph.node.archive.
func (g *GraphTx) ArchiveNode(ctx context.Context, n memory.Node) error {
	n.Status, n.UpdatedAt = memory.NodeArchived, g.now
	if err := g.tx.UpdateNode(ctx, g.p.Workspace, n); err != nil {
		return err
	}
	_, err := appendAudit(ctx, g.tx, g.p.Workspace, g.p, "", "graph.node.archive", g.now, map[string]any{"node_id": n.ID, "label": n.Label})
	return err
}

// EnsureEdge creates the live edge from -> to of relation with props,
// public with p as writer, unless one exists: a concurrent create of the
// same edge is not a conflict. created false returns the existing edge,
// unaudited and unchecked: the caller checks EdgeVisibleTo and changes it
// with UpdateEdge. A created edge is audited as graph.edge.upsert.
func (g *GraphTx) EnsureEdge(ctx context.Context, from, to memory.Node, relation string, props json.RawMessage) (memory.Edge, bool, error) {
	e := memory.Edge{ID: memory.NewID(), From: from.ID, To: to.ID, Relation: relation, Weight: 1, ObservedAt: g.now,
		CreatedAt: g.now, UpdatedAt: g.now, Access: memory.Public, Writer: ownerKey(g.p), Properties: props}
	e, created, err := g.tx.EnsureEdge(ctx, g.p.Workspace, e)
	if err != nil || !created {
		return e, false, err
	}
	return e, true, g.auditEdge(ctx, e, true)
}

// UpdateEdge stores e, an edge of this workspace the caller read and
// changed (its times included), audited as graph.edge.upsert.
func (g *GraphTx) UpdateEdge(ctx context.Context, e memory.Edge) error {
	if err := g.tx.UpdateEdge(ctx, g.p.Workspace, e); err != nil {
		return err
	}
	return g.auditEdge(ctx, e, false)
}

func (g *GraphTx) auditEdge(ctx context.Context, e memory.Edge, created bool) error {
	_, err := appendAudit(ctx, g.tx, g.p.Workspace, g.p, "", "graph.edge.upsert", g.now, map[string]any{
		"edge_id": e.ID, "from": e.From, "to": e.To, "relation": e.Relation, "created": created})
	return err
}

// InvalidateEdge ends a live edge, audited as graph.edge.invalidate.
func (g *GraphTx) InvalidateEdge(ctx context.Context, e memory.Edge) error {
	now := g.now
	e.InvalidatedAt, e.UpdatedAt = &now, now
	if err := g.tx.UpdateEdge(ctx, g.p.Workspace, e); err != nil {
		return err
	}
	_, err := appendAudit(ctx, g.tx, g.p.Workspace, g.p, "", "graph.edge.invalidate", now, map[string]any{"edge_id": e.ID, "relation": e.Relation})
	return err
}

// RecordOptions are what a GraphTx record write knows beyond its request.
type RecordOptions struct {
	// ExactByCaller: the caller has decided exactly that the record is
	// new, so the gate does not deduplicate it (nor look for similar
	// records).
	ExactByCaller bool
	// Nodes are entity nodes (by record entity) the caller read or wrote
	// in this transaction, which linking does not read again.
	Nodes map[string]memory.Node
}

// WriteRecord writes a record through the gate inside the transaction, as
// Write does (decision, audit, grants). A refusal is noted for
// InGraphTx's refusal audit and returned.
func (g *GraphTx) WriteRecord(ctx context.Context, req WriteRequest, o RecordOptions) (WriteResult, error) {
	req.exactByCaller, req.nodes = o.ExactByCaller, o.Nodes
	if g.s.index != nil {
		req.written = &g.written
	}
	res, err := g.s.writeIn(ctx, g.tx, g.p, req, g.now)
	if err != nil && isRefusal(err) {
		g.Refuse(req)
	}
	return res, err
}

// Refuse notes that the caller refuses req (a record the gate accepted
// but the caller's own rule does not): when fn then fails with a refusal,
// InGraphTx audits it as a refused write of req.
func (g *GraphTx) Refuse(req WriteRequest) {
	g.refused = &memory.Record{Type: req.Type, ContentSHA256: memory.SHA256Hex(req.Content)}
}

// InvalidateRecord ends a live record head: a new version with
// invalidated_at set, audited as record.invalidate with reason. Open
// approval items of the record are closed, since there is nothing left
// to approve. The caller checks CanChange first.
func (g *GraphTx) InvalidateRecord(ctx context.Context, head memory.Record, reason string) error {
	p, ws := g.p, g.p.Workspace
	decisionID := memory.NewID()
	next := head
	next.Version++
	next.UpdatedAt = g.now
	now := g.now
	next.InvalidatedAt = &now
	next.ModifiedBy = p.ID
	next.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionAccepted, Origin: memory.OriginExternal}
	if err := closeApprovals(ctx, g.tx, p, head.ID, memory.ApprovalRejected, g.now); err != nil {
		return err
	}
	if err := g.tx.UpdateRecord(ctx, ws, next, head.Version); err != nil {
		return err
	}
	if err := regrant(ctx, g.tx, ws, &head, next); err != nil {
		return err
	}
	_, err := appendAudit(ctx, g.tx, ws, p, decisionID, "record.invalidate", g.now, map[string]any{
		"decision": memory.DecisionAccepted, "reason": reason, "record_id": head.ID, "version": next.Version})
	return err
}
