package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// TestSnapshotSaveSkipsAForgetItHasNotApplied is the race of a server
// saving its index snapshot while another process (the CLI) forgets: the
// server's index still holds the record when it writes the file. The save
// must not publish it; once the index has caught up, it does, without
// the words.
func TestSnapshotSaveSkipsAForgetItHasNotApplied(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	path := filepath.Join(dir, "index.snapshot")
	// The other process: no index of its own; its erasure deletes the file.
	other := core.New(core.Options{Store: st, Policy: gate.Default(), OnErased: func() { invalidateSnapshot(path, log) }})
	if _, _, err := other.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := core.LocalOperator(memory.DefaultWorkspace)
	w, err := other.Write(ctx, op, core.WriteRequest{Type: memory.Belief, Content: "the zorblax7 plan"})
	if err != nil {
		t.Fatal(err)
	}
	// The server's index, current before the forget.
	ix := retrieve.New(retrieve.Options{Logger: log})
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := saveSnapshotChecked(ix, st, path); err != nil {
		t.Fatal(err)
	}
	if !has(t, path, "zorblax7") {
		t.Fatal("test is broken: the snapshot does not hold the word")
	}
	if _, err := other.Forget(ctx, op, w.Record.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the forget left the snapshot: %v", err)
	}
	// The server has not applied the forget yet.
	if err := saveSnapshotChecked(ix, st, path); !errors.Is(err, errSnapshotStale) {
		t.Fatalf("save before catching up: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the stale save wrote the snapshot: %v", err)
	}
	temps, _ := filepath.Glob(filepath.Join(dir, ".index.snapshot.*.tmp"))
	if len(temps) != 0 {
		t.Fatalf("the stale save left %v", temps)
	}
	if _, err := ix.CatchUp(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := saveSnapshotChecked(ix, st, path); err != nil {
		t.Fatal(err)
	}
	if has(t, path, "zorblax7") {
		t.Fatal("the snapshot saved after catching up holds the forgotten word")
	}
}

func has(t *testing.T, path, needle string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(needle))
}
