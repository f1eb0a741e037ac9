package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/console"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/maintain"
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
	rr, err := newReranker(cfg, env.Getenv)
	if err != nil {
		return err
	}
	m := metrics.New()
	a, err := openApp(ctx, env, cfg, log, m, true, serveLoops(cfg, log))
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
	rest := api.New(a.svc, log, m, version())
	rest.SetReranker(rr)
	if cfg.Console {
		rest.EnableConsole(console.Options{})
	}
	srv := &http.Server{
		Handler:           rest.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	// The service's loops run until a.Close, after the HTTP server has
	// stopped taking requests.
	go a.svc.Run(context.Background())

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "database", describeDB(databaseOf(cfg)), "data_dir", cfg.DataDir, "version", version())
	fmt.Fprintf(env.Stdout, "memgate listening on http://%s\nmemgate data: %s\n", ln.Addr().String(), describeDB(databaseOf(cfg)))

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	// Requests have stopped: stop the loops, save the index snapshot,
	// embed the last writes.
	if err := a.Close(); err != nil {
		log.Warn("shutdown left work pending", "err", err)
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

// serveLoops is the background work of serve: every loop (see
// docs/lifecycle.md).
func serveLoops(cfg *config.Config, log *slog.Logger) core.Loops {
	l := core.Loops{Jobs: true, Webhooks: true, Expiry: cfg.ExpiryInterval, AuditCheck: cfg.AuditCheckInterval,
		SnapshotPath: indexSnapshot(cfg), Settle: cfg.ShutdownTimeout}
	if cfg.MaintenanceInterval > 0 {
		l.Maintenance = maintain.Loop(maintain.LoopOptions{Interval: cfg.MaintenanceInterval, Log: log})
	}
	return l
}
