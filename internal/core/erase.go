package core

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Erasure has one owner, this file. Every path that erases a record's
// content — Forget (REST, MCP memory_forget, the CLI, the gateway's
// delete), ForgetSubject, Reject and approval expiry — does two things
// through it:
//
//   - inside its transaction, purgeIn: the record's every version,
//     vectors, cached embeddings and entity links (store.PurgeRecord), the
//     gateway messages it was made from, and the entity nodes only it
//     named (releaseNode);
//   - after the commit, erased: the in-memory search and graph indexes
//     drop it, derived files are invalidated (Options.OnErased: the
//     search index snapshot) and the database files are scrubbed
//     (store.Scrub), so the text survives nowhere (docs/erasure.md).

// erasure tracks committed erasures and the scrubs that make them
// physical. One scrub runs at a time, in a goroutine of its own, so a
// caller that stops waiting (its wait ran out, its client left) never
// cancels it halfway: on PostgreSQL it is a table rewrite that may take
// longer than a request should wait. Concurrent forgets share it.
type erasure struct {
	wait time.Duration // how long a caller waits for the scrub; < 0: until it ends

	mu        sync.Mutex
	committed uint64        // erasures committed by this process
	scrubbed  uint64        // erasures up to this one are scrubbed
	running   chan struct{} // closed when the running scrub ends; nil if none
	upTo      uint64        // the erasures the running or last scrub covers
	err       error         // the last scrub's failure
}

func newErasure(wait time.Duration) *erasure {
	if wait == 0 {
		wait = 30 * time.Second
	}
	return &erasure{wait: wait}
}

// SetScrubWait changes Options.ScrubWait; call it before serving.
func (s *Service) SetScrubWait(d time.Duration) {
	s.erasure.mu.Lock()
	s.erasure.wait = newErasure(d).wait
	s.erasure.mu.Unlock()
}

func (e *erasure) commit() {
	e.mu.Lock()
	e.committed++
	e.mu.Unlock()
}

// purgeIn erases record id inside tx (see above) and returns its tombstone,
// the graph changes and how many messages and nodes went with it. skip
// names an entity whose node the caller erases itself (the subject of
// ForgetSubject).
func (s *Service) purgeIn(ctx context.Context, tx store.Tx, ws, id, skip string, now time.Time) (tomb memory.Record, fx graphEffects, msgs, nodes int, err error) {
	versions, err := tx.ListVersions(ctx, ws, id)
	if err != nil {
		return tomb, fx, 0, 0, err
	}
	var entities []string
	for _, v := range versions {
		for _, e := range v.Entities {
			if e != skip && !slices.Contains(entities, e) {
				entities = append(entities, e)
			}
		}
	}
	if err := tx.PurgeRecord(ctx, ws, id, now); err != nil {
		return tomb, fx, 0, 0, err
	}
	// An operator's reason for rejecting one of the record's items may
	// quote it (memory.Approval.DecisionReason).
	if _, err := tx.EraseApprovalReasons(ctx, ws, store.ReasonErasure{RecordID: id}); err != nil {
		return tomb, fx, 0, 0, err
	}
	if msgs, err = tx.DeleteMessages(ctx, ws, "", []string{id}); err != nil {
		return tomb, fx, 0, 0, err
	}
	// The nodes the record named lose its grant (docs/graph.md).
	if fx.nodes, err = regrantEntities(ctx, tx, ws, entities); err != nil {
		return tomb, fx, 0, 0, err
	}
	for _, e := range entities {
		nfx, err := releaseNode(ctx, tx, ws, e, now)
		if err != nil {
			return tomb, fx, 0, 0, err
		}
		if len(nfx.nodes) > 0 {
			nodes++
		}
		fx.add(nfx)
	}
	tomb, err = tx.GetRecord(ctx, ws, id)
	return tomb, fx, msgs, nodes, err
}

// releaseNode erases the node of entity when no record names it any more
// and it holds nothing but what a record's entity gave it (linkEntities:
// its key and the name derived from it). A node someone gave properties
// of its own through the graph API is graph data, not the record's, and
// stays; forget_subject erases it.
func releaseNode(ctx context.Context, tx store.Tx, ws, entity string, now time.Time) (graphEffects, error) {
	label, key, ok := strings.Cut(entity, ":")
	if !ok {
		return graphEffects{}, nil
	}
	n, err := tx.GetNode(ctx, store.NodeFind{Workspace: ws, Label: label, Key: key})
	if errors.Is(err, store.ErrNotFound) {
		return graphEffects{}, nil
	} else if err != nil {
		return graphEffects{}, err
	}
	if !derivedProperties(n.Properties, label, key) {
		return graphEffects{}, nil
	}
	if ids, err := tx.MentioningRecords(ctx, ws, entity, 1); err != nil || len(ids) > 0 {
		return graphEffects{}, err
	}
	return eraseNode(ctx, tx, ws, n, now)
}

