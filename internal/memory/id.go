package memory

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

var idGen struct {
	mu     sync.Mutex
	lastMS int64
	seq    uint16
}

// NewID returns a UUIDv7 (RFC 9562). IDs from one process are strictly
// increasing, even within a millisecond, so they order records by creation
// and serve as pagination cursors.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := time.Now().UnixMilli()

	idGen.mu.Lock()
	if ms <= idGen.lastMS {
		ms = idGen.lastMS
		idGen.seq++
		if idGen.seq > 0x0fff { // counter exhausted: borrow the next millisecond
			ms++
			idGen.seq = 0
		}
	} else {
		idGen.seq = uint16(b[6])<<8 | uint16(b[7])
		idGen.seq &= 0x07ff // leave headroom for increments
	}
	idGen.lastMS = ms
	seq := idGen.seq
	idGen.mu.Unlock()

	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	b[2] = byte(ms >> 24)
	b[3] = byte(ms >> 16)
	b[4] = byte(ms >> 8)
	b[5] = byte(ms)
	b[6] = 0x70 | byte(seq>>8)&0x0f
	b[7] = byte(seq)
	b[8] = 0x80 | b[8]&0x3f

	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// ValidID reports whether s looks like a canonical lowercase UUID.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
