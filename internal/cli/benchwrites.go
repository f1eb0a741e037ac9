package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/memory"
)

// runBenchWrites is `memgate bench writes`: the realistic write mix
// (bench.RunWriteMix) against a running server (--url, with a token that
// may write in MEMGATE_TOKEN or --token-file), or, without --url, against
// a server this command starts on loopback over a temporary data
// directory, on the embedded database, the load generator sharing the
// machine as it does against a local server.
func runBenchWrites(env Env, args []string) error {
	start := time.Now()
	fs, cfg := flags(env, "bench writes", false)
	var (
		url, tokenFile      string
		clients, patchEvery int
		duration            time.Duration
		jsonOnly            bool
	)
	fs.StringVar(&url, "url", "", "base URL of a running memgate serve (default: start one on loopback over a temporary data directory)")
	fs.StringVar(&tokenFile, "token-file", "", "file holding a token that may write (with --url; default env MEMGATE_TOKEN)")
	fs.IntVar(&clients, "clients", 16, "concurrent HTTP clients")
	firstClient := fs.Int("first-client", 0, "number the clients from this one (a second process driving a second replica: --clients 8 --first-client 8)")
	fs.DurationVar(&duration, "duration", 20*time.Second, "how long to write")
	fs.IntVar(&patchEvery, "patch-every", 5, "one request in N is a PATCH of an earlier record (0: none)")
	requests := fs.Int("requests", 0, "end each client after this many requests (0: run for --duration)")
	fs.BoolVar(&jsonOnly, "json-only", false, "print only the JSON summary line")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process (the local server and the clients) to this file")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("bench writes: unexpected argument %q", fs.Arg(0))
	}
	if clients < 1 || clients > 1024 || duration <= 0 || patchEvery < 0 || *requests < 0 || *firstClient < 0 {
		return usagef("bench writes: --clients must be 1-1024, --duration positive, --patch-every 0 or more")
	}
	ctx, stop := env.runContext()
	defer stop()
	token := os.Getenv("MEMGATE_TOKEN")
	if tokenFile != "" {
		raw, err := os.ReadFile(tokenFile)
		if err != nil {
			return usagef("bench writes: --token-file: %v", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	target := url
	if url == "" {
		u, t, stopServer, err := benchLocalServer(ctx, env, cfg)
		if err != nil {
			return err
		}
		defer stopServer()
		target, token = u, t
	} else if token == "" {
		return usagef("bench writes: --url needs a token that may write (MEMGATE_TOKEN or --token-file)")
	}
	stopProfile, err := bench.StartCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	res, err := bench.RunWriteMix(ctx, bench.WriteMixOptions{URL: strings.TrimRight(target, "/"), Token: token,
		Clients: clients, Duration: duration, PatchEvery: patchEvery, Requests: *requests, FirstClient: *firstClient})
	if err != nil {
		return err
	}
	cmd := "memgate bench writes " + strings.Join(args, " ")
	line := map[string]any{"bench": "writes", "machine": bench.ThisMachine(), "command": strings.TrimSpace(cmd), "server": map[bool]string{true: "url", false: "local"}[url != ""],
		"result": res, "wall_s": time.Since(start).Seconds()}
	raw, _ := json.Marshal(line)
	if !jsonOnly {
		w := env.Stdout
		bench.PrintHeader(w, cmd)
		fmt.Fprintf(w, "write mix: %d clients, %s, records with metadata, two entities and a scope; one request in %d a PATCH\n", clients, duration, patchEvery)
		fmt.Fprintf(w, "  acknowledged writes/s  %8.0f   (%d writes, %d of them patches, %d not acknowledged)\n", res.WritesPerSec, res.Writes, res.Patches, res.Failed)
		fmt.Fprintf(w, "  latency ms             p50 %.1f   p95 %.1f   p99 %.1f\n", res.P50MS, res.P95MS, res.P99MS)
		for _, f := range res.FirstFailures {
			fmt.Fprintf(w, "  failure: %s\n", f)
		}
	}
	fmt.Fprintln(env.Stdout, string(raw))
	return nil
}

// benchLocalServer starts the REST API over a temporary data directory on
// loopback, with an agent without a rate limit, and returns its URL and
// the agent's token.
func benchLocalServer(ctx context.Context, env Env, cfg *config.Config) (string, string, func(), error) {
	removeDir, err := benchTempDir(cfg, "writes")
	if err != nil {
		return "", "", nil, err
	}
	cfg.DatabaseURL = "" // the embedded database, never a configured one
	if cfg.PolicyFile == "" {
		pf := filepath.Join(cfg.DataDir, "bench-policy.yaml")
		if err := os.WriteFile(pf, []byte("rate_limit:\n  agent: {per_second: 0, burst: 0}\n"), 0o600); err != nil {
			removeDir()
			return "", "", nil, fmt.Errorf("bench: %w", err)
		}
		cfg.PolicyFile = pf
	}
	openEnv := env
	openEnv.Stderr = io.Discard // the throwaway operator token
	a, err := openWith(ctx, openEnv, cfg, nil, nil, true)
	if err != nil {
		removeDir()
		return "", "", nil, err
	}
	cleanup := func() { a.Close(); removeDir() }
	ag, err := a.svc.CreateAgent(ctx, a.op, "bench-writes", memory.Standard)
	if err != nil {
		cleanup()
		return "", "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return "", "", nil, err
	}
	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { a.svc.Run(loops); close(done) }()
	srv := &http.Server{Handler: api.New(a.svc, nil, nil, "bench").Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stopAll := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		stopLoops()
		<-done
		cleanup()
	}
	return "http://" + ln.Addr().String(), ag.Token, stopAll, nil
}

// runBenchVisibility is `memgate bench visibility --url A --url2 B`: how
// long a write acknowledged by replica A takes to be found by replica B's
// search (both serving one database; a token both accept in
// MEMGATE_TOKEN or --token-file).
func runBenchVisibility(env Env, args []string) error {
	fs, cfg := flags(env, "bench visibility", false)
	var (
		a, b, tokenFile string
		probes          int
		jsonOnly        bool
	)
	fs.StringVar(&a, "url", "", "base URL of the replica that writes")
	fs.StringVar(&b, "url2", "", "base URL of the replica that searches")
	fs.StringVar(&tokenFile, "token-file", "", "file holding a token that may write (default env MEMGATE_TOKEN)")
	fs.IntVar(&probes, "probes", 100, "writes timed, one after another")
	fs.BoolVar(&jsonOnly, "json-only", false, "print only the JSON summary line")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if a == "" || b == "" || probes < 1 || fs.NArg() > 0 {
		return usagef("bench visibility: --url A --url2 B (two replicas of one database), --probes 1 or more")
	}
	token := os.Getenv("MEMGATE_TOKEN")
	if tokenFile != "" {
		raw, err := os.ReadFile(tokenFile)
		if err != nil {
			return usagef("bench visibility: --token-file: %v", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	ctx, stop := env.runContext()
	defer stop()
	res, err := bench.RunVisibility(ctx, bench.VisibilityOptions{Writer: strings.TrimRight(a, "/"), Reader: strings.TrimRight(b, "/"), Token: token, Probes: probes})
	if err != nil {
		return err
	}
	cmd := "memgate bench visibility " + strings.Join(args, " ")
	if !jsonOnly {
		bench.PrintHeader(env.Stdout, cmd)
		fmt.Fprintf(env.Stdout, "cross-replica visibility of an acknowledged write (search on the other replica), %d probes\n", res.Probes)
		fmt.Fprintf(env.Stdout, "  ms   p50 %.0f   p95 %.0f   max %.0f\n", res.P50MS, res.P95MS, res.MaxMS)
	}
	raw, _ := json.Marshal(map[string]any{"bench": "visibility", "machine": bench.ThisMachine(), "command": strings.TrimSpace(cmd), "result": res})
	fmt.Fprintln(env.Stdout, string(raw))
	return nil
}
