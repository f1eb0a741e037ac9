package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// TestBackupToUnderWrites: a backup of a database many backup steps
// large, taken while four goroutines commit records, is one snapshot: it
// passes SQLite's integrity check, and holds every record committed
// before it began and no more than were committed by its end, with the
// change log ending at the last change among them (no torn transaction).
func TestBackupToUnderWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a few MiB; skipped with -short")
	}
	ctx := context.Background()
	s := openTest(t, Options{})
	var n atomic.Int64
	insert := func(tx store.Tx, i int64) error {
		content := fmt.Sprintf("Record %d:", i)
		for len(content) < 1500 {
			content += fmt.Sprintf(" filler %d", len(content))
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
		return tx.InsertRecord(ctx, memory.DefaultWorkspace, memory.Record{ID: memory.NewID(), Type: memory.Types[0],
			Content: content, ContentSHA256: memory.SHA256Hex(content), Metadata: json.RawMessage(`{}`), Version: 1,
			Status: memory.Active, Source: memory.Source{Agent: "t", Kind: memory.Observed, Confidence: 0.9, Evidence: []string{}},
			IngestedAt: at, Access: memory.Public, Gate: memory.GateInfo{DecisionID: memory.NewID(), Decision: "accepted", Origin: "external"},
			DecayScore: 1, Path: memory.PathFast, CreatedAt: at, UpdatedAt: at})
	}
	if err := s.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: memory.DefaultWorkspace, CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 8; b++ {
		if err := s.Tx(ctx, func(tx store.Tx) error {
			for range 1000 {
				if err := insert(tx, n.Add(1)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var pages int64
	if err := s.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages < 3*backupStepPages {
		t.Fatalf("the database has %d pages: too few for several backup steps", pages)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var committed atomic.Int64
	committed.Store(n.Load())
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.Tx(ctx, func(tx store.Tx) error { return insert(tx, n.Add(1)) }); err != nil {
					t.Error(err)
					return
				}
				committed.Add(1)
			}
		})
	}
	// Writes are under way before the backup begins.
	for committed.Load() < 8000+20 {
		time.Sleep(time.Millisecond) // polling a counter; the writers never wait on this
	}
	before := committed.Load()
	dest := filepath.Join(t.TempDir(), "copy.db")
	steps := 0
	if err := s.BackupTo(ctx, dest, func(done, total int64) { steps++ }); err != nil {
		t.Fatal(err)
	}
	after := committed.Load()
	close(stop)
	wg.Wait()
	if steps < 3 {
		t.Fatalf("%d progress reports: the copy took fewer steps than the test needs", steps)
	}

	db, err := sql.Open("sqlite", "file:"+dest+"?mode=ro&immutable=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %v %q", err, check)
	}
	var records, changes, maxSeq int64
	if err := db.QueryRow("SELECT count(*) FROM records").Scan(&records); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*), coalesce(max(seq), 0) FROM record_changes").Scan(&changes, &maxSeq); err != nil {
		t.Fatal(err)
	}
	if records < before || records > after {
		t.Fatalf("the copy holds %d records; %d were committed before the backup, %d by its end", records, before, after)
	}
	if changes != records {
		t.Fatalf("the copy's change log has %d entries for %d records: not one snapshot", changes, records)
	}
	t.Logf("%d pages, %d steps; %d records committed before, %d in the copy, %d by its end", pages, steps, before, records, after)
}
