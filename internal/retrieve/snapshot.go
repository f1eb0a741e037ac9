package retrieve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/memgate/memgate/internal/snapio"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/vector"
)

// # Snapshots
//
// A snapshot is the engine's in-memory state written to one file, so a
// restart restores it in seconds instead of rebuilding the indexes from
// the database (Load: over a minute at 1M records, plus minutes for an
// HNSW graph). It is derived data: deleting it only makes the next start
// slow.
//
// It records the change-log position its state reflects (changeSeq,
// captured under the same lock as the state), so after ReadSnapshot the
// caller runs CatchUp, which applies every change after it: a snapshot of
// any age restores to the current database state. Restore does both and
// then checks that the snapshot belongs to this database.
//
// Forgotten records. Forgetting erases a record's content from the
// database; a snapshot written before the forget still holds what the
// index derived from it (its terms, entities, content hash and vector).
// The engine reports ForgetPending after applying a forget, and the server
// rewrites the snapshot at once; a process that restores a snapshot and
// finds, on catch-up, records forgotten since, deletes the file. A written
// snapshot holds nothing of a forgotten record but its key (workspace and
// id, which the database's tombstone keeps too): the lexical snapshot is
// canonical (no tombstoned postings), the exact vector index stores live
// vectors only, and an HNSW graph that may still route through a forgotten
// record's vector (HNSW removal leaves a tombstone node with its vector)
// is not written at all — the snapshot then stores the live vectors and
// the graph is rebuilt from them on restore (slow once; the next snapshot
// holds the clean graph again).
//
// Format (little-endian; uv: unsigned varint, sv: zig-zag varint):
//
//	magic    [8]byte "MGENGSNP"
//	version  u32
//	head     section: snapHead
//	docs     section: the documents, keys and a string table
//	lexical  section: a lexical.Index snapshot
//	vectors  by head.kind: nothing, a vector.Exact or vector.HNSW snapshot,
//	         or live-vector chunk sections ending with an empty one
//	end      [8]byte "MGSNPEND"
//
// A section is u64 length, u32 CRC-32C of the payload, payload; every count
// inside is checked against the bytes that carry it before allocating. The
// lexical and vector snapshots carry their own checksums. Sessions, the
// filter codes and the candidate lists (filter.go) are rebuilt from the
// documents.

// Snapshot errors. Any error from ReadSnapshot, LoadSnapshot or Restore
// means: discard the engine and Load a new one.
var (
	// ErrSnapshotCorrupt: the snapshot is truncated or damaged.
	ErrSnapshotCorrupt = errors.New("retrieve: corrupt index snapshot")
	// ErrSnapshotMismatch: the snapshot is intact but cannot be used here:
	// another format version, analyser, embedder model or dimension,
	// vector index kind or HNSW configuration, or another database.
	ErrSnapshotMismatch = errors.New("retrieve: index snapshot does not match")
	// ErrSnapshotForeign (with ErrSnapshotMismatch): the snapshot is not of
	// this database, or not of its present history (it was replaced, or
	// restored from an older copy). It will never be usable here.
	ErrSnapshotForeign = errors.New("retrieve: index snapshot of another database")
)

const (
	snapVersion = 4 // 4: the filter's agent is the writer's principal id, not its name
	maxHead     = 1 << 20
	maxSection  = 1 << 40
	// sectionChunk is the most a section read allocates beyond the bytes
	// received so far.
	sectionChunk = 1 << 20
	// liveChunk is the number of vectors per live-vector section.
	liveChunk = 4096
)

// Vector index kinds in a snapshot.
const (
	kindNone  = 0
	kindExact = 1
	kindHNSW  = 2
	kindLive  = 3 // live vectors; the HNSW graph is rebuilt on read
)

var (
	snapMagic  = [8]byte{'M', 'G', 'E', 'N', 'G', 'S', 'N', 'P'}
	snapEnd    = [8]byte{'M', 'G', 'S', 'N', 'P', 'E', 'N', 'D'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

func snapCorrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSnapshotCorrupt}, args...)...)
}

func snapMismatch(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSnapshotMismatch}, args...)...)
}

func snapForeign(format string, args ...any) error {
	return fmt.Errorf("%w: %w: "+format, append([]any{ErrSnapshotMismatch, ErrSnapshotForeign}, args...)...)
}

// ---- bookkeeping --------------------------------------------------------------

// mark is what a snapshot reflects, to tell whether the engine moved on.
type mark struct {
	seq     int64 // change position
	vectors int   // vectors held (the embedding job adds some without a change)
	dead    int   // key slots of forgotten records
}

// persistState is an engine's snapshot bookkeeping. It lives beside the
// Engine, keyed weakly by it, so the snapshot code stays in this file.
type persistState struct {
	save sync.Mutex // serialises SaveSnapshot

	mu    sync.Mutex
	base  mark // of the snapshot last saved or loaded
	saved bool // base is set
	// graph is the HNSW index graphBase describes: when it was built or
	// restored clean, graphBase key slots were dead, and none of them has
	// a node in it. More dead slots than that may mean tombstone nodes that
	// still hold a forgotten record's vector.
	graph     vectorIndex
	graphBase int
	// The dead-slot count of SnapshotStatus, for an engine of this shape
	// (document slots, lexical documents).
	shape     [2]int
	shapeOK   bool
	shapeDead int
}

var persistStates sync.Map // weak.Pointer[Engine] → *persistState

func (e *Engine) persist() *persistState {
	k := weak.Make(e)
	if v, ok := persistStates.Load(k); ok {
		return v.(*persistState)
	}
	v, loaded := persistStates.LoadOrStore(k, &persistState{})
	if !loaded {
		runtime.AddCleanup(e, func(k weak.Pointer[Engine]) { persistStates.Delete(k) }, k)
	}
	return v.(*persistState)
}

