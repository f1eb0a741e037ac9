package lexical

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/memgate/memgate/internal/snapio"
)

// Snapshot format (fixed-width integers little-endian; "uv" is an
// encoding/binary unsigned varint):
//
//	magic     [8]byte "MGLEXIDX"
//	version   u32     snapshotVersion
//	analyzer  u32     fingerprint of Analyze (analyzerFingerprint)
//	length    u64     payload bytes
//	crc       u32     CRC-32C of version, analyzer, length and payload
//	payload (format 2):
//	  k1, b   u64     float64 bits
//	  stem    u8      0 or 1
//	  keys    uv      key slots (documents and absent keys below the largest)
//	  terms   uv      terms in the dictionary
//	  posts   uv      postings (Σ distinct terms over the documents)
//	  terms × (uv name length, name bytes)             term id = position
//	  plen    u64     bytes of the postings that follow
//	  terms × (uv df, then per live posting, ascending by key:
//	           uv key − previous key − 1 (key for the first), uv tf)
//	  keys  × (uv 0 when absent, else 1 + distinct terms, then uv docLen,
//	           uv bytes and the term ids, ascending: uv the first, then
//	           uv the differences (as the index's document arena holds them))
//	payload (format 1, still read): the header fields and names as above,
//	then keys × (uv 0 when absent, else 1 + distinct terms, uv docLen and
//	per term, ascending by id: uv id − previous id − 1 (id for the first),
//	uv tf); the reader derives the postings lists from the documents.
//
// The snapshot is canonical rather than a memory image: it holds each
// live postings list (sorted, no tombstones, no unsorted tail) and each
// document's distinct terms, term ids renumbered densely in their existing
// order. So what a snapshot holds of a removed document is nothing at all
// — no tombstoned posting, no arena garbage, no orphaned dictionary entry.
// The reader decodes the lists straight into place and the documents'
// term lists into the arena, on two goroutines (format 1 made it derive
// the lists from the documents: a transposition whose scattered writes
// dominated a restore), and refuses a snapshot whose lists and documents
// disagree: both sides' (term, key) pairs are counted and summed under a
// hash keyed by a random secret. Searches on the restored index return
// bit-identical results: scores depend on the live postings, document
// lengths and counters only, never on term ids or on list layout.
//
// The whole snapshot is checksummed and every count is checked against the
// bytes that carry it before anything is allocated from it, so a truncated
// or damaged snapshot yields an error wrapping ErrCorrupt, never a panic
// or an outsized allocation. A snapshot of another format version, or one
// whose terms were produced by a different analyser (see
// analyzerFingerprint), yields ErrIncompatible: its terms would not match
// the queries this build analyses. ReadIndex consumes exactly the
// snapshot's bytes, so a snapshot may be followed by other data.

// ErrCorrupt is wrapped by the errors ReadIndex returns for a truncated or
// damaged snapshot, or for input that is not a lexical snapshot.
var ErrCorrupt = errors.New("lexical: corrupt snapshot")

// ErrIncompatible is wrapped by the errors ReadIndex returns for an intact
// snapshot this build cannot use (another format version or analyser).
var ErrIncompatible = errors.New("lexical: incompatible snapshot")

const (
	// snapshotVersion is the format written: 2 holds the postings lists
	// and the documents' term lists side by side; 1 (the documents' terms
	// and frequencies only, the postings derived on reading) is read too.
	snapshotVersion = 2
	headerSize      = 28
	// maxPayload bounds the declared payload size (1 TiB).
	maxPayload = 1 << 40
	// readChunk is the most ReadIndex allocates ahead of the bytes it has
	// actually received.
	readChunk = 1 << 20
)

// parallelFill is the posting count from which two goroutines fill the
// postings lists of a snapshot being read (a variable for tests).
var parallelFill uint32 = 1 << 20

var (
	snapshotMagic = [8]byte{'M', 'G', 'L', 'E', 'X', 'I', 'D', 'X'}
	castagnoli    = crc32.MakeTable(crc32.Castagnoli)
)

