package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/kgcompat"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
)

// Export, import and migrate (SPEC §9) work on data directories directly
// and, unlike the other commands, never bootstrap: an import into a fresh
// data directory creates the workspace from the file, so that exporting
// it again gives the same bytes.

// openDB opens the database db (a SQLite file path or a PostgreSQL URL)
// without bootstrapping it. mustExist refuses to create a new SQLite
// file (export reads an existing one); a PostgreSQL database must exist
// anyway (memgate creates its tables, not the database).
func openDB(ctx context.Context, cfg *config.Config, db string, mustExist bool) (store.Store, *core.Service, error) {
	pol, err := gate.Load(cfg.PolicyFile)
	if err != nil {
		return nil, nil, fault.Wrap(fault.InvalidArgument, err, "%s", err.Error())
	}
	if !postgres.IsDSN(db) {
		if mustExist {
			if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fault.New(fault.NotFound, "no database at "+db)
			}
		} else if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
			return nil, nil, fault.Wrap(fault.Unavailable, err, "cannot create the directory of %s", db)
		}
	}
	var unlock func()
	if !postgres.IsDSN(db) {
		// As openApp: restore must not replace this database under us.
		if unlock, err = lockShared(filepath.Join(filepath.Dir(db), "memgate.lock")); errors.Is(err, errLocked) {
			return nil, nil, fault.New(fault.Unavailable, "the data directory is being restored; try again when the restore has finished")
		} else if err != nil {
			return nil, nil, fault.Wrap(fault.Unavailable, err, "cannot lock the directory of %s", db)
		}
	}
	st, err := openStore(ctx, cfg, db)
	if err != nil {
		if unlock != nil {
			unlock()
		}
		return nil, nil, err
	}
	if unlock != nil {
		st = unlockingStore{st, unlock}
	}
	return st, core.New(core.Options{Store: st, Policy: pol}), nil
}

// unlockingStore releases the directory's shared lock when the store
// closes.
type unlockingStore struct {
	store.Store
	unlock func()
}

func (s unlockingStore) Close() error {
	err := s.Store.Close()
	s.unlock()
	return err
}

// progressLog prints a progress line at most every interval; it is safe
// for concurrent use (migrate's export and import report at once).
type progressLog struct {
	mu    sync.Mutex
	w     io.Writer
	every time.Duration
	last  map[string]time.Time
}

func newProgressLog(w io.Writer) *progressLog {
	return &progressLog{w: w, every: 2 * time.Second, last: map[string]time.Time{}}
}

// fn returns the progress callback of one phase ("export", "import").
func (p *progressLog) fn(phase string) func(done int) { return p.count(phase, "records") }

// count is fn for things other than records ("files").
func (p *progressLog) count(phase, unit string) func(done int) {
	start := time.Now()
	return func(done int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		now := time.Now()
		if now.Sub(p.last[phase]) < p.every {
			return
		}
		if p.last[phase].IsZero() && now.Sub(start) < p.every {
			return // quiet for short runs
		}
		p.last[phase] = now
		fmt.Fprintf(p.w, "memgate: %s: %d %s (%.0f/s)\n", phase, done, unit, float64(done)/now.Sub(start).Seconds())
	}
}

func runExport(env Env, args []string) error {
	fs, cfg := flags(env, "export", false)
	var out string
	fs.StringVar(&out, "out", "", "write to FILE instead of stdout (atomically: a temporary file renamed at the end)")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("export takes no arguments; use --out FILE")
	}
	ctx := ctxOf(env)
	st, svc, err := openDB(ctx, cfg, databaseOf(cfg), true)
	if err != nil {
		return err
	}
	defer st.Close()
	prog := newProgressLog(env.Stderr)
	w := env.Stdout
	var tmp *os.File
	if out != "" {
		tmp, err = os.CreateTemp(filepath.Dir(out), ".memgate-export-*")
		if err != nil {
			return fault.Wrap(fault.Unavailable, err, "cannot create %s", out)
		}
		defer os.Remove(tmp.Name()) // a no-op after the rename
		defer tmp.Close()
		w = tmp
	}
	stats, err := svc.Export(ctx, core.LocalOperator(cfg.Workspace), w, prog.fn("export"))
	if err != nil {
		return err
	}
	if tmp != nil {
		if err := tmp.Sync(); err != nil {
			return fault.Wrap(fault.Unavailable, err, "cannot write %s", out)
		}
		if err := tmp.Close(); err != nil {
			return fault.Wrap(fault.Unavailable, err, "cannot write %s", out)
		}
		if err := os.Rename(tmp.Name(), out); err != nil {
			return fault.Wrap(fault.Unavailable, err, "cannot write %s", out)
		}
	}
	fmt.Fprintf(env.Stderr, "memgate: exported workspace %s: %s, %d bytes\n", stats.Workspace, describeCounts(stats.ExportCounts), stats.Bytes)
	return nil
}

