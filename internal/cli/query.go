package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/memgate/memgate/internal/core"
)

func runQuery(env Env, args []string) error {
	fs, cfg := flags(env, "query", false)
	var (
		k               int
		ff              filterFlags
		signals         multiFlag
		rt              string
		explain, asJSON bool
		minRelevance    float64
	)
	fs.IntVar(&k, "k", 10, "number of results (1-100)")
	ff.bind(fs)
	fs.Var(&signals, "signal", "restrict to a signal: lexical, dense, graph, keys (repeatable)")
	fs.StringVar(&rt, "route", "", "force a route: skip, simple, multi_hop, exploratory")
	fs.Float64Var(&minRelevance, "min-relevance", 0, "drop results less relevant than this (0-1); none left means nothing relevant")
	fs.BoolVar(&explain, "explain", false, "show each signal's rank and score")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	text, err := positional(env, fs, cfg, args, "query text (quote it)")
	if err != nil {
		return err
	}
	f, err := ff.parse()
	if err != nil {
		return err
	}
	req := core.SearchRequest{Query: text, K: k, Types: f.types, Statuses: f.statuses, Scope: f.scope, Entity: f.entity,
		Category: f.category, AsOf: f.asOf, KnownAt: f.knownAt, Route: rt, Signals: signals, Explain: explain, IncludeSensitive: true,
		MinRelevance: minRelevance}
	return withApp(env, cfg, true, func(ctx context.Context, a *app) error {
		res, err := a.svc.Search(ctx, a.operator(), req)
		if err != nil {
			return err
		}
		return output(env, asJSON, res, func(w io.Writer) {
			fmt.Fprintf(w, "route %s, signals %s\n", res.Route, strings.Join(res.Signals, "+"))
			for _, d := range res.Degraded {
				fmt.Fprintf(w, "degraded: %s\n", d)
			}
			if len(res.Results) == 0 && minRelevance > 0 {
				fmt.Fprintf(w, "nothing with relevance >= %g\n", minRelevance)
			}
			for i, h := range res.Results {
				fmt.Fprintf(w, "%2d. %.4f relevance %.2f %s  %s\n", i+1, h.Score, h.Relevance, h.Citation, oneLine(h.Record.Content, 100))
				for sig, sc := range h.Explain {
					fmt.Fprintf(w, "      %-8s rank %d score %.4f\n", sig, sc.Rank, sc.Score)
				}
			}
		})
	})
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
