package lexical

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeSnapshot(t testing.TB, ix *Index) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := ix.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func readSnapshot(t testing.TB, data []byte) *Index {
	t.Helper()
	ix, err := ReadIndex(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// observe captures every search-visible aspect of ix: statistics, document
// frequencies, plain, scoped and expanded searches with exact score bits.
func observe(t *testing.T, ix *Index, queries []string) string {
	t.Helper()
	var sb strings.Builder
	sb.WriteString(snapshot(t, ix, queries))
	allow := func(key uint32) bool { return key%3 != 0 }
	for _, q := range queries {
		for _, k := range []int{1, 7, 50} {
			for _, h := range ix.SearchScoped(q, k, allow, max(1, ix.Len()/2)) {
				fmt.Fprintf(&sb, "scoped %s/%d: %d %x\n", q, k, h.Key, math.Float32bits(h.Score))
			}
		}
		hits := ix.Search(q, 5, nil)
		keys := make([]uint32, len(hits))
		w := make([]float64, len(hits))
		for i, h := range hits {
			keys[i], w[i] = h.Key, float64(h.Score)
		}
		fmt.Fprintf(&sb, "expand %s: %v %v\n", q, ix.Expand(keys, w, Analyze(q, true), 5, nil, 0), ix.Expand(keys, w, nil, 5, allow, 10))
	}
	for key := range uint32(900) {
		if ix.Has(key) {
			fmt.Fprintf(&sb, "has %d\n", key)
		}
	}
	return sb.String()
}

// churned builds an index with tombstones, unsorted tails, reused term ids
// and arena garbage: the states a snapshot must flatten.
func churned(seed uint64, steps int) *Index {
	r := rand.New(rand.NewPCG(seed, 7))
	ix := New(DefaultOptions())
	for range steps {
		k := uint32(r.IntN(800))
		switch r.IntN(4) {
		case 0:
			ix.Remove(k)
		case 1:
			ix.Add(k, "")
		default:
			ix.Add(k, randomDoc(r)+" common words everywhere")
		}
	}
	return ix
}

func testQueries(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 9))
	qs := []string{"common", "words everywhere", "", "zzz-unknown"}
	for range n {
		qs = append(qs, randomQuery(r))
	}
	return qs
}

func TestSnapshotRoundTrip(t *testing.T) {
	queries := testQueries(1, 60)
	for _, seed := range []uint64{1, 2, 3} {
		ix := churned(seed, 6000)
		data := writeSnapshot(t, ix)
		got := readSnapshot(t, data)
		checkInvariants(t, got)
		if a, b := observe(t, ix, queries), observe(t, got, queries); a != b {
			t.Fatalf("seed %d: restored index differs:\n%s", seed, firstDiff(a, b))
		}
		if got.Options() != ix.Options() {
			t.Fatalf("options %+v, want %+v", got.Options(), ix.Options())
		}
		// A snapshot is canonical: the restored index snapshots to the
		// same bytes.
		if again := writeSnapshot(t, got); !bytes.Equal(again, data) {
			t.Fatalf("seed %d: re-snapshot differs (%d vs %d bytes)", seed, len(again), len(data))
		}
		// The restored index keeps working like the original under the
		// same further changes.
		r1 := rand.New(rand.NewPCG(seed, 99))
		r2 := rand.New(rand.NewPCG(seed, 99))
		for range 3000 {
			for _, x := range []struct {
				ix *Index
				r  *rand.Rand
			}{{ix, r1}, {got, r2}} {
				k := uint32(x.r.IntN(900))
				if x.r.IntN(3) == 0 {
					x.ix.Remove(k)
				} else {
					x.ix.Add(k, randomDoc(x.r))
				}
			}
		}
		checkInvariants(t, got)
		if a, b := observe(t, ix, queries), observe(t, got, queries); a != b {
			t.Fatalf("seed %d: after further changes:\n%s", seed, firstDiff(a, b))
		}
	}
}

// A snapshot holds nothing of a removed document: it equals the snapshot
// of an index that never had it.
func TestSnapshotDropsRemovedDocuments(t *testing.T) {
	a, b := New(DefaultOptions()), New(DefaultOptions())
	for k := range uint32(200) {
		text := fmt.Sprintf("shared words and token%d", k)
		a.Add(k, text)
		if k%7 != 0 {
			b.Add(k, text)
		}
	}
	a.Add(1000, "supersecret forgotten words")
	a.Remove(1000)
	for k := uint32(0); k < 200; k += 7 {
		a.Remove(k)
	}
	b.Add(1000, "x")
	b.Remove(1000) // the same key range: keys up to 1000 exist
	da, db := writeSnapshot(t, a), writeSnapshot(t, b)
	ra, rb := readSnapshot(t, da), readSnapshot(t, db)
	if bytes.Contains(da, []byte("supersecret")) || ra.DocFreq("token7") != 0 || rb.DocFreq("token8") != 1 {
		t.Fatal("snapshot holds a removed document's terms")
	}
	qs := []string{"shared", "token14", "token15 words", "supersecret"}
	if x, y := observe(t, ra, qs), observe(t, rb, qs); x != y {
		t.Fatalf("snapshots differ:\n%s", firstDiff(x, y))
	}
	if x, y := observe(t, a, qs), observe(t, ra, qs); x != y {
		t.Fatalf("restored differs:\n%s", firstDiff(x, y))
	}
}

