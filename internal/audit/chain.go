package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// tsLayout fixes the fractional digits at six so that a timestamp hashes
// the same whatever precision the storage backend round-trips.
const tsLayout = "2006-01-02T15:04:05.000000Z"

// FormatTS renders t as the RFC 3339 UTC string used in hashed entries,
// always with exactly six fractional digits (finer precision is truncated).
func FormatTS(t time.Time) string {
	return t.UTC().Format(tsLayout)
}

// hashedEntry is Entry without Hash, in the shape that is canonicalized
// and hashed. Field order does not matter: canonicalization sorts keys.
type hashedEntry struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	TS        string          `json:"ts"`
	ActorKind string          `json:"actor_kind"`
	ActorID   string          `json:"actor_id"`
	Event     string          `json:"event"`
	Payload   json.RawMessage `json:"payload"`
	PrevHash  string          `json:"prev_hash"`
}

// canonicalPayload returns the canonical form of an entry payload. A
// missing payload, and the "null" that encoding/json produces when such an
// entry is round-tripped, both mean an empty object so that they hash
// like one.
func canonicalPayload(p json.RawMessage) ([]byte, error) {
	p = bytes.TrimSpace(p)
	if len(p) == 0 || string(p) == "null" {
		return []byte("{}"), nil
	}
	c, err := Canonicalize(p)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if c[0] != '{' {
		return nil, errors.New("payload: not a JSON object")
	}
	return c, nil
}

// HashOf computes e's chain hash: lowercase hex sha256 of e.PrevHash's
// ASCII bytes followed by the canonical JSON of e without its hash field.
// e.Hash is ignored.
func HashOf(e Entry) (string, error) {
	// encoding/json would quietly map invalid UTF-8 to U+FFFD, letting two
	// different stored values share a hash.
	for _, f := range []string{e.ID, e.ActorKind, e.ActorID, e.Event, e.PrevHash} {
		if !utf8.ValidString(f) {
			return "", fmt.Errorf("audit: hash entry %q: invalid UTF-8 in string field", e.ID)
		}
	}
	payload, err := canonicalPayload(e.Payload)
	if err != nil {
		return "", fmt.Errorf("audit: hash entry %s: %w", e.ID, err)
	}
	return hashCanonical(e, payload), nil
}

// hashCanonical is HashOf for an entry whose string fields are valid
// UTF-8, with its payload already canonical.
func hashCanonical(e Entry, payload []byte) string {
	h := sha256.New()
	h.Write([]byte(e.PrevHash))
	h.Write(canonicalBody(e, payload))
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalBody writes the RFC 8785 form of the hashed entry directly:
// its members in sorted key order, strings JCS-escaped, seq an integer
// (exact below 2^53, as JCS requires) and the already canonical payload
// spliced in. It equals Canonical(hashedEntry{...}) (tested) without
// marshalling and re-parsing the payload on the write path.
func canonicalBody(e Entry, payload []byte) []byte {
	var b bytes.Buffer
	b.Grow(256 + len(payload))
	b.WriteString(`{"actor_id":`)
	WriteString(&b, e.ActorID)
	b.WriteString(`,"actor_kind":`)
	WriteString(&b, e.ActorKind)
	b.WriteString(`,"event":`)
	WriteString(&b, e.Event)
	b.WriteString(`,"id":`)
	WriteString(&b, e.ID)
	b.WriteString(`,"payload":`)
	b.Write(payload)
	b.WriteString(`,"prev_hash":`)
	WriteString(&b, e.PrevHash)
	b.WriteString(`,"seq":`)
	b.WriteString(formatFloat(float64(e.Seq)))
	b.WriteString(`,"ts":`)
	WriteString(&b, FormatTS(e.TS))
	b.WriteByte('}')
	return b.Bytes()
}

// Seal fills in the chain fields of e so that it can be appended after an
// entry whose hash is prevHash (GenesisHash for seq 1). It normalises TS
// and Payload to what is hashed, so the stored entry re-verifies after any
// backend round trip that preserves microseconds and JSON values.
func Seal(e Entry, seq int64, prevHash string) (Entry, error) {
	if seq < 1 {
		return Entry{}, fmt.Errorf("audit: seal entry %s: seq %d < 1", e.ID, seq)
	}
	if !isHash(prevHash) {
		return Entry{}, fmt.Errorf("audit: seal entry %s: prev hash %q is not 64 lowercase hex digits", e.ID, prevHash)
	}
	if seq == 1 && prevHash != GenesisHash {
		return Entry{}, fmt.Errorf("audit: seal entry %s: seq 1 must follow the genesis hash", e.ID)
	}
	// A zero timestamp almost certainly means the caller forgot to set it,
	// and would be frozen into the chain forever.
	if e.TS.IsZero() {
		return Entry{}, fmt.Errorf("audit: seal entry %s: missing timestamp", e.ID)
	}
	payload, err := canonicalPayload(e.Payload)
	if err != nil {
		return Entry{}, fmt.Errorf("audit: seal entry %s: %w", e.ID, err)
	}
	e.Seq = seq
	e.PrevHash = prevHash
	e.TS = e.TS.UTC().Truncate(time.Microsecond)
	e.Payload = payload
	// The payload is canonical now: hash it as it is rather than
	// canonicalising it a second time (HashOf).
	for _, f := range []string{e.ID, e.ActorKind, e.ActorID, e.Event} {
		if !utf8.ValidString(f) {
			return Entry{}, fmt.Errorf("audit: hash entry %q: invalid UTF-8 in string field", e.ID)
		}
	}
	e.Hash = hashCanonical(e, payload)
	return e, nil
}

func isHash(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// BrokenError reports the first place a chain fails verification. Seq is
// the position in the chain where the break was found (which, when entries
// are missing or reordered, differs from the offending entry's own seq);
// ID is the id of the entry found at that position.
type BrokenError struct {
	Seq    int64  `json:"seq"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

func (e *BrokenError) Error() string {
	return fmt.Sprintf("audit chain broken at seq %d (id %s): %s", e.Seq, e.ID, e.Reason)
}

// Verifier checks a chain one entry at a time, so a whole workspace log
// can be verified while streaming it from storage. The zero value is ready
// to verify a chain from its first entry.
type Verifier struct {
	count int64
	head  string
	err   *BrokenError
}

// Next verifies e as the entry following those already seen. Once the
// chain is found broken every later call returns the same error, because
// nothing after a break can be trusted.
func (v *Verifier) Next(e Entry) error {
	if v.err != nil {
		return v.err
	}
	want := v.count + 1
	fail := func(format string, args ...any) error {
		v.err = &BrokenError{Seq: want, ID: e.ID, Reason: fmt.Sprintf(format, args...)}
		return v.err
	}
	if e.Seq != want {
		return fail("seq mismatch: entry has seq %d", e.Seq)
	}
	if e.PrevHash != v.Head() {
		return fail("prev_hash mismatch")
	}
	h, err := HashOf(e)
	if err != nil {
		return fail("unhashable entry: %v", err)
	}
	if h != e.Hash {
		return fail("hash mismatch")
	}
	v.count = want
	v.head = h
	return nil
}

// Count is the number of entries verified so far.
func (v *Verifier) Count() int64 { return v.count }

// Head is the hash of the last verified entry, or GenesisHash before any;
// either way it is the prev_hash the next entry must carry.
func (v *Verifier) Head() string {
	if v.count == 0 {
		return GenesisHash
	}
	return v.head
}

// Err returns the break found so far, or nil.
func (v *Verifier) Err() error {
	if v.err == nil {
		return nil
	}
	return v.err
}
