package retrieve

// Restoring from a snapshot: Restore reads it, catches up with the
// database, verifies it belongs to this database and fills the vectors.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// ---- restore ----------------------------------------------------------------------

// RestoreStats reports what Restore did.
type RestoreStats struct {
	Records, Vectors int   // live records and vectors restored from the snapshot
	Seq              int64 // the snapshot's change position
	Applied          int   // changes applied by catch-up
	// Forgotten counts records forgotten after the snapshot was written:
	// the file still holds their derived data (delete or rewrite it).
	Forgotten     int
	VectorsFilled int // vectors the snapshot lacked, read from the store
	Read, Total   time.Duration
}

// Restore fills an empty engine from the snapshot at path, applies the
// change log written since (CatchUp), checks that the snapshot belongs to
// this database, and reads from the store any vector stored after the
// snapshot was written (the embedding job's vectors do not go through the
// change log). On any error the engine is in an unspecified state: discard
// it and Load a new one.
func (e *Engine) Restore(ctx context.Context, st Source, path string) (RestoreStats, error) {
	start := time.Now()
	var rs RestoreStats
	if err := e.LoadSnapshot(path); err != nil {
		return rs, err
	}
	rs.Read = time.Since(start)
	e.mu.RLock()
	rs.Seq, rs.Records = e.changeSeq, len(e.docs)-e.deadLocked()
	if e.vecs != nil {
		rs.Vectors = e.vecs.Len()
	}
	e.mu.RUnlock()
	head, err := st.ChangeHead(ctx)
	if err != nil {
		return rs, err
	}
	if head < rs.Seq {
		return rs, snapForeign("snapshot at change %d, the database's last change is %d", rs.Seq, head)
	}
	// The change at the snapshot's position must exist in this database,
	// and the records of the last changes before it must match the index
	// (checked after catch-up, below): a snapshot of another database, or
	// of this one before it was restored from a backup, fails that.
	var recent []store.Change
	if rs.Seq > 0 {
		chs, err := st.ListChanges(ctx, max(0, rs.Seq-16), 16)
		if err != nil {
			return rs, err
		}
		for _, ch := range chs {
			if ch.Seq <= rs.Seq {
				recent = append(recent, ch)
			}
		}
		if len(recent) == 0 || recent[len(recent)-1].Seq != rs.Seq {
			return rs, snapForeign("the database has no change %d", rs.Seq)
		}
	}
	ps := e.persist()
	ps.mu.Lock()
	dead0 := ps.base.dead
	ps.mu.Unlock()
	if rs.Applied, err = e.CatchUp(ctx, st); err != nil {
		return rs, err
	}
	e.mu.RLock()
	rs.Forgotten = max(0, e.deadLocked()-dead0)
	e.mu.RUnlock()
	if err := e.verify(ctx, st, recent); err != nil {
		return rs, err
	}
	if rs.VectorsFilled, err = e.fillVectors(ctx, st); err != nil {
		return rs, err
	}
	rs.Total = time.Since(start)
	return rs, nil
}