// derivedProperties reports whether props are empty or exactly the name
// linkEntities derives from label and key.
func derivedProperties(props json.RawMessage, label, key string) bool {
	var m map[string]any
	if len(props) == 0 {
		return true
	}
	if err := json.Unmarshal(props, &m); err != nil {
		return false
	}
	switch len(m) {
	case 0:
		return true
	case 1:
		return m["name"] == derivedName(label, key)
	}
	return false
}

// eraseNode deletes every edge of n and turns n into a tombstone: it
// keeps its id, under the key "forgotten-<id>", archived, with no
// properties.
func eraseNode(ctx context.Context, tx store.Tx, ws string, n memory.Node, now time.Time) (graphEffects, error) {
	var fx graphEffects
	for {
		es, err := tx.ListEdges(ctx, ws, store.EdgeQuery{Node: n.ID, IncludeInvalidated: true, Limit: store.MaxLimit})
		if err != nil {
			return fx, err
		}
		for _, e := range es {
			if err := tx.DeleteEdge(ctx, ws, e.ID); err != nil {
				return fx, err
			}
			fx.deletedEdges = append(fx.deletedEdges, e.ID)
		}
		if len(es) < store.MaxLimit {
			break
		}
	}
	n.NaturalKey = "forgotten-" + n.ID
	n.Properties = json.RawMessage(`{}`)
	n.Status, n.UpdatedAt = memory.NodeArchived, now
	if err := tx.UpdateNode(ctx, ws, n); err != nil {
		return fx, err
	}
	fx.nodes = append(fx.nodes, n)
	return fx, nil
}

// erased follows a committed erasure: the in-memory indexes drop what
// they derived from the records and nodes, read from the change logs.
// The caller then scrubs.
func (s *Service) erased(ctx context.Context) {
	s.erasure.commit()
	s.logMoved(ctx)
}

// scrub waits until derived files are invalidated and the database files
// hold nothing of the erasures this process committed before the call. It
// returns at once when they are; it joins a running scrub that covers
// them, or starts one. A failed scrub is retried by the next call. If the
// wait runs out, the scrub goes on and the answer is unavailable: a retry
// waits for it.
func (s *Service) scrub(ctx context.Context) error {
	e := s.erasure
	e.mu.Lock()
	want, wait := e.committed, e.wait
	e.mu.Unlock()
	var timeout <-chan time.Time
	if wait >= 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		e.mu.Lock()
		if e.scrubbed >= want {
			e.mu.Unlock()
			return nil
		}
		if e.running == nil {
			e.running, e.upTo = make(chan struct{}), e.committed
			go s.runScrub(e.running, e.upTo)
		}
		done, upTo := e.running, e.upTo
		e.mu.Unlock()
		select {
		case <-done:
			e.mu.Lock()
			ok, err := e.scrubbed >= want, e.err
			e.mu.Unlock()
			if ok {
				return nil
			}
			if upTo >= want {
				return fault.Wrap(fault.Unavailable, err, "forgotten, but the database files could not be scrubbed yet; retry")
			}
			// That scrub began before this erasure committed: start the next.
		case <-timeout:
			return &fault.Error{Code: fault.Unavailable, RetryAfter: 5 * time.Second,
				Message: "forgotten; the database files are still being scrubbed (retry to wait for it)"}
		case <-ctx.Done():
			return storeErr(ctx.Err(), "record")
		}
	}
}

// runScrub invalidates derived files and scrubs the database files for
// the erasures up to upTo, then closes done.
func (s *Service) runScrub(done chan struct{}, upTo uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if s.onErased != nil {
		s.onErased()
	}
	err := s.store.Scrub(ctx)
	if err != nil {
		s.log.Error("scrubbing the database files after an erasure failed; the next forget retries", "err", err)
	}
	e := s.erasure
	e.mu.Lock()
	e.err = err
	if err == nil && upTo > e.scrubbed {
		e.scrubbed = upTo
	}
	e.running = nil
	e.mu.Unlock()
	close(done)
}