// analyzerProbe exercises every rule of Analyze: tokenisation, case
// folding, apostrophes, single characters, stop words, digits, CJK and the
// stemmer's suffix classes. Its analysis changes whenever those rules do.
const analyzerProbe = "The QUICK brown fox's friends don't jump over O'Neill's students' dogs; " +
	"a b c 7 8 9 x y z. It was, and is, not never nor cannot: they'd we're I'm you've. " +
	"running runs ran runner connected connection connections connecting happily happiness " +
	"studies studying studied cats ponies agreed agreement generously caresses flies dies " +
	"meeting meetings hoped hopping sized relational conditional rational valenci hesitanci " +
	"digitizer conformabli radicalli differentli vileli analogousli vietnamization predication " +
	"operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti " +
	"triplicate formative formalize electriciti electrical hopeful goodness revival allowance " +
	"inference airliner gyroscopic adjustable defensible irritant replacement adjustment " +
	"dependent adoption homologou communism activate angulariti homologous effective bowdlerize " +
	"probate rate cease controll roll 2023 covid19 1990s 3d v2 ÇA Straße ÉCOLE naïve Ångström " +
	"İstanbul ΑΘΗΝΑ Москва 東京タワー 서울특별시 ｆｕｌｌｗｉｄｔｈ e\u0301te\u0301 ’quoted’ rock’n’roll ‘x’ ＇y＇ " +
	"über-cool e-mail co-operate 50% $100 foo_bar foo.bar foo/bar"

var analyzerFP = sync.OnceValue(func() uint32 {
	var sb strings.Builder
	for _, stem := range []bool{false, true} {
		for _, t := range Analyze(analyzerProbe, stem) {
			sb.WriteString(t)
			sb.WriteByte(0)
		}
		sb.WriteByte(1)
	}
	return crc32.Checksum([]byte(sb.String()), castagnoli)
})

// analyzerFingerprint identifies this build's analyser: a checksum of
// Analyze's output, with and without stemming, on a probe text that
// exercises each of its rules. A snapshot records it, and ReadIndex refuses
// a snapshot whose terms came from a different analyser. It catches any
// change of analysis visible on the probe; a change it cannot see must
// bump snapshotVersion.
func analyzerFingerprint() uint32 { return analyzerFP() }

// Options returns the index's (normalised) options.
func (ix *Index) Options() Options {
	return Options{K1: ix.k1, B: ix.b, Stem: ix.stem}
}

// Has reports whether a document is stored under key.
func (ix *Index) Has(key uint32) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.has(key)
}

