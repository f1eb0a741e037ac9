package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/memory"

	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/storetest"
)

// openTest opens a store on a fresh database of its own.
func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.URL(t), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	pgtest.ServerURL(t) // skip (or fail under CI) once, not per subtest
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t) })
}

func mustTx(t *testing.T, s *Store, fn func(ctx context.Context, tx store.Tx) error) {
	t.Helper()
	ctx := t.Context()
	if err := s.Tx(ctx, func(tx store.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("tx: %v", err)
	}
}

func mustWorkspace(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, id := range ids {
			if err := tx.CreateWorkspace(ctx, memory.Workspace{ID: id, CreatedAt: storetest.T0}); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestChangeLogCommitOrder is the skipped-change race: transaction A
// draws its change-log seq, then stalls before COMMIT; transaction B
// writes, draws a higher seq and commits. A reader tailing the log with
// "seq > cursor" that saw B's entry first would never see A's. The store
// must keep B from committing its entry until A has, so the reader sees
// both. Run for both change logs.
func TestChangeLogCommitOrder(t *testing.T) {
	type change struct {
		seq int64
		id  string
	}
	for _, c := range []struct {
		name  string
		write func(ctx context.Context, tx store.Tx, id string) error
		read  func(ctx context.Context, s *Store, after int64) ([]change, error)
	}{
		{"records", func(ctx context.Context, tx store.Tx, id string) error {
			return tx.InsertRecord(ctx, "a", storetest.NewRecord("change "+id, func(r *memory.Record) { r.ID = id }))
		}, func(ctx context.Context, s *Store, after int64) ([]change, error) {
			chs, err := s.ListChanges(ctx, after, 100)
			out := []change{}
			for _, ch := range chs {
				out = append(out, change{ch.Seq, ch.RecordID})
			}
			return out, err
		}},
		{"graph", func(ctx context.Context, tx store.Tx, id string) error {
			n := storetest.NewNode("person", id)
			n.ID = id
			return tx.InsertNode(ctx, "a", n)
		}, func(ctx context.Context, s *Store, after int64) ([]change, error) {
			chs, err := s.ListGraphChanges(ctx, after, 100)
			out := []change{}
			for _, ch := range chs {
				out = append(out, change{ch.Seq, ch.ID})
			}
			return out, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openTest(t)
			ctx := t.Context()
			mustWorkspace(t, s, "a")
			idA, idB := memory.NewID(), memory.NewID()

			held, release := make(chan struct{}), make(chan struct{})
			var first atomic.Bool
			s.beforeCommit = func() {
				if first.CompareAndSwap(false, true) {
					close(held)
					<-release
				}
			}
			doneA, doneB := make(chan error, 1), make(chan error, 1)
			go func() { doneA <- s.Tx(ctx, func(tx store.Tx) error { return c.write(ctx, tx, idA) }) }()
			<-held // A has appended its entry and not committed
			go func() { doneB <- s.Tx(ctx, func(tx store.Tx) error { return c.write(ctx, tx, idB) }) }()

			// The reader tails the log as a follower does.
			var cursor int64
			seen := map[string]int64{}
			tail := func() {
				t.Helper()
				chs, err := c.read(ctx, s, cursor)
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range chs {
					if ch.seq <= cursor {
						t.Fatalf("change %d listed after cursor %d", ch.seq, cursor)
					}
					seen[ch.id], cursor = ch.seq, ch.seq
				}
			}

			// Wait until B either committed (it must not: A has not) or
			// waits for a lock.
			waiting := waitForLockWaiter(t, s, doneB)
			tail()
			if !waiting {
				t.Errorf("B committed while A, which drew an earlier seq, had not; the reader saw %v", seen)
			} else if len(seen) != 0 {
				t.Errorf("the reader saw %v before any commit", seen)
			}
			close(release)
			if err := <-doneA; err != nil {
				t.Fatal(err)
			}
			if waiting {
				if err := <-doneB; err != nil {
					t.Fatal(err)
				}
			}
			tail()
			if _, ok := seen[idA]; !ok {
				t.Fatalf("the tailing reader skipped A's change (cursor %d, saw %v)", cursor, seen)
			}
			if _, ok := seen[idB]; !ok || seen[idA] >= seen[idB] {
				t.Fatalf("changes seen %v; want A's before B's", seen)
			}
		})
	}
}

// waitForLockWaiter waits until a transaction of this database waits for
// a lock (true) or done receives (false; the value is put back).
func waitForLockWaiter(t *testing.T, s *Store, done chan error) bool {
	t.Helper()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		var n int
		err := s.r.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return true
		}
		select {
		case err := <-done:
			done <- err
			return false
		case <-deadline:
			t.Fatal("neither committed nor waiting for a lock after 30s")
		case <-tick.C:
		}
	}
}

// TestClaimSkipsLockedJobs: while one transaction holds a claimed job's
// row lock, another claimer takes the next job at once instead of
// waiting, and finds nothing (again at once) when only locked or leased
// jobs remain.
func TestClaimSkipsLockedJobs(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	j1 := store.Job{ID: memory.NewID(), Workspace: "a", Kind: "flush", MaxAttempts: 3, RunAfter: storetest.T0, CreatedAt: storetest.T0, UpdatedAt: storetest.T0}
	j2 := j1
	j2.ID, j2.RunAfter = memory.NewID(), storetest.T0.Add(time.Second)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.InsertJob(ctx, j1); err != nil {
			return err
		}
		return tx.InsertJob(ctx, j2)
	})
	now := storetest.T0.Add(time.Minute)
	claimNow := func(owner string) (store.Job, bool, error) {
		// Generous: a claimer that waits for the held lock would wait
		// for ever; the deadline turns that into a failure.
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		var (
			j  store.Job
			ok bool
		)
		err := s.Tx(cctx, func(tx store.Tx) error {
			var err error
			j, ok, err = tx.ClaimJob(cctx, []string{"flush"}, owner, now, time.Hour)
			return err
		})
		return j, ok, err
	}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		held, ok, err := tx.ClaimJob(ctx, []string{"flush"}, "w1", now, time.Hour)
		if err != nil || !ok || held.ID != j1.ID {
			t.Fatalf("first claim = %+v, %v, %v; want the oldest job", held, ok, err)
		}
		// w1's transaction is still open and holds j1's row lock.
		got, ok, err := claimNow("w2")
		if err != nil || !ok || got.ID != j2.ID {
			t.Fatalf("claim beside a held lock = %+v, %v, %v; want the next job without waiting", got, ok, err)
		}
		if got, ok, err := claimNow("w3"); err != nil || ok {
			t.Fatalf("claim with every job locked or leased = %+v, %v, %v; want none", got, ok, err)
		}
		return nil
	})
	for _, c := range []struct{ id, owner string }{{j1.ID, "w1"}, {j2.ID, "w2"}} {
		if j, err := s.GetJob(ctx, "a", c.id); err != nil || j.Status != store.JobRunning || j.LeaseOwner != c.owner {
			t.Fatalf("job %s = %+v, %v; want running under %s", c.id, j, err, c.owner)
		}
	}
}

