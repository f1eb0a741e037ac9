// Package cli implements the memgate command line. Every command is a thin
// adapter over the core service; commands other than serve open the data
// directory directly and act as its operator, so they work with or without
// a running server (SQLite's WAL lets both share the file).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/metrics"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/tracing"
)

// Version, Commit and Date are set at build time by scripts/release with
// -ldflags "-X ...cli.Version=... -X ...cli.Commit=... -X ...cli.Date=...";
// Date is the commit's time (RFC 3339, UTC), not the build's, so builds
// are reproducible.
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// Exit statuses the CLI adds to fault.ExitCode's.
const (
	exitOK          = 0
	exitAuditBroken = 12
)

// Env is the process environment a command runs in; tests substitute it.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Ctx is cancelled to stop long-running commands (serve); nil means
	// the command installs its own SIGINT/SIGTERM handling.
	Ctx context.Context

	jsonErrors bool // --json: errors in the one error shape (help.go)
	helpAsked  bool // a help flag is among the arguments
}

// runContext is env.Ctx, or a context that ends on SIGINT or SIGTERM:
// how long-running commands learn to stop. The caller defers the cancel.
func (env Env) runContext() (context.Context, context.CancelFunc) {
	if env.Ctx != nil {
		return env.Ctx, func() {}
	}
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

type command struct {
	name    string
	summary string
	run     func(env Env, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "run the HTTP server", runServe},
		{"write", "write a record through the gate", runWrite},
		{"get", "show a record", runGet},
		{"list", "list records", runList},
		{"history", "show every version of a record", runHistory},
		{"forget", "forget a record, or a whole subject with --subject (keeps tombstones)", runForget},
		{"graph", "the memory graph: nodes, edges, neighbors, path", runGraph},
		{"query", "hybrid search", runQuery},
		{"files", "memory files: ls, cat, edit, history, import DIR, export DIR", runFiles},
		{"context", "the bounded context memory holds for a task (Markdown, or --json)", runContext},
		{"ingest", "ingest files, directories and git working trees as cited resource chunks (resumable)", runIngest},
		{"cite", "print exactly the lines a res:// citation names", runCite},
		{"mcp", "serve MCP over stdio, acting as an agent (--agent)", runMCP},
		{"bench", "run retrieval and latency benchmarks", runBench},
		{"agents", "create, list, revoke, rotate (new token) or re-trust agents", runAgents},
		{"users", "create, list, revoke or rotate-key Memory Gateway users", runUsers},
		{"approvals", "list, approve or reject queued writes", runApprovals},
		{"audit", "verify the audit chain", runAudit},
		{"decisions", "list gate and extraction decisions with their reasons", runDecisions},
		{"webhooks", "add, list or remove webhook endpoints; deliveries shows their delivery log", runWebhooks},
		{"maintain", "run a maintenance job (decay, archive, consolidate, conflicts, rescreen, lessons) or all (sweep) once, or restore an archived record", runMaintain},
		{"export", "write the workspace as canonical NDJSON", runExport},
		{"import", "load an export into an empty workspace", runImport},
		{"operators", "create an operator token", runOperators},
		{"reembed", "switch the data directory to another embedder (resumable)", runReembed},
		{"migrate", "copy the workspace to another database (--to), or apply schema migrations", runMigrate},
		{"backup", "take an online backup of a SQLite data directory into a new directory (docs/backup.md)", runBackup},
		{"restore", "verify a backup and make it the data directory's database (servers stopped)", runRestore},
		{"healthcheck", "exit 0 if the server at --addr is alive (--ready: ready); for container healthchecks", runHealthcheck},
		{"version", "print the version (also --version)", func(env Env, _ []string) error {
			_, err := fmt.Fprintln(env.Stdout, versionLine())
			return err
		}},
	}
}

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries a specific exit status without a message.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs the CLI and returns the process exit status.
func Main(args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) < 1 {
		printUsage(env.Stderr)
		return fault.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printUsage(env.Stderr)
		return exitOK
	case "help":
		return runHelp(env, args[1:])
	case "--version", "-version":
		fmt.Fprintln(env.Stdout, versionLine())
		return exitOK
	}
	env.jsonErrors = env.jsonErrors || wantsJSON(args[1:])
	env.helpAsked = env.helpAsked || slices.ContainsFunc(args[1:], isHelp)
	if code, ok := groupHelp(env, args); ok {
		return code
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return exitStatus(env, c.run(env, args[1:]))
		}
	}
	if env.jsonErrors {
		return exitStatus(env, usagef("unknown command %q; run 'memgate help'", args[0]))
	}
	fmt.Fprintf(env.Stderr, "memgate: unknown command %q\n", args[0])
	printUsage(env.Stderr)
	return fault.ExitUsage
}

