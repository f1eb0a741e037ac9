package cli

import (
	"context"
	"log/slog"

	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/mcp"
)

// runMCP serves MCP over stdin/stdout as one agent of the data directory's
// workspace: the same tools, gate and audit as /mcp on serve. Logs go to
// stderr; stdout carries only the protocol.
func runMCP(env Env, args []string) error {
	fs, cfg := flags(env, "mcp", false)
	var agent string
	fs.StringVar(&agent, "agent", "", "name of the agent the MCP client acts as (env MEMGATE_MCP_AGENT); default: mcp-<client name>, created on first use")
	dropin := fs.Bool("dropin-only", false, "serve exactly the reference memory server's nine tools, with its names and schemas (docs/mcp-dropin.md)")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("mcp takes no arguments")
	}
	level, _ := config.ParseLevel(cfg.LogLevel)
	log := slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := env.runContext()
	defer stop()
	a, err := openApp(ctx, env, cfg, log, nil, true, mcpLoops(cfg))
	if err != nil {
		return err
	}
	defer func() {
		if err := a.Close(); err != nil {
			log.Warn("mcp session ended with work pending", "err", err)
		}
	}()
	// Fail fast, before the client's first call, when a named agent is
	// unknown. Without one, the client's own agent is made on first use.
	if agent != "" {
		if _, err := a.svc.LocalAgent(ctx, cfg.Workspace, agent); err != nil {
			return err
		}
	}

	// The loops run until a.Close, after the session ends.
	go a.svc.Run(context.Background())
	fsvc := files.New(a.svc, files.Options{}) // one path index for the memory tool, the block tools and context
	err = mcp.ServeStdio(ctx, a.svc, cfg.Workspace, agent, env.Stdin, env.Stdout, mcp.Options{Logger: log, Version: version(), DropinOnly: *dropin, Pinned: fsvc.ContextPinned(), Files: fsvc})
	if ctx.Err() != nil {
		return nil // stopped by a signal: a graceful end, not a failure
	}
	return err
}

// mcpLoops is the background work of an MCP session over stdio: embedding,
// the change followers, usage counters and approvals expiry. Job workers
// (only serve's gateway queues jobs), the audit re-check (only serve's
// /readyz reports it) and index snapshots (serve writes them; every
// command reads them) are serve's.
func mcpLoops(cfg *config.Config) core.Loops {
	return core.Loops{Expiry: cfg.ExpiryInterval, Settle: cfg.ShutdownTimeout}
}
