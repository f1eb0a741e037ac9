package cli

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/mcp"
)

// runMCP serves MCP over stdin/stdout as one agent of the data directory's
// workspace: the same tools, gate and audit as /mcp on serve. Logs go to
// stderr; stdout carries only the protocol.
func runMCP(env Env, args []string) error {
	fs, cfg := flags(env, "mcp", false)
	var agent string
	fs.StringVar(&agent, "agent", "", "name of the agent the MCP client acts as (env MEMGATE_MCP_AGENT)")
	dropin := fs.Bool("dropin-only", false, "serve exactly the reference memory server's nine tools, with its names and schemas (docs/mcp-dropin.md)")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("mcp takes no arguments")
	}
	if agent == "" {
		return usagef("mcp acts as an agent: pass --agent NAME or set MEMGATE_MCP_AGENT (create one with: memgate agents create --name NAME --trust standard)")
	}
	level, _ := config.ParseLevel(cfg.LogLevel)
	log := slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := env.runContext()
	defer stop()
	a, err := openWith(ctx, env, cfg, log, nil, true)
	if err != nil {
		return err
	}
	defer a.Close()
	// Fail fast, before the client's first call, when the agent is unknown.
	if _, err := a.svc.LocalAgent(ctx, cfg.Workspace, agent); err != nil {
		return err
	}

	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.svc.RunUsage(bg, time.Second) })
	a.followOthers(bg, &wg)
	defer func() {
		stopBG()
		wg.Wait()
	}()
	return mcp.ServeStdio(ctx, a.svc, cfg.Workspace, agent, env.Stdin, env.Stdout, mcp.Options{Logger: log, Version: Version, DropinOnly: *dropin})
}
