package core

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// ChunkCategory is the record category of knowledge chunks (internal/knowledge).
const ChunkCategory = "chunk"

// ChunkChange is one change to a chunk of an ingested document: a new
// chunk (ID empty), the next version of a chunk (ID and Version, the
// version it replaces), or its retirement (Retire: a last version that is
// invalidated, so it leaves search and keeps its history).
type ChunkChange struct {
	ID       string
	Version  int
	Content  string
	Metadata json.RawMessage
	Retire   bool
}

// ResourceChanges are the chunk changes of one document, applied together.
type ResourceChanges struct {
	// Lock names the document; it is locked for the transaction, so two
	// ingestions of one document serialise.
	Lock    string
	Scope   memory.Scope
	Access  memory.Access
	Changes []ChunkChange
}

// ChunkOutcome is the gate's answer for one change, in order.
type ChunkOutcome struct {
	Record     memory.Record
	Decision   string
	Reason     string
	ApprovalID string
	PIIKinds   []string
}

// ApplyResource applies the chunk changes of one document in one
// transaction: each new chunk is a gated write of a resource record
// (schema, trust, PII and secret screen, approvals, audit), each changed
// chunk a gated new version, each retired chunk an invalidated version.
// A change the gate refuses refuses the whole document, which is then
// audited as rejected and leaves nothing written. Agents of trust
// restricted or read_only may add documents (as the gate allows) but not
// change or retire chunks, as they may not patch records.
func (s *Service) ApplyResource(ctx context.Context, p memory.Principal, req ResourceChanges) ([]ChunkOutcome, error) {
	if err := s.rateLimit(p); err != nil {
		return nil, err
	}
	for _, c := range req.Changes {
		if c.ID != "" && p.Kind == memory.KindAgent && (p.Trust == memory.Restricted || p.Trust == memory.ReadOnly) {
			return nil, fault.New(fault.PermissionDenied, "agents of trust "+string(p.Trust)+" may not change an ingested document; an operator or a trusted agent may").
				With("reason", gate.ReasonReadOnly)
		}
	}
	now := s.clock()
	var (
		outs    []ChunkOutcome
		refused error
		failed  int
	)
	err := s.tx(ctx, "resource", func(tx store.Tx) error {
		outs, refused = nil, nil
		if req.Lock != "" {
			if err := tx.LockKey(ctx, "resource\x00"+p.Workspace+"\x00"+req.Lock); err != nil {
				return err
			}
		}
		for i, c := range req.Changes {
			var (
				res WriteResult
				err error
			)
			if c.ID == "" {
				res, err = s.writeIn(ctx, tx, p, WriteRequest{Type: memory.Resource, Category: ChunkCategory, Content: c.Content,
					Metadata: c.Metadata, Source: &SourceInput{Kind: memory.Told}, Scope: req.Scope, Access: req.Access, Addressed: true}, now)
			} else {
				v := c.Version
				preq := PatchRequest{ExpectedVersion: &v, Metadata: c.Metadata, Invalidate: c.Retire}
				if !c.Retire {
					content := c.Content
					preq.Content = &content
				}
				res, err = s.patchTx(ctx, tx, p, c.ID, preq, memory.NewID(), now, false)
			}
			if err != nil {
				if isRefusal(err) {
					fe := *fault.As(err)
					fe.Message = "chunk " + strconv.Itoa(i+1) + ": " + fe.Message
					refused, failed = &fe, i
				}
				return err
			}
			outs = append(outs, ChunkOutcome{Record: res.Record, Decision: res.Decision, Reason: res.Reason, ApprovalID: res.ApprovalID, PIIKinds: res.PIIKinds})
		}
		return nil
	})
	if err != nil {
		if refused != nil {
			c := req.Changes[failed]
			s.auditRejection(ctx, p, memory.NewID(), "record.write", memory.Record{ID: c.ID, Type: memory.Resource,
				ContentSHA256: memory.SHA256Hex(c.Content)}, refused, now)
			return nil, refused
		}
		return nil, err
	}
	for i, o := range outs {
		if req.Changes[i].ID != "" { // writeIn counted the new chunks
			s.countDecision(o.Decision, o.Reason)
		}
	}
	s.logMoved(ctx)
	return outs, nil
}

// CheckResourceWrite runs the gate's schema and authorization steps for a
// chunk p would write in scope at access, without writing: an ingestion
// that would write nothing (an unchanged document) still answers a
// principal that may not write as the gate would.
func (s *Service) CheckResourceWrite(p memory.Principal, sc memory.Scope, access memory.Access) error {
	req := WriteRequest{Type: memory.Resource, Category: ChunkCategory, Content: "-", Scope: sc, Access: access,
		Source: &SourceInput{Kind: memory.Told}, Addressed: true}
	return s.schemaAndAuth(p, s.draft(p, req, s.clock()), req)
}
