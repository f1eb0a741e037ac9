package core

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/backoff"
	"github.com/memgate/memgate/internal/store"
)

// The embedding job is durable by construction: its work list is the set of
// records without a current vector of the configured model, read from the
// database each round. Writes never wait for it; a crash loses nothing; a
// model change makes every record "missing" again, which is the background
// re-embed, and CountVectors is its progress.

const embedBatch = 64

// embedCursors remembers, per model, the record id the work list was read
// up to (issue 14): reading it from the start on every call walked past
// every record embedded already, so each call cost more as memory grew.
// Records get time-ordered ids, so new ones come after the cursor; a
// record whose content changes keeps its id but is queued by the index
// (embedIndexed); and a sweep (the loop's timer, a CLI run) wraps around
// to the start once for anything else.
type embedCursor struct {
	mu           sync.Mutex
	model, after string
}

// EmbedPending embeds up to limit records that lack a current vector and
// returns how many it stored. Cached embeddings (by content hash and model)
// are reused. It is the job body and can be run once from the CLI: it
// reads the work list from where the last call stopped, wrapping around
// to the start once, so a call that returns fewer than limit has left no
// record without a vector.
func (s *Service) EmbedPending(ctx context.Context, limit int) (int, error) {
	return s.embedPending(ctx, limit, true)
}

// embedPending is EmbedPending; without wrap it reads only after the
// cursor (the records written since), which is what a wake-up after
// writes needs.
func (s *Service) embedPending(ctx context.Context, limit int, wrap bool) (int, error) {
	if s.index == nil || s.index.Embedder() == nil {
		return 0, nil
	}
	model := s.index.Embedder().Model()
	cur := &s.embedCur
	cur.mu.Lock() // one reader of the work list at a time
	defer cur.mu.Unlock()
	if cur.model != model {
		cur.model, cur.after = model, ""
	}
	done := 0
	after := cur.after
	wrapped := after == ""
	for done < limit {
		tasks, err := s.store.ListMissingVectors(ctx, model, after, min(embedBatch, limit-done))
		if err != nil {
			return done, storeErr(err, "vectors")
		}
		if len(tasks) == 0 {
			if wrap && !wrapped {
				after, wrapped = "", true
				continue
			}
			return done, nil
		}
		after = tasks[len(tasks)-1].ID
		cur.after = after
		n, err := s.embedTasks(ctx, tasks)
		done += n
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, nil // nothing embeddable in this batch; avoid spinning
		}
	}
	return done, nil
}

// embedTasks stores and indexes a vector for each task: from the
// embedding cache, else computed. It returns how many it stored.
func (s *Service) embedTasks(ctx context.Context, tasks []store.VectorTask) (int, error) {
	if len(tasks) == 0 {
		return 0, nil
	}
	emb := s.index.Embedder()
	model := emb.Model()
	hashes := make([]string, len(tasks))
	for i, t := range tasks {
		hashes[i] = t.ContentSHA256
	}
	cached, err := s.store.GetCachedEmbeddings(ctx, model, hashes)
	if err != nil {
		return 0, storeErr(err, "embedding cache")
	}
	var texts []string
	var textHashes []string
	seen := map[string]bool{}
	for _, t := range tasks {
		if _, ok := cached[t.ContentSHA256]; !ok && !seen[t.ContentSHA256] {
			seen[t.ContentSHA256] = true
			texts = append(texts, t.Content)
			textHashes = append(textHashes, t.ContentSHA256)
		}
	}
	fresh := map[string][]float32{}
	if len(texts) > 0 {
		vecs, err := s.embedPaced(ctx, emb, texts)
		if err != nil {
			return 0, err
		}
		for i, v := range vecs {
			if len(v) == emb.Dim() {
				fresh[textHashes[i]] = v
			}
		}
	}
	rows := make([]store.Vector, 0, len(tasks))
	for _, t := range tasks {
		v, ok := cached[t.ContentSHA256]
		if !ok {
			v, ok = fresh[t.ContentSHA256]
		}
		if ok && len(v) == emb.Dim() {
			rows = append(rows, store.Vector{Workspace: t.Workspace, RecordID: t.ID, ContentSHA256: t.ContentSHA256, Vec: v})
		}
	}
	err = s.store.Tx(ctx, func(tx store.Tx) error {
		if err := tx.PutCachedEmbeddings(ctx, model, fresh); err != nil {
			return err
		}
		return tx.PutVectors(ctx, model, rows)
	})
	if err != nil {
		return 0, storeErr(err, "vectors")
	}
	for _, r := range rows {
		s.index.SetVector(r.Workspace, r.RecordID, r.ContentSHA256, r.Vec)
	}
	return len(rows), nil
}