func TestSnapshotEdgeCases(t *testing.T) {
	empty := New(Options{K1: 2, B: 0, Stem: false})
	got := readSnapshot(t, writeSnapshot(t, empty))
	if got.Len() != 0 || got.Options() != empty.Options() {
		t.Fatalf("empty: len %d options %+v", got.Len(), got.Options())
	}
	got.Add(3, "now it works")
	if hits := got.Search("works", 10, nil); len(hits) != 1 || hits[0].Key != 3 {
		t.Fatalf("hits %v", hits)
	}

	ix := New(DefaultOptions())
	ix.Add(5, "")                                      // a document without terms
	ix.Add(9, strings.Repeat("echo ", 70000)+"delta")  // a clipped term frequency
	ix.Add(2, "the and of")                            // stop words only
	ix.Add(12, "東京 タワー straße o'neill's 2023 covid19") // non-ASCII, digits
	ix.Remove(12)
	ix.Add(12, "東京 タワー straße o'neill's 2023 covid19")
	got = readSnapshot(t, writeSnapshot(t, ix))
	checkInvariants(t, got)
	qs := []string{"echo", "delta", "東京", "straße", "oneill", "2023", "echo delta"}
	if a, b := observe(t, ix, qs), observe(t, got, qs); a != b {
		t.Fatalf("differs:\n%s", firstDiff(a, b))
	}
	if n, _ := got.Stats(); n != 4 {
		t.Fatalf("%d documents", n)
	}
}

// A snapshot may be followed by other data; ReadIndex leaves it unread.
func TestSnapshotConsumesExactly(t *testing.T) {
	data := writeSnapshot(t, churned(4, 500))
	r := bytes.NewReader(append(slices.Clone(data), "tail"...))
	if _, err := ReadIndex(r); err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "tail" {
		t.Fatalf("left %q", rest)
	}
}

