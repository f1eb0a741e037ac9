package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
)

// HNSWConfig configures an HNSW index. Zero fields take their defaults.
type HNSWConfig struct {
	// M is the number of links a node gets on each upper layer (layer 0
	// allows 2*M). Default 16.
	M int
	// EfConstruction is the beam width used while inserting. Default 200.
	EfConstruction int
	// EfSearch is the search-time beam width (raised to k when k is
	// larger). Default 64, 128 above 256 dimensions (see
	// defaultEfSearchFor); see SetEfSearch.
	EfSearch int
	// Seed seeds the level generator, so the same inserts in the same order
	// build the same graph.
	Seed int64
}

const (
	defaultM              = 16
	defaultEfConstruction = 200
	defaultEfSearch       = 64
	maxM                  = 1024    // bound accepted by NewHNSW and ReadHNSW
	maxEf                 = 1 << 20 // bound on any beam width
	maxLevelCap           = 31      // top layer bound (levels are uint8)

	chunkBits = 12 // nodes per storage chunk = 4096
	chunkSize = 1 << chunkBits
	chunkMask = chunkSize - 1

	noNode = ^uint32(0)
)

// HNSW is a Hierarchical Navigable Small World graph index (Malkov &
// Yashunin, 2016/2018) over inner-product similarity.
//
// Each node has a level drawn from an exponential distribution with
// mL = 1/ln(M); search descends greedily through the upper layers and runs a
// beam search of width ef on layer 0. Links are chosen with the paper's
// neighbour-selection heuristic, are bidirectional, and a node whose list
// overflows (M on upper layers, 2*M on layer 0) is pruned with the same
// heuristic.
//
// Remove (and replacing a key through Add) leaves a tombstone: the node
// keeps routing searches but is never returned. Deleted reports the number
// of tombstones so the owner can rebuild once they are a large fraction.
//
// Storage is compact: vectors are quantised to int16 values and a
// power-of-two scale per vector (see quantize: an error of at most 2^-15
// of the vector's largest element), and they and the layer-0 link lists
// live in fixed-stride chunks of 4096 nodes ([count, id...] blocks of
// 2*M+1 uint32s); the rare upper-layer lists share one flat []uint32. At 1M
// nodes of 100 dimensions with M=16 this is about 0.2 GB of vectors plus
// 0.14 GB of graph. Scores are exact for the quantised vectors: an HNSW
// index ranks as an Exact index holding the vectors Vector returns would.
type HNSW struct {
	mu sync.RWMutex

	dim      int
	m, m0    int
	efC      int
	efSearch int
	seed     int64
	mL       float64
	pcg      *rand.PCG
	rnd      *rand.Rand

	n        int        // nodes, tombstones included; node ids are 0..n-1
	vecs     [][]int16  // chunk c holds nodes c*chunkSize.. at stride dim, quantised
	scales   []float32  // node → the scale of its quantised vector
	l0       [][]uint32 // chunk c holds layer-0 blocks at stride m0+1
	upperOff []uint32   // node → offset of its level-1 block in upper (if level > 0)
	upper    []uint32   // blocks of m+1 uint32s: count, then ids
	levels   []uint8    // node → top level
	keys     []uint32   // node → key
	deleted  []bool     // node → tombstone
	nDeleted int
	ids      keyIndex // key → live node
	entry    uint32   // entry point (a node on the top layer), noNode if empty
	maxLevel int

	// Idle per-search scratch spaces. Not a sync.Pool: that is emptied by
	// every GC cycle, and a searcher's visited array is 2 bytes per node
	// (2 MB at 1M nodes), too costly to reallocate mid-search.
	freeMu sync.Mutex
	free   []*searcher

	// Filtered-search fallbacks taken (for tests and diagnostics).
	widened, scanned atomic.Uint64
}

