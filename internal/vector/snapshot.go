package vector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// Snapshot format (all integers little-endian):
//
//	magic    [8]byte  "MGVEXACT" or "MGVHNSW\x00"
//	version  uint32   1 (HNSW: 2, quantised vectors; 1, float32 vectors, is read too)
//	frames   ...      each: length uint32 (1..maxFrame), crc32c(payload) uint32, payload
//	end      uint32 0, then crc32c of all payload bytes in order
//
// The payloads, concatenated, hold the index's header and records (see
// writeExact and writeHNSW). Every frame is checked before any of its bytes
// are interpreted, the end marker's checksum catches dropped or reordered
// frames, and the decoders still validate every count, level and link, so a
// damaged snapshot yields an error wrapping ErrCorrupt rather than a panic.
// Memory is allocated as records arrive, never from a count alone, so a
// short stream cannot make the reader reserve more than it carries. Readers
// consume exactly the snapshot's bytes, so a snapshot may be followed by
// other data in the same stream.

// ErrCorrupt is wrapped by every error ReadExact and ReadHNSW return for a
// snapshot that is truncated, damaged or not a snapshot of that kind.
var ErrCorrupt = errors.New("vector: corrupt snapshot")

const (
	snapshotVersion = 1
	// hnswVersion is the HNSW snapshot format: 2 stores the quantised
	// vectors; 1 (float32 vectors, quantised on reading) is read too.
	hnswVersion = 2
	maxFrame    = 1 << 20
	writeFrame  = 256 << 10
)

var (
	magicExact = [8]byte{'M', 'G', 'V', 'E', 'X', 'A', 'C', 'T'}
	magicHNSW  = [8]byte{'M', 'G', 'V', 'H', 'N', 'S', 'W', 0}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// frameWriter batches payload bytes into checksummed frames.
type frameWriter struct {
	w     io.Writer
	buf   []byte
	total uint32
	n     int64
	err   error
}

func newFrameWriter(w io.Writer, magic [8]byte, version uint32) *frameWriter {
	f := &frameWriter{w: w, buf: make([]byte, 0, writeFrame)}
	var hdr [12]byte
	copy(hdr[:], magic[:])
	binary.LittleEndian.PutUint32(hdr[8:], version)
	f.raw(hdr[:])
	return f
}

func (f *frameWriter) raw(p []byte) {
	if f.err != nil {
		return
	}
	n, err := f.w.Write(p)
	f.n += int64(n)
	f.err = err
}

func (f *frameWriter) flush() {
	if len(f.buf) == 0 {
		return
	}
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[0:], uint32(len(f.buf)))
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(f.buf, castagnoli))
	f.total = crc32.Update(f.total, castagnoli, f.buf)
	f.raw(hdr[:])
	f.raw(f.buf)
	f.buf = f.buf[:0]
}

// room makes sure n more bytes fit in the current frame.
func (f *frameWriter) room(n int) {
	if len(f.buf)+n > cap(f.buf) {
		f.flush()
	}
}

func (f *frameWriter) u8(v uint8) {
	f.room(1)
	f.buf = append(f.buf, v)
}

func (f *frameWriter) u32(v uint32) {
	f.room(4)
	f.buf = binary.LittleEndian.AppendUint32(f.buf, v)
}

func (f *frameWriter) u64(v uint64) {
	f.room(8)
	f.buf = binary.LittleEndian.AppendUint64(f.buf, v)
}

func (f *frameWriter) bytes(p []byte) {
	f.u32(uint32(len(p)))
	f.bytesRaw(p)
}

// bytesRaw appends p with no length prefix.
func (f *frameWriter) bytesRaw(p []byte) {
	for len(p) > 0 {
		f.room(1)
		n := min(len(p), cap(f.buf)-len(f.buf))
		f.buf = append(f.buf, p[:n]...)
		p = p[n:]
	}
}

func (f *frameWriter) u32s(v []uint32) {
	for len(v) > 0 {
		f.room(4)
		n := min(len(v), (cap(f.buf)-len(f.buf))/4)
		for _, x := range v[:n] {
			f.buf = binary.LittleEndian.AppendUint32(f.buf, x)
		}
		v = v[n:]
	}
}