// markLocked describes the current state; the caller holds e.mu.
func (e *Engine) markLocked() mark {
	m := mark{seq: e.changeSeq, dead: e.deadLocked()}
	if e.vecs != nil {
		m.vectors = e.vecs.Len()
	}
	return m
}

func (e *Engine) deadLocked() int {
	n := 0
	for i := range e.docs {
		if !e.docs[i].alive() {
			n++
		}
	}
	return n
}

// SnapshotStatus describes the engine relative to its last snapshot.
type SnapshotStatus struct {
	// Saved: a snapshot was saved or loaded by this engine.
	Saved bool
	// Dirty: the indexes changed since (always true when not Saved).
	Dirty bool
	// Forgotten counts records forgotten since: the snapshot file still
	// holds their derived data and should be rewritten promptly.
	Forgotten int
	// Seq is the change-log position the engine has applied.
	Seq int64
}

// SnapshotStatus reports whether the indexes changed since the snapshot
// last saved (SaveSnapshot) or loaded (ReadSnapshot, LoadSnapshot).
func (e *Engine) SnapshotStatus() SnapshotStatus {
	ps := e.persist()
	e.mu.RLock()
	// Counting dead slots walks every document; a forget changes the
	// lexical index's document count (and a new record the number of
	// slots), so the last count serves while those stand still.
	m := mark{seq: e.changeSeq}
	if e.vecs != nil {
		m.vectors = e.vecs.Len()
	}
	shape := [2]int{len(e.docs), e.lex.Len()}
	ps.mu.Lock()
	if ps.shape != shape || !ps.shapeOK {
		ps.shape, ps.shapeOK, ps.shapeDead = shape, true, e.deadLocked()
	}
	m.dead = ps.shapeDead
	ps.mu.Unlock()
	e.mu.RUnlock()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	st := SnapshotStatus{Saved: ps.saved, Seq: m.seq}
	st.Dirty = !ps.saved || m != ps.base
	if ps.saved && m.dead > ps.base.dead {
		st.Forgotten = m.dead - ps.base.dead
	}
	return st
}

// Dirty reports whether the indexes changed since the last snapshot saved
// or loaded, or none was.
func (e *Engine) Dirty() bool { return e.SnapshotStatus().Dirty }

// ForgetPending reports whether records were forgotten since the last
// snapshot saved or loaded: the snapshot file still holds their terms and
// vectors, and should be rewritten (SaveSnapshot) or deleted promptly.
func (e *Engine) ForgetPending() bool { return e.SnapshotStatus().Forgotten > 0 }

// ---- sections -------------------------------------------------------------------

func writeSection(w io.Writer, payload []byte) error {
	var hdr [12]byte
	binary.LittleEndian.PutUint64(hdr[0:], uint64(len(payload)))
	binary.LittleEndian.PutUint32(hdr[8:], crc32.Checksum(payload, castagnoli))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return snapCorrupt("truncated")
	}
	return err
}

// readSection reads and verifies one section, allocating as the bytes
// arrive (never more than sectionChunk ahead of them).
func readSection(r io.Reader, limit uint64) ([]byte, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, readErr(err)
	}
	n := binary.LittleEndian.Uint64(hdr[0:])
	if n > limit || n > math.MaxInt {
		return nil, snapCorrupt("section of %d bytes", n)
	}
	// A reader that knows how many bytes it has left allows a section
	// that fits to be read into one allocation; otherwise the buffer
	// grows as the bytes arrive.
	first := min(int(n), sectionChunk)
	if sr, ok := r.(*sizedReader); ok && int64(n) <= sr.left {
		first = int(n)
	}
	buf := make([]byte, 0, first)
	for len(buf) < int(n) {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(int(n)-len(buf), len(buf)))
		}
		m := min(int(n), cap(buf)) - len(buf)
		k, err := io.ReadFull(r, buf[len(buf):len(buf)+m])
		buf = buf[:len(buf)+k]
		if err != nil {
			return nil, readErr(err)
		}
	}
	if crc32.Checksum(buf, castagnoli) != binary.LittleEndian.Uint32(hdr[8:]) {
		return nil, snapCorrupt("section checksum mismatch")
	}
	return buf, nil
}

// sizedReader is a reader that knows how many bytes remain (a file's).
type sizedReader struct {
	r    io.Reader
	left int64
}

func (s *sizedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.left -= int64(n)
	return n, err
}

// ---- head -----------------------------------------------------------------------

// snapHead describes a snapshot; it is read first, so a snapshot for
// another configuration is rejected before its bulk is read.
type snapHead struct {
	mark
	model     string
	dim       int
	kind      uint8
	hnsw      vector.HNSWConfig // Options.HNSW the vector index was built with
	graphBase int
	docs      int // key slots
	alive     int
	written   time.Time
}

func (h *snapHead) encode() []byte {
	var b []byte
	b = binary.AppendVarint(b, h.seq)
	b = binary.AppendUvarint(b, uint64(h.vectors))
	b = binary.AppendUvarint(b, uint64(h.dead))
	b = binary.AppendUvarint(b, uint64(len(h.model)))
	b = append(b, h.model...)
	b = binary.AppendUvarint(b, uint64(h.dim))
	b = append(b, h.kind)
	b = binary.AppendVarint(b, int64(h.hnsw.M))
	b = binary.AppendVarint(b, int64(h.hnsw.EfConstruction))
	b = binary.AppendVarint(b, int64(h.hnsw.EfSearch))
	b = binary.AppendVarint(b, h.hnsw.Seed)
	b = binary.AppendUvarint(b, uint64(h.graphBase))
	b = binary.AppendUvarint(b, uint64(h.docs))
	b = binary.AppendUvarint(b, uint64(h.alive))
	b = binary.AppendVarint(b, h.written.UnixMicro())
	return b
}