// NewHNSW returns an empty HNSW index for vectors of dimension dim.
func NewHNSW(dim int, cfg HNSWConfig) *HNSW {
	if dim <= 0 || dim > maxDim {
		panic(fmt.Sprintf("vector: invalid dimension %d", dim))
	}
	if cfg.M <= 0 {
		cfg.M = defaultM
	}
	cfg.M = min(max(cfg.M, 2), maxM)
	if cfg.EfConstruction <= 0 {
		cfg.EfConstruction = defaultEfConstruction
	}
	cfg.EfConstruction = min(max(cfg.EfConstruction, cfg.M), maxEf)
	if cfg.EfSearch <= 0 {
		cfg.EfSearch = defaultEfSearchFor(dim)
	}
	cfg.EfSearch = min(cfg.EfSearch, maxEf)
	pcg := rand.NewPCG(uint64(cfg.Seed), 0x9e3779b97f4a7c15)
	return &HNSW{
		dim:      dim,
		m:        cfg.M,
		m0:       2 * cfg.M,
		efC:      cfg.EfConstruction,
		efSearch: cfg.EfSearch,
		seed:     cfg.Seed,
		mL:       1 / math.Log(float64(cfg.M)),
		pcg:      pcg,
		rnd:      rand.New(pcg),
		entry:    noNode,
	}
}

// Dim returns the vector dimension.
func (h *HNSW) Dim() int { return h.dim }

// Len returns the number of live (not deleted) vectors.
func (h *HNSW) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.n - h.nDeleted
}

// Deleted returns the number of tombstoned nodes still in the graph (from
// Remove, and from Add replacing an existing key). They cost memory and
// search time; rebuild the index when they exceed a chosen fraction of
// Len()+Deleted().
func (h *HNSW) Deleted() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.nDeleted
}

// defaultEfSearchFor is the default search beam width for a dimension.
// At the same M a graph over higher-dimensional vectors has less faithful
// neighbourhoods: recall@10 against exact at ef 64 is 0.99 over 100-d
// memories (docs/performance.md) but 0.920 over the built-in encoder's
// 512-d vectors of 51,669 code chunks, where ef 128 gives 0.967 for about
// a millisecond more (BenchmarkVectorRecall in internal/knowledge;
// figures in docs/knowledge.md).
func defaultEfSearchFor(dim int) int {
	if dim > 256 {
		return 2 * defaultEfSearch
	}
	return defaultEfSearch
}

// SetEfSearch sets the search-time beam width (values below 1 are treated
// as 1). A search for k results always uses at least k.
func (h *HNSW) SetEfSearch(ef int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.efSearch = min(max(ef, 1), maxEf)
}

// Vector returns a copy of the vector stored under key.
func (h *HNSW) Vector(key uint32) ([]float32, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	id, ok := h.ids.get(key)
	if !ok {
		return nil, false
	}
	v := make([]float32, h.dim)
	h.decode(id, v)
	return v, true
}

// Remove tombstones the vector stored under key, if any.
func (h *HNSW) Remove(key uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if id, ok := h.ids.get(key); ok {
		h.ids.del(key)
		h.deleted[id] = true
		h.nDeleted++
	}
}

// Add inserts a copy of v under key. If key is present with a different
// vector, the old node is tombstoned and a new one inserted; if the vector
// is identical nothing changes.
func (h *HNSW) Add(key uint32, v []float32) {
	checkDim(h.dim, v)
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.ids.get(key); ok {
		s := h.getSearcher()
		s.qv = slices.Grow(s.qv[:0], h.dim)[:h.dim]
		sc := quantize(v, s.qv)
		same := sc == h.scales[old] && slices.Equal(s.qv, h.vec(old))
		h.putSearcher(s)
		if same {
			return
		}
		h.deleted[old] = true
		h.nDeleted++
	}
	h.insert(key, v)
}

// vec returns node id's quantised vector (shared storage; callers hold
// the lock); h.scales[id] is its scale.
func (h *HNSW) vec(id uint32) []int16 {
	c := h.vecs[id>>chunkBits]
	off := int(id&chunkMask) * h.dim
	return c[off : off+h.dim : off+h.dim]
}

// decode sets dst to node id's (dequantised) vector.
func (h *HNSW) decode(id uint32, dst []float32) {
	dequantize(h.vec(id), h.scales[id], dst)
}

// score returns the score of node id against q.
func (h *HNSW) score(q []float32, id uint32) float32 {
	return dotq(q, h.vec(id)) * h.scales[id]
}

// block returns node id's link block on a level: [count, id0, id1, ...]
// with room for the level's maximum degree.
func (h *HNSW) block(id uint32, level int) []uint32 {
	if level == 0 {
		c := h.l0[id>>chunkBits]
		off := int(id&chunkMask) * (h.m0 + 1)
		return c[off : off+h.m0+1 : off+h.m0+1]
	}
	off := int(h.upperOff[id]) + (level-1)*(h.m+1)
	return h.upper[off : off+h.m+1 : off+h.m+1]
}

