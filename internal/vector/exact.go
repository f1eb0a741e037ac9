package vector

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
)

// Exact is a brute-force index: every search scores every allowed vector.
// Vectors live in one contiguous []float32 (slot-major); a key→slot index
// locates them and Remove swap-deletes the last slot into the hole, so the
// storage never has gaps. Results do not depend on slot order: ranking is a
// total order on (score, key).
type Exact struct {
	mu   sync.RWMutex
	dim  int
	data []float32 // len(keys)*dim values, slot i at data[i*dim:(i+1)*dim]
	keys []uint32  // slot → key
	slot keyIndex  // key → slot
}

// NewExact returns an empty exact index for vectors of dimension dim.
func NewExact(dim int) *Exact {
	if dim <= 0 || dim > maxDim {
		panic(fmt.Sprintf("vector: invalid dimension %d", dim))
	}
	return &Exact{dim: dim}
}

// Dim returns the vector dimension.
func (x *Exact) Dim() int { return x.dim }

// Len returns the number of vectors held.
func (x *Exact) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.keys)
}

// Add stores a copy of v under key, replacing any vector already stored
// under that key.
func (x *Exact) Add(key uint32, v []float32) {
	checkDim(x.dim, v)
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.slot.get(key); ok {
		copy(x.data[int(s)*x.dim:], v)
		return
	}
	x.slot.set(key, uint32(len(x.keys)))
	x.keys = append(x.keys, key)
	x.data = append(x.data, v...)
}

// Remove deletes the vector stored under key, if any.
func (x *Exact) Remove(key uint32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.slot.get(key)
	if !ok {
		return
	}
	x.slot.del(key)
	last := uint32(len(x.keys) - 1)
	if s != last {
		moved := x.keys[last]
		x.keys[s] = moved
		copy(x.data[int(s)*x.dim:int(s+1)*x.dim], x.data[int(last)*x.dim:])
		x.slot.set(moved, s)
	}
	x.keys = x.keys[:last]
	x.data = x.data[:int(last)*x.dim]
}

// Vector returns a copy of the vector stored under key.
func (x *Exact) Vector(key uint32) ([]float32, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, ok := x.slot.get(key)
	if !ok {
		return nil, false
	}
	out := make([]float32, x.dim)
	copy(out, x.data[int(s)*x.dim:])
	return out, true
}

// Search returns the k vectors with the highest inner product with q among
// those allow accepts (all when allow is nil), best first; ties are broken
// by the smaller key. allow is consulted before a vector is scored.
func (x *Exact) Search(q []float32, k int, allow Allow) []Hit {
	checkDim(x.dim, q)
	if k <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	parts := min(runtime.GOMAXPROCS(0), maxScanParts, len(x.keys)/parallelScanMin)
	if parts < 2 {
		return scanTopK(q, k, x.dim, x.data, x.keys, allow)
	}
	// A long scan is split across goroutines, each keeping its own best k;
	// the ranking is a total order on (score, key), so the merged best k
	// are those of a single scan.
	res := make([][]Hit, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(x.keys)/parts, (p+1)*len(x.keys)/parts
		wg.Go(func() { res[p] = scanTopK(q, k, x.dim, x.data[lo*x.dim:hi*x.dim], x.keys[lo:hi], allow) })
	}
	wg.Wait()
	out := slices.Concat(res...)
	sortHits(out)
	return out[:min(k, len(out))]
}

// Exact scans of at least parallelScanMin vectors per part are split
// across up to maxScanParts goroutines (and GOMAXPROCS): at 100-d a
// part of 16k vectors is about a millisecond of work, far more than
// starting a goroutine.
const (
	parallelScanMin = 16384
	maxScanParts    = 4
)

// scanTopK scores every allowed slot of a slot-major matrix and keeps the
// best k in a bounded min-heap. allow runs before scoring; the allowed slots
// are scored four at a time.
func scanTopK(q []float32, k, dim int, data []float32, keys []uint32, allow Allow) []Hit {
	if k > len(keys) {
		k = len(keys)
	}
	if k == 0 {
		return nil
	}
	t := newTopK(k)
	q = q[:dim]
	var batch [4]int
	nb := 0
	for s, key := range keys {
		if allow != nil && !allow(key) {
			continue
		}
		batch[nb] = s
		if nb++; nb < 4 {
			continue
		}
		nb = 0
		o0, o1, o2, o3 := batch[0]*dim, batch[1]*dim, batch[2]*dim, batch[3]*dim
		s0, s1, s2, s3 := dot4(q, data[o0:o0+dim], data[o1:o1+dim], data[o2:o2+dim], data[o3:o3+dim])
		t.offer(keys[batch[0]], s0)
		t.offer(keys[batch[1]], s1)
		t.offer(keys[batch[2]], s2)
		t.offer(keys[batch[3]], s3)
	}
	for _, s := range batch[:nb] {
		t.offer(keys[s], dot(q, data[s*dim:(s+1)*dim]))
	}
	return t.sorted()
}

// maxDim bounds the dimension accepted by constructors and snapshot readers.
const maxDim = 1 << 16

func checkDim(dim int, v []float32) {
	if len(v) != dim {
		panic(fmt.Sprintf("vector: got a %d-dimensional vector, index dimension is %d", len(v), dim))
	}
}

// SearchIn is Search restricted to the listed keys (each listed at most
// once; keys without a vector are skipped): only their vectors are
// scored, so a short list costs little whatever the size of the index.
// The result is what Search returns with an allow that also requires
// membership of keys.
func (x *Exact) SearchIn(q []float32, k int, keys []uint32, allow Allow) []Hit {
	checkDim(x.dim, q)
	x.mu.RLock()
	defer x.mu.RUnlock()
	return topKIn(q[:x.dim], k, keys, allow, func(key uint32) []float32 {
		s, ok := x.slot.get(key)
		if !ok {
			return nil
		}
		o := int(s) * x.dim
		return x.data[o : o+x.dim : o+x.dim]
	})
}

// topKIn scores the allowed keys of a list that have a vector (vec returns
// nil for those that have none), four at a time, and keeps the best k.
func topKIn(q []float32, k int, keys []uint32, allow Allow, vec func(uint32) []float32) []Hit {
	if k = min(k, len(keys)); k <= 0 {
		return nil
	}
	t := newTopK(k)
	var kb [4]uint32
	var vb [4][]float32
	nb := 0
	for _, key := range keys {
		if allow != nil && !allow(key) {
			continue
		}
		v := vec(key)
		if v == nil {
			continue
		}
		kb[nb], vb[nb] = key, v
		if nb++; nb < 4 {
			continue
		}
		nb = 0
		s0, s1, s2, s3 := dot4(q, vb[0], vb[1], vb[2], vb[3])
		t.offer(kb[0], s0)
		t.offer(kb[1], s1)
		t.offer(kb[2], s2)
		t.offer(kb[3], s3)
	}
	for i := range nb {
		t.offer(kb[i], dot(q, vb[i]))
	}
	return t.sorted()
}