func decodeHead(p []byte) (snapHead, error) {
	d := snapio.NewReader(p, snapCorrupt)
	var h snapHead
	h.seq = d.Varint()
	vectors, dead := d.Uvarint(), d.Uvarint()
	h.model = d.Str(maxHead)
	dim := d.Uvarint()
	h.kind = d.U8()
	h.hnsw = vector.HNSWConfig{M: int(d.Varint()), EfConstruction: int(d.Varint()), EfSearch: int(d.Varint()), Seed: d.Varint()}
	graphBase, docs, alive := d.Uvarint(), d.Uvarint(), d.Uvarint()
	h.written = time.UnixMicro(d.Varint())
	if d.Err != nil {
		return h, d.Err
	}
	if d.Rest() != 0 || h.seq < 0 || h.kind > kindLive || dim > 1<<16 || docs >= math.MaxUint32 ||
		alive > docs || dead != docs-alive || vectors > alive || graphBase > dead {
		return h, snapCorrupt("head")
	}
	h.vectors, h.dead, h.dim = int(vectors), int(dead), int(dim)
	h.graphBase, h.docs, h.alive = int(graphBase), int(docs), int(alive)
	return h, nil
}

// ---- write ----------------------------------------------------------------------

// WriteSnapshot writes the engine's state to w (see "Snapshots" above). It
// holds the read lock while it runs, so the state is consistent with the
// change position it records: searches continue, writes wait. Unlike
// SaveSnapshot it does not count as a saved snapshot for SnapshotStatus.
func (e *Engine) WriteSnapshot(w io.Writer) error {
	_, err := e.writeSnapshot(w)
	return err
}

func (e *Engine) writeSnapshot(w io.Writer) (mark, error) {
	ps := e.persist()
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.keyTab.n != len(e.docs) || len(e.docs) >= math.MaxUint32 {
		return mark{}, fmt.Errorf("retrieve: snapshot: %d keys for %d documents", e.keyTab.n, len(e.docs))
	}
	h := snapHead{mark: e.markLocked(), docs: len(e.docs), hnsw: e.opts.HNSW, written: time.Now()}
	h.alive = h.docs - h.dead
	if emb := e.opts.Embedder; emb != nil {
		h.model, h.dim = emb.Model(), emb.Dim()
	}
	switch v := e.vecs.(type) {
	case nil:
		h.kind = kindNone
	case *vector.Exact:
		h.kind = kindExact
	case *vector.HNSW:
		h.kind = kindHNSW
		ps.mu.Lock()
		if ps.graph == e.vecs {
			h.graphBase = ps.graphBase
		}
		ps.mu.Unlock()
		h.graphBase = min(h.graphBase, h.dead)
		if v.Deleted() > 0 && h.dead > h.graphBase {
			h.kind = kindLive // the graph may hold forgotten vectors
		}
	default:
		return mark{}, fmt.Errorf("retrieve: snapshot: unknown vector index %T", v)
	}
	if h.kind != kindNone && h.model == "" {
		return mark{}, errors.New("retrieve: snapshot: vectors without an embedder")
	}
	var hdr [12]byte
	copy(hdr[:], snapMagic[:])
	binary.LittleEndian.PutUint32(hdr[8:], snapVersion)
	if _, err := w.Write(hdr[:]); err != nil {
		return mark{}, err
	}
	if err := writeSection(w, h.encode()); err != nil {
		return mark{}, err
	}
	// The lexical index is encoded while the documents are (both only
	// read what the lock held here keeps still).
	var lex bytes.Buffer
	lexc := make(chan error, 1)
	go func() {
		_, err := e.lex.WriteTo(&lex)
		lexc <- err
	}()
	docs, err := e.encodeDocsLocked()
	if lerr := <-lexc; err == nil {
		err = lerr
	}
	if err != nil {
		return mark{}, err
	}
	if err := writeSection(w, docs); err != nil {
		return mark{}, err
	}
	if err := writeSection(w, lex.Bytes()); err != nil {
		return mark{}, err
	}
	switch h.kind {
	case kindExact, kindHNSW:
		if _, err := e.vecs.(io.WriterTo).WriteTo(w); err != nil {
			return mark{}, err
		}
	case kindLive:
		if err := e.writeLiveLocked(w, h.dim, h.vectors); err != nil {
			return mark{}, err
		}
	}
	if _, err := w.Write(snapEnd[:]); err != nil {
		return mark{}, err
	}
	return h.mark, nil
}

// writeLiveLocked writes the vectors of live documents in key order, in
// sections of liveChunk: key u32, dim float32s each; an empty section ends.
func (e *Engine) writeLiveLocked(w io.Writer, dim, want int) error {
	buf := make([]byte, 0, liveChunk*(4+4*dim))
	n, total := 0, 0
	for key := range e.docs {
		if !e.docs[key].alive() {
			continue
		}
		v, ok := e.vecs.Vector(uint32(key))
		if !ok {
			continue
		}
		total++
		buf = binary.LittleEndian.AppendUint32(buf, uint32(key))
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		if n++; n == liveChunk {
			if err := writeSection(w, buf); err != nil {
				return err
			}
			buf, n = buf[:0], 0
		}
	}
	if total != want {
		return fmt.Errorf("retrieve: snapshot: %d vectors of live documents, index holds %d", total, want)
	}
	if n > 0 {
		if err := writeSection(w, buf); err != nil {
			return err
		}
	}
	return writeSection(w, nil)
}