// TestByteOrder: ids order by bytes, as in SQLite, whatever the
// database's collation (pgtest creates databases with an ICU collation,
// which would put "alpha" before "Zeta").
func TestByteOrder(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	var provider string
	if err := s.r.QueryRow(ctx, `SELECT datlocprovider::text FROM pg_database WHERE datname = current_database()`).Scan(&provider); err != nil {
		t.Fatal(err)
	}
	if provider != "i" {
		t.Logf("the database's collation is not ICU (provider %q): this test checks less", provider)
	}
	mustWorkspace(t, s, "a")
	zeta, alpha := storetest.NewNode("person", "zeta"), storetest.NewNode("person", "alpha")
	zeta.ID, alpha.ID = "Zeta-1", "alpha-1"
	rz := storetest.NewRecord("z", func(r *memory.Record) { r.ID = "Zeta-2" })
	ra := storetest.NewRecord("a", func(r *memory.Record) { r.ID = "alpha-2" })
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, n := range []memory.Node{alpha, zeta} {
			if err := tx.InsertNode(ctx, "a", n); err != nil {
				return err
			}
		}
		for _, r := range []memory.Record{ra, rz} {
			if err := tx.InsertRecord(ctx, "a", r); err != nil {
				return err
			}
		}
		return nil
	})
	ns, err := s.ListNodes(ctx, "a", store.NodeQuery{})
	if err != nil || len(ns) != 2 || ns[0].ID != "Zeta-1" {
		t.Fatalf("ListNodes = %+v, %v; want Zeta-1 first (byte order)", ns, err)
	}
	if ns, _ := s.ListNodes(ctx, "a", store.NodeQuery{After: "Zeta-1"}); len(ns) != 1 || ns[0].ID != "alpha-1" {
		t.Fatalf("ListNodes after Zeta-1 = %+v", ns)
	}
	rs, err := s.ListRecords(ctx, "a", store.RecordQuery{Access: store.AccessFilter{Levels: memory.AccessLevels}})
	if err != nil || len(rs) != 2 || rs[0].ID != "alpha-2" {
		t.Fatalf("ListRecords = %v; want alpha-2 first (descending byte order)", err)
	}
}