func (f *frameWriter) f32s(v []float32) {
	for len(v) > 0 {
		f.room(4)
		n := min(len(v), (cap(f.buf)-len(f.buf))/4)
		for _, x := range v[:n] {
			f.buf = binary.LittleEndian.AppendUint32(f.buf, math.Float32bits(x))
		}
		v = v[n:]
	}
}

func (f *frameWriter) i16s(v []int16) {
	for len(v) > 0 {
		f.room(2)
		n := min(len(v), (cap(f.buf)-len(f.buf))/2)
		for _, x := range v[:n] {
			f.buf = binary.LittleEndian.AppendUint16(f.buf, uint16(x))
		}
		v = v[n:]
	}
}

// close flushes the last frame and writes the end marker.
func (f *frameWriter) close() (int64, error) {
	f.flush()
	var end [8]byte
	binary.LittleEndian.PutUint32(end[4:], f.total)
	f.raw(end[:])
	return f.n, f.err
}

// frameReader serves the verified payload bytes of a frame stream.
type frameReader struct {
	r     io.Reader
	buf   []byte // current frame payload
	pos   int
	total uint32
	ended bool
}

// newFrameReader checks the magic and returns the version, one of versions.
func newFrameReader(r io.Reader, magic [8]byte, versions ...uint32) (*frameReader, uint32, error) {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, readErr(err)
	}
	if [8]byte(hdr[:8]) != magic {
		return nil, 0, corrupt("bad magic %q", hdr[:8])
	}
	v := binary.LittleEndian.Uint32(hdr[8:])
	if !slices.Contains(versions, v) {
		return nil, 0, corrupt("unsupported version %d", v)
	}
	return &frameReader{r: r}, v, nil
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return corrupt("truncated")
	}
	return err
}

// next loads the next frame; at the end marker it verifies the stream
// checksum and sets ended.
func (f *frameReader) next() error {
	if f.ended {
		return corrupt("data past end")
	}
	var hdr [8]byte
	if _, err := io.ReadFull(f.r, hdr[:]); err != nil {
		return readErr(err)
	}
	n := binary.LittleEndian.Uint32(hdr[0:])
	sum := binary.LittleEndian.Uint32(hdr[4:])
	if n == 0 {
		if sum != f.total {
			return corrupt("stream checksum mismatch")
		}
		f.ended = true
		f.buf, f.pos = f.buf[:0], 0
		return nil
	}
	if n > maxFrame {
		return corrupt("frame of %d bytes", n)
	}
	if cap(f.buf) < int(n) {
		f.buf = make([]byte, n) // writers use frames of at most 256 KiB
	}
	f.buf = f.buf[:n]
	f.pos = 0
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		return readErr(err)
	}
	if crc32.Checksum(f.buf, castagnoli) != sum {
		return corrupt("frame checksum mismatch")
	}
	f.total = crc32.Update(f.total, castagnoli, f.buf)
	return nil
}

// avail returns at least one unread payload byte, loading frames as needed.
func (f *frameReader) avail() ([]byte, error) {
	for f.pos == len(f.buf) {
		if f.ended {
			return nil, corrupt("records run past the end")
		}
		if err := f.next(); err != nil {
			return nil, err
		}
	}
	return f.buf[f.pos:], nil
}

func (f *frameReader) full(p []byte) error {
	for len(p) > 0 {
		b, err := f.avail()
		if err != nil {
			return err
		}
		n := copy(p, b)
		f.pos += n
		p = p[n:]
	}
	return nil
}

func (f *frameReader) u8() (uint8, error) {
	b, err := f.avail()
	if err != nil {
		return 0, err
	}
	f.pos++
	return b[0], nil
}

func (f *frameReader) u32() (uint32, error) {
	if b := f.buf[f.pos:]; len(b) >= 4 {
		f.pos += 4
		return binary.LittleEndian.Uint32(b), nil
	}
	var b [4]byte
	err := f.full(b[:])
	return binary.LittleEndian.Uint32(b[:]), err
}

func (f *frameReader) u64() (uint64, error) {
	var b [8]byte
	err := f.full(b[:])
	return binary.LittleEndian.Uint64(b[:]), err
}

