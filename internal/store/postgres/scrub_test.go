package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/storetest"
)

// TestScrubWaitsForTheHorizon: VACUUM FULL keeps a dead row version,
// bytes and all, while any snapshot of the database may still see it, and
// a snapshot's xmin is the oldest transaction running anywhere in the
// cluster. Scrub must not rewrite before the erasure is older than every
// such snapshot. Each case holds a transaction that began before the
// erasure and checks that Scrub keeps waiting (it polls; the test sees it
// poll twice more without returning) until the transaction ends, and that
// then no page holds the content.
//
// Both cases left the content in `records` before the fix, which waited
// only for this database's transactions that had started before the call
// (TestErasureLeavesNothing/postgres failed so when other tests' databases
// were busy).
func TestScrubWaitsForTheHorizon(t *testing.T) {
	pgtest.ServerURL(t)
	// An older transaction in another database: every snapshot taken in
	// this one, the rewrite's own included, has an xmin before the erasure
	// until it ends.
	t.Run("another database", func(t *testing.T) {
		s, _, secret, purge := scrubFixture(t)
		ctx := t.Context()
		older := beginWithXid(t, pgtest.URL(t))
		purge()
		done := goScrub(s)
		if err, returned := scrubKeepsWaiting(t, s, done); returned {
			t.Fatalf("Scrub returned (%v) while a transaction older than the erasure runs in another database; pages holding the content: %v",
				err, pagesHolding(t, s, secret))
		}
		if err := older.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		scrubEnds(t, s, done, secret)
	})
	// A snapshot taken after Scrub began, while a transaction older than
	// the erasure still ran: its xmin precedes the erasure after that
	// transaction ends. It reads no table the scrub rewrites, so nothing
	// blocks the rewrite.
	t.Run("later snapshot", func(t *testing.T) {
		s, url, secret, purge := scrubFixture(t)
		ctx := t.Context()
		older := beginWithXid(t, url)
		purge()
		done := goScrub(s)
		if err, returned := scrubKeepsWaiting(t, s, done); returned {
			t.Fatalf("Scrub returned (%v) while a transaction older than the erasure runs", err)
		}
		later := connect(t, url)
		snap, err := later.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := snap.Exec(ctx, "SELECT count(*) FROM workspaces"); err != nil {
			t.Fatal(err)
		}
		if err := older.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err, returned := scrubKeepsWaiting(t, s, done); returned {
			t.Fatalf("Scrub returned (%v) while a snapshot older than the erasure is open; pages holding the content: %v",
				err, pagesHolding(t, s, secret))
		}
		if err := snap.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		scrubEnds(t, s, done, secret)
	})
}

// scrubFixture opens a store on a database of its own holding a record
// whose content, in every table, is secret, and returns purge, which
// erases it. It skips without pageinspect.
func scrubFixture(t *testing.T) (s *Store, url, secret string, purge func()) {
	t.Helper()
	ctx := t.Context()
	url = pgtest.URL(t)
	s, err := Open(ctx, url, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.w.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pageinspect"); err != nil {
		t.Skipf("pageinspect is not available: %v", err)
	}
	mustWorkspace(t, s, "a")
	secret = "xyzzy-horizon-" + memory.NewID()
	r := storetest.NewRecord(secret, func(r *memory.Record) { r.Entities = []string{"secret:" + secret} })
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertRecord(ctx, "a", r) })
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.InsertRecord(ctx, "a", storetest.NewRecord("a later record", func(*memory.Record) {}))
	})
	if h := pagesHolding(t, s, secret); len(h) < 3 {
		t.Fatalf("test is broken: the content is not in every table: %v", h)
	}
	return s, url, secret, func() {
		mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
			return tx.PurgeRecord(ctx, "a", r.ID, storetest.T0.Add(time.Hour))
		})
	}
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// beginWithXid begins a transaction on the database at url and gives it
// a transaction id, as a write would.
func beginWithXid(t *testing.T, url string) pgx.Tx {
	t.Helper()
	tx, err := connect(t, url).Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "SELECT pg_current_xact_id()"); err != nil {
		t.Fatal(err)
	}
	return tx
}

func goScrub(s *Store) chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		done <- s.Scrub(ctx)
	}()
	return done
}

// scrubKeepsWaiting waits until the running Scrub has polled the
// horizon twice after this call (a query on pg_stat_activity by another
// session of the database, started after now: the second proves the first
// answered "wait"), or until it returns (returned; its error is put back
// in done).
func scrubKeepsWaiting(t *testing.T, s *Store, done chan error) (err error, returned bool) {
	t.Helper()
	ctx := t.Context()
	var since time.Time
	if err := s.r.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&since); err != nil {
		t.Fatal(err)
	}
	seen := map[time.Time]bool{}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		rows, err := s.r.Query(ctx, `SELECT query_start FROM pg_stat_activity /* scrub probe */
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query_start > $1
			AND query ILIKE '%pg_stat_activity%' AND query NOT LIKE '%scrub probe%'`, since)
		if err != nil {
			t.Fatal(err)
		}
		starts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range starts {
			seen[st] = true
		}
		if len(seen) >= 2 {
			return nil, false
		}
		select {
		case err := <-done:
			done <- err
			return err, true
		case <-deadline:
			t.Fatal("Scrub neither returned nor polled the horizon twice in a minute")
		case <-tick.C:
		}
	}
}

// scrubEnds waits for the running Scrub, which must succeed and leave no
// page holding secret.
func scrubEnds(t *testing.T, s *Store, done chan error, secret string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Scrub: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Scrub did not end within a minute of the older transaction's end")
	}
	if h := pagesHolding(t, s, secret); len(h) > 0 {
		t.Fatalf("after Scrub, pages still hold the content: %v", h)
	}
}
