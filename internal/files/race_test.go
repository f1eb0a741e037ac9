package files_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// twoProcesses runs fn with two files services, each over its own core
// service and store handle on one database: two memgate processes.
func twoProcesses(t *testing.T, fn func(t *testing.T, a *env, b *files.Service)) {
	second := func(t *testing.T, st store.Store) *files.Service {
		ix := retrieve.New(retrieve.Options{})
		if _, err := ix.Load(t.Context(), st); err != nil {
			t.Fatal(err)
		}
		return files.New(core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix}), files.Options{})
	}
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "memgate.db")
		open := func() store.Store {
			st, err := sqlite.Open(t.Context(), path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		e := newEnv(t, open())
		fn(t, e, second(t, open()))
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		open := func() store.Store {
			st, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		e := newEnv(t, open())
		fn(t, e, second(t, open()))
	})
}

// Two processes creating (or renaming to) the same path at once: exactly
// one succeeds, the other gets the path conflict, on both backends.
func TestFilePathUniqueAcrossProcesses(t *testing.T) {
	twoProcesses(t, func(t *testing.T, e *env, other *files.Service) {
		ctx := t.Context()
		std := e.who["std"]
		sc := memory.Scope{UserID: "u1"}
		const rounds = 12
		for i := range rounds {
			path := fmt.Sprintf("/memories/race-%d.md", i)
			// Both services have seen the database before the race, so
			// each one's in-memory index says the path is free.
			for _, f := range []*files.Service{e.files, other} {
				if _, err := f.Read(ctx, std, sc, path); fault.CodeOf(err) != fault.NotFound {
					t.Fatalf("read before the race: %v", err)
				}
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, 2)
			for j, f := range []*files.Service{e.files, other} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if i%2 == 0 {
						_, errs[j] = f.Create(ctx, std, files.CreateRequest{Path: path, Content: fmt.Sprintf("writer %d", j), Scope: sc})
						return
					}
					// Odd rounds: each process renames its own file onto path.
					src := fmt.Sprintf("/memories/src-%d-%d.md", i, j)
					if _, err := f.Create(ctx, std, files.CreateRequest{Path: src, Content: "moving", Scope: sc}); err != nil {
						errs[j] = err
						return
					}
					_, errs[j] = f.Rename(ctx, std, sc, src, path)
				}()
			}
			close(start)
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case fault.CodeOf(err) == fault.Conflict && fault.As(err).Details["field"] == "path":
				default:
					t.Fatalf("round %d: unexpected error %v", i, err)
				}
			}
			if won != 1 {
				t.Fatalf("round %d: %d writers got %s, want exactly 1", i, won, path)
			}
			// The database holds one live file at the path.
			live := 0
			err := e.st.ScanRecords(context.Background(), func(ws string, r memory.Record) error {
				if r.Category == files.Category && r.InvalidatedAt == nil && r.Scope == sc &&
					fmt.Sprintf(`{"file_path":%q}`, path) == string(r.Metadata) {
					live++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if live != 1 {
				t.Fatalf("round %d: %d live files at %s", i, live, path)
			}
		}
	})
}
