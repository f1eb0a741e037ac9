package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/memgate/memgate/internal/maintain"
)

// runMaintain runs one maintenance job once (what serve's sweep does on
// a schedule), or restores an archived record. Progress goes to stderr;
// the report to stdout.
func runMaintain(env Env, args []string) error {
	names := append(append([]string{}, maintain.Jobs...), "sweep", "restore")
	sub, args, err := subcommand(args, names...)
	if err != nil {
		return err
	}
	fs, cfg := flags(env, "maintain "+sub, false)
	var asJSON, dryRun, quiet bool
	var batch int
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	var id string
	if sub == "restore" {
		if id, err = positional(env, fs, cfg, args, "record id"); err != nil {
			return err
		}
	} else {
		fs.BoolVar(&dryRun, "dry-run", false, "report what the job would do and write nothing")
		fs.BoolVar(&quiet, "quiet", false, "no progress on stderr")
		fs.IntVar(&batch, "batch", 500, "records per transaction (1-500)")
		if err := parse(env, fs, cfg, args); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return usagef("maintain %s takes no arguments", sub)
		}
		if batch < 1 || batch > 500 {
			return usagef("--batch: must be between 1 and 500")
		}
	}
	// The index is kept current by the writes: each reads the change log.
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		if sub == "restore" {
			r, err := a.svc.Restore(ctx, a.operator(), id)
			if err != nil {
				return err
			}
			return output(env, asJSON, r, func(w io.Writer) {
				fmt.Fprintf(w, "restored %s (version %d, %s)\n", r.ID, r.Version, r.Status)
			})
		}
		o := maintain.Options{DryRun: dryRun, Batch: batch}
		if !quiet {
			last := time.Time{}
			o.Progress = func(p maintain.Progress) {
				// At most a line a second, and always the first.
				if now := time.Now(); now.Sub(last) >= time.Second {
					last = now
					printProgress(env.Stderr, p)
				}
			}
		}
		m := maintain.New(a.svc, o)
		if sub == "sweep" {
			// Every job, as serve's schedule runs them.
			reps, err := m.Sweep(ctx)
			if err != nil {
				return err
			}
			return output(env, asJSON, reps, func(w io.Writer) {
				for _, rep := range reps {
					printReport(w, rep)
				}
			})
		}
		rep, err := m.Run(ctx, sub)
		if err != nil {
			return err
		}
		return output(env, asJSON, rep, func(w io.Writer) { printReport(w, rep) })
	})
}

func printReport(w io.Writer, rep maintain.Report) {
	verb := ""
	if rep.DryRun {
		verb = " (dry run: nothing written)"
	}
	resumed := ""
	if rep.Resumed {
		resumed = ", resumed an interrupted run"
	}
	fmt.Fprintf(w, "%s: scanned %d, decayed %d, changed %d, inserted %d, reviews %d, skipped %d%s%s\n",
		rep.Job, rep.Scanned, rep.Decayed, rep.Changed, rep.Inserted, rep.Reviews, rep.Skipped, resumed, verb)
}

func printProgress(w io.Writer, p maintain.Progress) {
	eta := "?"
	if d := p.ETA(); d > 0 {
		eta = d.Round(time.Second).String()
	}
	fmt.Fprintf(w, "memgate: %s: %d/%d records, %d changed, %.0f records/s, eta %s\n",
		p.Job, p.Scanned, p.Total, p.Changed, p.Rate(), eta)
}
