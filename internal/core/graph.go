package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// graphEffects are the graph changes of a committed transaction, for the
// in-memory graph index.
type graphEffects struct {
	nodes        []memory.Node
	edges        []memory.Edge
	deletedEdges []string
}

func (g *graphEffects) add(o graphEffects) {
	g.nodes = append(g.nodes, o.nodes...)
	g.edges = append(g.edges, o.edges...)
	g.deletedEdges = append(g.deletedEdges, o.deletedEdges...)
}

// nodeOrigin is the provenance and status of the nodes a principal's
// writes create.
func (s *Service) nodeOrigin(p memory.Principal, origin string) (memory.NodeProvenance, memory.NodeStatus) {
	switch {
	case origin == OriginExtraction:
		return memory.ProvExtracted, s.policy.Graph.ExtractedStatus
	case p.Kind == memory.KindOperator, p.Kind == memory.KindSystem:
		return memory.ProvOperator, memory.NodeActive
	}
	return memory.ProvProposed, s.policy.Graph.ProposedStatus
}

// linkEntities makes sure a node exists for every entity a stored record
// names: a record links to the nodes of its entities (SPEC §8, its
// MENTIONS edges; the record_entities index holds the links). Quarantined
// records create nothing, since their entities may be what the PII screen
// flagged. Nodes it finds are added to known (when not nil).
func (s *Service) linkEntities(ctx context.Context, tx store.Tx, p memory.Principal, r memory.Record, now time.Time, known map[string]memory.Node) error {
	if r.Status == memory.Quarantined || r.Status == memory.Forgotten {
		return nil
	}
	prov, status := s.nodeOrigin(p, r.Gate.Origin)
	for _, e := range r.Entities {
		label, key, ok := strings.Cut(e, ":")
		if !ok {
			continue
		}
		if _, ok := known[e]; ok {
			continue // the caller holds it, current: it exists
		}
		props, _ := json.Marshal(map[string]string{"name": derivedName(label, key)})
		// No direct grant: the node is seen through the records that
		// name it. A node this write creates is created with r's grant,
		// as regrant would add it next (one statement, not an insert and
		// an update); a node that exists gets it from regrant.
		grants := []memory.Grant{}
		if g, ok := recordGrant(r); ok {
			grants, _ = addGrant(grants, g)
		}
		n := memory.Node{ID: memory.NewID(), Label: label, NaturalKey: key, Properties: props, Provenance: prov, Status: status,
			Grants: grants, CreatedAt: now, UpdatedAt: now}
		// EnsureNode, not a lookup then an insert: concurrent writes that
		// introduce the same entity must all succeed (on PostgreSQL the
		// second insert would fail on the key and abort the write).
		n, _, err := tx.EnsureNode(ctx, p.Workspace, n)
		if err != nil {
			return err
		}
		if known != nil {
			known[e] = n
		}
	}
	return nil
}

// derivedName is the name linkEntities gives the node of an entity: its
// key with spaces for '_', less the user a conversation's name node
// belongs to ("name:dana/Connected_LGBTQ_Activists" is "Connected LGBTQ
// Activists"; turnNames).
func derivedName(label, key string) string {
	if label == NameLabel {
		key = key[strings.LastIndexByte(key, '/')+1:]
	}
	return strings.ReplaceAll(key, "_", " ")
}

// ForgetReport counts what forget_subject erased.
type ForgetReport struct {
	Subject  string `json:"subject"`
	Records  int    `json:"records"`
	Messages int    `json:"messages"`
	Nodes    int    `json:"nodes"`
	Edges    int    `json:"edges"`
}

// subjectScope is the scope key a subject's own records carry: a user's
// records are scoped to the user, and so on.
func subjectScope(label, key string) memory.Scope {
	switch label {
	case "user":
		return memory.Scope{UserID: key}
	case "agent":
		return memory.Scope{AgentID: key}
	case "project":
		return memory.Scope{ProjectID: key}
	case "session":
		return memory.Scope{SessionID: key}
	}
	return memory.Scope{}
}

// everyStatus is every record status but forgotten (already erased).
var everyStatus = []memory.Status{memory.Provisional, memory.Active, memory.Quarantined, memory.Archived, memory.Superseded}

// subjectRecords lists the heads that mention the subject or are scoped
// to it.
func subjectRecords(ctx context.Context, r store.Reader, ws, subject string, scope memory.Scope) ([]memory.Record, error) {
	seen := map[string]bool{}
	var out []memory.Record
	queries := []store.RecordQuery{{Entity: subject}}
	if scope != (memory.Scope{}) {
		queries = append(queries, store.RecordQuery{Scope: scope})
	}
	for _, q := range queries {
		q.Statuses, q.Access, q.IncludeInvalidated, q.Limit = everyStatus, store.AccessFilter{Levels: memory.AccessLevels}, true, store.MaxLimit
		for {
			page, err := r.ListRecords(ctx, ws, q)
			if err != nil {
				return nil, err
			}
			for _, rec := range page {
				if !seen[rec.ID] {
					seen[rec.ID] = true
					out = append(out, rec)
				}
			}
			if len(page) < q.Limit {
				break
			}
			q.Before = page[len(page)-1].ID
		}
	}
	return out, nil
}