// WriteTo writes a snapshot of the index (see ReadIndex). It holds the
// read lock while it runs, so searches continue but Add and Remove wait.
// The snapshot is encoded in memory (a few bytes per posting) and then
// written with one Write call.
func (ix *Index) WriteTo(w io.Writer) (int64, error) {
	ix.mu.RLock()
	payload, err := ix.encodeLocked()
	ix.mu.RUnlock()
	if err != nil {
		return 0, err
	}
	var hdr [headerSize]byte
	copy(hdr[:], snapshotMagic[:])
	binary.LittleEndian.PutUint32(hdr[8:], snapshotVersion)
	binary.LittleEndian.PutUint32(hdr[12:], analyzerFingerprint())
	binary.LittleEndian.PutUint64(hdr[16:], uint64(len(payload)))
	sum := crc32.Update(crc32.Checksum(hdr[8:24], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(hdr[24:], sum)
	n, err := w.Write(hdr[:])
	if err != nil {
		return int64(n), err
	}
	m, err := w.Write(payload)
	return int64(n + m), err
}

// encodeLocked builds the payload (format 2); the caller holds the read
// lock.
func (ix *Index) encodeLocked() ([]byte, error) {
	newID, nterms, nameBytes := ix.liveTermIDs()
	posts := uint64(0)
	for _, d := range ix.docs {
		if d.off != absent {
			posts += uint64(d.n)
		}
	}
	if posts >= uint64(absent) {
		return nil, fmt.Errorf("lexical: snapshot: too many postings")
	}
	buf := make([]byte, 0, 80+2*nterms+nameBytes+4*len(ix.docs)+5*int(posts))
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(ix.k1))
	buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(ix.b))
	if ix.stem {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	buf = binary.AppendUvarint(buf, uint64(len(ix.docs)))
	buf = binary.AppendUvarint(buf, uint64(nterms))
	buf = binary.AppendUvarint(buf, posts)
	for id := range ix.terms {
		if newID[id] != absent {
			buf = binary.AppendUvarint(buf, uint64(ix.terms[id].name.n))
		}
	}
	for id := range ix.terms {
		if newID[id] != absent {
			buf = append(buf, ix.nameOf(uint32(id))...)
		}
	}
	// hp and hd hash the (term, key) pairs of the postings and of the
	// documents: they must agree.
	buf, hp := ix.appendPostings(buf, newID)
	buf, hd, err := ix.appendDocs(buf, newID)
	if err != nil {
		return nil, err
	}
	if hp != hd {
		return nil, fmt.Errorf("lexical: snapshot: the postings disagree with the documents' terms")
	}
	return buf, nil
}

// liveTermIDs gives the live terms dense ids in their current order, so
// each document's terms (ascending ids in the arena) stay ascending;
// newID[id] is absent for a term without postings.
func (ix *Index) liveTermIDs() (newID []uint32, nterms, nameBytes int) {
	newID = make([]uint32, len(ix.terms))
	for id := range ix.terms {
		t := &ix.terms[id]
		newID[id] = absent
		if t.df() > 0 {
			newID[id] = uint32(nterms)
			nterms++
			nameBytes += int(t.name.n)
		}
	}
	return newID, nterms, nameBytes
}

// appendPostings appends the postings section: the live terms' lists,
// each one's live postings by key, the section's length first, so that a
// reader can decode the documents beside it. hp hashes its (term, key)
// pairs.
func (ix *Index) appendPostings(buf []byte, newID []uint32) (_ []byte, hp uint64) {
	lenAt := len(buf)
	buf = binary.LittleEndian.AppendUint64(buf, 0)
	var tail []uint64
	for id := range ix.terms {
		if newID[id] == absent {
			continue
		}
		t := ix.view(uint32(id))
		buf = binary.AppendUvarint(buf, uint64(t.df()))
		prev := int64(-1)
		put := func(key uint32, tf uint16) {
			buf = binary.AppendUvarint(buf, uint64(int64(key)-prev-1))
			buf = binary.AppendUvarint(buf, uint64(tf))
			prev = int64(key)
			hp += pairHash(uint32(id), key, 0)
		}
		if t.dead == 0 && t.sorted == len(t.keys) {
			for i, key := range t.keys {
				put(key, t.tfs[i])
			}
			continue
		}
		tail = tail[:0]
		for i, key := range t.keys {
			if t.tfs[i] != 0 {
				tail = append(tail, uint64(key)<<16|uint64(t.tfs[i]))
			}
		}
		slices.Sort(tail)
		for _, p := range tail {
			put(uint32(p>>16), uint16(p))
		}
	}
	binary.LittleEndian.PutUint64(buf[lenAt:], uint64(len(buf)-lenAt-8))
	return buf, hp
}

// appendDocs appends the documents section: their term lists as the
// arena holds them, with the new ids. hd hashes their (term, key) pairs.
func (ix *Index) appendDocs(buf []byte, newID []uint32) (_ []byte, hd uint64, _ error) {
	var list []byte
	for key, d := range ix.docs {
		if d.off == absent {
			buf = append(buf, 0)
			continue
		}
		list = list[:0]
		prev := uint32(0)
		bad := false
		ix.eachTerm(d, func(old uint32) {
			id := newID[old]
			bad = bad || id == absent
			list = binary.AppendUvarint(list, uint64(id-prev))
			prev = id
			hd += pairHash(old, uint32(key), 0)
		})
		if bad {
			return nil, 0, fmt.Errorf("lexical: snapshot: key %d holds a term without postings", key)
		}
		buf = binary.AppendUvarint(buf, uint64(d.n)+1)
		buf = binary.AppendUvarint(buf, uint64(ix.docLen[key]))
		buf = binary.AppendUvarint(buf, uint64(len(list)))
		buf = append(buf, list...)
	}
	return buf, hd, nil
}

// pairHash hashes a (term id, key) pair with a secret: sums of it over
// the postings and over the documents' term lists agree exactly when
// (barring a collision the secret makes unforeseeable) both hold the same
// pairs.
func pairHash(id, key uint32, secret uint64) uint64 {
	x := (uint64(id)<<32 | uint64(key)) + secret + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt("truncated")
	}
	return err
}