func checkCorrupt(t *testing.T, data []byte, what string) {
	t.Helper()
	ix, err := ReadIndex(bytes.NewReader(data))
	if err == nil {
		t.Fatalf("%s: accepted", what)
	}
	if ix != nil || !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrIncompatible) {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestSnapshotCorruption(t *testing.T) {
	ix := New(DefaultOptions())
	r := rand.New(rand.NewPCG(5, 5))
	for k := range uint32(40) {
		ix.Add(k, randomDoc(r))
	}
	ix.Remove(3)
	data := writeSnapshot(t, ix)
	for n := range len(data) {
		checkCorrupt(t, data[:n], fmt.Sprintf("truncated to %d", n))
	}
	for i := range data {
		for _, bit := range []byte{1, 0x80} {
			bad := slices.Clone(data)
			bad[i] ^= bit
			checkCorrupt(t, bad, fmt.Sprintf("bit %#x of byte %d flipped", bit, i))
		}
	}
	big := writeSnapshot(t, churned(6, 3000))
	for range 2000 {
		bad := slices.Clone(big)
		switch r.IntN(3) {
		case 0:
			bad = bad[:r.IntN(len(bad))]
		case 1:
			for range 1 + r.IntN(4) {
				bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			}
		default:
			i := r.IntN(len(bad))
			bad = append(bad[:i], bad[i+1+r.IntN(min(8, len(bad)-i)):]...)
		}
		checkCorrupt(t, bad, "random damage")
	}
}

func TestSnapshotIncompatible(t *testing.T) {
	data := writeSnapshot(t, churned(7, 300))
	v2 := slices.Clone(data)
	binary.LittleEndian.PutUint32(v2[8:], snapshotVersion+1)
	if _, err := ReadIndex(bytes.NewReader(v2)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("other version: %v", err)
	}
	// An intact snapshot from a build whose analyser differs.
	other := slices.Clone(data)
	binary.LittleEndian.PutUint32(other[12:], analyzerFingerprint()+1)
	reseal(other)
	if _, err := ReadIndex(bytes.NewReader(other)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("other analyser: %v", err)
	}
}

// reseal recomputes a snapshot's checksum after a deliberate edit.
func reseal(data []byte) {
	sum := crc32.Update(crc32.Checksum(data[8:24], castagnoli), castagnoli, data[headerSize:])
	binary.LittleEndian.PutUint32(data[24:], sum)
}

// seal wraps a payload in a valid header.
func seal(payload []byte) []byte {
	data := make([]byte, headerSize, headerSize+len(payload))
	copy(data, snapshotMagic[:])
	binary.LittleEndian.PutUint32(data[8:], snapshotVersion)
	binary.LittleEndian.PutUint32(data[12:], analyzerFingerprint())
	binary.LittleEndian.PutUint64(data[16:], uint64(len(payload)))
	data = append(data, payload...)
	reseal(data)
	return data
}

// A header claiming a huge payload over a short stream fails without
// reserving the claimed size.
func TestSnapshotBoundedAllocation(t *testing.T) {
	data := writeSnapshot(t, churned(8, 200))
	binary.LittleEndian.PutUint64(data[16:], 1<<39)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	checkCorrupt(t, data, "lying length")
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 4*readChunk {
		t.Fatalf("allocated %d bytes for a %d-byte stream", d, len(data))
	}
	// Sealed payloads whose counts exceed what the bytes can carry.
	var p []byte
	p = binary.LittleEndian.AppendUint64(p, math.Float64bits(1.2))
	p = binary.LittleEndian.AppendUint64(p, math.Float64bits(0.75))
	p = append(p, 1)
	for _, counts := range [][3]uint64{{1 << 31, 0, 0}, {0, 1 << 31, 0}, {0, 0, 1 << 31}, {math.MaxUint64, 1, 1}} {
		q := slices.Clone(p)
		for _, c := range counts {
			q = binary.AppendUvarint(q, c)
		}
		q = append(q, make([]byte, 64)...)
		checkCorrupt(t, seal(q), fmt.Sprintf("counts %v", counts))
	}
}

// exercise runs searches and mutations over a decoded index: a snapshot
// that decodes must give a working index.
func exercise(t *testing.T, ix *Index) {
	checkInvariants(t, ix)
	ix.mu.RLock()
	dict := dictOf(ix)
	names := make([]string, 0, len(dict))
	for name := range dict {
		names = append(names, name)
	}
	nkeys := len(ix.docs)
	ix.mu.RUnlock()
	slices.Sort(names)
	for _, q := range append(names[:min(len(names), 8)], "extra") {
		ix.SearchTerms([]string{q}, 5, nil)
		ix.SearchTermsScoped([]string{q, "extra"}, 3, func(k uint32) bool { return k%2 == 0 }, 1)
	}
	data := writeSnapshot(t, ix)
	again := readSnapshot(t, data)
	if !bytes.Equal(writeSnapshot(t, again), data) {
		t.Fatal("re-snapshot differs")
	}
	for k := range uint32(min(nkeys, 64)) {
		ix.Remove(k)
		ix.Add(k+1, "extra words")
	}
	checkInvariants(t, ix)
}

func FuzzReadIndex(f *testing.F) {
	for _, seed := range []uint64{1, 2} {
		f.Add(writeSnapshot(f, churned(seed, 100)))
	}
	f.Add(writeSnapshot(f, New(DefaultOptions())))
	f.Add([]byte("MGLEXIDX"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ix, err := ReadIndex(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrIncompatible) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor ErrIncompatible", err)
			}
			return
		}
		exercise(t, ix)
	})
}

// FuzzReadIndexPayload fuzzes the payload under a valid checksum, so the
// decoder's own checks are what stands between the input and a panic.
func FuzzReadIndexPayload(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3} {
		f.Add(writeSnapshot(f, churned(seed, 60))[headerSize:])
	}
	ix := New(DefaultOptions())
	ix.Add(0, "")
	ix.Add(2, strings.Repeat("echo ", 70000))
	f.Add(writeSnapshot(f, ix)[headerSize:])
	f.Fuzz(func(t *testing.T, payload []byte) {
		ix, err := ReadIndex(bytes.NewReader(seal(payload)))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		exercise(t, ix)
	})
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// BenchmarkSnapshot1M times WriteTo and ReadIndex on the 1M-document
// benchmark corpus (MEMGATE_BENCH_LARGE=1).
func BenchmarkSnapshot1M(b *testing.B) {
	skipUnlessLarge(b)
	bi := benchIndex(b, 1_000_000)
	var buf bytes.Buffer
	start := time.Now()
	if _, err := bi.ix.WriteTo(&buf); err != nil {
		b.Fatal(err)
	}
	writeMS := float64(time.Since(start).Milliseconds())
	data := buf.Bytes()
	for b.Loop() {
		if _, err := ReadIndex(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(writeMS, "write-ms")
	b.ReportMetric(float64(len(data))/1e6, "MB")
}
