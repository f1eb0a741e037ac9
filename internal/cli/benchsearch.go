package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/memgate/memgate/internal/bench"
)

// runBenchSearch is `memgate bench search --url A [--url2 B]`: search
// latency as clients of running servers see it, the questions of a
// LongMemEval file sent to /v1/search (spread over both replicas when
// two are named) by concurrent clients.
func runBenchSearch(env Env, args []string) error {
	fs, cfg := flags(env, "bench search", false)
	var (
		a, b, tokenFile, data string
		n, warmup, clients, k int
		jsonOnly              bool
	)
	fs.StringVar(&a, "url", "", "base URL of a running memgate serve")
	fs.StringVar(&b, "url2", "", "base URL of a second replica of the same database: searches alternate between the two")
	fs.StringVar(&tokenFile, "token-file", "", "file holding a token that may search (default env MEMGATE_TOKEN)")
	fs.StringVar(&data, "data", "", "LongMemEval JSON file whose questions are asked (default "+defaultLatencyData+")")
	fs.IntVar(&n, "searches", 300, "timed searches")
	fs.IntVar(&warmup, "warmup", 20, "untimed searches first")
	fs.IntVar(&clients, "clients", 4, "concurrent clients (1-64)")
	fs.IntVar(&k, "k", 10, "results asked per search (1-100)")
	fs.BoolVar(&jsonOnly, "json-only", false, "print only the JSON summary line")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if a == "" || fs.NArg() > 0 || n < 1 || warmup < 0 || clients < 1 || clients > 64 || k < 1 || k > 100 {
		return usagef("bench search: --url A [--url2 B], --searches 1 or more, --clients 1-64, --k 1-100")
	}
	token := os.Getenv("MEMGATE_TOKEN")
	if tokenFile != "" {
		raw, err := os.ReadFile(tokenFile)
		if err != nil {
			return usagef("bench search: --token-file: %v", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	if data == "" {
		data = defaultLatencyData
	}
	f, err := os.Open(data)
	if err != nil {
		return usagef("bench search: %v (pass --data FILE, a LongMemEval JSON file)", err)
	}
	ds, err := bench.LoadLongMemEval(f)
	f.Close()
	if err != nil {
		return usagef("%v", err)
	}
	urls := []string{strings.TrimRight(a, "/")}
	if b != "" {
		urls = append(urls, strings.TrimRight(b, "/"))
	}
	ctx, stop := env.runContext()
	defer stop()
	if warmup == 0 {
		warmup = -1 // none
	}
	res, err := bench.RunSearchHTTP(ctx, bench.SearchHTTPOptions{URLs: urls, Token: token, Queries: ds.QuestionTexts(),
		N: n, Warmup: warmup, Clients: clients, K: k})
	if err != nil {
		return err
	}
	cmd := "memgate bench search " + strings.Join(args, " ")
	if !jsonOnly {
		bench.PrintHeader(env.Stdout, cmd)
		fmt.Fprintf(env.Stdout, "%d searches over %d replica(s), %d clients: %.0f searches/s, %d with results\n", res.Searches, len(urls), clients, res.PerS, res.Hits)
		fmt.Fprintf(env.Stdout, "  ms   p50 %.1f   p95 %.1f   p99 %.1f\n", res.P50MS, res.P95MS, res.P99MS)
	}
	raw, _ := json.Marshal(map[string]any{"bench": "search", "machine": bench.ThisMachine(), "command": strings.TrimSpace(cmd), "replicas": len(urls), "result": res})
	fmt.Fprintln(env.Stdout, string(raw))
	return nil
}