// Document flags.
const (
	docAlive = 1 << iota
	docUUID  // id stored as 16 bytes
	docHex   // content hash stored as 32 bytes
)

// strTable numbers the strings of the documents. Consecutive documents
// mostly share them, so each field remembers its last string.
type strTable struct {
	idx   map[string]uint32
	list  []string
	bytes int
}

type strField struct {
	last string
	idx  uint32
	ok   bool
}

func (t *strTable) id(f *strField, s string) uint32 {
	if f.ok && f.last == s {
		return f.idx
	}
	i, ok := t.idx[s]
	if !ok {
		i = uint32(len(t.list))
		t.idx[s] = i
		t.list = append(t.list, s)
		t.bytes += len(s)
	}
	f.last, f.idx, f.ok = s, i, true
	return i
}

// encodeDocsLocked encodes the documents:
//
//	strings  uv count, uv length each, then the bytes
//	docs     uv count, then per key slot a flags byte and
//	  live:  uv string ids of ws, type, status, access, agent, category and
//	         the five scope keys; id (16 bytes, or uv length + bytes);
//	         sv validFrom, validUntil, invalidated, eventTime; u32
//	         confidence bits; content hash (32 bytes, or uv length + bytes);
//	         uv entity count and a string id each; sv version; uv word
//	         count and the words (ascending): the first, then differences
//	  dead:  uv length + bytes of its key (workspace NUL id)
//
// A field added to doc must be added here (TestSnapshotCoversDocFields).
func (e *Engine) encodeDocsLocked() ([]byte, error) {
	// The string table: the code table's strings that live documents
	// use, numbered in order of first use, then the enumerations' values.
	x := &e.fx
	tabOf := make([]uint32, len(x.names)) // code → string id + 1
	tab := []string{""}
	tabOf[0] = 1
	bytes := 0
	sid := func(c uint32) uint32 {
		if tabOf[c] == 0 {
			tab = append(tab, x.names[c])
			bytes += len(x.names[c])
			tabOf[c] = uint32(len(tab))
		}
		return tabOf[c] - 1
	}
	var oddStr map[string]uint32
	strID := func(s string) uint32 { // a value outside the enumerations
		if c, ok := x.codes[s]; ok || s == "" {
			return sid(c)
		}
		if i, ok := oddStr[s]; ok {
			return i
		}
		if oddStr == nil {
			oddStr = map[string]uint32{}
		}
		tab = append(tab, s)
		bytes += len(s)
		oddStr[s] = uint32(len(tab) - 1)
		return uint32(len(tab) - 1)
	}
	var enumIDs [3][]uint32 // enumeration code → string id
	for i, vals := range [][]string{enumStrings(typeEnum), enumStrings(statusEnum), enumStrings(accessEnum)} {
		enumIDs[i] = make([]uint32, len(vals)+1)
		for j, v := range vals {
			enumIDs[i][j+1] = strID(v)
		}
	}
	ids := make([]uint32, 0, 11*len(e.docs))
	for i := range e.docs {
		d, f := &e.docs[i], &x.filt[i]
		if !d.alive() {
			continue
		}
		var t, st, ac uint32
		if d.flags&dOddEnum != 0 {
			o := e.odd[uint32(i)]
			t, st, ac = strID(string(o.typ)), strID(string(o.status)), strID(string(o.access))
		} else {
			t, st, ac = enumIDs[0][f.typ], enumIDs[1][f.status], enumIDs[2][f.access]
		}
		ids = append(ids, sid(d.ws), t, st, ac, sid(f.agent), sid(f.category),
			sid(f.scope[0]), sid(f.scope[1]), sid(f.scope[2]), sid(f.scope[3]), sid(f.scope[4]))
		for _, c := range e.ents.get(d.ents) {
			sid(c)
		}
	}
	buf := make([]byte, 0, 16+3*len(tab)+bytes+len(e.docs)*90+4*len(e.words.v))
	buf = binary.AppendUvarint(buf, uint64(len(tab)))
	for _, s := range tab {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
	}
	for _, s := range tab {
		buf = append(buf, s...)
	}
	buf = binary.AppendUvarint(buf, uint64(len(e.docs)))
	for i := range e.docs {
		d := &e.docs[i]
		if !d.alive() {
			ws, id := x.names[d.ws], e.idOf(uint32(i))
			buf = append(buf, 0)
			buf = binary.AppendUvarint(buf, uint64(len(ws)+1+len(id)))
			buf = append(buf, ws...)
			buf = append(buf, 0)
			buf = append(buf, id...)
			continue
		}
		flags := byte(docAlive)
		if d.flags&dOddID == 0 {
			flags |= docUUID
		}
		if d.flags&dOddSHA == 0 {
			flags |= docHex
		}
		buf = append(buf, flags)
		for _, x := range ids[:11] {
			buf = binary.AppendUvarint(buf, uint64(x))
		}
		ids = ids[11:]
		if flags&docUUID != 0 {
			buf = append(buf, d.id[:]...)
		} else {
			id := e.odd[uint32(i)].id
			buf = binary.AppendUvarint(buf, uint64(len(id)))
			buf = append(buf, id...)
		}
		buf = binary.AppendVarint(buf, d.validFrom)
		buf = binary.AppendVarint(buf, d.validUntil)
		buf = binary.AppendVarint(buf, d.invalidated)
		buf = binary.AppendVarint(buf, d.eventTime)
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x.filt[i].conf))
		if flags&docHex != 0 {
			buf = append(buf, d.sha[:]...)
		} else {
			sha := e.odd[uint32(i)].sha
			buf = binary.AppendUvarint(buf, uint64(len(sha)))
			buf = append(buf, sha...)
		}
		ents := e.ents.get(d.ents)
		buf = binary.AppendUvarint(buf, uint64(len(ents)))
		for _, c := range ents {
			buf = binary.AppendUvarint(buf, uint64(sid(c)))
		}
		buf = binary.AppendVarint(buf, d.version)
		words := e.words.get(d.words)
		buf = binary.AppendUvarint(buf, uint64(len(words)))
		prev := uint32(0)
		for _, w := range words {
			buf = binary.AppendUvarint(buf, uint64(w-prev))
			prev = w
		}
	}
	return buf, nil
}

