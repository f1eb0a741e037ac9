package core

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
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

// erasure counts committed erasures and the ones the database files were
// scrubbed after, so concurrent forgets share one scrub and a failed
// scrub is retried by the next caller.
type erasure struct {
	committed atomic.Uint64
	scrubbed  atomic.Uint64
	turn      chan struct{} // one scrub at a time
}

func newErasure() *erasure { return &erasure{turn: make(chan struct{}, 1)} }

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
	if msgs, err = tx.DeleteMessages(ctx, ws, "", []string{id}); err != nil {
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
	n, err := tx.GetNodeByKey(ctx, ws, label, key)
	if errors.Is(err, store.ErrNotFound) {
		return graphEffects{}, nil
	} else if err != nil {
		return graphEffects{}, err
	}
	if !derivedProperties(n.Properties, key) {
		return graphEffects{}, nil
	}
	if ids, err := tx.MentioningRecords(ctx, ws, entity, 1); err != nil || len(ids) > 0 {
		return graphEffects{}, err
	}
	return eraseNode(ctx, tx, ws, n, now)
}

// derivedProperties reports whether props are empty or exactly the name
// linkEntities derives from key.
func derivedProperties(props json.RawMessage, key string) bool {
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
		return m["name"] == strings.ReplaceAll(key, "_", " ")
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
// they derived from the records and nodes. The caller then scrubs.
func (s *Service) erased(ws string, recs []memory.Record, fx graphEffects) {
	s.erasure.committed.Add(1)
	s.publish(ws, recs...)
	s.publishGraph(ws, fx)
}

// scrub invalidates derived files and makes the database files hold
// nothing of erasures committed before the call. It returns at once when
// a scrub that started after the last erasure (this process's) has
// finished, so concurrent forgets share one; after a failure the next
// call scrubs again.
func (s *Service) scrub(ctx context.Context) error {
	want := s.erasure.committed.Load()
	if s.erasure.scrubbed.Load() >= want {
		return nil
	}
	// The erasure is committed; what remains is making it physical, even
	// if the caller goes away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	select {
	case s.erasure.turn <- struct{}{}:
	case <-ctx.Done():
		return fault.Wrap(fault.Unavailable, ctx.Err(), "forgotten, but the database files could not be scrubbed yet; retry")
	}
	defer func() { <-s.erasure.turn }()
	if s.erasure.scrubbed.Load() >= want {
		return nil
	}
	upTo := s.erasure.committed.Load()
	if s.onErased != nil {
		s.onErased()
	}
	if err := s.store.Scrub(ctx); err != nil {
		return fault.Wrap(fault.Unavailable, err, "forgotten, but the database files could not be scrubbed yet; retry")
	}
	s.erasure.scrubbed.Store(upTo)
	return nil
}