// neighbors returns node id's links on a level.
func (h *HNSW) neighbors(id uint32, level int) []uint32 {
	b := h.block(id, level)
	return b[1 : 1+b[0]]
}

// randomLevel draws floor(-ln(U)·mL), U uniform in (0, 1].
func (h *HNSW) randomLevel() int {
	l := int(-math.Log(1-h.rnd.Float64()) * h.mL)
	return min(l, maxLevelCap)
}

// appendNode stores a new node with empty link lists and returns its id;
// v is its quantised vector and scale its scale. Chunks grow
// geometrically up to their fixed size, so small indexes stay small and
// full chunks carry no spare capacity.
func (h *HNSW) appendNode(key uint32, level int, v []int16, scale float32, del bool) uint32 {
	if h.n >= math.MaxInt32 {
		panic("vector: HNSW index is full (2^31-1 nodes including tombstones)")
	}
	id := uint32(h.n)
	c := int(id >> chunkBits)
	if c == len(h.vecs) {
		h.vecs = append(h.vecs, nil)
		h.l0 = append(h.l0, nil)
	}
	h.vecs[c] = growChunk(h.vecs[c], h.dim, chunkSize*h.dim)
	copy(h.vecs[c][len(h.vecs[c])-h.dim:], v)
	h.scales = append(h.scales, scale)
	h.l0[c] = growChunk(h.l0[c], h.m0+1, chunkSize*(h.m0+1))
	off := uint32(0)
	if level > 0 {
		off = uint32(len(h.upper))
		h.upper = append(h.upper, make([]uint32, level*(h.m+1))...)
	}
	h.upperOff = append(h.upperOff, off)
	h.levels = append(h.levels, uint8(level))
	h.keys = append(h.keys, key)
	h.deleted = append(h.deleted, del)
	if del {
		h.nDeleted++
	}
	h.n++
	return id
}

// fullChunk starts the next chunk at its full size, for a reader that
// knows a chunk's worth of nodes follows. Callers hold the write lock and
// have filled the current chunk.
func (h *HNSW) fullChunk() {
	if h.n%chunkSize != 0 || h.n>>chunkBits != len(h.vecs) {
		return
	}
	h.vecs = append(h.vecs, make([]int16, 0, chunkSize*h.dim))
	h.l0 = append(h.l0, make([]uint32, 0, chunkSize*(h.m0+1)))
}

// growChunk extends a chunk by n zeroed elements. Capacity grows by
// doubling but never past limit, the size of a full chunk.
func growChunk[T int16 | uint32](c []T, n, limit int) []T {
	if len(c)+n > cap(c) {
		grown := make([]T, len(c), min(max(2*cap(c), 16*n), limit))
		copy(grown, c)
		c = grown
	}
	c = c[:len(c)+n]
	clear(c[len(c)-n:])
	return c
}

// insert adds a node (Algorithm 1 of the paper). Caller holds the write lock.
func (h *HNSW) insert(key uint32, v []float32) {
	s := h.getSearcher()
	defer h.putSearcher(s)
	s.qv = slices.Grow(s.qv[:0], h.dim)[:h.dim]
	scale := quantize(v, s.qv)
	level := h.randomLevel()
	id := h.appendNode(key, level, s.qv, scale, false)
	h.ids.set(key, id)
	if h.entry == noNode {
		h.entry, h.maxLevel = id, level
		return
	}
	// The graph is built over the quantised vectors, the ones searches
	// score.
	s.q = slices.Grow(s.q[:0], h.dim)[:h.dim]
	h.decode(id, s.q)
	q := s.q
	cur := cand{h.entry, h.score(q, h.entry)}
	for l := h.maxLevel; l > level; l-- {
		cur = h.greedy(s, q, cur, l)
	}
	s.eps = append(s.eps[:0], cur)
	for l := min(level, h.maxLevel); l >= 0; l-- {
		h.searchLayer(s, q, s.eps, h.efC, l)
		s.eps = s.w.drainDesc(s.eps)
		// Tombstones route searches but do not receive new links, unless
		// nothing else was found.
		pool := s.eps
		if h.nDeleted > 0 {
			s.live = s.live[:0]
			for _, c := range s.eps {
				if !h.deleted[c.id] {
					s.live = append(s.live, c)
				}
			}
			if len(s.live) > 0 {
				pool = s.live
			}
		}
		s.sel = h.selectNeighbors(s, pool, h.m, s.sel[:0])
		b := h.block(id, l)
		b[0] = uint32(len(s.sel))
		for i, c := range s.sel {
			b[1+i] = c.id
		}
		for _, c := range s.sel {
			h.link(s, c.id, id, c.score, l)
		}
	}
	if level > h.maxLevel {
		h.entry, h.maxLevel = id, level
	}
}