// TestFailedStatementAbortsTx: in PostgreSQL a failed statement aborts
// the transaction; a caller that ignores the error cannot commit the
// rest, and Tx says so instead of reporting success.
func TestFailedStatementAbortsTx(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	n := storetest.NewNode("person", "alice")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertNode(ctx, "a", n) })
	later := storetest.NewNode("person", "bob")
	err := s.Tx(ctx, func(tx store.Tx) error {
		dup := storetest.NewNode("person", "alice")
		if err := tx.InsertNode(ctx, "a", dup); !errors.Is(err, store.ErrExists) {
			t.Errorf("duplicate key = %v, want ErrExists", err)
		}
		_ = tx.InsertNode(ctx, "a", later) // ignored, as a careless caller would
		return nil
	})
	if err == nil {
		t.Fatal("Tx committed a transaction whose statement failed")
	}
	if _, err := s.GetNode(ctx, store.NodeFind{Workspace: "a", ID: later.ID}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a write after the failed statement was committed: %v", err)
	}
	if heads, _ := s.GraphChangeHead(ctx); heads != 1 {
		t.Fatalf("graph change head %d, want 1 (the first node only)", heads)
	}
}

func TestRedaction(t *testing.T) {
	const secret = "hunter2-Secret"
	for _, c := range []struct{ in, want string }{
		{"postgres://memgate:" + secret + "@db.internal:5432/memgate?sslmode=require", "postgres://memgate:xxxxx@db.internal:5432/memgate?sslmode=require"},
		{"postgresql://memgate@db/memgate?password=" + secret, "postgresql://memgate@db/memgate?password=xxxxx"},
		{"postgres://memgate@db/memgate", "postgres://memgate@db/memgate"},
		// libpq keyword/value strings, quoted and escaped values included.
		{"host=db dbname=memgate password=" + secret + " sslmode=require", "host=db dbname=memgate password=xxxxx sslmode=require"},
		{"host=db password = '" + secret + " with spaces' user=m", "host=db password = xxxxx user=m"},
		{`password='it\'s ` + secret + `' host=db`, "password=xxxxx host=db"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, s := range []string{"host=db dbname=x", "dbname=x", " user=u"} {
		if !IsDSN(s) {
			t.Errorf("IsDSN(%q) = false", s)
		}
	}
	for _, s := range []string{"/var/lib/memgate", "data=dir", "./host", "mysql://x"} {
		if IsDSN(s) {
			t.Errorf("IsDSN(%q) = true", s)
		}
	}
	if got := Redact("postgres://u:" + secret + "@[bad"); strings.Contains(got, secret) {
		t.Errorf("Redact of an unparsable URL leaks: %q", got)
	}

	ctx := t.Context()
	dir := t.TempDir() // no server listens here
	for _, u := range []string{
		"postgres://memgate:" + secret + "@/memgate?host=" + dir + "&connect_timeout=5",
		"postgres://memgate@/memgate?host=" + dir + "&password=" + secret,
		"postgres://memgate:" + secret + "@/memgate?host=" + dir + "&connect_timeout=soon",
		"mysql://memgate:" + secret + "@db/memgate",
		"host=" + dir + " dbname=memgate password=" + secret + " connect_timeout=5",
		"host=" + dir + " dbname=memgate password='" + secret + " x' connect_timeout=soon",
	} {
		s, err := Open(ctx, u, Options{})
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) succeeded", Redact(u))
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Open error leaks the password: %v", err)
		}
	}
	_, err := Open(ctx, "postgres://memgate:"+secret+"@/memgate?host="+dir, Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("no server: %v, want ErrUnavailable", err)
	}

	// With a password the trust-authenticated test server ignores.
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), secret)
	s, err := Open(ctx, u.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if strings.Contains(s.URL(), secret) || !strings.Contains(s.URL(), "xxxxx") {
		t.Fatalf("URL() = %q", s.URL())
	}
}

