package retrieve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/memgate/memgate/internal/snapio"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/vector"
)

// ---- tests --------------------------------------------------------------------

// The main property: a snapshot of any age, restored and caught up, is the
// engine a fresh Load gives, and the engine the snapshotted one becomes by
// following the same changes.
func TestSnapshotRestoreCatchUp(t *testing.T) {
	for _, mode := range []VectorMode{VectorExact, VectorApprox} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			f := newFixture(t, filepath.Join(dir, "memgate.db"))
			opts := Options{Embedder: testEmb, Vectors: mode, HNSW: vector.HNSWConfig{Seed: 7}}
			f.insert(300)
			f.forget(f.pick()) // before Load, which skips it
			a := load(t, f.st, opts)
			path := filepath.Join(dir, "index.snapshot")
			if err := a.SaveSnapshot(path); err != nil {
				t.Fatal(err)
			}
			// The engine goes on (it would be a server); the snapshot stays.
			inSnapshot := maps.Clone(f.live)
			var forgotten []memory.Record
			for i := range 120 {
				switch i % 6 {
				case 0, 1:
					f.insert(1)
				case 2:
					f.patch(true)
				case 3:
					f.patch(false)
				case 4:
					r := f.pick()
					if _, ok := inSnapshot[r.ID]; ok {
						forgotten = append(forgotten, r)
					}
					f.forget(r)
				case 5:
					f.vectorless(1)
				}
			}
			nFilled := f.vectorless(3)
			if nFilled == 0 {
				t.Fatal("fixture: every record has a vector")
			}

			b := New(opts)
			rs, err := b.Restore(f.ctx, f.st, path)
			if err != nil {
				t.Fatal(err)
			}
			if rs.Applied == 0 || rs.Forgotten != len(forgotten) || rs.VectorsFilled == 0 || rs.Records != 299 {
				t.Fatalf("restore stats %+v (forgot %d)", rs, len(forgotten))
			}
			st := b.SnapshotStatus()
			if !st.Saved || !st.Dirty || st.Forgotten != len(forgotten) || !b.ForgetPending() {
				t.Fatalf("status after restore %+v", st)
			}

			fresh := load(t, f.st, opts)
			if mode == VectorExact {
				sameScores(t, "restored vs fresh Load", b, fresh)
			}
			stB, stFresh := state(b), state(fresh)
			// A fresh Load has no slots for forgotten records; drop them.
			var kept []string
			for _, l := range strings.Split(stB, "\n") {
				if !strings.Contains(l, "alive=false") {
					kept = append(kept, l)
				}
			}
			diffState(t, "restored vs fresh Load", strings.Join(kept, "\n"), stFresh)
			if b.Stats() != fresh.Stats() {
				t.Fatalf("stats %+v vs %+v", b.Stats(), fresh.Stats())
			}

			// The original engine following the same changes (the embedding
			// job would have handed it the new vectors) matches exactly, key
			// numbering and HNSW graph included.
			if _, err := a.CatchUp(f.ctx, f.st); err != nil {
				t.Fatal(err)
			}
			f.st.ScanVectors(f.ctx, testEmb.Model(), func(ws, id string, vec []float32) error {
				if r, ok := f.live[id]; ok {
					a.SetVector(ws, id, r.ContentSHA256, slices.Clone(vec))
				}
				return nil
			})
			diffState(t, "restored vs followed", state(b), state(a))
			sameResults(t, "restored vs followed", a, b)

			// Saving again drops the forgotten records' derived data.
			if err := b.SaveSnapshot(path); err != nil {
				t.Fatal(err)
			}
			if b.Dirty() || b.ForgetPending() {
				t.Fatalf("status after save %+v", b.SnapshotStatus())
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if mode == VectorApprox && raw[12+12+headKindOffset(t, raw)] != kindLive {
				t.Fatal("HNSW graph with forgotten tombstones was written")
			}
			c := New(opts)
			if _, err := c.Restore(f.ctx, f.st, path); err != nil {
				t.Fatal(err)
			}
			if mode == VectorExact {
				diffState(t, "second restore", state(c), state(b))
				sameResults(t, "second restore", c, b)
			} else {
				sameScores(t, "second restore (graph rebuilt)", c, fresh)
				// The rebuilt graph has no forgotten tombstones: the next
				// snapshot holds a graph again.
				if err := c.SaveSnapshot(path); err != nil {
					t.Fatal(err)
				}
				raw, _ = os.ReadFile(path)
				if raw[12+12+headKindOffset(t, raw)] != kindHNSW {
					t.Fatal("clean graph not written as a graph")
				}
				d := New(opts)
				if _, err := d.Restore(f.ctx, f.st, path); err != nil {
					t.Fatal(err)
				}
				diffState(t, "graph restore", state(d), state(c))
				sameResults(t, "graph restore", d, c)
			}
		})
	}
}