func exitStatus(env Env, err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		if env.jsonErrors {
			writeErrorJSON(env.Stderr, fault.InvalidArgument, ue.msg, map[string]any{"usage": true})
		} else {
			fmt.Fprintln(env.Stderr, "memgate:", ue.msg)
		}
		return fault.ExitUsage
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	fe := fault.As(err)
	msg := fe.Message
	if fe.Code == fault.Internal && fe.Cause != nil {
		msg = fe.Cause.Error()
	}
	if env.jsonErrors {
		writeErrorJSON(env.Stderr, fe.Code, msg, fe.Details)
	} else {
		fmt.Fprintf(env.Stderr, "memgate: %s: %s\n", fe.Code, msg)
	}
	return fault.ExitCode(fe.Code)
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: memgate <command> [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'memgate <command> -h' for a command's arguments and flags, 'memgate help flags' for the flags\nevery command takes, 'memgate --version' for the version. Every flag also reads a MEMGATE_* variable.")
}

// flags builds a command's flag set bound to a fresh config.
func flags(env Env, name string, server bool) (*flag.FlagSet, *config.Config) {
	cfg := config.Default()
	cfg.DataDir = config.UserDataDir(env.Getenv)
	fs := flag.NewFlagSet("memgate "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	if env.jsonErrors && !env.helpAsked {
		fs.SetOutput(io.Discard) // the flag package's text; the error is printed as JSON
	}
	cfg.Bind(fs, server)
	fs.Usage = leafUsage(fs, name, commonFlags())
	return fs, &cfg
}

// parse parses args, applies the environment and validates.
func parse(env Env, fs *flag.FlagSet, cfg *config.Config, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if err := config.ApplyEnv(fs, env.Getenv); err != nil {
		return usageError{err.Error()}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// app is an opened data directory.
type app struct {
	cfg   *config.Config
	store store.Store
	svc   *core.Service
	log   *slog.Logger
	index *retrieve.Engine
	// op is the operator the CLI acts as (core.Service.CLIOperator).
	op memory.Principal
	// unlock releases the data directory's shared lock (dataDirLock).
	unlock func()
	// stopTracing flushes and stops the tracer provider.
	stopTracing func(context.Context) error

	closed bool
}

// Close closes the service — stopping its loops, settling this process's
// writes (core.Service.Close) — then the store. Its error is the
// service's: records left without a vector; the store's close error is
// logged.
func (a *app) Close() error {
	if a.closed {
		return nil
	}
	a.closed = true
	err := a.svc.Close()
	if cerr := a.store.Close(); cerr != nil {
		a.log.Warn("closing the database failed", "err", cerr)
	}
	if a.stopTracing != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if terr := a.stopTracing(ctx); terr != nil {
			a.log.Warn("flushing traces failed", "err", terr)
		}
		cancel()
	}
	if a.unlock != nil {
		a.unlock()
	}
	return err
}

// open loads the policy, opens the database and bootstraps it if empty. A
// bootstrap from the CLI prints the operator token to stderr, once. The
// search index is loaded for commands that write or search.
func open(ctx context.Context, env Env, cfg *config.Config, log *slog.Logger, m *metrics.Metrics) (*app, error) {
	return openWith(ctx, env, cfg, log, m, false)
}

func openWith(ctx context.Context, env Env, cfg *config.Config, log *slog.Logger, m *metrics.Metrics, withIndex bool) (*app, error) {
	return openApp(ctx, env, cfg, log, m, withIndex, core.Loops{Settle: cfg.ShutdownTimeout})
}

// openApp opens the data directory for a command; loops are the
// background work the service runs if the command calls Run (serve, mcp).
func openApp(ctx context.Context, env Env, cfg *config.Config, log *slog.Logger, m *metrics.Metrics, withIndex bool, loops core.Loops) (*app, error) {
	pol, err := gate.Load(cfg.PolicyFile)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidArgument, err, "%s", err.Error())
	}
	if err := cfg.EnsureDataDir(); err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "cannot create data directory %s", cfg.DataDir)
	}
	// While this process uses the data directory, restore refuses to
	// replace its database (backup.go).
	unlock, err := lockShared(dataDirLock(cfg))
	if errors.Is(err, errLocked) {
		return nil, fault.New(fault.Unavailable, "the data directory is being restored; try again when the restore has finished")
	}
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "cannot lock the data directory %s", cfg.DataDir)
	}
	a, err := openAppLocked(ctx, env, cfg, log, m, withIndex, loops, pol)
	if err != nil {
		unlock()
		return nil, err
	}
	a.unlock = unlock
	return a, nil
}

