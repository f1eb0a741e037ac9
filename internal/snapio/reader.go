// Package snapio reads the varint-coded payloads of memgate's index
// snapshots (the lexical index and the search engine's sections). A
// Reader's first error sticks: every later read returns zero values, so
// decoders check Err once per section instead of after every field.
package snapio

import "encoding/binary"

// Reader reads one payload.
type Reader struct {
	b []byte
	p int
	// Err is the first failure, made by the package's corrupt function.
	Err     error
	corrupt func(format string, args ...any) error
}

// NewReader reads b; corrupt makes the error of a malformed payload, so
// that each snapshot format reports its own sentinel.
func NewReader(b []byte, corrupt func(format string, args ...any) error) *Reader {
	return &Reader{b: b, corrupt: corrupt}
}

// Fail records a malformed payload at the current offset and ends every
// later read.
func (d *Reader) Fail(what string) {
	if d.Err == nil {
		d.Err = d.corrupt("%s at byte %d", what, d.p)
	}
	d.p = len(d.b)
}

// Uvarint reads an unsigned varint; one-byte values take a fast path.
func (d *Reader) Uvarint() uint64 {
	if d.p < len(d.b) {
		if c := d.b[d.p]; c < 0x80 {
			d.p++
			return uint64(c)
		}
	}
	v, n := binary.Uvarint(d.b[d.p:])
	if n <= 0 {
		d.Fail("bad varint")
		return 0
	}
	d.p += n
	return v
}

// Varint reads a signed (zig-zag) varint.
func (d *Reader) Varint() int64 {
	v, n := binary.Varint(d.b[d.p:])
	if n <= 0 {
		d.Fail("bad varint")
		return 0
	}
	d.p += n
	return v
}

// Bytes returns the next n bytes, aliasing the payload.
func (d *Reader) Bytes(n int) []byte {
	if n < 0 || n > len(d.b)-d.p {
		d.Fail("truncated")
		return nil
	}
	d.p += n
	return d.b[d.p-n : d.p]
}

// U8 reads one byte.
func (d *Reader) U8() uint8 {
	if b := d.Bytes(1); b != nil {
		return b[0]
	}
	return 0
}

// U32 reads a little-endian uint32.
func (d *Reader) U32() uint32 {
	if b := d.Bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// U64 reads a little-endian uint64.
func (d *Reader) U64() uint64 {
	if b := d.Bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// Str reads a length-prefixed string of at most limit bytes.
func (d *Reader) Str(limit int) string {
	n := d.Uvarint()
	if n > uint64(limit) {
		d.Fail("string length")
		return ""
	}
	return string(d.Bytes(int(n)))
}

// Rest is how many bytes are left.
func (d *Reader) Rest() uint64 { return uint64(len(d.b) - d.p) }