// link adds the edge from → to on a level; score is their similarity. A
// full list is re-selected with the heuristic over old links plus the new one.
//
//go:norace
func (h *HNSW) link(s *searcher, from, to uint32, score float32, level int) {
	b := h.block(from, level)
	cnt := int(b[0])
	if cnt < len(b)-1 {
		b[1+cnt] = to
		b[0]++
		return
	}
	nbs := b[1 : 1+cnt]
	scores := s.scores[:cnt]
	s.base = slices.Grow(s.base[:0], h.dim)[:h.dim]
	h.decode(from, s.base)
	h.scoreIDs(s.base, nbs, scores)
	s.shrink = append(s.shrink[:0], cand{to, score})
	for i, o := range nbs {
		s.shrink = append(s.shrink, cand{o, scores[i]})
	}
	sortCandsDesc(s.shrink)
	s.sel2 = h.selectNeighbors(s, s.shrink, len(b)-1, s.sel2[:0])
	b[0] = uint32(len(s.sel2))
	for i, c := range s.sel2 {
		b[1+i] = c.id
	}
}

// selectNeighbors is the paper's heuristic (Algorithm 4, without extending
// candidates or keeping pruned connections): walking candidates best first,
// keep one only if it is more similar to the base than to every neighbour
// already kept. This favours links in diverse directions, which keeps
// clusters connected to each other.
//
//go:norace
func (h *HNSW) selectNeighbors(s *searcher, cands []cand, m int, out []cand) []cand {
	ev := slices.Grow(s.ev[:0], h.dim)[:h.dim]
	s.ev = ev
	for _, e := range cands {
		if len(out) >= m {
			break
		}
		h.decode(e.id, ev)
		good := true
		j := 0
		for ; good && j+4 <= len(out); j += 4 {
			a, b, c, d := out[j].id, out[j+1].id, out[j+2].id, out[j+3].id
			s0, s1, s2, s3 := dot4q(ev, h.vec(a), h.vec(b), h.vec(c), h.vec(d))
			good = s0*h.scales[a] <= e.score && s1*h.scales[b] <= e.score && s2*h.scales[c] <= e.score && s3*h.scales[d] <= e.score
		}
		for ; good && j < len(out); j++ {
			good = h.score(ev, out[j].id) <= e.score
		}
		if good {
			out = append(out, e)
		}
	}
	return out
}

// greedy walks one layer to the local best node (beam width 1).
//
//go:norace
func (h *HNSW) greedy(s *searcher, q []float32, cur cand, level int) cand {
	for changed := true; changed; {
		changed = false
		nbs := h.neighbors(cur.id, level)
		scores := s.scores[:len(nbs)]
		h.scoreIDs(q, nbs, scores)
		for i, nb := range nbs {
			if scores[i] > cur.score {
				cur = cand{nb, scores[i]}
				changed = true
			}
		}
	}
	return cur
}

// scoreIDs sets out[i] to the score of node ids[i] against q, scoring four
// nodes at a time.
//
//go:norace
func (h *HNSW) scoreIDs(q []float32, ids []uint32, out []float32) {
	out = out[:len(ids)]
	sc := h.scales
	i := 0
	for ; i+4 <= len(ids); i += 4 {
		a, b, c, d := ids[i], ids[i+1], ids[i+2], ids[i+3]
		s0, s1, s2, s3 := dot4q(q, h.vec(a), h.vec(b), h.vec(c), h.vec(d))
		out[i], out[i+1], out[i+2], out[i+3] = s0*sc[a], s1*sc[b], s2*sc[c], s3*sc[d]
	}
	switch len(ids) - i {
	case 3: // one 4-way pass is cheaper than three single ones
		a, b, c := ids[i], ids[i+1], ids[i+2]
		s0, s1, s2, _ := dot4q(q, h.vec(a), h.vec(b), h.vec(c), h.vec(c))
		out[i], out[i+1], out[i+2] = s0*sc[a], s1*sc[b], s2*sc[c]
	case 2:
		a, b := ids[i], ids[i+1]
		s0, s1, _, _ := dot4q(q, h.vec(a), h.vec(b), h.vec(b), h.vec(b))
		out[i], out[i+1] = s0*sc[a], s1*sc[b]
	case 1:
		out[i] = h.score(q, ids[i])
	}
}