func describeCounts(c core.ExportCounts) string {
	return fmt.Sprintf("%d records (%d versions), %d nodes, %d edges, %d principals, %d approval items",
		c.Records, c.Versions, c.Nodes, c.Edges, c.Principals, c.Approvals)
}

func runImport(env Env, args []string) error {
	fs, cfg := flags(env, "import", false)
	var asJSON bool
	var fromMCP string
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&fromMCP, "from-mcp-memory", "", "import the JSONL memory file of the reference MCP memory server (@modelcontextprotocol/server-memory) into the knowledge graph ('-' for stdin)")
	pos, err := positionals(env, fs, cfg, args)
	if err != nil {
		return err
	}
	if fromMCP != "" {
		if len(pos) != 0 {
			return usagef("--from-mcp-memory takes the file; no other argument")
		}
		return importMCPMemory(env, cfg, fromMCP, asJSON)
	}
	if len(pos) != 1 {
		return usagef("want exactly one export file (- for stdin), or --from-mcp-memory FILE")
	}
	in, closeIn, err := openInput(env, pos[0])
	if err != nil {
		return err
	}
	defer closeIn()
	ctx := ctxOf(env)
	st, svc, err := openDB(ctx, cfg, databaseOf(cfg), false)
	if err != nil {
		return err
	}
	defer st.Close()
	stats, err := svc.Import(ctx, core.LocalOperator(cfg.Workspace), in, newProgressLog(env.Stderr).fn("import"))
	if err != nil {
		return err
	}
	return output(env, asJSON, stats, func(w io.Writer) { printImport(w, stats) })
}

// importMCPMemory loads a reference memory server's file as the
// workspace's operator, through the knowledge-graph layer (every
// observation passes the gate). A bad line imports nothing.
func importMCPMemory(env Env, cfg *config.Config, file string, asJSON bool) error {
	in, closeIn, err := openInput(env, file)
	if err != nil {
		return err
	}
	defer closeIn()
	return withApp(env, cfg, true, func(ctx context.Context, a *app) error {
		st, err := kgcompat.New(a.svc).Import(ctx, a.operator(), in)
		if err != nil {
			return err
		}
		return output(env, asJSON, st, func(w io.Writer) {
			fmt.Fprintf(w, "imported %d lines: %d entities created (%d already present), %d observations added (%d already present), %d relations created (%d already present)\n",
				st.Lines, st.EntitiesCreated, st.EntitiesExisting, st.ObservationsAdded, st.ObservationsSkipped, st.RelationsCreated, st.RelationsExisting)
		})
	})
}

func printImport(w io.Writer, st core.ImportStats) {
	verb := "into the empty workspace"
	if st.WorkspaceCreated {
		verb = "into the new workspace"
	}
	fmt.Fprintf(w, "imported %s %s: %s", verb, st.Workspace, describeCounts(st.ExportCounts))
	if st.PrincipalsKept > 0 {
		fmt.Fprintf(w, "; %d principals already present were kept", st.PrincipalsKept)
	}
	fmt.Fprintln(w)
	if st.Principals > 0 {
		fmt.Fprintln(w, "imported principals have no tokens: issue new ones (memgate operators create, agents create, users create)")
	}
}