// headKindOffset finds the kind byte in a snapshot's head section.
func headKindOffset(t *testing.T, raw []byte) int {
	t.Helper()
	body := raw[24:]
	d := snapio.NewReader(body, snapCorrupt)
	d.Varint()
	d.Uvarint()
	d.Uvarint()
	d.Str(1 << 20)
	d.Uvarint()
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	return len(body) - int(d.Rest())
}

// A snapshot holds nothing of a forgotten record but its key.
func TestSnapshotHoldsNothingOfForgotten(t *testing.T) {
	for _, mode := range []VectorMode{VectorExact, VectorApprox} {
		t.Run(string(mode), func(t *testing.T) {
			e := New(Options{Embedder: testEmb, Vectors: mode})
			for i := range 50 {
				r := rec(i+1, fmt.Sprintf("ordinary words number %d shared", i))
				e.Upsert("w", r)
				e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
			}
			secret := rec(100, "zanzibarsecret kilimanjaro shared", func(r *memory.Record) {
				r.Entities = []string{"person:hushhush"}
				r.Category = "clandestine"
			})
			e.Upsert("w", secret)
			vec := testEmb.vec(secret.Content)
			e.SetVector("w", secret.ID, secret.ContentSHA256, vec)
			var before bytes.Buffer
			if err := e.WriteSnapshot(&before); err != nil {
				t.Fatal(err)
			}
			gone := secret
			gone.Status = memory.Forgotten
			e.Upsert("w", gone)
			var after bytes.Buffer
			if err := e.WriteSnapshot(&after); err != nil {
				t.Fatal(err)
			}
			vb := make([]byte, 0, 4*len(vec))
			if mode == VectorExact {
				for _, x := range vec[:4] {
					vb = binary.LittleEndian.AppendUint32(vb, math.Float32bits(x))
				}
			} else {
				// HNSW holds it quantised: int16 multiples of a power of two.
				m := 0.0
				for _, x := range vec {
					m = max(m, math.Abs(float64(x)))
				}
				_, exp := math.Frexp(m)
				exp -= 15
				if math.RoundToEven(math.Ldexp(m, -exp)) > math.MaxInt16 {
					exp++
				}
				for _, x := range vec[:4] {
					vb = binary.LittleEndian.AppendUint16(vb, uint16(int16(math.RoundToEven(math.Ldexp(float64(x), -exp)))))
				}
			}
			var sha [32]byte
			unhexInto(sha[:], secret.ContentSHA256)
			for _, needle := range [][]byte{[]byte("zanzibarsecret"), []byte("kilimanjaro"), []byte("hushhush"),
				[]byte("clandestine"), sha[:], vb} {
				if !bytes.Contains(before.Bytes(), needle) {
					t.Fatalf("test broken: %q not in the snapshot before the forget", needle)
				}
				if bytes.Contains(after.Bytes(), needle) {
					t.Fatalf("%q survives the forget", needle)
				}
			}
			r := New(Options{Embedder: testEmb, Vectors: mode})
			if err := r.ReadSnapshot(bytes.NewReader(after.Bytes())); err != nil {
				t.Fatal(err)
			}
			if mode == VectorExact {
				diffState(t, "round trip", state(r), state(e))
			}
			res := search(t, r, Query{Text: "zanzibarsecret", K: 100, Filter: Filter{Workspace: "w", Access: allAccess}})
			if len(res.Hits) == 0 || slices.Contains(ids(res), secret.ID) {
				t.Fatalf("forgotten record found: %v", ids(res))
			}
		})
	}
}

