package retrieve

// Writing a snapshot: WriteSnapshot and the encoding of the documents,
// with the string-table and hex/UUID helpers it uses.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/memgate/memgate/internal/vector"
)

// ---- write ----------------------------------------------------------------------

// WriteSnapshot writes the engine's state to w (see "Snapshots" in
// snapshot.go). It holds the read lock while it runs, so the state is
// consistent with the change position it records: searches continue,
// writes wait. Unlike SaveSnapshot it does not count as a saved snapshot
// for SnapshotStatus.
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
	st := newSnapStrings(&e.fx)
	ids := e.docStringIDs(st)
	tab := st.tab
	buf := make([]byte, 0, 16+3*len(tab)+st.bytes+len(e.docs)*90+4*len(e.words.v))
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
			ws, id := e.fx.names[d.ws], e.idOf(uint32(i))
			buf = append(buf, 0)
			buf = binary.AppendUvarint(buf, uint64(len(ws)+1+len(id)))
			buf = append(buf, ws...)
			buf = append(buf, 0)
			buf = append(buf, id...)
			continue
		}
		buf = e.appendLiveDoc(buf, uint32(i), ids[:11], st)
		ids = ids[11:]
	}
	return buf, nil
}

// snapStrings builds a snapshot's string table: the code table's strings
// that live documents use, numbered in order of first use, then the
// values outside the enumerations.
type snapStrings struct {
	x      *filterIndex
	tabOf  []uint32 // code → string id + 1
	tab    []string
	bytes  int
	oddStr map[string]uint32
}

func newSnapStrings(x *filterIndex) *snapStrings {
	st := &snapStrings{x: x, tabOf: make([]uint32, len(x.names)), tab: []string{""}}
	st.tabOf[0] = 1
	return st
}

// sid is the string id of code c, added to the table on first use.
func (st *snapStrings) sid(c uint32) uint32 {
	if st.tabOf[c] == 0 {
		st.tab = append(st.tab, st.x.names[c])
		st.bytes += len(st.x.names[c])
		st.tabOf[c] = uint32(len(st.tab))
	}
	return st.tabOf[c] - 1
}

// strID is the string id of s, which may have no code (a value outside
// the enumerations).
func (st *snapStrings) strID(s string) uint32 {
	if c, ok := st.x.codes[s]; ok || s == "" {
		return st.sid(c)
	}
	if i, ok := st.oddStr[s]; ok {
		return i
	}
	if st.oddStr == nil {
		st.oddStr = map[string]uint32{}
	}
	st.tab = append(st.tab, s)
	st.bytes += len(s)
	st.oddStr[s] = uint32(len(st.tab) - 1)
	return uint32(len(st.tab) - 1)
}

// docStringIDs fills the string table from the live documents, the
// enumerations' values first, and returns the eleven string ids (ws,
// type, status, access, agent, category, five scope keys) of each live
// document in key order.
func (e *Engine) docStringIDs(st *snapStrings) []uint32 {
	x := &e.fx
	var enumIDs [3][]uint32 // enumeration code → string id
	for i, vals := range [][]string{enumStrings(typeEnum), enumStrings(statusEnum), enumStrings(accessEnum)} {
		enumIDs[i] = make([]uint32, len(vals)+1)
		for j, v := range vals {
			enumIDs[i][j+1] = st.strID(v)
		}
	}
	ids := make([]uint32, 0, 11*len(e.docs))
	for i := range e.docs {
		d, f := &e.docs[i], &x.filt[i]
		if !d.alive() {
			continue
		}
		var t, sta, ac uint32
		if d.flags&dOddEnum != 0 {
			o := e.odd[uint32(i)]
			t, sta, ac = st.strID(string(o.typ)), st.strID(string(o.status)), st.strID(string(o.access))
		} else {
			t, sta, ac = enumIDs[0][f.typ], enumIDs[1][f.status], enumIDs[2][f.access]
		}
		ids = append(ids, st.sid(d.ws), t, sta, ac, st.sid(f.agent), st.sid(f.category),
			st.sid(f.scope[0]), st.sid(f.scope[1]), st.sid(f.scope[2]), st.sid(f.scope[3]), st.sid(f.scope[4]))
		for _, c := range e.ents.get(d.ents) {
			st.sid(c)
		}
	}
	return ids
}

// appendLiveDoc appends the live document of key, whose eleven string
// ids are ids.
func (e *Engine) appendLiveDoc(buf []byte, key uint32, ids []uint32, st *snapStrings) []byte {
	d := &e.docs[key]
	flags := byte(docAlive)
	if d.flags&dOddID == 0 {
		flags |= docUUID
	}
	if d.flags&dOddSHA == 0 {
		flags |= docHex
	}
	buf = append(buf, flags)
	for _, x := range ids {
		buf = binary.AppendUvarint(buf, uint64(x))
	}
	if flags&docUUID != 0 {
		buf = append(buf, d.id[:]...)
	} else {
		id := e.odd[key].id
		buf = binary.AppendUvarint(buf, uint64(len(id)))
		buf = append(buf, id...)
	}
	buf = binary.AppendVarint(buf, d.validFrom)
	buf = binary.AppendVarint(buf, d.validUntil)
	buf = binary.AppendVarint(buf, d.invalidated)
	buf = binary.AppendVarint(buf, d.eventTime)
	buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(e.fx.filt[key].conf))
	if flags&docHex != 0 {
		buf = append(buf, d.sha[:]...)
	} else {
		sha := e.odd[key].sha
		buf = binary.AppendUvarint(buf, uint64(len(sha)))
		buf = append(buf, sha...)
	}
	ents := e.ents.get(d.ents)
	buf = binary.AppendUvarint(buf, uint64(len(ents)))
	for _, c := range ents {
		buf = binary.AppendUvarint(buf, uint64(st.sid(c)))
	}
	buf = binary.AppendVarint(buf, d.version)
	words := e.words.get(d.words)
	buf = binary.AppendUvarint(buf, uint64(len(words)))
	prev := uint32(0)
	for _, w := range words {
		buf = binary.AppendUvarint(buf, uint64(w-prev))
		prev = w
	}
	return buf
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