// searchLayer is the beam search of the paper (Algorithm 2): on return s.w
// holds (as a min-heap) the best ef nodes found on the level, tombstones and
// filtered nodes included.
//
//go:norace
func (h *HNSW) searchLayer(s *searcher, q []float32, eps []cand, ef, level int) {
	s.nextEpoch(h.n)
	marks, epoch := s.marks, s.epoch
	s.c = s.c[:0]
	s.w = s.w[:0]
	for _, e := range eps {
		if marks[e.id] == epoch {
			continue
		}
		marks[e.id] = epoch
		s.c.push(e)
		s.w.push(e)
		if len(s.w) > ef {
			s.w.pop()
		}
	}
	for len(s.c) > 0 {
		c := s.c.pop()
		if len(s.w) >= ef && c.score < s.w[0].score {
			break
		}
		// Gather the unvisited neighbours, then score them four at a time.
		ids := s.ids[:0]
		for _, nb := range h.neighbors(c.id, level) {
			if marks[nb] != epoch {
				marks[nb] = epoch
				ids = append(ids, nb)
			}
		}
		scores := s.scores[:len(ids)]
		h.scoreIDs(q, ids, scores)
		for i, nb := range ids {
			sc := scores[i]
			if len(s.w) < ef || sc > s.w[0].score {
				s.c.push(cand{nb, sc})
				s.w.push(cand{nb, sc})
				if len(s.w) > ef {
					s.w.pop()
				}
			}
		}
	}
}

