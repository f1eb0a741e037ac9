// Package vector holds in-process vector indexes for memgate's retrieval:
// an exact (brute-force) index and an HNSW graph index.
//
// Vectors are expected to be L2-normalised float32 slices of a fixed
// dimension; the score of a hit is the inner product with the query, which for
// unit vectors is the cosine similarity. Keys are dense uint32 document
// numbers chosen by the caller. Both index types are safe for concurrent use:
// searches share a read lock, Add and Remove take the write lock.
//
// Rankings are always score descending with ties broken by the smaller key.
// Every score is computed by the same kernel, so Exact and HNSW agree bit for
// bit on the score of any (query, vector) pair.
//
// Passing a vector whose length is not Dim() to Add or Search is a
// programming error and panics.
package vector

// Hit is one search result.
type Hit struct {
	Key   uint32
	Score float32
}

// Allow filters candidates before ranking; nil allows all. It is called with
// the index's read lock held, so it must not call any method of the same
// index (a pending Add would deadlock it). It may be called from several
// goroutines at once when the index is searched concurrently, and should be
// cheap: an exact scan calls it once per stored vector.
type Allow func(key uint32) bool