// embedIndexed gives up to limit records the index holds without a vector
// (see retrieve.PendingVectors) their vector: the one another process
// stored, found in the embedding cache by content hash (vectors do not go
// through the change log), else one computed and stored here. It returns
// how many it installed.
func (s *Service) embedIndexed(ctx context.Context, limit int) (int, error) {
	if s.index == nil || s.index.Embedder() == nil {
		return 0, nil
	}
	pend := s.index.PendingVectors(limit)
	if len(pend) == 0 {
		return 0, nil
	}
	emb := s.index.Embedder()
	hashes := make([]string, len(pend))
	for i, p := range pend {
		hashes[i] = p.ContentSHA256
	}
	cached, err := s.store.GetCachedEmbeddings(ctx, emb.Model(), hashes)
	if err != nil {
		return 0, storeErr(err, "embedding cache")
	}
	n := 0
	var tasks []store.VectorTask
	for _, p := range pend {
		if v, ok := cached[p.ContentSHA256]; ok && len(v) == emb.Dim() {
			s.index.SetVector(p.Workspace, p.ID, p.ContentSHA256, v)
			n++
			continue
		}
		r, err := s.store.GetRecord(ctx, p.Workspace, p.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, storeErr(err, "record")
		}
		if r.ContentSHA256 != p.ContentSHA256 {
			continue // newer content: the change follower brings it
		}
		tasks = append(tasks, store.VectorTask{Workspace: p.Workspace, ID: p.ID, Content: r.Content, ContentSHA256: r.ContentSHA256})
	}
	for len(tasks) > 0 {
		batch := tasks[:min(embedBatch, len(tasks))]
		tasks = tasks[len(batch):]
		m, err := s.embedTasks(ctx, batch)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// embedRound is one round of the embedding loop: records without a stored
// vector (after the cursor; from the start too when sweep is set), then
// records the index waits for.
func (s *Service) embedRound(ctx context.Context, sweep bool) (int, error) {
	n, err := s.embedPending(ctx, 4096, sweep)
	if err != nil {
		return n, err
	}
	m, err := s.embedIndexed(ctx, 4096)
	return n + m, err
}

// RunEmbedder fills vectors in until ctx ends: after writes, and every
// interval as a sweep. Embedder failures back off exponentially with
// jitter, capped at a minute.
func (s *Service) RunEmbedder(ctx context.Context, interval time.Duration) {
	if s.index == nil || s.index.Embedder() == nil {
		return
	}
	failures := 0 // consecutive failed rounds
	t := time.NewTimer(0)
	defer t.Stop()
	more := false // the last round found work: the timer is a continuation, not a sweep
	for {
		sweep := false
		select {
		case <-ctx.Done():
			return
		case <-s.embedWake:
		case <-t.C:
			sweep = !more
		}
		more = false
		n, err := s.embedRound(ctx, sweep)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			wait := backoff.Delay(time.Second, time.Minute, failures)
			failures++
			s.log.Warn("embedding job failed; writes continue, search degrades to lexical", "err", err, "retry_in", wait)
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(wait)
			// Wake-ups during backoff are ignored until the timer fires.
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			t.Reset(0)
			continue
		case n > 0:
			failures = 0
			s.log.Debug("embedded records", "count", n)
			more = true
			t.Reset(0) // there may be more
			continue
		}
		failures = 0
		t.Reset(interval)
	}
}