// readPayload reads n bytes. It allocates at most readChunk beyond the
// bytes received so far (the buffer doubles as data arrives), so a header
// that lies about the length cannot make the reader reserve memory the
// stream does not carry.
func readPayload(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, readChunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(n-len(buf), len(buf)))
		}
		m := min(n, cap(buf)) - len(buf)
		k, err := io.ReadFull(r, buf[len(buf):len(buf)+m])
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, readErr(err)
		}
	}
	return buf, nil
}

// ReadIndex reads a snapshot written by WriteTo. The index it returns
// answers every search exactly as the snapshotted one did and takes further
// Adds and Removes. A truncated or damaged snapshot gives an error wrapping
// ErrCorrupt, one written by an incompatible build an error wrapping
// ErrIncompatible.
func ReadIndex(r io.Reader) (*Index, error) {
	var hdr [headerSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, readErr(err)
	}
	length, err := checkHeader(hdr[:])
	if err != nil {
		return nil, err
	}
	payload, err := readPayload(r, int(length))
	if err != nil {
		return nil, err
	}
	return decodeChecked(hdr[:], payload)
}

// DecodeIndex is ReadIndex over a snapshot held in memory, which must be
// exactly one snapshot: it decodes p in place rather than copy it.
func DecodeIndex(p []byte) (*Index, error) {
	if len(p) < headerSize {
		return nil, corrupt("truncated")
	}
	length, err := checkHeader(p[:headerSize])
	if err != nil {
		return nil, err
	}
	if length > uint64(len(p)-headerSize) {
		return nil, corrupt("truncated")
	}
	if length < uint64(len(p)-headerSize) {
		return nil, corrupt("%d trailing bytes", uint64(len(p)-headerSize)-length)
	}
	return decodeChecked(p[:headerSize], p[headerSize:])
}

