package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

func runQuery(env Env, args []string) error {
	fs, cfg := flags(env, "query", false)
	var (
		k                                   int
		types, statuses, scope, signals     multiFlag
		entity, category, asOf, knownAt, rt string
		explain, asJSON                     bool
	)
	fs.IntVar(&k, "k", 10, "number of results (1-100)")
	fs.Var(&types, "type", "record type (repeatable)")
	fs.Var(&statuses, "status", "status (repeatable; default active)")
	fs.Var(&scope, "scope", "scope key=value (repeatable)")
	fs.Var(&signals, "signal", "restrict to a signal: lexical, dense, graph (repeatable)")
	fs.StringVar(&entity, "entity", "", "entity natural key")
	fs.StringVar(&category, "category", "", "category")
	fs.StringVar(&asOf, "as-of", "", "world time (RFC 3339)")
	fs.StringVar(&knownAt, "known-at", "", "transaction time (RFC 3339)")
	fs.StringVar(&rt, "route", "", "force a route: skip, simple, multi_hop, exploratory")
	fs.BoolVar(&explain, "explain", false, "show each signal's rank and score")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	text, err := positional(env, fs, cfg, args, "query text (quote it)")
	if err != nil {
		return err
	}
	sc, err := parseScope(scope)
	if err != nil {
		return err
	}
	req := core.SearchRequest{Query: text, K: k, Scope: sc, Entity: entity, Category: category, Route: rt,
		Signals: signals, Explain: explain, IncludeSensitive: true}
	for _, t := range types {
		req.Types = append(req.Types, memory.Type(t))
	}
	for _, s := range statuses {
		req.Statuses = append(req.Statuses, memory.Status(s))
	}
	if req.AsOf, err = parseTimeFlag("as-of", asOf); err != nil {
		return err
	}
	if req.KnownAt, err = parseTimeFlag("known-at", knownAt); err != nil {
		return err
	}
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
			for i, h := range res.Results {
				fmt.Fprintf(w, "%2d. %.4f %s  %s\n", i+1, h.Score, h.Citation, oneLine(h.Record.Content, 100))
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
