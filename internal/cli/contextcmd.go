package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/files"
)

// runContext prints the context assembled for a task: its Markdown, or
// the whole envelope with --json. It acts as the workspace's operator.
func runContext(env Env, args []string) error {
	fs, cfg := flags(env, "context", false)
	var (
		req    contextpack.Request
		scope  multiFlag
		asJSON bool
	)
	fs.Var(&scope, "scope", "scope key=value (repeatable); session_id also selects the recent activity")
	fs.IntVar(&req.BudgetTokens, "budget", contextpack.DefaultBudget, "at most this many tokens (estimated)")
	fs.IntVar(&req.MaxProcedures, "procedures", contextpack.DefaultProcedures, "at most this many procedures")
	fs.IntVar(&req.MaxChunks, "chunks", contextpack.DefaultChunks, "at most this many knowledge items")
	fs.IntVar(&req.MaxFacts, "facts", contextpack.DefaultFacts, "at most this many graph facts")
	fs.IntVar(&req.MaxRecent, "recent", contextpack.DefaultRecent, "at most this many recent items")
	fs.BoolVar(&asJSON, "json", false, "print the envelope as JSON")
	text, err := positional(env, fs, cfg, args, "task or query text (quote it)")
	if err != nil {
		return err
	}
	req.Query = text
	if req.Scope, err = parseScope(scope); err != nil {
		return err
	}
	return withApp(env, cfg, true, func(ctx context.Context, a *app) error {
		out, err := contextpack.New(a.svc, files.New(a.svc, files.Options{}).ContextPinned()).Assemble(ctx, a.operator(), req)
		if err != nil {
			return err
		}
		return output(env, asJSON, out, func(w io.Writer) {
			fmt.Fprint(w, out.Markdown)
			fmt.Fprintf(w, "\n<!-- %d of %d tokens, knowledge sufficiency %s -->\n", out.Tokens, out.BudgetTokens, out.Sufficiency)
		})
	})
}