// checkHeader checks a snapshot header and returns the payload length.
func checkHeader(hdr []byte) (uint64, error) {
	if [8]byte(hdr[:8]) != snapshotMagic {
		return 0, corrupt("not a lexical snapshot")
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != 1 && v != snapshotVersion {
		return 0, fmt.Errorf("%w: format version %d, this build reads 1 and %d", ErrIncompatible, v, snapshotVersion)
	}
	length := binary.LittleEndian.Uint64(hdr[16:])
	if length > maxPayload || length > math.MaxInt {
		return 0, corrupt("payload of %d bytes", length)
	}
	return length, nil
}

// decodeChecked verifies the checksum and the analyser, then decodes.
func decodeChecked(hdr, payload []byte) (*Index, error) {
	if crc32.Update(crc32.Checksum(hdr[8:24], castagnoli), castagnoli, payload) != binary.LittleEndian.Uint32(hdr[24:]) {
		return nil, corrupt("checksum mismatch")
	}
	if fp := binary.LittleEndian.Uint32(hdr[12:]); fp != analyzerFingerprint() {
		return nil, fmt.Errorf("%w: written by a build with a different analyser", ErrIncompatible)
	}
	return decodeIndex(payload, binary.LittleEndian.Uint32(hdr[8:]))
}

func decodeIndex(payload []byte, version uint32) (*Index, error) {
	d := snapio.NewReader(payload, corrupt)
	k1 := math.Float64frombits(d.U64())
	b := math.Float64frombits(d.U64())
	stem := d.U8()
	nkeys, nterms, nposts := d.Uvarint(), d.Uvarint(), d.Uvarint()
	if d.Err != nil {
		return nil, d.Err
	}
	switch rest := d.Rest(); {
	case !(k1 > 0) || math.IsInf(k1, 0) || !(b >= 0 && b <= 1) || stem > 1:
		return nil, corrupt("options k1=%v b=%v stem=%d", k1, b, stem)
	// Every key takes at least one byte, every term one length byte and
	// every posting two bytes.
	case nkeys > rest || nkeys >= uint64(absent):
		return nil, corrupt("%d keys", nkeys)
	case nterms > rest || nterms >= uint64(absent):
		return nil, corrupt("%d terms", nterms)
	case nposts > rest/2 || nposts >= uint64(absent) || nterms > nposts:
		return nil, corrupt("%d postings", nposts)
	}

	// Term names: lengths, then the bytes, converted with one allocation.
	lens := make([]uint32, nterms)
	nameBytes := uint64(0)
	for i := range lens {
		n := d.Uvarint()
		if n == 0 || n > d.Rest() {
			d.Fail("term name length")
		}
		nameBytes += n
		lens[i] = uint32(n)
	}
	if d.Err != nil {
		return nil, d.Err
	}
	if nameBytes > d.Rest() {
		return nil, corrupt("term names of %d bytes", nameBytes)
	}
	names := slices.Clone(d.Bytes(int(nameBytes))) // the dictionary's arena (dict.go)
	terms := make([]entry, nterms)
	off := uint32(0)
	for i, n := range lens {
		terms[i].name = nameRef{off: off, n: n}
		off += n
	}
	// The dictionary's table is built while the documents are decoded.
	seed := maphash.MakeSeed()
	var slots []uint32
	dictc := make(chan error, 1)
	go func() {
		var err error
		slots, err = buildSlots(seed, names, terms)
		dictc <- err
	}()
	decode := decodeDocs
	if version == 1 {
		decode = decodeDocsV1
	}
	ix, err := decode(d, k1, b, stem == 1, int(nkeys), terms, uint32(nposts))
	if derr := <-dictc; err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	ix.names, ix.slots, ix.nterms, ix.seed = names, slots, len(terms), seed
	return ix, nil
}

// decodeDocsV1 decodes the documents of a format 1 snapshot and derives
// the postings lists from them.
func decodeDocsV1(d *snapio.Reader, k1, b float64, stem bool, nkeys int, terms []entry, nposts uint32) (*Index, error) {
	ix := &Index{k1: k1, b: b, stem: stem, terms: terms}
	ix.docs = make([]docRef, nkeys)
	ix.docLen = make([]uint32, nkeys)
	ix.lenCode = make([]uint8, nkeys)
	arena, tfs, df, err := ix.readDocsV1(d, nposts)
	if err != nil {
		return nil, err
	}
	// Postings: one slab per column, each list a full slice of it (an
	// append reallocates rather than spill into the next list), filled by
	// ascending key so every list is sorted.
	keySlab := make([]uint32, nposts)
	tfSlab := make([]uint16, nposts)
	next := df // reused: counts become fill positions
	o := uint32(0)
	for id, c := range df {
		if c == 0 {
			return nil, corrupt("term %d has no documents", id)
		}
		t := &terms[id]
		t.off, t.n, t.cap, t.sorted = o, c, c, c
		next[id] = o
		o += c
	}
	if cap(arena) > len(arena)+len(arena)/8 {
		arena = slices.Clone(arena)
	}
	ix.arena = arena
	ix.post = slabs{keys: [][]uint32{keySlab}, tfs: [][]uint16{tfSlab}, used: len(keySlab)}
	ix.fillPostingsV1(tfs, next, keySlab, tfSlab, nposts)
	for id := range terms {
		t := &terms[id]
		t.maxKey = keySlab[t.off+t.n-1]
	}
	return ix, nil
}

// readDocsV1 reads the documents of a format 1 snapshot into ix. Their
// term lists go to the byte arena as they are read (each takes no more
// bytes there than in the payload); their term frequencies, by posting,
// to tfs until the postings are built; df counts each term's documents.
func (ix *Index) readDocsV1(d *snapio.Reader, nposts uint32) (arena []byte, tfs []uint16, df []uint32, _ error) {
	nterms := uint64(len(ix.terms))
	arena = make([]byte, 0, d.Rest())
	tfs = make([]uint16, nposts)
	df = make([]uint32, nterms)
	p := uint32(0)
	for key := range ix.docs {
		s := d.Uvarint()
		if s == 0 {
			ix.docs[key] = docRef{off: absent}
			continue
		}
		cnt, dl := s-1, d.Uvarint()
		if cnt > uint64(nposts-p) || dl > math.MaxUint32 {
			d.Fail("document size")
		}
		if d.Err != nil {
			return nil, nil, nil, d.Err
		}
		off := len(arena)
		prev, sum, clipped := int64(-1), uint64(0), false
		for j := p; j < p+uint32(cnt); j++ {
			delta, tf := d.Uvarint(), d.Uvarint()
			if delta >= nterms || uint64(prev+1)+delta >= nterms || tf == 0 || tf > maxTF {
				d.Fail("posting")
				return nil, nil, nil, d.Err
			}
			id := prev + 1 + int64(delta)
			arena = binary.AppendUvarint(arena, uint64(id-max(prev, 0)))
			tfs[j] = uint16(tf)
			df[id]++
			sum += tf
			clipped = clipped || tf == maxTF
			prev = id
		}
		if d.Err != nil {
			return nil, nil, nil, d.Err
		}
		// docLen counts tokens, the tfs count each distinct one (capped).
		if sum > dl || (sum != dl && !clipped) {
			return nil, nil, nil, corrupt("key %d: length %d, term frequencies sum to %d", key, dl, sum)
		}
		if len(arena) >= int(absent) {
			return nil, nil, nil, corrupt("documents too large")
		}
		ix.docs[key] = docRef{off: uint32(off), n: uint32(cnt)}
		ix.docLen[key] = uint32(dl)
		ix.lenCode[key] = uint8(min(dl, 255))
		ix.n++
		ix.total += dl
		p += uint32(cnt)
	}
	if d.Err != nil {
		return nil, nil, nil, d.Err
	}
	if p != nposts {
		return nil, nil, nil, corrupt("%d postings, header says %d", p, nposts)
	}
	if d.Rest() != 0 {
		return nil, nil, nil, corrupt("%d trailing bytes", d.Rest())
	}
	return arena, tfs, df, nil
}

// fillPostingsV1 fills the lists of a format 1 snapshot from the arena,
// documents in key order so that every list comes out sorted; next[id] is
// where term id's next posting goes. The writes land all over the slabs,
// one place per term, and cost a cache miss each: on a large index two
// goroutines share them, each filling the lists of the terms below or
// above the id that halves the postings.
func (ix *Index) fillPostingsV1(tfs []uint16, next, keySlab []uint32, tfSlab []uint16, nposts uint32) {
	arena, terms := ix.arena, ix.terms
	fill := func(lo, hi uint32) {
		j := 0 // posting number, in document order
		for key, r := range ix.docs {
			if r.off == absent {
				continue
			}
			b, id := arena[r.off:], uint32(0)
			for range r.n {
				v, n := uvarint32(b)
				b, id = b[n:], id+v
				if id >= lo && id < hi {
					q := next[id]
					keySlab[q], tfSlab[q] = uint32(key), tfs[j]
					next[id] = q + 1
				}
				j++
			}
		}
	}
	nterms := uint32(len(terms))
	if nposts < parallelFill {
		fill(0, nterms)
		return
	}
	split, acc := uint32(0), uint32(0)
	for id := range terms {
		if acc >= nposts/2 {
			break
		}
		acc += terms[id].n
		split = uint32(id) + 1
	}
	var wg sync.WaitGroup
	wg.Go(func() { fill(0, split) })
	fill(split, nterms)
	wg.Wait()
}

// decodeDocs decodes the postings lists and the documents of a format 2
// snapshot, side by side on two goroutines: each list is read straight
// into its place, each document's term list copied into the arena once
// checked, and the two must hold the same (term, key) pairs.
func decodeDocs(d *snapio.Reader, k1, b float64, stem bool, nkeys int, terms []entry, nposts uint32) (*Index, error) {
	plen := d.U64()
	if d.Err != nil || plen > d.Rest() {
		return nil, corrupt("postings of %d bytes", plen)
	}
	pb := d.Bytes(int(plen))
	db := d.Bytes(int(d.Rest()))
	ix := &Index{k1: k1, b: b, stem: stem, terms: terms}
	ix.docs = make([]docRef, nkeys)
	ix.docLen = make([]uint32, nkeys)
	ix.lenCode = make([]uint8, nkeys)
	secret := rand.Uint64()

	var hp uint64
	var perr error
	var wg sync.WaitGroup
	wg.Go(func() {
		var keySlab []uint32
		var tfSlab []uint16
		keySlab, tfSlab, hp, perr = decodePostings(pb, terms, nkeys, nposts, secret)
		ix.post = slabs{keys: [][]uint32{keySlab}, tfs: [][]uint16{tfSlab}, used: len(keySlab)}
	})
	r := snapio.NewReader(db, corrupt)
	arena, p, hd := ix.decodeDocLists(r, nposts, secret)
	wg.Wait()
	switch {
	case perr != nil:
		return nil, perr
	case r.Err != nil:
		return nil, r.Err
	case p != nposts:
		return nil, corrupt("%d document terms, header says %d postings", p, nposts)
	case r.Rest() != 0:
		return nil, corrupt("%d trailing bytes", r.Rest())
	case hp != hd:
		return nil, corrupt("the postings disagree with the documents' terms")
	}
	ix.arena = arena
	return ix, nil
}

// decodePostings reads the postings section pb of a format 2 snapshot
// straight into the terms' lists, regions of two slabs. Each region keeps
// an eighth of its list as room to grow, as compaction leaves it: with
// exact regions, the first posting added to each list after a restore
// moved it, and a restored server's first writes copied the long lists of
// every common word (the more turns stored, the longer). hp hashes its
// (term, key) pairs with secret.
func decodePostings(pb []byte, terms []entry, nkeys int, nposts uint32, secret uint64) (keySlab []uint32, tfSlab []uint16, hp uint64, _ error) {
	keySlab = make([]uint32, nposts+nposts/8) // Σ (c + c/8) ≤ nposts + nposts/8
	tfSlab = make([]uint16, len(keySlab))
	r := snapio.NewReader(pb, corrupt)
	o, p := uint32(0), uint32(0) // slab offset, postings read
	for id := range terms {
		df := r.Uvarint()
		if df == 0 || df > uint64(nposts-p) {
			r.Fail("document frequency")
			break
		}
		c := uint32(df)
		t := &terms[id]
		t.off, t.n, t.cap, t.sorted = o, c, c+c/8, c
		keys, tfs := keySlab[o:o+c:o+c], tfSlab[o:o+c:o+c]
		prev := int64(-1)
		for j := range keys {
			delta, tf := r.Uvarint(), r.Uvarint()
			key := uint64(prev+1) + delta
			if delta >= uint64(nkeys) || key >= uint64(nkeys) || tf == 0 || tf > maxTF {
				r.Fail("posting")
				break
			}
			keys[j], tfs[j] = uint32(key), uint16(tf)
			hp += pairHash(uint32(id), uint32(key), secret)
			prev = int64(key)
		}
		if r.Err != nil {
			break
		}
		t.maxKey = keys[c-1]
		o += t.cap
		p += c
	}
	switch {
	case r.Err != nil:
		return nil, nil, 0, r.Err
	case p != nposts:
		return nil, nil, 0, corrupt("%d postings, header says %d", p, nposts)
	case r.Rest() != 0:
		return nil, nil, 0, corrupt("%d trailing bytes after the postings", r.Rest())
	}
	return keySlab[:o], tfSlab[:o], hp, nil
}

// decodeDocLists reads the documents section of a format 2 snapshot from
// r into ix, each document's term list checked (ascending, known ids,
// exactly filling its bytes) and copied into the arena. p counts the
// documents' terms; hd hashes their (term, key) pairs with secret. On an
// error it stops, leaving it in r.Err.
func (ix *Index) decodeDocLists(r *snapio.Reader, nposts uint32, secret uint64) (arena []byte, p uint32, hd uint64) {
	nterms := uint32(len(ix.terms))
	arena = make([]byte, 0, r.Rest())
	for key := range ix.docs {
		s := r.Uvarint()
		if s == 0 {
			ix.docs[key] = docRef{off: absent}
			continue
		}
		cnt, dl, blen := s-1, r.Uvarint(), r.Uvarint()
		if cnt > uint64(nposts-p) || dl > math.MaxUint32 || blen > r.Rest() || blen < cnt {
			r.Fail("document size")
			break
		}
		list := r.Bytes(int(blen))
		// The term ids: ascending, known, exactly filling the bytes.
		id, at := uint64(0), 0
		for j := range cnt {
			v, n := binary.Uvarint(list[at:])
			if n <= 0 || (j > 0 && v == 0) || v >= uint64(nterms) || id+v >= uint64(nterms) {
				r.Fail("document terms")
				break
			}
			at += n
			id += v
			hd += pairHash(uint32(id), uint32(key), secret)
		}
		if r.Err == nil && at != len(list) {
			r.Fail("document terms")
		}
		if r.Err != nil {
			break
		}
		if len(arena)+len(list) >= int(absent) {
			r.Fail("documents too large")
			break
		}
		ix.docs[key] = docRef{off: uint32(len(arena)), n: uint32(cnt)}
		arena = append(arena, list...)
		ix.docLen[key] = uint32(dl)
		ix.lenCode[key] = uint8(min(dl, 255))
		ix.n++
		ix.total += dl
		p += uint32(cnt)
	}
	return arena, p, hd
}