func enumStrings[T ~string](enum []T) []string {
	out := make([]string, len(enum))
	for i, v := range enum {
		out[i] = string(v)
	}
	return out
}

const hexDigits = "0123456789abcdef"

// unhexTab maps a lower-case hex digit to its value, anything else to 0xff
// (upper case is not canonical: such strings are kept as text).
var unhexTab = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range 16 {
		t[hexDigits[i]] = byte(i)
	}
	return t
}()

// unhexInto decodes lower-case hex s into dst if it is exactly that long.
func unhexInto(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	bad := byte(0)
	for i := range dst {
		hi, lo := unhexTab[s[2*i]], unhexTab[s[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo&15
	}
	return bad&0xf0 == 0
}

// packUUID packs a canonical lower-case UUID.
func packUUID(s string, dst *[16]byte) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	return unhexInto(dst[0:4], s[0:8]) && unhexInto(dst[4:6], s[9:13]) && unhexInto(dst[6:8], s[14:18]) &&
		unhexInto(dst[8:10], s[19:23]) && unhexInto(dst[10:16], s[24:36])
}

func appendHex(b, src []byte) []byte {
	n := len(b)
	b = slices.Grow(b, 2*len(src))[:n+2*len(src)]
	dst := b[n:]
	for i, c := range src {
		dst[2*i], dst[2*i+1] = hexDigits[c>>4], hexDigits[c&15]
	}
	return b
}

func appendUUID(b, u []byte) []byte {
	b = appendHex(b, u[0:4])
	b = append(b, '-')
	b = appendHex(b, u[4:6])
	b = append(b, '-')
	b = appendHex(b, u[6:8])
	b = append(b, '-')
	b = appendHex(b, u[8:10])
	b = append(b, '-')
	return appendHex(b, u[10:16])
}

// ---- save / load files ------------------------------------------------------------

// SaveSnapshot writes a snapshot to path atomically: to a temporary file in
// the same directory (mode 0600), fsynced, then renamed over path, so a
// crash leaves the previous snapshot or the new one, never a torn file.
// Saves are serialised. Run it after CatchUp, so the file reflects every
// forget the database has seen.
func (e *Engine) SaveSnapshot(path string) error { return e.SaveSnapshotIf(path, nil) }

// SaveSnapshotIf is SaveSnapshot with a last word: once the new file is
// written, and before it replaces the old one, publish (if not nil) is
// called with the change-log position the file reflects; if it returns an
// error, the new file is deleted and the error returned. The server uses
// it to never publish a snapshot that holds a record another process
// forgot meanwhile.
func (e *Engine) SaveSnapshotIf(path string, publish func(seq int64) error) error {
	ps := e.persist()
	ps.save.Lock()
	defer ps.save.Unlock()
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	removeStaleTemps(dir, base)
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	m, err := e.writeSnapshot(bw)
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if publish != nil {
		if err := publish(m.seq); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(dir); err == nil { // make the rename durable
		d.Sync()
		d.Close()
	}
	ps.mu.Lock()
	ps.base, ps.saved = m, true
	ps.mu.Unlock()
	return nil
}

// removeStaleTemps deletes temporary files an interrupted save left behind.
// Recent ones may belong to a save in progress in another process.
func removeStaleTemps(dir, base string) {
	olds, _ := filepath.Glob(filepath.Join(dir, "."+base+".*.tmp"))
	for _, p := range olds {
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(p)
		}
	}
}

// LoadSnapshot fills an empty engine from the snapshot file at path (see
// ReadSnapshot). A missing file gives an error satisfying
// errors.Is(err, fs.ErrNotExist).
func (e *Engine) LoadSnapshot(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	if err := e.ReadSnapshot(&sizedReader{r: br, left: fi.Size()}); err != nil {
		return err
	}
	if _, err := br.ReadByte(); err != io.EOF {
		e.log.Warn("index snapshot has trailing bytes", "path", path)
	}
	return nil
}

// ---- read -----------------------------------------------------------------------

// ReadSnapshot fills an empty engine, created with the Options of the
// engine that wrote the snapshot, from a snapshot written by WriteSnapshot
// or SaveSnapshot. It rejects (ErrSnapshotMismatch) a snapshot of another
// format version or analyser, of another embedder model or dimension, of
// another vector index kind (auto mode: the kind Load would choose for
// its vector count) or HNSW configuration; and a damaged one
// (ErrSnapshotCorrupt). On error the engine is left empty. Afterwards run
// CatchUp to apply the changes made after the snapshot, or use Restore.
func (e *Engine) ReadSnapshot(r io.Reader) error {
	e.mu.RLock()
	empty := len(e.docs) == 0 && e.keyTab.n == 0 && e.vecs == nil && e.lex.Len() == 0
	e.mu.RUnlock()
	if !empty {
		return errors.New("retrieve: ReadSnapshot needs an empty engine")
	}
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return readErr(err)
	}
	if [8]byte(hdr[:8]) != snapMagic {
		return snapCorrupt("not an index snapshot")
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != snapVersion {
		return snapMismatch("format version %d, this build reads %d", v, snapVersion)
	}
	hp, err := readSection(r, maxHead)
	if err != nil {
		return err
	}
	h, err := decodeHead(hp)
	if err != nil {
		return err
	}
	if err := e.checkHead(&h); err != nil {
		return err
	}

	// The documents are decoded (and sessions, filter codes and candidate
	// lists rebuilt) while the indexes are read.
	dp, err := readSection(r, maxSection)
	if err != nil {
		return err
	}
	type docsResult struct {
		s   *docState
		err error
	}
	docc := make(chan docsResult, 1)
	go func() {
		s, err := decodeDocs(dp, h.docs)
		docc <- docsResult{s, err}
	}()
	lex, vecs, err := e.readIndexes(r, &h)
	res := <-docc
	if err == nil {
		err = res.err
	}
	if err != nil {
		return err
	}
	s := res.s
	// The indexes must agree with the documents.
	alive := 0
	for key := range s.docs {
		if s.docs[key].alive() {
			alive++
		}
		if s.docs[key].alive() != lex.Has(uint32(key)) {
			return snapCorrupt("key %d: document and lexical index disagree", key)
		}
	}
	if alive != h.alive || lex.Len() != alive {
		return snapCorrupt("%d live documents, lexical index holds %d, head says %d", alive, lex.Len(), h.alive)
	}
	if vecs != nil && vecs.Len() != h.vectors {
		return snapCorrupt("%d vectors, head says %d", vecs.Len(), h.vectors)
	}

	e.mu.Lock()
	if len(e.docs) != 0 || e.keyTab.n != 0 || e.vecs != nil || e.lex.Len() != 0 {
		e.mu.Unlock()
		return errors.New("retrieve: engine changed during ReadSnapshot")
	}
	e.records, e.sessions, e.sessBits, e.fx = s.records, s.sessions, s.sessBits, s.fx
	e.lex = lex
	e.vecs, e.approx = nil, false
	if vecs != nil {
		e.vecs = vecs
		_, e.approx = vecs.(*vector.HNSW)
	}
	e.changeSeq = h.seq
	e.mu.Unlock()

	ps := e.persist()
	ps.mu.Lock()
	ps.base, ps.saved = h.mark, true
	ps.graph, ps.graphBase = nil, 0
	if h.kind == kindHNSW {
		ps.graph, ps.graphBase = vecs, h.graphBase
	} else if h.kind == kindLive {
		ps.graph, ps.graphBase = vecs, h.dead // rebuilt from live vectors only
	}
	ps.mu.Unlock()
	return nil
}

// checkHead rejects a snapshot this engine's configuration cannot use.
func (e *Engine) checkHead(h *snapHead) error {
	model, dim := "", 0
	if emb := e.opts.Embedder; emb != nil {
		model, dim = emb.Model(), emb.Dim()
	}
	if h.model != model || (model != "" && h.dim != dim) {
		return snapMismatch("built with embedder %q (%d dimensions), configured %q (%d)", h.model, h.dim, model, dim)
	}
	if h.kind == kindNone {
		if h.vectors != 0 {
			return snapCorrupt("vectors without an index")
		}
		return nil
	}
	if h.model == "" {
		return snapCorrupt("vectors without an embedder")
	}
	want := e.opts.Vectors
	if want == VectorAuto {
		want = VectorExact
		if h.vectors > e.opts.AutoThreshold {
			want = VectorApprox
		}
	}
	got := VectorExact
	if h.kind == kindHNSW || h.kind == kindLive {
		got = VectorApprox
		if h.hnsw != e.opts.HNSW {
			return snapMismatch("HNSW built with %+v, configured %+v", h.hnsw, e.opts.HNSW)
		}
	}
	if got != want {
		return snapMismatch("vector index %s, configuration wants %s for %d vectors", got, want, h.vectors)
	}
	return nil
}

// readIndexes reads the lexical and vector snapshots.
// The lexical section is decoded while the vectors are read.
func (e *Engine) readIndexes(r io.Reader, h *snapHead) (*lexical.Index, vectorIndex, error) {
	lp, err := readSection(r, maxSection)
	if err != nil {
		return nil, nil, err
	}
	type lexResult struct {
		ix  *lexical.Index
		err error
	}
	lexc := make(chan lexResult, 1)
	go func() {
		ix, err := decodeLexical(lp)
		lexc <- lexResult{ix, err}
	}()
	vecs, err := e.readVectors(r, h)
	res := <-lexc
	if err == nil {
		err = res.err
	}
	if err != nil {
		return nil, nil, err
	}
	return res.ix, vecs, nil
}

func decodeLexical(p []byte) (*lexical.Index, error) {
	lex, err := lexical.DecodeIndex(p)
	switch {
	case errors.Is(err, lexical.ErrIncompatible):
		return nil, fmt.Errorf("%w: %w", ErrSnapshotMismatch, err)
	case errors.Is(err, lexical.ErrCorrupt):
		return nil, fmt.Errorf("%w: %w", ErrSnapshotCorrupt, err)
	case err != nil:
		return nil, err
	}
	if lex.Options() != lexical.New(lexical.DefaultOptions()).Options() {
		return nil, snapMismatch("lexical options %+v", lex.Options())
	}
	return lex, nil
}

// readVectors reads the vector index and the end marker.
func (e *Engine) readVectors(r io.Reader, h *snapHead) (vectorIndex, error) {
	var vecs vectorIndex
	var dim int
	switch h.kind {
	case kindExact:
		x, err := vector.ReadExact(r)
		if err != nil {
			return nil, vectorErr(err)
		}
		vecs, dim = x, x.Dim()
	case kindHNSW:
		g, err := vector.ReadHNSW(r)
		if err != nil {
			return nil, vectorErr(err)
		}
		vecs, dim = g, g.Dim()
	case kindLive:
		if h.dim == 0 {
			return nil, snapCorrupt("dimension 0")
		}
		e.log.Info("rebuilding the HNSW graph from the snapshot's vectors", "vectors", h.vectors)
		g := vector.NewHNSW(h.dim, e.opts.HNSW)
		if err := readLive(r, h, g); err != nil {
			return nil, err
		}
		vecs, dim = g, h.dim
	}
	if vecs != nil && dim != h.dim {
		return nil, snapCorrupt("vectors of dimension %d, head says %d", dim, h.dim)
	}
	var end [8]byte
	if _, err := io.ReadFull(r, end[:]); err != nil {
		return nil, readErr(err)
	}
	if end != snapEnd {
		return nil, snapCorrupt("bad end marker")
	}
	return vecs, nil
}

func vectorErr(err error) error {
	if errors.Is(err, vector.ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrSnapshotCorrupt, err)
	}
	return err
}

