package graph

// scratch is per-query working memory indexed by node ordinal, pooled so
// that a query allocates nothing proportional to the graph. A slot is
// marked for the current query when mark[o] == epoch.
type scratch struct {
	epoch  uint32
	mark   []uint32
	depth  []uint8
	parent []int32
	via    []int32
	list   []int32

	// PPR; p and r are kept zeroed between uses.
	p, r []float64
	inq  []bool
}

func (x *Index) getScratch(n int) *scratch {
	s, _ := x.scPool.Get().(*scratch)
	if s == nil {
		s = new(scratch)
	}
	if len(s.mark) < n {
		n += n / 4
		s.mark = make([]uint32, n)
		s.depth = make([]uint8, n)
		s.parent = make([]int32, n)
		s.via = make([]int32, n)
		s.epoch = 0
	}
	s.epoch++
	if s.epoch == 0 {
		clear(s.mark)
		s.epoch = 1
	}
	s.list = s.list[:0]
	return s
}

func (x *Index) putScratch(s *scratch) {
	if cap(s.list) > 1<<16 {
		s.list = nil
	}
	x.scPool.Put(s)
}

func (s *scratch) seen(o int32) bool { return s.mark[o] == s.epoch }

func (s *scratch) visit(o int32, depth int, parent, via int32) {
	s.mark[o] = s.epoch
	s.depth[o] = uint8(depth)
	s.parent[o] = parent
	s.via[o] = via
}

// growPPR makes the PPR arrays cover n slots.
func (s *scratch) growPPR(n int) {
	if len(s.p) < n {
		n += n / 4
		s.p = make([]float64, n)
		s.r = make([]float64, n)
		s.inq = make([]bool, n)
	}
}