// ForgetSubject is the GDPR operation (SPEC §8): it erases the content of
// every record that mentions the subject ("label:key") or is scoped to it
// — every version, its vectors and cached embeddings, its index entries —
// the subject's conversation messages, and the subject's node properties
// and edges. Tombstones stay (records keep id, type, timestamps and a
// hash; the node keeps its id, under the key "forgotten-<id>", archived). One audit
// entry records counts and a hash of the subject, never its name. Nodes
// only the erased records named go too (erase.go), and the database files
// are scrubbed afterwards, so the text survives nowhere.
func (s *Service) ForgetSubject(ctx context.Context, by memory.Principal, subject string) (ForgetReport, error) {
	return s.forgetSubject(ctx, by, subject, false)
}

// PreviewForgetSubject reports what ForgetSubject would erase, counted
// by kind, and erases nothing: it runs the very same erasure in a
// transaction it then rolls back, so the counts cannot drift from what
// the real erasure does. Same access check (operators only); nothing is
// audited, since nothing changed.
func (s *Service) PreviewForgetSubject(ctx context.Context, by memory.Principal, subject string) (ForgetReport, error) {
	return s.forgetSubject(ctx, by, subject, true)
}

// errPreview rolls back a preview's transaction.
var errPreview = errors.New("forget preview: roll back")

func (s *Service) forgetSubject(ctx context.Context, by memory.Principal, subject string, preview bool) (ForgetReport, error) {
	if err := requireOperator(by); err != nil {
		return ForgetReport{}, err
	}
	if !gate.ValidEntityKey(subject) {
		return ForgetReport{}, fault.Field("subject", "must be label:key, e.g. user:alice or person:alice_smith")
	}
	label, key, _ := strings.Cut(subject, ":")
	sum := sha256.Sum256([]byte(subject))
	hash := hex.EncodeToString(sum[:])
	now := s.clock()
	rep := ForgetReport{Subject: subject}
	var fx graphEffects // counts the edges the erasure deletes
	err := s.tx(ctx, "subject", func(tx store.Tx) error {
		rep, fx = ForgetReport{Subject: subject}, graphEffects{}
		recs, err := subjectRecords(ctx, tx, by.Workspace, subject, subjectScope(label, key))
		if err != nil {
			return err
		}
		ids := make([]string, 0, len(recs))
		for _, r := range recs {
			if err := closeApprovals(ctx, tx, by, r.ID, memory.ApprovalRejected, now); err != nil {
				return err
			}
			_, rfx, msgs, nodes, err := s.purgeIn(ctx, tx, by.Workspace, r.ID, subject, now)
			if err != nil {
				return err
			}
			ids = append(ids, r.ID)
			fx.add(rfx)
			rep.Messages += msgs
			rep.Nodes += nodes
		}
		rep.Records = len(ids)
		// Reasons operators gave for rejecting items that named the
		// subject: their records are tombstones that name nothing now.
		reasons, err := tx.EraseApprovalReasons(ctx, by.Workspace, store.ReasonErasure{SubjectSHA256: hash})
		if err != nil {
			return err
		}
		if label == "user" {
			n, err := tx.DeleteMessages(ctx, by.Workspace, key, nil)
			if err != nil {
				return err
			}
			rep.Messages += n
		}
		n, err := tx.GetNode(ctx, store.NodeFind{Workspace: by.Workspace, Label: label, Key: key})
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			nfx, err := eraseNode(ctx, tx, by.Workspace, n, now)
			if err != nil {
				return err
			}
			fx.add(nfx)
			rep.Nodes++
		}
		rep.Edges = len(fx.deletedEdges)
		if preview {
			return errPreview
		}
		// The event names no subject, not even its hash (a guessable one):
		// counts only.
		err = emit(ctx, tx, by.Workspace, events.ForgetCompleted, now, events.Subject{
			"scope": "subject", "records": rep.Records, "messages": rep.Messages, "nodes": rep.Nodes, "edges": rep.Edges})
		if err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, by.Workspace, by, "", "subject.forget", now, map[string]any{
			"subject_sha256": hash, "records": rep.Records, "messages": rep.Messages, "nodes": rep.Nodes, "edges": rep.Edges, "reasons": reasons})
		return err
	})
	if preview && errors.Is(err, errPreview) {
		return rep, nil
	}
	if err != nil {
		return ForgetReport{}, err
	}
	s.erased(ctx)
	return rep, s.scrub(ctx)
}
