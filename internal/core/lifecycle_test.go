package core

import (
	"context"
	"errors"
	"hash/fnv"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// hashEmbedder is a deterministic 8-dimension embedder; while down is set
// every call fails, as an unreachable endpoint does.
type hashEmbedder struct{ down atomic.Bool }

func (*hashEmbedder) Model() string { return "test-hash" }
func (*hashEmbedder) Dim() int      { return 8 }
func (h *hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if h.down.Load() {
		return nil, errors.New("embedding endpoint unreachable")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		f := fnv.New64a()
		f.Write([]byte(t))
		x := f.Sum64()
		v := make([]float32, 8)
		for j := range v {
			v[j] = float32(x>>(8*j)&0xff) + 1
		}
		out[i] = v
	}
	return out, nil
}

// lifeService opens a service with a search index over the SQLite file at
// path, as a process of its own would.
func lifeService(t *testing.T, path string, emb *hashEmbedder, loops Loops) (*Service, store.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	o := retrieve.Options{}
	if emb != nil {
		o.Embedder = emb
	}
	ix := retrieve.New(o)
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: st, Policy: gate.Default(), Index: ix, Loops: loops})
	if _, _, err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	return s, st
}

func writeBelief(t *testing.T, s *Service, content string) memory.Record {
	t.Helper()
	res, err := s.Write(context.Background(), LocalOperator(memory.DefaultWorkspace), WriteRequest{Type: memory.Belief, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return res.Record
}

// TestCloseEmbedsOwnWrites: a one-shot process never runs the loops; its
// Close stores the vectors of what it wrote. With the embedder down the
// write stands and Close says the vector is pending.
func TestCloseEmbedsOwnWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memgate.db")
	emb := &hashEmbedder{}
	s, st := lifeService(t, path, emb, Loops{})
	writeBelief(t, s, "the deploy runs on Fridays")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if have, total, err := st.CountVectors(context.Background(), emb.Model()); err != nil || have != 1 || total != 1 {
		t.Fatalf("vectors after Close: %d of %d, %v", have, total, err)
	}

	emb.down.Store(true)
	s2, _ := lifeService(t, path, emb, Loops{})
	writeBelief(t, s2, "the backup runs at night")
	err := s2.Close()
	if fault.CodeOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "1 record(s) stored without a vector") {
		t.Fatalf("Close with the embedder down: %v", err)
	}
	if have, total, _ := st.CountVectors(context.Background(), emb.Model()); have != 1 || total != 2 {
		t.Fatalf("vectors: %d of %d; want the second write stored without one", have, total)
	}
}

// TestRunFollowsOtherProcesses: a running service installs the vectors of
// records another process wrote — computed by that process (found in the
// embedding cache) or not computed at all — woken by its change follower,
// not the sweep (an hour here). Close stops every loop and Run returns.
func TestRunFollowsOtherProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memgate.db")
	emb := &hashEmbedder{}
	other, _ := lifeService(t, path, emb, Loops{})
	plain, _ := lifeService(t, path, nil, Loops{})
	s, _ := lifeService(t, path, emb, Loops{Follow: 10 * time.Millisecond, EmbedSweep: time.Hour})
	ran := make(chan error, 1)
	go func() { ran <- s.Run(context.Background()) }()

	waitVectors := func(want int) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for s.index.Stats().Vectors != want {
			select {
			case <-deadline:
				t.Fatalf("index holds %d vectors, want %d", s.index.Stats().Vectors, want)
			case <-tick.C:
			}
		}
	}
	writeBelief(t, other, "embedded by the writer")
	if err := other.Close(); err != nil { // stores the vector and caches it
		t.Fatal(err)
	}
	waitVectors(1)
	writeBelief(t, plain, "written without an embedder")
	waitVectors(2)
	writeBelief(t, s, "written here")
	waitVectors(3)

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	default:
		t.Fatal("Close returned before Run did")
	}
	if err := s.Run(context.Background()); fault.CodeOf(err) != fault.Conflict {
		t.Fatalf("Run after Close: %v", err)
	}
}