// TestScrubRemovesDeadRows: after a purge and Scrub, no page of the
// tables that held the content, or of their indexes, still holds its
// bytes — in a row version, live or dead, or in a page's free space,
// where a plain VACUUM leaves a dead tuple's bytes (checked with
// pageinspect's get_raw_page, which needs a superuser; skipped otherwise).
func TestScrubRemovesDeadRows(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	if _, err := s.w.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pageinspect"); err != nil {
		t.Skipf("pageinspect is not available: %v", err)
	}
	mustWorkspace(t, s, "a")
	secret := "xyzzy-plugh-" + memory.NewID()
	r := storetest.NewRecord(secret+" v1", func(r *memory.Record) {
		r.Metadata = []byte(`{"note":"` + secret + `"}`)
		r.Entities = []string{"secret:" + secret}
		r.Scope.UserID = secret
	})
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.InsertRecord(ctx, "a", r); err != nil {
			return err
		}
		return tx.UpdateRecord(ctx, "a", storetest.NextVersion(r, storetest.T0, func(n *memory.Record) { n.Content = secret + " v2" }), 1)
	})
	// A record written after it: its row sits below the purged one in
	// the page, so compacting the page does not overwrite the dead bytes.
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.InsertRecord(ctx, "a", storetest.NewRecord("a later record", func(*memory.Record) {}))
	})
	holding := func() []string { return pagesHolding(t, s, secret) }
	if h := holding(); len(h) < 3 {
		t.Fatalf("test is broken: the content is not in every table: %v", h)
	}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PurgeRecord(ctx, "a", r.ID, storetest.T0.Add(time.Hour))
	})
	if err := s.Scrub(ctx); err != nil {
		t.Fatal(err)
	}
	if h := holding(); len(h) > 0 {
		t.Fatalf("after purge and Scrub, rows still hold the content: %v", h)
	}
}

// pagesHolding names the relations of records, record_versions and
// record_entities (tables and indexes) with a page holding secret, read
// with pageinspect's get_raw_page (a superuser's): live and dead row
// versions and free space alike.
func pagesHolding(t *testing.T, s *Store, secret string) []string {
	t.Helper()
	ctx := t.Context()
	var out []string
	rows, err := s.r.Query(ctx, `SELECT c.relname FROM pg_class c
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'i')
		AND c.relname LIKE ANY (ARRAY['records%', 'record_versions%', 'record_entities%']) ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	rels, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range rels {
		var n int
		err := s.r.QueryRow(ctx, `SELECT count(*) FROM generate_series(0, pg_relation_size($1::text::regclass) / current_setting('block_size')::int - 1) AS b
			WHERE position(convert_to($2, 'UTF8') IN get_raw_page($1::text, b::int)) > 0`, rel, secret).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%s: %d pages", rel, n))
		}
	}
	return out
}

// TestScrubLeavesNoStatistics: ANALYZE (autovacuum's or the scrub's own)
// samples column values into pg_statistic, a catalog that only a superuser
// could rewrite, so a sampled word would outlive every scrub there as a
// dead catalog row. Migration 0011 keeps erasable text out of the
// statistics altogether.
func TestScrubLeavesNoStatistics(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	if _, err := s.w.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pageinspect"); err != nil {
		t.Skipf("pageinspect is not available: %v", err)
	}
	mustWorkspace(t, s, "a")
	secret := "statsample-" + memory.NewID()
	var ids []string
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for range 20 {
			r := storetest.NewRecord(secret, func(r *memory.Record) {
				r.Metadata = []byte(`{"note":"` + secret + `"}`)
				r.Entities = []string{"secret:" + secret}
			})
			ids = append(ids, r.ID)
			if err := tx.InsertRecord(ctx, "a", r); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := s.w.Exec(ctx, "ANALYZE records, record_versions, record_entities"); err != nil {
		t.Fatal(err)
	}
	var sampled int
	if err := s.r.QueryRow(ctx, `SELECT count(*) FROM pg_stats WHERE schemaname = current_schema()
		AND (coalesce(most_common_vals::text, '') LIKE '%' || $1 || '%' OR coalesce(histogram_bounds::text, '') LIKE '%' || $1 || '%')`,
		secret).Scan(&sampled); err != nil {
		t.Fatal(err)
	}
	if sampled > 0 {
		t.Fatalf("planner statistics sampled the text of %d columns", sampled)
	}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, id := range ids {
			if err := tx.PurgeRecord(ctx, "a", id, storetest.T0.Add(time.Hour)); err != nil {
				return err
			}
		}
		return nil
	})
	if err := s.Scrub(ctx); err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := s.r.QueryRow(ctx, `SELECT count(*) FROM generate_series(0, pg_relation_size('pg_statistic') / current_setting('block_size')::int - 1) AS b
		WHERE position(convert_to($1, 'UTF8') IN get_raw_page('pg_statistic', b::int)) > 0`, secret).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages > 0 {
		t.Fatalf("pg_statistic holds the erased text in %d pages", pages)
	}
}
