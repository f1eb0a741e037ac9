package vector

// keyIndex maps keys to slots (Exact) or nodes (HNSW). Keys are dense
// document numbers (see the package doc), so it is a slice indexed by key
// rather than a map: 4 bytes per key instead of about 16 per entry, and a
// lookup is one memory access, which matters when a search looks up
// thousands of listed keys (SearchIn). Keys are bounded by maxKey.
type keyIndex struct {
	v []uint32 // by key; absentKey where none
	n int      // keys present
}

const (
	absentKey = ^uint32(0)
	// maxKey bounds the keys an index accepts (1 GiB of key index); a
	// larger key is a programming error (Add) or a damaged snapshot.
	maxKey = 1<<28 - 1
)

func (m *keyIndex) get(key uint32) (uint32, bool) {
	if int(key) < len(m.v) {
		if x := m.v[key]; x != absentKey {
			return x, true
		}
	}
	return 0, false
}

func (m *keyIndex) set(key, val uint32) {
	if key > maxKey {
		panic("vector: key too large (keys are dense document numbers)")
	}
	if int(key) >= len(m.v) {
		n := max(int(key)+1, 2*len(m.v), 1024)
		grown := make([]uint32, n)
		copy(grown, m.v)
		for i := len(m.v); i < n; i++ {
			grown[i] = absentKey
		}
		m.v = grown
	}
	if m.v[key] == absentKey {
		m.n++
	}
	m.v[key] = val
}

func (m *keyIndex) del(key uint32) {
	if int(key) < len(m.v) && m.v[key] != absentKey {
		m.v[key] = absentKey
		m.n--
	}
}

func (m *keyIndex) len() int { return m.n }
