package lexical

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// A format 1 snapshot (documents only) restores the same index as the
// format 2 snapshot of the same index.
func TestSnapshotReadsFormat1(t *testing.T) {
	queries := testQueries(4, 60)
	defer func(n uint32) { parallelFill = n }(parallelFill)
	for _, seed := range []uint64{1, 2, 3} {
		parallelFill = []uint32{1 << 20, 0, 1}[seed-1] // both ways of filling the lists
		ix := churned(seed, 4000)
		ix.mu.RLock()
		p1, err := ix.encodeV1Locked()
		ix.mu.RUnlock()
		if err != nil {
			t.Fatal(err)
		}
		data := seal(p1)
		binary.LittleEndian.PutUint32(data[8:], 1)
		reseal(data)
		got, err := ReadIndex(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, got)
		if a, b := observe(t, ix, queries), observe(t, got, queries); a != b {
			t.Fatalf("seed %d: format 1 restores another index:\n%s", seed, firstDiff(a, b))
		}
		if !bytes.Equal(writeSnapshot(t, got), writeSnapshot(t, ix)) {
			t.Fatalf("seed %d: format 1 restores an index whose snapshot differs", seed)
		}
	}
}

// A format 2 snapshot whose documents' term lists disagree with its
// postings lists (two documents' lists swapped: each side well formed) is
// refused.
func TestSnapshotRefusesDisagreement(t *testing.T) {
	ix := New(DefaultOptions())
	ix.Add(0, "alpha bravo charlie")
	ix.Add(1, "delta echo")
	ix.Add(2, "foxtrot golf hotel india")
	data := writeSnapshot(t, ix)
	p := data[headerSize:]
	at := 17
	uv := func() uint64 {
		v, n := binary.Uvarint(p[at:])
		at += n
		return v
	}
	nkeys, nterms := uv(), uv()
	uv() // postings
	names := 0
	for range nterms {
		names += int(uv())
	}
	at += names
	at += 8 + int(binary.LittleEndian.Uint64(p[at:]))
	var recs [][]byte
	for range nkeys {
		start := uv()
		_ = start
		from := at - 1
		uv()
		at += int(uv())
		recs = append(recs, slices.Clone(p[from:at]))
	}
	if at != len(p) || len(recs) != 3 {
		t.Fatalf("test broken: parsed to %d of %d", at, len(p))
	}
	// Documents 0 and 1 swap term lists: same total, other pairs.
	bad := slices.Clone(data)
	q := bad[headerSize+at-len(recs[0])-len(recs[1])-len(recs[2]):]
	copy(q, append(append(slices.Clone(recs[1]), recs[0]...), recs[2]...))
	reseal(bad)
	if _, err := ReadIndex(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("swapped documents: %v", err)
	}
	if _, err := ReadIndex(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

// encodeV1Locked builds a format 1 payload (the encoder of that format,
// kept to test that such snapshots are still read); the caller holds the
// read lock.
func (ix *Index) encodeV1Locked() ([]byte, error) {
	newID, nterms, nameBytes := ix.liveTermIDs()
	// The term frequencies live in the postings; gather them in document
	// order: tfs[base[key]+j] is the frequency of key's j-th term. Visiting
	// the terms by ascending id visits each document's (ascending) terms in
	// order. seen[key] counts the postings met and sum[key] hashes their
	// term ids, checked against the document's own list as it is written.
	base := make([]uint32, len(ix.docs))
	posts := uint64(0)
	for key, d := range ix.docs {
		base[key] = uint32(min(posts, uint64(absent)))
		if d.off != absent {
			posts += uint64(d.n)
		}
	}
	if posts >= uint64(absent) {
		return nil, fmt.Errorf("lexical: snapshot: too many postings")
	}
	seen := make([]uint32, len(ix.docs))
	sum := make([]uint64, len(ix.docs))
	tfs := make([]uint16, posts)
	disagree := func(key int) error {
		return fmt.Errorf("lexical: snapshot: the postings of key %d disagree with its terms", key)
	}
	for id := range ix.terms {
		t := ix.view(uint32(id))
		h := idHash(uint32(id))
		for i, key := range t.keys {
			tf := t.tfs[i]
			if tf == 0 {
				continue
			}
			if int(key) >= len(ix.docs) || ix.docs[key].off == absent || seen[key] >= ix.docs[key].n {
				return nil, disagree(int(key))
			}
			tfs[base[key]+seen[key]] = tf
			seen[key]++
			sum[key] += h
		}
	}
	for key, d := range ix.docs {
		if d.off != absent && seen[key] != d.n {
			return nil, disagree(key)
		}
	}

	buf := make([]byte, 0, 64+2*nterms+nameBytes+3*len(ix.docs)+4*int(posts))
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
	for key, d := range ix.docs {
		if d.off == absent {
			buf = append(buf, 0)
			continue
		}
		buf = binary.AppendUvarint(buf, uint64(d.n)+1)
		buf = binary.AppendUvarint(buf, uint64(ix.docLen[key]))
		prev, p, h := int64(-1), base[key], uint64(0)
		ix.eachTerm(d, func(old uint32) {
			id := int64(newID[old])
			buf = binary.AppendUvarint(buf, uint64(id-prev-1))
			buf = binary.AppendUvarint(buf, uint64(tfs[p]))
			prev = id
			p++
			h += idHash(old)
		})
		if h != sum[key] {
			return nil, disagree(key)
		}
	}
	return buf, nil
}

// idHash spreads a term id (SplitMix64's finaliser), for the consistency
// check of encodeLocked.
func idHash(id uint32) uint64 {
	x := uint64(id) + 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