// verify compares the records of the given changes, and of a spread of
// live documents, with the store. A mismatch may be a write that landed
// after catch-up: it catches up once more before giving up.
func (e *Engine) verify(ctx context.Context, st Source, changes []store.Change) error {
	type ref struct{ ws, id string }
	var refs []ref
	for _, ch := range changes {
		refs = append(refs, ref{ch.Workspace, ch.RecordID})
	}
	e.mu.RLock()
	if n := len(e.docs); n > 0 {
		for i := range 16 {
			k := uint32(i * n / 16)
			if e.docs[k].alive() {
				refs = append(refs, ref{e.wsOf(k), e.idOf(k)})
			}
		}
	}
	e.mu.RUnlock()
	check := func(r ref) (bool, error) {
		rec, err := st.GetRecord(ctx, r.ws, r.id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
		e.mu.RLock()
		defer e.mu.RUnlock()
		key, ok := e.lookup(r.ws, r.id)
		alive := ok && e.docs[key].alive()
		if err != nil || rec.Status == memory.Forgotten {
			return !alive, nil
		}
		if !alive || !e.shaIs(key, rec.ContentSHA256) {
			return false, nil
		}
		_, status, _ := e.enums(key)
		return status == rec.Status, nil
	}
	var bad []ref
	for _, r := range refs {
		ok, err := check(r)
		if err != nil {
			return err
		}
		if !ok {
			bad = append(bad, r)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	if _, err := e.CatchUp(ctx, st); err != nil {
		return err
	}
	for _, r := range bad {
		ok, err := check(r)
		if err != nil {
			return err
		}
		if !ok {
			return snapForeign("record %s/%s differs from the database", r.ws, r.id)
		}
	}
	return nil
}

// fillVectors gives live documents without a vector the vector the store
// has for them: ones the embedding job stored after the snapshot was
// written (its vectors do not go through the change log). The job caches
// every embedding it computes by content hash, so they are looked up there,
// for the documents lacking a vector only; if some still lack one and the
// store holds more vectors than the index, the store's vectors are scanned.
func (e *Engine) fillVectors(ctx context.Context, st Source) (int, error) {
	emb := e.opts.Embedder
	if emb == nil {
		return 0, nil
	}
	lack, shas := e.lackingVectors()
	if len(lack) == 0 {
		return 0, nil
	}
	filled, err := e.fillCachedVectors(ctx, st, emb, lack, shas)
	if err != nil || filled == len(lack) {
		return filled, err
	}
	// Some documents still lack a vector: usually the store has none for
	// them either (not embedded yet); make sure.
	stored, _, err := st.CountVectors(ctx, emb.Model())
	if err != nil {
		return filled, err
	}
	e.mu.RLock()
	have := 0
	if e.vecs != nil {
		have = e.vecs.Len()
	}
	e.mu.RUnlock()
	if stored <= have {
		return filled, nil
	}
	n, err := e.fillScannedVectors(ctx, st, emb)
	return filled + n, err
}

// lackingVectors returns the live documents without a vector and their
// content hashes, newest first: documents written since the snapshot are
// the likely ones, so the search usually stops early.
func (e *Engine) lackingVectors() ([]uint32, []string) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	need := len(e.docs) - e.deadLocked()
	if e.vecs != nil {
		need -= e.vecs.Len()
	}
	var lack []uint32
	var shas []string
	for key := len(e.docs) - 1; key >= 0 && len(lack) < need; key-- {
		if !e.docs[key].alive() {
			continue
		}
		if e.vecs != nil {
			if _, ok := e.vecs.Vector(uint32(key)); ok {
				continue
			}
		}
		lack = append(lack, uint32(key))
		shas = append(shas, e.shaOf(uint32(key)))
	}
	return lack, shas
}

// fillCachedVectors looks the lacking documents' hashes up in the
// embedding cache, 500 at a time, and adds the vectors found.
func (e *Engine) fillCachedVectors(ctx context.Context, st Source, emb embed.Embedder, lack []uint32, shas []string) (int, error) {
	filled := 0
	for i := 0; i < len(lack); i += 500 {
		j := min(len(lack), i+500)
		cached, err := st.GetCachedEmbeddings(ctx, emb.Model(), shas[i:j])
		if err != nil {
			return filled, err
		}
		e.mu.Lock()
		for k := i; k < j; k++ {
			v, ok := cached[shas[k]]
			if !ok || len(v) != emb.Dim() || !e.docs[lack[k]].alive() || !e.shaIs(lack[k], shas[k]) {
				continue
			}
			if e.vecs == nil {
				e.vecs, e.approx = e.newVectorIndex(len(lack))
			}
			e.vecs.Add(lack[k], v)
			filled++
		}
		e.mu.Unlock()
	}
	return filled, nil
}

// fillScannedVectors scans the store's vectors for live documents still
// without one, and adds them.
func (e *Engine) fillScannedVectors(ctx context.Context, st Source, emb embed.Embedder) (int, error) {
	type kv struct {
		key uint32
		vec []float32
	}
	var pending []kv
	e.mu.RLock()
	err := st.ScanVectors(ctx, emb.Model(), func(ws, id string, vec []float32) error {
		if len(vec) != emb.Dim() {
			return nil
		}
		key, ok := e.lookup(ws, id)
		if !ok || !e.docs[key].alive() {
			return nil
		}
		if e.vecs != nil {
			if _, has := e.vecs.Vector(key); has {
				return nil
			}
		}
		pending = append(pending, kv{key, slices.Clone(vec)})
		return nil
	})
	e.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	filled := 0
	for _, p := range pending {
		if !e.docs[p.key].alive() {
			continue
		}
		if e.vecs == nil {
			e.vecs, e.approx = e.newVectorIndex(len(pending))
		}
		e.vecs.Add(p.key, p.vec)
		filled++
	}
	return filled, nil
}