// readLive inserts the live-vector sections into g.
func readLive(r io.Reader, h *snapHead, g *vector.HNSW) error {
	rec := 4 + 4*h.dim
	vec := make([]float32, h.dim)
	seen, prev := 0, int64(-1)
	for {
		p, err := readSection(r, uint64(liveChunk*rec))
		if err != nil {
			return err
		}
		if len(p) == 0 {
			break
		}
		if len(p)%rec != 0 {
			return snapCorrupt("live vector section of %d bytes", len(p))
		}
		for ; len(p) > 0; p = p[rec:] {
			key := binary.LittleEndian.Uint32(p)
			if int64(key) <= prev || uint64(key) >= uint64(h.docs) || seen >= h.vectors {
				return snapCorrupt("live vector key %d", key)
			}
			prev = int64(key)
			seen++
			for i := range vec {
				vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4+4*i:]))
			}
			g.Add(key, vec)
		}
	}
	if seen != h.vectors {
		return snapCorrupt("%d live vectors, head says %d", seen, h.vectors)
	}
	return nil
}

// docState is the document half of an engine, decoded from a snapshot.
type docState struct {
	records
	sessions map[sessKey][]uint32
	sessBits lexical.Bits
	fx       filterIndex
}

func decodeDocs(p []byte, ndocs int) (*docState, error) {
	d := snapio.NewReader(p, snapCorrupt)
	nstr := d.Uvarint()
	if nstr == 0 || nstr > d.Rest() {
		return nil, snapCorrupt("%d strings", nstr)
	}
	lens := make([]uint32, nstr)
	total := uint64(0)
	for i := range lens {
		n := d.Uvarint()
		if n > d.Rest() {
			d.Fail("string length")
		}
		lens[i] = uint32(n)
		total += n
	}
	if d.Err != nil {
		return nil, d.Err
	}
	if total > d.Rest() {
		return nil, snapCorrupt("strings of %d bytes", total)
	}
	blob := string(d.Bytes(int(total)))
	tab := make([]string, nstr)
	off := 0
	for i, n := range lens {
		tab[i] = blob[off : off+int(n)]
		off += int(n)
	}
	if tab[0] != "" {
		return nil, snapCorrupt("string table")
	}
	if n := d.Uvarint(); n != uint64(ndocs) || n > d.Rest()/3 { // a dead slot takes 3 bytes or more
		return nil, snapCorrupt("%d documents, head says %d", n, ndocs)
	}

	s := &docState{records: newRecords(), fx: newFilterIndex()}
	s.docs = make([]doc, ndocs)
	fx := &s.fx
	fx.filt = make([]fdoc, ndocs)
	// The codes of the strings, assigned on first use; strings are copied
	// out of the table's blob so that it is not kept alive by a few.
	tcode := make([]uint32, nstr)
	code := func(i uint64) uint32 {
		if i >= nstr {
			d.Fail("string id")
			return 0
		}
		if tcode[i] == 0 && i != 0 {
			tcode[i] = fx.code(strings.Clone(tab[i]))
		}
		return tcode[i]
	}
	// The enumeration codes of the strings (0xff: not computed yet).
	var ecode [3][]uint8
	for i := range ecode {
		ecode[i] = make([]uint8, nstr)
		for j := range ecode[i] {
			ecode[i][j] = 0xff
		}
	}
	enum := func(which int, i uint64) uint8 {
		if i >= nstr {
			d.Fail("string id")
			return 0
		}
		c := ecode[which][i]
		if c == 0xff {
			switch which {
			case 0:
				c = enumCode(typeEnum, memory.Type(tab[i]))
			case 1:
				c = enumCode(statusEnum, memory.Status(tab[i]))
			default:
				c = enumCode(accessEnum, memory.Access(tab[i]))
			}
			ecode[which][i] = c
		}
		return c
	}
	// The word sets' arena: a word takes at least one byte of the section,
	// usually four or five.
	words := make([]uint32, 1, 1+d.Rest()/4) // offset 0 is none
	var ents []uint32
	var ecodes []uint32
	for i := range s.docs {
		key := uint32(i)
		x := &s.docs[i]
		flags := d.U8()
		if flags&docAlive == 0 {
			if flags != 0 {
				d.Fail("flags")
			}
			n := d.Uvarint()
			name := d.Bytes(int(min(n, d.Rest()+1)))
			if d.Err != nil {
				return nil, d.Err
			}
			ws, id, ok := bytes.Cut(name, []byte{0})
			if !ok {
				return nil, snapCorrupt("key %d has no name", i)
			}
			x.ws = fx.code(string(ws))
			if !packUUID(string(id), &x.id) {
				x.flags = dOddID
				s.odd[key] = &oddDoc{id: string(id)}
			}
			continue
		}
		if flags >= docHex<<1 {
			d.Fail("flags")
		}
		f := &fx.filt[i]
		x.flags = dAlive
		x.ws = code(d.Uvarint())
		f.ws = x.ws
		ti, si, ai := d.Uvarint(), d.Uvarint(), d.Uvarint()
		f.typ, f.status, f.access = enum(0, ti), enum(1, si), enum(2, ai)
		f.agent, f.category = code(d.Uvarint()), code(d.Uvarint())
		for j := range f.scope {
			f.scope[j] = code(d.Uvarint())
		}
		if d.Err != nil {
			return nil, d.Err
		}
		var o *oddDoc
		odd := func() *oddDoc {
			if o == nil {
				o = &oddDoc{}
				s.odd[key] = o
			}
			return o
		}
		if f.typ == 0 || f.status == 0 || f.access == 0 {
			x.flags |= dOddEnum
			oo := odd()
			oo.typ, oo.status, oo.access = memory.Type(tab[ti]), memory.Status(tab[si]), memory.Access(tab[ai])
		}
		if flags&docUUID != 0 {
			if b := d.Bytes(16); b != nil {
				x.id = [16]byte(b)
			}
		} else {
			n := d.Uvarint()
			if id := string(d.Bytes(int(min(n, d.Rest()+1)))); !packUUID(id, &x.id) {
				x.flags |= dOddID
				odd().id = id
			}
		}
		x.validFrom, x.validUntil, x.invalidated, x.eventTime = d.Varint(), d.Varint(), d.Varint(), d.Varint()
		f.conf = math.Float32frombits(d.U32())
		f.flags = timeFlags(x.invalidated, x.validFrom, x.validUntil)
		if flags&docHex != 0 {
			if b := d.Bytes(32); b != nil {
				x.sha = [32]byte(b)
			}
		} else {
			n := d.Uvarint()
			if sha := string(d.Bytes(int(min(n, d.Rest()+1)))); !unhexInto(x.sha[:], sha) {
				x.sha = [32]byte{}
				x.flags |= dOddSHA
				odd().sha = sha
			}
		}
		ne := d.Uvarint()
		if ne > d.Rest() {
			d.Fail("entities")
			ne = 0
		}
		ecodes = ecodes[:0]
		for range ne {
			ecodes = append(ecodes, code(d.Uvarint()))
		}
		if len(ecodes) > 0 {
			if len(ents) == 0 {
				ents = append(ents, 0)
			}
			x.ents = uint32(len(ents))
			ents = append(ents, uint32(len(ecodes)))
			ents = append(ents, ecodes...)
		}
		x.version = d.Varint()
		nw := d.Uvarint()
		if nw > d.Rest() {
			d.Fail("words")
			nw = 0
		}
		if nw > 0 {
			x.words = uint32(len(words))
			words = append(words, uint32(nw))
			w := uint64(0)
			for j := range nw {
				delta := d.Uvarint()
				if w += delta; (j > 0 && delta == 0) || w > math.MaxUint32 {
					d.Fail("words")
					break
				}
				words = append(words, uint32(w))
			}
			if len(words) >= math.MaxUint32 {
				d.Fail("words")
			}
		}
		if d.Err != nil {
			return nil, d.Err
		}
	}
	if d.Err != nil {
		return nil, d.Err
	}
	if d.Rest() != 0 {
		return nil, snapCorrupt("%d trailing bytes", d.Rest())
	}
	if len(words) > 1 {
		if cap(words) > len(words)+len(words)/8 {
			words = slices.Clone(words)
		}
		s.words.v = words
	}
	s.ents.v = ents
	if key, ok := s.rebuildKeys(); !ok {
		return nil, snapCorrupt("key %d twice", key)
	}
	s.rebuild()
	return s, nil
}