func openAppLocked(ctx context.Context, env Env, cfg *config.Config, log *slog.Logger, m *metrics.Metrics, withIndex bool, loops core.Loops, pol gate.Policy) (*app, error) {
	st, err := openStore(ctx, cfg, databaseOf(cfg))
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var ix *retrieve.Engine
	if withIndex {
		if ix, err = openIndex(ctx, env, cfg, st, log); err != nil {
			st.Close()
			return nil, err
		}
	}
	ext, err := newExtraction(cfg, env.Getenv)
	if err != nil {
		st.Close()
		return nil, err
	}
	tp, stopTracing, err := tracing.Setup(ctx, tracing.Options{Endpoint: cfg.OTelEndpoint, SampleRatio: cfg.OTelSampleRatio,
		Version: version(), Getenv: env.Getenv})
	if err != nil {
		st.Close()
		return nil, err
	}
	opts := core.Options{Store: st, Policy: pol, Logger: log, Metrics: m, Index: ix, Extraction: ext,
		Jobs: core.JobOptions{Workers: cfg.JobWorkers, Lease: cfg.JobLease}, Loops: loops,
		Backups:  core.BackupOptions{Dir: backupDir(cfg), SnapshotPath: indexSnapshot(cfg), Version: version()},
		Webhooks: events.Options{Timeout: cfg.WebhookTimeout}, Tracer: tp}
	// Every command may erase (forget, reject, expire), with or without
	// an index of its own: the snapshot on disk predates the erasure and
	// may hold the words, so it goes (serve saves a fresh one).
	snap := indexSnapshot(cfg)
	opts.OnErased = func() { invalidateSnapshot(snap, log) }
	// A command waits for its erasure's scrub to end, since the process
	// ends with it; serve bounds the wait of a request (serveScrubWait).
	opts.ScrubWait = -1
	if ix != nil && opts.Loops.SnapshotPath != "" {
		// Saves are checked against erasures other processes commit
		// meanwhile (snapshot.go).
		opts.Loops.SaveSnapshot = func(path string) error { return saveSnapshotChecked(ix, st, path) }
	}
	svc := core.New(opts)
	if withIndex {
		if err := svc.LoadGraph(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	token, created, err := svc.Bootstrap(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	if created {
		announceToken(env.Stderr, token)
	}
	op, err := svc.CLIOperator(ctx, cfg.Workspace)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &app{cfg: cfg, store: st, svc: svc, log: log, index: ix, op: op, stopTracing: stopTracing}, nil
}

// openIndex builds the search index of st: restored from the snapshot
// serve keeps when that is usable, else loaded from the database. The
// caller closes st on error.
func openIndex(ctx context.Context, env Env, cfg *config.Config, st store.Store, log *slog.Logger) (*retrieve.Engine, error) {
	emb, err := resolveEmbedder(ctx, env, cfg, st, log)
	if err != nil {
		return nil, err
	}
	opts := retrieve.Options{Embedder: emb, Vectors: retrieve.VectorMode(cfg.VectorIndex), Logger: log}
	// The snapshot serve keeps, plus the change log since, restores the
	// index in a fraction of a rebuild. It is derived data: on any
	// problem, rebuild from the database.
	snap := indexSnapshot(cfg)
	ix := retrieve.New(opts)
	rs, err := ix.Restore(ctx, st, snap)
	switch {
	case err == nil:
		log.Info("search index restored from snapshot", "records", rs.Records, "vectors", rs.Vectors,
			"changes_applied", rs.Applied, "vectors_filled", rs.VectorsFilled, "took", rs.Total.String())
		if rs.Forgotten > 0 {
			// The file still holds derived data of records forgotten
			// since it was written: delete it now (serve writes a new
			// one at once; other commands never write one).
			invalidateSnapshot(snap, log)
		}
	default:
		if errors.Is(err, fs.ErrNotExist) {
			log.Info("no search index snapshot; loading the index from the database")
		} else {
			log.Warn("search index snapshot not usable; loading the index from the database", "path", snap, "err", err)
		}
		if errors.Is(err, retrieve.ErrSnapshotCorrupt) || errors.Is(err, retrieve.ErrSnapshotForeign) {
			os.Remove(snap) // never usable; serve writes a new one
		}
		ix = retrieve.New(opts)
		stats, err := ix.Load(ctx, st)
		if err != nil {
			return nil, fault.Wrap(fault.Unavailable, err, "cannot load the search index")
		}
		log.Info("search index loaded", "records", stats.Records, "vectors", stats.Vectors, "took", stats.Total.String())
	}
	// Unless the operator tuned the collector, pace it to the index
	// (gcpace.go).
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		startGCPacer()
	}
	// Restoring or loading the index allocates several times what it
	// keeps (snapshot sections, decode buffers, rows): hand that back
	// to the system now rather than when the runtime gets round to it.
	debug.FreeOSMemory()
	return ix, nil
}

// databaseOf is the configured database: the PostgreSQL URL, or the
// SQLite file in the data directory.
func databaseOf(cfg *config.Config) string {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL
	}
	return cfg.DBPath()
}

// describeDB names a database (a file path or a URL) for messages and
// logs, never with a password.
func describeDB(db string) string {
	if postgres.IsDSN(db) {
		return postgres.Redact(db)
	}
	return db
}

// openStore opens db: PostgreSQL for a postgres:// URL, else the SQLite
// file at that path (its directory must exist).
func openStore(ctx context.Context, cfg *config.Config, db string) (store.Store, error) {
	if postgres.IsDSN(db) {
		st, err := postgres.Open(ctx, db, postgres.Options{})
		if err != nil {
			// postgres.Open's errors never hold the password.
			return nil, fault.Wrap(fault.Unavailable, err, "cannot open database %s", describeDB(db))
		}
		return st, nil
	}
	st, err := sqlite.Open(ctx, db, sqlite.Options{SyncFull: cfg.SQLiteSync == "full"})
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "cannot open database %s", db)
	}
	return st, nil
}

