package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/metrics"
)

func runServe(env Env, args []string) error {
	fs, cfg := flags(env, "serve", true)
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve takes no arguments")
	}
	level, _ := config.ParseLevel(cfg.LogLevel)
	log := slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := env.runContext()
	defer stop()
	return serve(ctx, env, cfg, log)
}

// serve runs the server until ctx ends, then shuts down gracefully:
// in-flight requests finish, background jobs stop, the database closes.
func serve(ctx context.Context, env Env, cfg *config.Config, log *slog.Logger) error {
	m := metrics.New()
	a, err := openWith(ctx, env, cfg, log, m, true)
	if err != nil {
		return err
	}
	defer a.Close()
	a.svc.SetScrubWait(serveScrubWait)

	// Verify every audit chain before taking traffic, so /readyz is honest
	// from the first request.
	if st := a.svc.CheckAllAudit(ctx); !st.OK {
		log.Error("audit chain broken at start; /readyz reports it", "workspaces", len(st.Broken))
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fault.Wrap(fault.Unavailable, err, "cannot listen on %s", cfg.Addr)
	}
	srv := &http.Server{
		Handler:           api.New(a.svc, log, m, Version).Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.svc.RunExpiry(bg, cfg.ExpiryInterval) })
	wg.Go(func() { a.svc.RunAuditChecks(bg, cfg.AuditCheckInterval) })
	wg.Go(func() { a.svc.RunUsage(bg, time.Second) })
	wg.Go(func() { a.svc.RunEmbedder(bg, 30*time.Second) })
	wg.Go(func() { a.svc.RunJobs(bg) })
	a.followOthers(bg, &wg)
	wg.Go(func() { saveSnapshots(bg, a, indexSnapshot(cfg), log) })

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "database", describeDB(databaseOf(cfg)), "data_dir", cfg.DataDir, "version", Version)
	fmt.Fprintf(env.Stdout, "memgate listening on http://%s\n", ln.Addr().String())

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	stopBG()
	wg.Wait()
	// Requests and jobs have stopped: apply the last changes (other
	// processes' too) and save the index for a fast next start.
	cctx, cancelCatchUp := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	if _, err := a.index.CatchUp(cctx, a.store); err != nil {
		log.Warn("index catch-up before the snapshot failed", "err", err)
	}
	cancelCatchUp()
	if a.index.Dirty() {
		saveSnapshot(a, indexSnapshot(cfg), "shutdown", log)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fault.Wrap(fault.Unavailable, err, "server failed")
	}
	if shutErr != nil {
		return fault.Wrap(fault.Unavailable, shutErr, "graceful shutdown did not finish in %s", cfg.ShutdownTimeout)
	}
	log.Info("stopped")
	return nil
}

// serveScrubWait bounds how long a request that erased waits for the
// scrub of the database files; the scrub goes on after it (on PostgreSQL
// a table rewrite can take longer), and a retry waits for it.
const serveScrubWait = 30 * time.Second

// indexSnapshot is the search index snapshot in the data directory:
// derived data (retrieve.Engine.SaveSnapshot) that every command restores
// and only serve writes.
func indexSnapshot(cfg *config.Config) string { return filepath.Join(cfg.DataDir, "index.snapshot") }

// Snapshot cadence: a changed index is saved every snapshotEvery; one that
// has no snapshot yet, or has forgotten records since the last (whose
// derived data the file still holds), at the next check.
const (
	snapshotCheck = 10 * time.Second
	snapshotEvery = 5 * time.Minute
)

// saveSnapshots saves the index snapshot until ctx ends. It does not catch
// up itself: Follow does, and two catch-ups must not run at once.
func saveSnapshots(ctx context.Context, a *app, path string, log *slog.Logger) {
	ix := a.index
	t := time.NewTicker(snapshotCheck)
	defer t.Stop()
	last, failed := time.Now(), false
	for {
		st := ix.SnapshotStatus()
		urgent := !st.Saved || st.Forgotten > 0
		if st.Dirty && (urgent && !failed || time.Since(last) >= snapshotEvery) {
			why := "periodic"
			switch {
			case st.Forgotten > 0:
				why = "forget"
			case !st.Saved:
				why = "first"
			}
			err := saveSnapshot(a, path, why, log)
			// A save skipped for a forget the index has not applied yet
			// is retried once it has (the forget makes it urgent).
			failed = err != nil && !errors.Is(err, errSnapshotStale)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func saveSnapshot(a *app, path, why string, log *slog.Logger) error {
	start := time.Now()
	if err := saveSnapshotChecked(a.index, a.store, path); err != nil {
		if errors.Is(err, errSnapshotStale) {
			log.Info("search index snapshot not saved: a record was forgotten since the index's state; retrying after catch-up", "path", path)
		} else {
			log.Warn("cannot save the search index snapshot", "path", path, "err", err)
		}
		return err
	}
	var size int64
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	log.Info("search index snapshot saved", "reason", why, "bytes", size, "took", time.Since(start).String())
	return nil
}