// migrateTarget resolves --to: a postgres:// URL, sqlite:///abs/path/memgate.db
// or a data directory. It returns a PostgreSQL URL as it is and a SQLite
// target as the database file's path.
func migrateTarget(to string) (string, error) {
	scheme, rest, hasScheme := strings.Cut(to, "://")
	const want = "postgres://user@host/db, sqlite:///abs/path/memgate.db or a data directory"
	switch {
	case to == "":
		return "", usagef("--to is required: %s", want)
	case postgres.IsDSN(to):
		return to, nil
	case hasScheme && scheme == "sqlite":
		if !filepath.IsAbs(rest) {
			return "", usagef("--to: want sqlite:///absolute/path/memgate.db (three slashes)")
		}
		return filepath.Clean(rest), nil
	case hasScheme:
		return "", usagef("--to: unknown scheme %q; want %s", scheme, want)
	}
	return filepath.Join(to, "memgate.db"), nil
}

// runMigrate with --to copies the workspace into another database, export
// piped into import; without it, it applies pending schema migrations to
// the data directory.
func runMigrate(env Env, args []string) error {
	fs, cfg := flags(env, "migrate", false)
	var to string
	var asJSON bool
	fs.StringVar(&to, "to", "", "target: postgres://user@host/db, sqlite:///abs/path/memgate.db or a data directory (the source is --data-dir or --database-url)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("migrate takes no arguments")
	}
	ctx := ctxOf(env)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	source := databaseOf(cfg)
	if !set["to"] {
		st, _, err := openDB(ctx, cfg, source, false)
		if err != nil {
			return err
		}
		st.Close()
		return output(env, asJSON, map[string]any{"database": describeDB(source), "schema": "up to date"}, func(w io.Writer) {
			fmt.Fprintf(w, "schema of %s is up to date\n", describeDB(source))
		})
	}
	target, err := migrateTarget(to)
	if err != nil {
		return err
	}
	if same, _ := sameDatabase(source, target); same {
		return usagef("--to names the source database itself")
	}
	src, srcSvc, err := openDB(ctx, cfg, source, true)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, dstSvc, err := openDB(ctx, cfg, target, false)
	if err != nil {
		return err
	}
	defer dst.Close()

	prog := newProgressLog(env.Stderr)
	stats, err := srcSvc.Migrate(ctx, core.LocalOperator(cfg.Workspace), dstSvc, prog.fn("export"), prog.fn("import"))
	if err != nil {
		return err
	}
	return output(env, asJSON, stats, func(w io.Writer) {
		fmt.Fprintf(w, "migrated to %s: ", describeDB(target))
		printImport(w, stats)
	})
}

// sameDatabase reports whether a and b name the same database: the same
// existing SQLite file, or the same PostgreSQL URL.
func sameDatabase(a, b string) (bool, error) {
	if postgres.IsDSN(a) || postgres.IsDSN(b) {
		return a == b, nil
	}
	return sameFile(a, b)
}

// sameFile reports whether two paths name the same existing file.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// runOperators creates operator tokens. It matters most after an import
// into a fresh data directory: imported principals carry no tokens and
// the server only prints a token when it creates the workspace itself.
func runOperators(env Env, args []string) error {
	if _, rest, err := subcommand(args, "create"); err != nil {
		return err
	} else {
		args = rest
	}
	fs, cfg := flags(env, "operators create", false)
	var asJSON bool
	var name string
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&name, "name", "", "operator name, unique in the workspace")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if name == "" {
		return usagef("--name is required")
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		p, err := a.svc.CreateOperator(ctx, a.operator(), name)
		if err != nil {
			return err
		}
		return output(env, asJSON, p, func(w io.Writer) {
			fmt.Fprintf(w, "operator %s (%s) created\ntoken (shown once): %s\n", p.Name, p.ID, p.Token)
		})
	})
}

// openInput opens the file an import reads: stdin for "-".
func openInput(env Env, file string) (io.Reader, func(), error) {
	if file == "-" {
		return env.Stdin, func() {}, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, fault.Wrap(fault.NotFound, err, "cannot open %s", file)
	}
	return f, func() { f.Close() }, nil
}
