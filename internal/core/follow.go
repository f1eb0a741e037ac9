package core

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
)

// The in-memory indexes (search, graph) have one input after they are
// loaded: the store's change logs. A write commits, then calls logMoved,
// which pulls the logs into the indexes before the write returns, so a
// write is searchable (an edge traversable) when its call returns. Other
// processes' writes arrive the same way, by the follow loop (lifecycle.go).
// Nothing pushes committed records or graph changes into an index.
//
// The one shortcut is for the search index's reads: a change log entry
// names a record, and the catch-up reads that record's head. When the
// entry is one this process wrote (the same seq, which the store tells
// on SQLite, store.ChangeSequencer), the record as this process wrote it
// is that head, so the catch-up takes it from the hand-off instead of
// reading it back (issue 14: ~10% of create_entities). Which entries to
// apply, and in what order, is still the log's alone: an entry of
// another process, or a later one for the same record, is read from the
// store as before.

// catchUps runs the catch-ups of one index one at a time and lets a
// writer skip its own when a catch-up that began after the writer's
// commit has finished: under concurrent writes most of them share one
// read of the log.
type catchUps struct {
	started atomic.Uint64 // catch-ups begun
	mu      sync.Mutex
	covered uint64 // number of the last catch-up that finished; guarded by mu
}

// after runs fn unless a run begun after the call was made has already
// finished. A failed run covers nobody.
func (c *catchUps) after(fn func() error) error {
	t := c.started.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.covered > t {
		return nil
	}
	n := c.started.Add(1)
	if err := fn(); err != nil {
		return err
	}
	c.covered = n
	return nil
}

// logMoved follows a commit: the search index and the graph index (if
// loaded) read the change logs up to at least that commit. A failed read
// is logged; the follow loop applies the change later. It runs even when
// the request's context has ended, since the write has been committed.
func (s *Service) logMoved(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if s.index != nil {
		err := s.indexCatchUps.after(func() error {
			_, err := s.index.CatchUp(ctx, &handedSource{Source: s.store, h: &s.handed})
			return err
		})
		if err != nil {
			s.log.Warn("index catch-up after a write failed; the follow loop retries", "err", err)
		}
		s.wakeEmbedder()
	}
	err := s.graphCatchUps.after(func() error {
		_, err := s.CatchUpGraph(ctx)
		return err
	})
	if err != nil {
		s.log.Warn("graph catch-up after a write failed; the follow loop retries", "err", err)
	}
}

// handOff holds records this process committed, each with the seq of
// the change log entry its write made, until a search-index catch-up
// reads that entry (handedSource) or passes it.
type handOff struct {
	mu   sync.Mutex
	recs map[store.Change]handedRecord // by workspace and record id; Seq unset
}

type handedRecord struct {
	seq int64
	r   *memory.Record
}

// maxHanded bounds the hand-off: past it (catch-ups failing, or a bulk
// write outrunning them) it starts again empty, and the catch-up reads
// from the store what it no longer holds.
const maxHanded = 1 << 16

// txWrites collects what one transaction attempt wrote for the
// hand-off; put publishes it once the transaction has committed.
type txWrites []handedWrite

type handedWrite struct {
	ws string
	handedRecord
}

// note records r, just written in tx with the change log entry tx wrote
// last, when the store tells that entry's seq.
func (w *txWrites) note(tx store.Tx, ws string, r memory.Record) {
	if w == nil {
		return
	}
	cs, ok := tx.(store.ChangeSequencer)
	if !ok {
		return
	}
	if seq, stored, ok := cs.LastWrite(); ok && stored.ID == r.ID {
		*w = append(*w, handedWrite{ws: ws, handedRecord: handedRecord{seq: seq, r: &stored}})
	}
}

// put publishes a committed transaction's writes.
func (h *handOff) put(w txWrites) {
	if len(w) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recs == nil || len(h.recs)+len(w) > maxHanded {
		h.recs = make(map[store.Change]handedRecord, len(w))
	}
	for _, x := range w {
		k := store.Change{Workspace: x.ws, RecordID: x.r.ID}
		if old, ok := h.recs[k]; !ok || old.seq < x.seq {
			h.recs[k] = x.handedRecord
		}
	}
}

// take returns the handed record of ws and id if its write made the
// change log entry seq, and forgets it; a handed record older than seq
// is forgotten too (the log has moved past it).
func (h *handOff) take(ws, id string, seq int64) (memory.Record, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := store.Change{Workspace: ws, RecordID: id}
	x, ok := h.recs[k]
	if !ok || x.seq > seq {
		return memory.Record{}, false
	}
	delete(h.recs, k)
	if x.seq < seq {
		return memory.Record{}, false
	}
	return *x.r, true
}

// passed forgets the records whose entries are at or before seq: the
// index has read past them.
func (h *handOff) passed(seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, x := range h.recs {
		if x.seq <= seq {
			delete(h.recs, k)
		}
	}
}

// handedSource is the store as one search-index catch-up reads it: a
// head whose change log entry (the last one of its record in the page
// just listed) this process wrote comes from the hand-off, every other
// read from the store. It serves one catch-up (the engine's catch-ups
// are serialised), so last needs no lock.
type handedSource struct {
	retrieve.Source
	h    *handOff
	last map[store.Change]int64 // the page's last seq by workspace and record id
}

func (s *handedSource) ListChanges(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	chs, err := s.Source.ListChanges(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	s.h.passed(after)
	clear(s.last)
	if s.last == nil {
		s.last = make(map[store.Change]int64, len(chs))
	}
	for _, ch := range chs {
		s.last[store.Change{Workspace: ch.Workspace, RecordID: ch.RecordID}] = ch.Seq
	}
	return chs, nil
}

// handed takes the record of ws and id from the hand-off when its write
// made the page's last entry for it.
func (s *handedSource) handed(ws, id string) (memory.Record, bool) {
	seq, ok := s.last[store.Change{Workspace: ws, RecordID: id}]
	if !ok {
		return memory.Record{}, false
	}
	return s.h.take(ws, id, seq)
}

func (s *handedSource) GetRecord(ctx context.Context, ws, id string) (memory.Record, error) {
	if r, ok := s.handed(ws, id); ok {
		return r, nil
	}
	return s.Source.GetRecord(ctx, ws, id)
}

func (s *handedSource) GetRecords(ctx context.Context, ws string, ids []string) (map[string]memory.Record, error) {
	out := make(map[string]memory.Record, len(ids))
	var rest []string
	for _, id := range ids {
		if r, ok := s.handed(ws, id); ok {
			out[id] = r
			continue
		}
		rest = append(rest, id)
	}
	if len(rest) == 0 {
		return out, nil
	}
	got, err := s.Source.GetRecords(ctx, ws, rest)
	if err != nil {
		return nil, err
	}
	for id, r := range got {
		out[id] = r
	}
	return out, nil
}