// rebuild derives the session lists and the candidate lists from the
// documents, as linkSession and fx.set would have built them.
func (s *docState) rebuild() {
	groups := map[sessKey][]uint32{}
	for key := range s.docs {
		f := &s.fx.filt[key]
		if f.typ == episodeCode && f.scope[4] != 0 {
			sk := sessKey{f.ws, f.scope[4]}
			groups[sk] = append(groups[sk], uint32(key))
		}
	}
	s.fx.rebuildLists()
	for _, list := range groups {
		slices.SortFunc(list, s.turnCompare)
		for _, k := range list {
			s.sessBits = setBit(s.sessBits, k)
		}
	}
	s.sessions = groups
}

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
func (e *Engine) Restore(ctx context.Context, st store.Reader, path string) (RestoreStats, error) {
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
func (e *Engine) verify(ctx context.Context, st store.Reader, changes []store.Change) error {
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
func (e *Engine) fillVectors(ctx context.Context, st store.Reader) (int, error) {
	emb := e.opts.Embedder
	if emb == nil {
		return 0, nil
	}
	e.mu.RLock()
	need := len(e.docs) - e.deadLocked()
	if e.vecs != nil {
		need -= e.vecs.Len()
	}
	// Newest first: documents written since the snapshot are the likely
	// ones, so the search usually stops early.
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
	e.mu.RUnlock()
	if len(lack) == 0 {
		return 0, nil
	}
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
	if filled == len(lack) {
		return filled, nil
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
	type kv struct {
		key uint32
		vec []float32
	}
	var pending []kv
	e.mu.RLock()
	err = st.ScanVectors(ctx, emb.Model(), func(ws, id string, vec []float32) error {
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
		return filled, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
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