// WriteSnapshot/ReadSnapshot without a store: every field of every
// document, odd ids and hashes included, sessions, counters, interned
// strings.
func TestSnapshotRoundTripState(t *testing.T) {
	e := New(Options{Embedder: testEmb})
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		id := fmt.Sprintf("00000000-0000-7000-8000-%012d", i)
		switch i % 17 {
		case 3:
			id = strings.ToUpper(id) // not canonical: kept as text
		case 5:
			id = fmt.Sprintf("legacy-%d", i)
		}
		at := t0.Add(time.Duration(r.IntN(1000)) * time.Minute)
		rec := memory.Record{ID: id, Type: memory.Episode, Content: fmt.Sprintf("%s %s turn %d", words[r.IntN(len(words))], words[r.IntN(len(words))], i),
			Status: memory.Active, Access: memory.Public, IngestedAt: at, Category: "c" + fmt.Sprint(i%3),
			Source: memory.Source{Agent: "a" + fmt.Sprint(i%4), Confidence: float64(i%10) / 10},
			Scope:  memory.Scope{UserID: "u" + fmt.Sprint(i%5), AgentID: "ag", AppID: "app", ProjectID: "p" + fmt.Sprint(i%2), SessionID: "s" + fmt.Sprint(i%7)}}
		rec.ContentSHA256 = memory.SHA256Hex(rec.Content)
		if i%11 == 0 {
			rec.ContentSHA256 = "not-a-hash"
		}
		if i%13 == 0 {
			rec.Entities = []string{"e:" + fmt.Sprint(i%3), "e:x"}
		}
		if i%3 == 0 {
			vf, vu := at.Add(-time.Hour), at.Add(time.Hour)
			rec.ValidFrom, rec.ValidUntil = &vf, &vu
		}
		if i%9 == 0 {
			rec.InvalidatedAt = &at
			rec.Type = memory.Belief
		}
		if i%2 == 0 {
			at2 := t0.Add(-time.Duration(i) * time.Second) // out-of-order turns
			rec.ValidFrom = &at2
		}
		e.Upsert([]string{"w", "w2"}[i%2], rec)
		if i%4 != 0 {
			e.SetVector([]string{"w", "w2"}[i%2], rec.ID, rec.ContentSHA256, testEmb.vec(rec.Content))
		}
		if i%10 == 0 && i > 0 {
			prev := memory.Record{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", i-1), Status: memory.Forgotten}
			e.Upsert([]string{"w", "w2"}[(i-1)%2], prev)
		}
	}
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	got := New(Options{Embedder: testEmb})
	if err := got.ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	diffState(t, "round trip", state(got), state(e))
	if !reflect.DeepEqual(got.keyNames(), e.keyNames()) {
		t.Fatal("keys differ")
	}
	for k := range e.docs {
		a, b := e.view(uint32(k)), got.view(uint32(k))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("doc %d:\n%+v\n%+v", k, a, b)
		}
	}
	for _, ws := range []string{"w", "w2"} {
		for _, q := range queries() {
			q.Filter.Workspace = ws
			if a, b := search(t, e, q), search(t, got, q); compareResults(a, b) != nil {
				t.Fatalf("query %q: %v\n%+v\n%+v", q.Text, compareResults(a, b), a, b)
			}
		}
	}
	// Both engines take the same further changes alike.
	for _, x := range []*Engine{e, got} {
		x.Upsert("w", rec(5000, "alpha bravo new turn", session("s1")))
		x.Upsert("w", memory.Record{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", 2), Status: memory.Forgotten})
	}
	diffState(t, "after changes", state(got), state(e))
}

func TestSnapshotRejectsOtherConfiguration(t *testing.T) {
	e := New(Options{Embedder: testEmb, Vectors: VectorExact})
	for i := range 20 {
		r := rec(i+1, fmt.Sprintf("words %d", i))
		e.Upsert("w", r)
		e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
	}
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"other model":     {Embedder: hashEmbedder{"test:other", 24}},
		"other dimension": {Embedder: hashEmbedder{"test:hash", 32}},
		"no embedder":     {},
		"hnsw wanted":     {Embedder: testEmb, Vectors: VectorApprox},
		"auto wants hnsw": {Embedder: testEmb, AutoThreshold: 5},
	} {
		x := New(o)
		err := x.ReadSnapshot(bytes.NewReader(buf.Bytes()))
		if !errors.Is(err, ErrSnapshotMismatch) {
			t.Fatalf("%s: %v", name, err)
		}
		if x.Stats().Docs != 0 {
			t.Fatalf("%s: engine not left empty", name)
		}
	}
	ok := New(Options{Embedder: testEmb}) // auto: exact for 20 vectors
	if err := ok.ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := ok.ReadSnapshot(bytes.NewReader(buf.Bytes())); err == nil {
		t.Fatal("ReadSnapshot into a filled engine")
	}
	// A snapshot without vectors, for an engine without an embedder.
	plain := New(Options{})
	plain.Upsert("w", rec(1, "hello there"))
	buf.Reset()
	if err := plain.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if err := New(Options{Embedder: testEmb}).ReadSnapshot(bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrSnapshotMismatch) {
		t.Fatalf("embedder configured, snapshot without: %v", err)
	}
	if err := New(Options{}).ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	// Another format version.
	v2 := slices.Clone(buf.Bytes())
	binary.LittleEndian.PutUint32(v2[8:], snapVersion+1)
	if err := New(Options{}).ReadSnapshot(bytes.NewReader(v2)); !errors.Is(err, ErrSnapshotMismatch) {
		t.Fatalf("other version: %v", err)
	}
}

