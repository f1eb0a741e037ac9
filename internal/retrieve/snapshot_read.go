package retrieve

// Reading a snapshot: ReadSnapshot, the checks of its head, and the
// decoding of the lexical, vector and document sections.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/snapio"
	"github.com/memgate/memgate/internal/vector"
)

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
	e.rebuildFacts()
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
		if h.vectors > e.autoThreshold() {
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

// docDecoder holds what decoding the document section needs across
// documents: the reader, the string table with the codes its strings were
// given, and the arenas of word sets and entity lists being built.
type docDecoder struct {
	d     *snapio.Reader
	s     *docState
	tab   []string
	tcode []uint32   // filter codes of the strings, 0 until first used
	ecode [3][]uint8 // enumeration codes of the strings, 0xff until computed
	words []uint32   // the word sets' arena; offset 0 is none
	ents  []uint32   // the entity lists' arena
	ecs   []uint32   // scratch: one document's entity codes
}

func decodeDocs(p []byte, ndocs int) (*docState, error) {
	dd := &docDecoder{d: snapio.NewReader(p, snapCorrupt)}
	if err := dd.readStrings(ndocs); err != nil {
		return nil, err
	}
	s := &docState{records: newRecords(), fx: newFilterIndex()}
	s.docs = make([]doc, ndocs)
	s.fx.filt = make([]fdoc, ndocs)
	dd.s = s
	// The word sets' arena: a word takes at least one byte of the section,
	// usually four or five.
	dd.words = make([]uint32, 1, 1+dd.d.Rest()/4)
	for i := range s.docs {
		if err := dd.doc(uint32(i)); err != nil {
			return nil, err
		}
	}
	return dd.finish()
}

// readStrings reads the string table and the document count that follows
// it, which must match the head's.
func (dd *docDecoder) readStrings(ndocs int) error {
	d := dd.d
	nstr := d.Uvarint()
	if nstr == 0 || nstr > d.Rest() {
		return snapCorrupt("%d strings", nstr)
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
		return d.Err
	}
	if total > d.Rest() {
		return snapCorrupt("strings of %d bytes", total)
	}
	blob := string(d.Bytes(int(total)))
	tab := make([]string, nstr)
	off := 0
	for i, n := range lens {
		tab[i] = blob[off : off+int(n)]
		off += int(n)
	}
	if tab[0] != "" {
		return snapCorrupt("string table")
	}
	if n := d.Uvarint(); n != uint64(ndocs) || n > d.Rest()/3 { // a dead slot takes 3 bytes or more
		return snapCorrupt("%d documents, head says %d", n, ndocs)
	}
	dd.tab = tab
	dd.tcode = make([]uint32, nstr)
	for i := range dd.ecode {
		dd.ecode[i] = make([]uint8, nstr)
		for j := range dd.ecode[i] {
			dd.ecode[i][j] = 0xff
		}
	}
	return nil
}

// code is the filter code of string i, assigned on first use; strings are
// copied out of the table's blob so that it is not kept alive by a few.
func (dd *docDecoder) code(i uint64) uint32 {
	if i >= uint64(len(dd.tab)) {
		dd.d.Fail("string id")
		return 0
	}
	if dd.tcode[i] == 0 && i != 0 {
		dd.tcode[i] = dd.s.fx.code(strings.Clone(dd.tab[i]))
	}
	return dd.tcode[i]
}

// enum is the enumeration code of string i as a type (which 0), status (1)
// or access (2).
func (dd *docDecoder) enum(which int, i uint64) uint8 {
	if i >= uint64(len(dd.tab)) {
		dd.d.Fail("string id")
		return 0
	}
	c := dd.ecode[which][i]
	if c == 0xff {
		switch which {
		case 0:
			c = enumCode(typeEnum, memory.Type(dd.tab[i]))
		case 1:
			c = enumCode(statusEnum, memory.Status(dd.tab[i]))
		default:
			c = enumCode(accessEnum, memory.Access(dd.tab[i]))
		}
		dd.ecode[which][i] = c
	}
	return c
}

// doc decodes the document of key: a dead slot keeps only its name, a live
// one its filter fields, identity, times, entities and words.
func (dd *docDecoder) doc(key uint32) error {
	d := dd.d
	flags := d.U8()
	if flags&docAlive == 0 {
		return dd.deadDoc(key, flags)
	}
	if flags >= docHex<<1 {
		d.Fail("flags")
	}
	s := dd.s
	x, f := &s.docs[key], &s.fx.filt[key]
	x.flags = dAlive
	x.ws = dd.code(d.Uvarint())
	f.ws = x.ws
	ti, si, ai := d.Uvarint(), d.Uvarint(), d.Uvarint()
	f.typ, f.status, f.access = dd.enum(0, ti), dd.enum(1, si), dd.enum(2, ai)
	f.agent, f.category = dd.code(d.Uvarint()), dd.code(d.Uvarint())
	for j := range f.scope {
		f.scope[j] = dd.code(d.Uvarint())
	}
	if d.Err != nil {
		return d.Err
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
		oo.typ, oo.status, oo.access = memory.Type(dd.tab[ti]), memory.Status(dd.tab[si]), memory.Access(dd.tab[ai])
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
	dd.entities(x)
	x.version = d.Varint()
	dd.wordSet(x)
	return d.Err
}

// deadDoc decodes a dead slot: its workspace and id, kept so that a later
// change to the record finds its key.
func (dd *docDecoder) deadDoc(key uint32, flags uint8) error {
	d := dd.d
	if flags != 0 {
		d.Fail("flags")
	}
	n := d.Uvarint()
	name := d.Bytes(int(min(n, d.Rest()+1)))
	if d.Err != nil {
		return d.Err
	}
	ws, id, ok := bytes.Cut(name, []byte{0})
	if !ok {
		return snapCorrupt("key %d has no name", key)
	}
	x := &dd.s.docs[key]
	x.ws = dd.s.fx.code(string(ws))
	if !packUUID(string(id), &x.id) {
		x.flags = dOddID
		dd.s.odd[key] = &oddDoc{id: string(id)}
	}
	return nil
}

// entities reads a document's entity list into the entity arena.
func (dd *docDecoder) entities(x *doc) {
	d := dd.d
	ne := d.Uvarint()
	if ne > d.Rest() {
		d.Fail("entities")
		ne = 0
	}
	dd.ecs = dd.ecs[:0]
	for range ne {
		dd.ecs = append(dd.ecs, dd.code(d.Uvarint()))
	}
	if len(dd.ecs) > 0 {
		if len(dd.ents) == 0 {
			dd.ents = append(dd.ents, 0)
		}
		x.ents = uint32(len(dd.ents))
		dd.ents = append(dd.ents, uint32(len(dd.ecs)))
		dd.ents = append(dd.ents, dd.ecs...)
	}
}

// wordSet reads a document's delta-coded word set into the word arena.
func (dd *docDecoder) wordSet(x *doc) {
	d := dd.d
	nw := d.Uvarint()
	if nw > d.Rest() {
		d.Fail("words")
		nw = 0
	}
	if nw == 0 {
		return
	}
	x.words = uint32(len(dd.words))
	dd.words = append(dd.words, uint32(nw))
	w := uint64(0)
	for j := range nw {
		delta := d.Uvarint()
		if w += delta; (j > 0 && delta == 0) || w > math.MaxUint32 {
			d.Fail("words")
			break
		}
		dd.words = append(dd.words, uint32(w))
	}
	if len(dd.words) >= math.MaxUint32 {
		d.Fail("words")
	}
}

// finish checks the section was read to its end and builds what the
// documents imply: the arenas, the key table, the session and candidate
// lists.
func (dd *docDecoder) finish() (*docState, error) {
	d, s := dd.d, dd.s
	if d.Err != nil {
		return nil, d.Err
	}
	if d.Rest() != 0 {
		return nil, snapCorrupt("%d trailing bytes", d.Rest())
	}
	words := dd.words
	if len(words) > 1 {
		if cap(words) > len(words)+len(words)/8 {
			words = slices.Clone(words)
		}
		s.words.v = words
	}
	s.ents.v = dd.ents
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
