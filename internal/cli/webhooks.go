package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/core"
)

// runWebhooks registers, lists and removes webhook endpoints and shows
// their delivery log (docs/events.md), as an operator of the workspace.
// The signing secret is printed once, by add.
func runWebhooks(env Env, args []string) error {
	sub, args, err := subcommand(args, "add", "list", "remove", "deliveries")
	if err != nil {
		return err
	}
	fs, cfg := flags(env, "webhooks "+sub, false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	var kinds, webhookID, before string
	var limit int
	switch sub {
	case "add":
		fs.StringVar(&kinds, "kinds", "", "comma-separated event kinds to deliver (default every kind)")
	case "deliveries":
		fs.StringVar(&webhookID, "webhook", "", "only this endpoint's deliveries")
		fs.StringVar(&before, "before", "", "next_before of the previous page")
		fs.IntVar(&limit, "limit", 50, "page size (1-500)")
	}
	var target string
	switch sub {
	case "add":
		if target, err = positional(env, fs, cfg, args, "endpoint URL"); err != nil {
			return err
		}
	case "remove":
		if target, err = positional(env, fs, cfg, args, "webhook id"); err != nil {
			return err
		}
	default:
		if err := parse(env, fs, cfg, args); err != nil {
			return err
		}
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		op := a.operator()
		switch sub {
		case "add":
			req := core.WebhookRequest{URL: target}
			for k := range strings.SplitSeq(kinds, ",") {
				if k = strings.TrimSpace(k); k != "" {
					req.Kinds = append(req.Kinds, k)
				}
			}
			c, err := a.svc.CreateWebhook(ctx, op, req)
			if err != nil {
				return err
			}
			return output(env, asJSON, c, func(w io.Writer) {
				fmt.Fprintf(w, "webhook %s registered\nsigning secret (shown once): %s\n", c.Webhook.ID, c.Secret)
			})
		case "list":
			hooks, err := a.svc.ListWebhooks(ctx, op)
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"webhooks": hooks}, func(w io.Writer) {
				for _, h := range hooks {
					k := "all kinds"
					if len(h.Kinds) > 0 {
						k = strings.Join(h.Kinds, ",")
					}
					fmt.Fprintf(w, "%s  %s  %s  cursor %d  failed %d\n", h.ID, h.URL, k, h.Cursor, h.FailedAttempts)
				}
			})
		case "remove":
			if err := a.svc.DeleteWebhook(ctx, op, target); err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"removed": target}, func(w io.Writer) {
				fmt.Fprintf(w, "webhook %s removed\n", target)
			})
		default:
			page, err := a.svc.ListDeliveries(ctx, op, webhookID, before, limit)
			if err != nil {
				return err
			}
			return output(env, asJSON, page, func(w io.Writer) {
				for _, d := range page.Deliveries {
					fmt.Fprintf(w, "%s  %-9s %-20s attempt %d  %3d  %s  %s\n", d.At.UTC().Format(time.RFC3339), d.Outcome, d.EventType,
						d.Attempt, d.StatusCode, d.EventID, d.Error)
				}
				if page.NextBefore != "" {
					fmt.Fprintf(w, "more: --before %s\n", page.NextBefore)
				}
			})
		}
	})
}
