package retrieve

import (
	"bufio"
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
	"sync"
	"time"
	"weak"

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
	snapVersion = 5 // 4: the filter's agent is the writer's principal id, not its name; 5: turns' keyphrase keys
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
// Engine, keyed weakly by it, so the snapshot code stays in the snapshot
// files.
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