func announceToken(w io.Writer, token string) {
	fmt.Fprintf(w, "memgate: created workspace %q.\nmemgate: operator token (shown once, store it now): %s\n", memory.DefaultWorkspace, token)
}

func (a *app) operator() memory.Principal { return a.op }

// actingAs is the principal a command acts as: the named local agent
// (--agent), else the local operator.
func (a *app) actingAs(ctx context.Context, ws, agent string) (memory.Principal, error) {
	if agent == "" {
		return a.op, nil
	}
	return a.svc.LocalAgent(ctx, ws, agent)
}

// output prints v as JSON when asJSON, else calls text.
func output(env Env, asJSON bool, v any, text func(w io.Writer)) error {
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(env.Stdout)
	return nil
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// parseScope turns key=value pairs into a scope.
func parseScope(pairs []string) (memory.Scope, error) {
	var sc memory.Scope
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return sc, usagef("--scope wants key=value, e.g. user_id=alice")
		}
		switch k {
		case "user_id":
			sc.UserID = v
		case "agent_id":
			sc.AgentID = v
		case "app_id":
			sc.AppID = v
		case "project_id":
			sc.ProjectID = v
		case "session_id":
			sc.SessionID = v
		default:
			keys := []string{"user_id", "agent_id", "app_id", "project_id", "session_id"}
			sort.Strings(keys)
			return sc, usagef("--scope key must be one of %s", strings.Join(keys, ", "))
		}
	}
	return sc, nil
}

func ctxOf(env Env) context.Context {
	if env.Ctx != nil {
		return env.Ctx
	}
	return context.Background()
}

// withApp opens the data directory (with the search index when withIndex),
// runs fn and closes it: the body of every command but serve.
func withApp(env Env, cfg *config.Config, withIndex bool, fn func(ctx context.Context, a *app) error) error {
	ctx := ctxOf(env)
	a, err := openWith(ctx, env, cfg, nil, nil, withIndex)
	if err != nil {
		return err
	}
	err = fn(ctx, a)
	// Closing embeds what the command wrote; a vector it could not
	// compute is pending, which is worth saying but not a failure.
	if cerr := a.Close(); cerr != nil && err == nil {
		fmt.Fprintf(env.Stderr, "memgate: note: %s\n", fault.As(cerr).Message)
	}
	return err
}
