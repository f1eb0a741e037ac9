package graph

// scratch is per-query working memory indexed by node slot, pooled so that
// a query allocates nothing proportional to the graph.
type scratch struct {
	epoch uint32
	side  [2]side // traversal state; Path's backward search uses side 1

	// PPR; p, r and inq are kept zeroed between uses.
	p, r  []float64
	inq   []bool
	queue []int32
	next  []int32
	touch []int32
}

// side is one breadth-first search: slot o is visited when mark[o] equals
// the scratch's epoch, and then info[o] says how it was reached.
type side struct {
	mark []uint32
	info []visit
	list []int32 // visited slots in order of discovery, start excluded
}

type visit struct {
	parent, via int32 // parent slot and edge ordinal; -1 for the start
	depth       uint8
}

func (x *Index) getScratch(n int) *scratch {
	s, _ := x.scPool.Get().(*scratch)
	if s == nil {
		s = new(scratch)
	}
	if len(s.side[0].mark) < n {
		n += n / 4
		for i := range s.side {
			s.side[i].mark = make([]uint32, n)
			s.side[i].info = make([]visit, n)
		}
		s.epoch = 0
	}
	s.epoch++
	if s.epoch == 0 {
		for i := range s.side {
			clear(s.side[i].mark)
		}
		s.epoch = 1
	}
	for i := range s.side {
		s.side[i].list = s.side[i].list[:0]
	}
	return s
}

func (x *Index) putScratch(s *scratch) {
	for i := range s.side {
		if cap(s.side[i].list) > 1<<16 {
			s.side[i].list = nil
		}
	}
	x.scPool.Put(s)
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
