package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/memgate/memgate/internal/core"
)

// runDecisions lists the gatekeeper log: every gate decision (from the
// audit log) and extraction decision (from the gatekeeper log) with its
// reason, as an operator of the workspace.
func runDecisions(env Env, args []string) error {
	fs, cfg := flags(env, "decisions", false)
	var asJSON bool
	var q core.DecisionQuery
	var since string
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&q.Source, "source", "", "gate or extraction (default both)")
	fs.StringVar(&q.RecordID, "record", "", "only decisions about this record id")
	fs.StringVar(&q.Event, "event", "", "only this event, e.g. record.write or "+core.EventExtraction)
	fs.StringVar(&q.Decision, "decision", "", "only this decision, e.g. rejected, quarantined, skip")
	fs.StringVar(&q.JobID, "job", "", "only decisions of this flush job")
	fs.StringVar(&since, "since", "", "only decisions at or after this RFC 3339 time")
	fs.StringVar(&q.Cursor, "cursor", "", "next_cursor of the previous page")
	fs.IntVar(&q.Limit, "limit", 50, "page size (1-500)")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			return usagef("--since must be an RFC 3339 time, e.g. 2026-03-01T12:00:00Z")
		}
		q.Since = &t
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		page, err := a.svc.ListDecisions(ctx, a.operator(), q)
		if err != nil {
			return err
		}
		return output(env, asJSON, page, func(w io.Writer) {
			for _, d := range page.Decisions {
				subject := d.RecordID
				if subject == "" {
					subject = d.MessageID
				}
				fmt.Fprintf(w, "%s  %-10s %-22s %-12s %-28s %s\n", d.At.UTC().Format(time.RFC3339), d.Source, d.Event, d.Decision, d.Reason, subject)
			}
			if page.NextCursor != "" {
				fmt.Fprintf(w, "more: --cursor %s\n", page.NextCursor)
			}
		})
	})
}