// Search returns up to k live vectors that allow accepts (all when allow is
// nil), best first by inner product with q, ties by smaller key.
//
// Deleted and filtered-out nodes are traversed but never returned. When the
// beam holds fewer than k acceptable nodes, the search is repeated with a
// wider beam (at least doubled, more when the fraction of acceptable nodes
// seen predicts it), up to (Len()+Deleted())/256 or efSearch, whichever is
// larger; past that cap it falls back to an exact scan of the acceptable
// nodes. So a selective filter still yields k results when k exist, and a
// very selective one gets exact results.
func (h *HNSW) Search(q []float32, k int, allow Allow) []Hit {
	checkDim(h.dim, q)
	if k <= 0 {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	live := h.n - h.nDeleted
	if live == 0 {
		return nil
	}
	k = min(k, live)
	s := h.getSearcher()
	defer h.putSearcher(s)

	cur := cand{h.entry, h.score(q, h.entry)}
	for l := h.maxLevel; l > 0; l-- {
		cur = h.greedy(s, q, cur, l)
	}
	filtered := allow != nil || h.nDeleted > 0
	// Past this width a beam search costs more than a scan: a beam step
	// (heap work, a cache miss, several scores) costs dozens of sequential
	// scores per unit of ef, while a scan costs one allow call per node
	// plus one score per allowed node.
	efCap := max(h.n/256, h.efSearch, k)
	ef := max(h.efSearch, k)
	for {
		s.eps = append(s.eps[:0], cur)
		h.searchLayer(s, q, s.eps, ef, 0)
		t := newTopK(k)
		ok := 0
		for _, c := range s.w {
			if filtered && h.deleted[c.id] {
				continue
			}
			key := h.keys[c.id]
			if allow != nil && !allow(key) {
				continue
			}
			ok++
			t.offer(key, c.score)
		}
		if ok >= k || len(s.w) == h.n {
			return t.sorted()
		}
		// Too few acceptable nodes in the beam: widen it at least twofold.
		// If ok of len(s.w) nodes were acceptable, aim for a beam holding
		// about 2k acceptable ones, so the k returned come from its
		// reliable head rather than its tail. If the cap would not do, or
		// the beam has already reached every node it can, scan.
		next := 8 * ef
		if ok > 0 {
			next = max(2*ef, 2*k*len(s.w)/ok)
		}
		if next > efCap || len(s.w) < ef {
			h.scanned.Add(1)
			return h.scan(q, k, allow)
		}
		h.widened.Add(1)
		ef = next
	}
}

// SearchIn returns the best k of the listed keys (each listed at most
// once) that allow accepts, scored exactly: the graph is not walked. For a
// filter that admits a small known set of keys this is both exact and
// cheaper than a filtered graph search, which would mostly visit nodes the
// filter rejects. Keys without a live vector are skipped.
func (h *HNSW) SearchIn(q []float32, k int, keys []uint32, allow Allow) []Hit {
	checkDim(h.dim, q)
	h.mu.RLock()
	defer h.mu.RUnlock()
	if k = min(k, len(keys)); k <= 0 {
		return nil
	}
	t := newTopK(k)
	var ids [4]uint32
	nb := 0
	for _, key := range keys {
		if allow != nil && !allow(key) {
			continue
		}
		id, ok := h.ids.get(key)
		if !ok {
			continue
		}
		ids[nb] = id
		if nb++; nb < 4 {
			continue
		}
		nb = 0
		h.offer4(&t, q, ids)
	}
	for _, id := range ids[:nb] {
		t.offer(h.keys[id], h.score(q, id))
	}
	return t.sorted()
}

// offer4 scores four nodes and offers them to t.
//
//go:norace
func (h *HNSW) offer4(t *topK, q []float32, ids [4]uint32) {
	sc := h.scales
	s0, s1, s2, s3 := dot4q(q, h.vec(ids[0]), h.vec(ids[1]), h.vec(ids[2]), h.vec(ids[3]))
	t.offer(h.keys[ids[0]], s0*sc[ids[0]])
	t.offer(h.keys[ids[1]], s1*sc[ids[1]])
	t.offer(h.keys[ids[2]], s2*sc[ids[2]])
	t.offer(h.keys[ids[3]], s3*sc[ids[3]])
}

// scan is the exact fallback: it scores every live node allow accepts.
//
//go:norace
func (h *HNSW) scan(q []float32, k int, allow Allow) []Hit {
	t := newTopK(k)
	var batch [4]uint32
	nb := 0
	for i := 0; i < h.n; i++ {
		if h.deleted[i] || (allow != nil && !allow(h.keys[i])) {
			continue
		}
		batch[nb] = uint32(i)
		if nb++; nb < 4 {
			continue
		}
		nb = 0
		h.offer4(&t, q, batch)
	}
	for _, id := range batch[:nb] {
		t.offer(h.keys[id], h.score(q, id))
	}
	return t.sorted()
}

// footprint estimates the bytes held by the index's storage: the capacity
// of its slices, the key index included.
func (h *HNSW) footprint() int64 {
	var b int64
	for _, c := range h.vecs {
		b += int64(cap(c)) * 2
	}
	b += int64(cap(h.scales)) * 4
	for _, c := range h.l0 {
		b += int64(cap(c)) * 4
	}
	b += int64(cap(h.upperOff)+cap(h.upper)+cap(h.keys))*4 + int64(cap(h.levels)+cap(h.deleted))
	b += int64(cap(h.ids.v)) * 4
	return b
}

// searcher is the per-search scratch space, pooled per index.
type searcher struct {
	marks  []uint16 // visited marks, valid where equal to epoch
	epoch  uint16
	c      maxHeap
	w      minHeap
	ids    []uint32  // neighbours being scored
	scores []float32 // their scores
	eps    []cand
	live   []cand
	q      []float32 // the vector being inserted, dequantised
	qv     []int16   // the vector being inserted, quantised
	base   []float32 // a node whose links are being re-selected, dequantised
	ev     []float32 // a candidate neighbour, dequantised
	sel    []cand
	sel2   []cand
	shrink []cand
}

func (h *HNSW) getSearcher() *searcher {
	h.freeMu.Lock()
	if n := len(h.free); n > 0 {
		s := h.free[n-1]
		h.free[n-1] = nil
		h.free = h.free[:n-1]
		h.freeMu.Unlock()
		return s
	}
	h.freeMu.Unlock()
	return &searcher{ids: make([]uint32, 0, h.m0+1), scores: make([]float32, h.m0+1)}
}

// maxIdleSearchers bounds the scratch spaces kept between searches.
const maxIdleSearchers = 64

func (h *HNSW) putSearcher(s *searcher) {
	h.freeMu.Lock()
	if len(h.free) < maxIdleSearchers {
		h.free = append(h.free, s)
	}
	h.freeMu.Unlock()
}

// nextEpoch starts a new visited set for an index of n nodes.
//
//go:norace
func (s *searcher) nextEpoch(n int) {
	if len(s.marks) < n {
		s.marks = make([]uint16, n+n/4+chunkSize)
		s.epoch = 0
	}
	s.epoch++
	if s.epoch == 0 {
		clear(s.marks)
		s.epoch = 1
	}
}