func TestSnapshotCorruptFileRejected(t *testing.T) {
	for _, mode := range []VectorMode{VectorExact, VectorApprox} {
		e := New(Options{Embedder: testEmb, Vectors: mode})
		rr := rand.New(rand.NewPCG(3, 4))
		for i := range 60 {
			r := rec(i+1, fmt.Sprintf("%s %s %d", words[rr.IntN(len(words))], words[rr.IntN(len(words))], i), session("s"))
			e.Upsert("w", r)
			e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
		}
		e.Upsert("w", memory.Record{ID: rec(7, "").ID, Status: memory.Forgotten})
		var buf bytes.Buffer
		if err := e.WriteSnapshot(&buf); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		try := func(what string, bad []byte) {
			t.Helper()
			x := New(Options{Embedder: testEmb, Vectors: mode})
			err := x.ReadSnapshot(bytes.NewReader(bad))
			if err == nil {
				t.Fatalf("%s %s: accepted", mode, what)
			}
			if !errors.Is(err, ErrSnapshotCorrupt) && !errors.Is(err, ErrSnapshotMismatch) {
				t.Fatalf("%s %s: %v", mode, what, err)
			}
			if x.Stats().Docs != 0 || x.keyTab.n != 0 || len(x.docs) != 0 {
				t.Fatalf("%s %s: engine not left empty", mode, what)
			}
		}
		for n := 0; n < len(data); n += 1 + n/50 {
			try(fmt.Sprintf("truncated to %d", n), data[:n])
		}
		for range 400 {
			bad := slices.Clone(data)
			for range 1 + rr.IntN(3) {
				bad[rr.IntN(len(bad))] ^= byte(1 + rr.IntN(255))
			}
			try("damaged", bad)
		}
	}
	// A corrupt file: LoadSnapshot fails, the engine stays usable for Load.
	dir := t.TempDir()
	path := filepath.Join(dir, "index.snapshot")
	garbage := binary.LittleEndian.AppendUint32([]byte("MGENGSNP"), snapVersion)
	if err := os.WriteFile(path, append(garbage, "garbage"...), 0o600); err != nil {
		t.Fatal(err)
	}
	e := New(Options{})
	if err := e.LoadSnapshot(path); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("garbage file: %v", err)
	}
	if err := e.LoadSnapshot(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// countingStore counts the store-wide vector queries Restore makes.
func TestSnapshotCoversDocFields(t *testing.T) {
	var got []string
	for f := range reflect.TypeFor[doc]().Fields() {
		got = append(got, f.Name)
	}
	want := []string{"id", "sha", "validFrom", "validUntil", "invalidated", "eventTime", "version", "ws", "words", "ents", "flags"}
	if !slices.Equal(got, want) {
		t.Fatalf("doc has fields %v; the snapshot writes %v", got, want)
	}
}

// FuzzDecodeDocs feeds the documents decoder directly, below the section
// checksum: its own checks must reject whatever does not decode.
func FuzzDecodeDocs(f *testing.F) {
	e := New(Options{})
	for i := range 30 {
		r := rec(i+1, fmt.Sprintf("words %d", i), session("s"), func(r *memory.Record) {
			r.Entities = []string{"e:1"}
			if i%4 == 0 {
				r.ID = fmt.Sprintf("legacy-%d", i)
				r.ContentSHA256 = "x"
			}
		})
		e.Upsert("w", r)
	}
	e.Upsert("w", memory.Record{ID: rec(3, "").ID, Status: memory.Forgotten})
	e.mu.RLock()
	p, err := e.encodeDocsLocked()
	n := len(e.docs)
	e.mu.RUnlock()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p, n)
	f.Add(p[:len(p)/2], n)
	// One live document claiming 2^40 entities, or words.
	one := append([]byte{1, 0, 1, docAlive}, make([]byte, 11)...)
	one = append(one, 1, 'x', 0, 0, 0, 0, 0, 0, 0, 0, 0)
	f.Add(binary.AppendUvarint(slices.Clone(one), 1<<40), 1)
	f.Add(binary.AppendUvarint(append(slices.Clone(one), 0, 0), 1<<40), 1)
	f.Fuzz(func(t *testing.T, p []byte, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		s, err := decodeDocs(p, n)
		if err != nil {
			if !errors.Is(err, ErrSnapshotCorrupt) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(s.docs) != n || s.keyTab.n != n {
			t.Fatalf("%d docs, %d keys for %d", len(s.docs), s.keyTab.n, n)
		}
	})
}

// A snapshot of another database, or of this one before it was replaced
// by an older copy, is refused by Restore.
