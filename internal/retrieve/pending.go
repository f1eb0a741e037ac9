package retrieve

// Vectors the index waits for. A record whose content this process saw
// change — its own write (Upsert) or another process's, applied by CatchUp —
// has no vector in the index until one is installed with SetVector. The
// service's embedding loop asks for these records by key so that a vector
// another process stored (which does not go through the change log) is
// picked up too, not only the ones this process computes.

// PendingVector names a record the index holds without a vector of its
// current content.
type PendingVector struct {
	Workspace     string
	ID            string
	ContentSHA256 string
}

// markPendingLocked notes that key needs a vector; e.mu is held.
func (e *Engine) markPendingLocked(key uint32) {
	if e.opts.Embedder == nil {
		return
	}
	if e.pending == nil {
		e.pending = map[uint32]struct{}{}
	}
	e.pending[key] = struct{}{}
}

// PendingVectors returns up to limit records waiting for a vector, and
// forgets the ones that no longer need one (forgotten, or given a vector
// by Load or Restore).
func (e *Engine) PendingVectors(limit int) []PendingVector {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []PendingVector
	for key := range e.pending {
		if len(out) >= limit {
			break
		}
		if !e.docs[key].alive() {
			delete(e.pending, key)
			continue
		}
		if e.vecs != nil {
			if _, ok := e.vecs.Vector(key); ok {
				delete(e.pending, key)
				continue
			}
		}
		out = append(out, PendingVector{Workspace: e.wsOf(key), ID: e.idOf(key), ContentSHA256: e.shaOf(key)})
	}
	return out
}

// PendingCount is how many records wait for a vector.
func (e *Engine) PendingCount() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.pending)
}