func (f *frameReader) bytes(limit int) ([]byte, error) {
	n, err := f.u32()
	if err != nil {
		return nil, err
	}
	if int64(n) > int64(limit) {
		return nil, corrupt("field of %d bytes", n)
	}
	p := make([]byte, n)
	return p, f.full(p)
}

func (f *frameReader) u32s(dst []uint32) error {
	for len(dst) > 0 {
		if b := f.buf[f.pos:]; len(b) >= 4 {
			n := min(len(dst), len(b)/4)
			for i := range dst[:n] {
				dst[i] = binary.LittleEndian.Uint32(b[4*i:])
			}
			f.pos += 4 * n
			dst = dst[n:]
			continue
		}
		v, err := f.u32()
		if err != nil {
			return err
		}
		dst[0] = v
		dst = dst[1:]
	}
	return nil
}

func (f *frameReader) f32s(dst []float32) error {
	for len(dst) > 0 {
		if b := f.buf[f.pos:]; len(b) >= 4 {
			n := min(len(dst), len(b)/4)
			for i := range dst[:n] {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			f.pos += 4 * n
			dst = dst[n:]
			continue
		}
		v, err := f.u32()
		if err != nil {
			return err
		}
		dst[0] = math.Float32frombits(v)
		dst = dst[1:]
	}
	return nil
}

func (f *frameReader) i16s(dst []int16) error {
	for len(dst) > 0 {
		if b := f.buf[f.pos:]; len(b) >= 2 {
			n := min(len(dst), len(b)/2)
			for i := range dst[:n] {
				dst[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
			}
			f.pos += 2 * n
			dst = dst[n:]
			continue
		}
		var b [2]byte
		if err := f.full(b[:]); err != nil {
			return err
		}
		dst[0] = int16(binary.LittleEndian.Uint16(b[:]))
		dst = dst[1:]
	}
	return nil
}

// finish checks that the records end exactly where the stream does.
func (f *frameReader) finish() error {
	if f.pos != len(f.buf) {
		return corrupt("trailing bytes")
	}
	if !f.ended {
		if err := f.next(); err != nil {
			return err
		}
		if !f.ended {
			return corrupt("trailing frames")
		}
	}
	return nil
}

// WriteTo writes a snapshot of the index (see ReadExact). It holds the read
// lock while writing, so searches continue but Add and Remove wait.
//
// Payload: dim u32, count u32, then per vector key u32 and dim float32s.
func (x *Exact) WriteTo(w io.Writer) (int64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	f := newFrameWriter(w, magicExact, snapshotVersion)
	f.u32(uint32(x.dim))
	f.u32(uint32(len(x.keys)))
	for s, key := range x.keys {
		f.u32(key)
		f.f32s(x.data[s*x.dim : (s+1)*x.dim])
	}
	return f.close()
}

// ReadExact reads a snapshot written by Exact.WriteTo. A truncated or
// damaged snapshot gives an error wrapping ErrCorrupt.
func ReadExact(r io.Reader) (*Exact, error) {
	f, _, err := newFrameReader(r, magicExact, snapshotVersion)
	if err != nil {
		return nil, err
	}
	dim, err := f.u32()
	if err != nil {
		return nil, err
	}
	n, err := f.u32()
	if err != nil {
		return nil, err
	}
	if dim == 0 || dim > maxDim {
		return nil, corrupt("dimension %d", dim)
	}
	x := NewExact(int(dim))
	for i := uint32(0); i < n; i++ {
		key, err := f.u32()
		if err != nil {
			return nil, err
		}
		if _, dup := x.slot.get(key); dup || key > maxKey {
			return nil, corrupt("duplicate or out-of-range key %d", key)
		}
		x.slot.set(key, uint32(len(x.keys)))
		x.keys = append(x.keys, key)
		off := len(x.data)
		if off+int(dim) > cap(x.data) {
			// Double what has arrived (append's growth of a large slice,
			// a quarter, copies the vectors many times over).
			grown := make([]float32, off, max(2*cap(x.data), off+int(dim), 1<<16))
			copy(grown, x.data)
			x.data = grown
		}
		x.data = x.data[:off+int(dim)]
		if err := f.f32s(x.data[off:]); err != nil {
			return nil, err
		}
	}
	if err := f.finish(); err != nil {
		return nil, err
	}
	if cap(x.data) > len(x.data)+len(x.data)/8 {
		x.data = slices.Clip(slices.Clone(x.data)) // no doubling's slack kept
	}
	return x, nil
}

// WriteTo writes a snapshot of the index's vectors and graph, tombstones
// and level-generator state included, so a restored index answers searches
// exactly as this one does and continues to build the same graph. It holds
// the read lock while writing.
//
// Payload: dim, M, efConstruction, efSearch (u32), seed (u64), nodes,
// deleted, entry, maxLevel (u32), the generator state (u32 length + bytes),
// then per node: key u32, level u8, deleted u8, its quantised vector (the
// scale as float32 bits, then dim int16s; version 1: dim float32s), and
// for each level 0..level a link count u32 and that many node ids u32.
func (h *HNSW) WriteTo(w io.Writer) (int64, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	rng, err := h.pcg.MarshalBinary()
	if err != nil {
		return 0, err
	}
	f := newFrameWriter(w, magicHNSW, hnswVersion)
	for _, v := range []int{h.dim, h.m, h.efC, h.efSearch} {
		f.u32(uint32(v))
	}
	f.u64(uint64(h.seed))
	f.u32(uint32(h.n))
	f.u32(uint32(h.nDeleted))
	f.u32(h.entry)
	f.u32(uint32(h.maxLevel))
	f.bytes(rng)
	for i := 0; i < h.n; i++ {
		id := uint32(i)
		f.u32(h.keys[id])
		f.u8(h.levels[id])
		if h.deleted[id] {
			f.u8(1)
		} else {
			f.u8(0)
		}
		f.u32(math.Float32bits(h.scales[id]))
		f.i16s(h.vec(id))
		for l := 0; l <= int(h.levels[id]); l++ {
			nb := h.neighbors(id, l)
			f.u32(uint32(len(nb)))
			f.u32s(nb)
		}
	}
	return f.close()
}

// ReadHNSW reads a snapshot written by HNSW.WriteTo. A truncated or damaged
// snapshot gives an error wrapping ErrCorrupt, never a panic.
func ReadHNSW(r io.Reader) (*HNSW, error) {
	f, version, err := newFrameReader(r, magicHNSW, 1, hnswVersion)
	if err != nil {
		return nil, err
	}
	hd, err := readHNSWHeader(f)
	if err != nil {
		return nil, err
	}
	h := NewHNSW(int(hd.dim), HNSWConfig{M: int(hd.m), EfConstruction: int(hd.efC), EfSearch: int(hd.efS), Seed: int64(hd.seed)})
	if err := h.pcg.UnmarshalBinary(hd.rng); err != nil {
		return nil, corrupt("generator state: %v", err)
	}
	vec := make([]float32, hd.dim)
	qv := make([]int16, hd.dim)
	for i := uint32(0); i < hd.nodes; i++ {
		if err := h.readNode(f, version, i, hd.nodes, vec, qv); err != nil {
			return nil, err
		}
	}
	if err := f.finish(); err != nil {
		return nil, err
	}
	top, err := h.checkLevels()
	if err != nil {
		return nil, err
	}
	if uint32(h.nDeleted) != hd.nDeleted {
		return nil, corrupt("%d tombstones, header says %d", h.nDeleted, hd.nDeleted)
	}
	if hd.nodes > 0 && (int(hd.maxLevel) != top || int(h.levels[hd.entry]) != top) {
		return nil, corrupt("entry point %d not on top level %d", hd.entry, top)
	}
	h.entry, h.maxLevel = hd.entry, int(hd.maxLevel)
	return h, nil
}

// hnswHeader is the head of an HNSW snapshot: the parameters, the counts
// and the generator state.
type hnswHeader struct {
	dim, m, efC, efS                 uint32
	seed                             uint64
	nodes, nDeleted, entry, maxLevel uint32
	rng                              []byte
}

// readHNSWHeader reads and checks the head of an HNSW snapshot.
func readHNSWHeader(f *frameReader) (hnswHeader, error) {
	var hd hnswHeader
	var prm [4]uint32
	if err := f.u32s(prm[:]); err != nil {
		return hd, err
	}
	hd.dim, hd.m, hd.efC, hd.efS = prm[0], prm[1], prm[2], prm[3]
	var err error
	if hd.seed, err = f.u64(); err != nil {
		return hd, err
	}
	var cnt [4]uint32
	if err := f.u32s(cnt[:]); err != nil {
		return hd, err
	}
	hd.nodes, hd.nDeleted, hd.entry, hd.maxLevel = cnt[0], cnt[1], cnt[2], cnt[3]
	if hd.rng, err = f.bytes(64); err != nil {
		return hd, err
	}
	dim, m, efC, efS := hd.dim, hd.m, hd.efC, hd.efS
	nodes, entry, maxLevel := hd.nodes, hd.entry, hd.maxLevel
	switch {
	case dim == 0 || dim > maxDim:
		return hd, corrupt("dimension %d", dim)
	case m < 2 || m > maxM:
		return hd, corrupt("M %d", m)
	case efC < m || efC > maxEf || efS == 0 || efS > maxEf:
		return hd, corrupt("beam widths %d/%d", efC, efS)
	case nodes > math.MaxInt32 || hd.nDeleted > nodes || maxLevel > maxLevelCap:
		return hd, corrupt("counts")
	case (nodes == 0) != (entry == noNode) || (entry != noNode && entry >= nodes) || (nodes == 0 && maxLevel != 0):
		return hd, corrupt("entry point %d of %d nodes", entry, nodes)
	}
	return hd, nil
}

// readNode reads node i of nodes (its key, level, tombstone, vector and
// links per level) and appends it to h; vec and qv are scratch of the
// dimension.
func (h *HNSW) readNode(f *frameReader, version, i, nodes uint32, vec []float32, qv []int16) error {
	key, err := f.u32()
	if err != nil {
		return err
	}
	level, err := f.u8()
	if err != nil {
		return err
	}
	del, err := f.u8()
	if err != nil {
		return err
	}
	if level > maxLevelCap || del > 1 {
		return corrupt("node %d: level %d, deleted %d", i, level, del)
	}
	var scale float32
	if version == 1 {
		if err := f.f32s(vec); err != nil {
			return err
		}
		scale = quantize(vec, qv)
	} else {
		bits, err := f.u32()
		if err != nil {
			return err
		}
		scale = math.Float32frombits(bits)
		if e := math.Ilogb(float64(scale)); scale <= 0 || math.Ldexp(1, e) != float64(scale) || e < -126 || e > 127 {
			return corrupt("node %d: scale %v", i, scale)
		}
		if err := f.i16s(qv); err != nil {
			return err
		}
	}
	if i%chunkSize == 0 && nodes-i >= chunkSize {
		h.fullChunk() // a chunk's worth of nodes is announced: no regrowing
	}
	id := h.appendNode(key, int(level), qv, scale, del == 1)
	if del == 0 {
		if _, dup := h.ids.get(key); dup || key > maxKey {
			return corrupt("duplicate or out-of-range key %d", key)
		}
		h.ids.set(key, id)
	}
	for l := 0; l <= int(level); l++ {
		b := h.block(id, l)
		c, err := f.u32()
		if err != nil {
			return err
		}
		if c > uint32(len(b)-1) {
			return corrupt("node %d level %d: %d links", i, l, c)
		}
		b[0] = c
		if err := f.u32s(b[1 : 1+c]); err != nil {
			return err
		}
		for _, nb := range b[1 : 1+c] {
			if nb >= nodes || nb == id {
				return corrupt("node %d level %d: link to %d", i, l, nb)
			}
		}
	}
	return nil
}

// checkLevels makes the structural checks that need every node: links
// only to nodes that exist on that level. It returns the top level.
func (h *HNSW) checkLevels() (top int, _ error) {
	for i := 0; i < h.n; i++ {
		id := uint32(i)
		lv := int(h.levels[id])
		top = max(top, lv)
		for l := 0; l <= lv; l++ {
			for _, nb := range h.neighbors(id, l) {
				if int(h.levels[nb]) < l {
					return 0, corrupt("node %d level %d: link to node %d of level %d", i, l, nb, h.levels[nb])
				}
			}
		}
	}
	return top, nil
}
