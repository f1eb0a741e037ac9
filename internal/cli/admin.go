package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

func subcommand(args []string, names ...string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, usagef("want a subcommand: %v", names)
	}
	for _, n := range names {
		if args[0] == n {
			return n, args[1:], nil
		}
	}
	return "", nil, usagef("unknown subcommand %q, want one of %v", args[0], names)
}

func runAgents(env Env, args []string) error {
	sub, args, err := subcommand(args, "create", "list", "revoke", "rotate", "trust")
	if err != nil {
		return err
	}
	fs, cfg := flags(env, "agents "+sub, false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	var name, trust string
	switch sub {
	case "create":
		fs.StringVar(&name, "name", "", "agent name, unique in the workspace")
		fs.StringVar(&trust, "trust", string(memory.DefaultTrust), "trusted, standard, restricted or read_only")
	case "trust":
		fs.StringVar(&trust, "trust", "", "the new trust level: trusted, standard, restricted or read_only")
	}
	var target string
	if sub == "revoke" || sub == "rotate" || sub == "trust" {
		if target, err = positional(env, fs, cfg, args, "agent id or name"); err != nil {
			return err
		}
	} else if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if sub == "create" && name == "" {
		return usagef("--name is required")
	}
	if sub == "trust" && trust == "" {
		return usagef("--trust is required")
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		switch sub {
		case "create":
			p, err := a.svc.CreateAgent(ctx, a.operator(), name, memory.Trust(trust))
			if err != nil {
				return err
			}
			return output(env, asJSON, p, func(w io.Writer) {
				fmt.Fprintf(w, "agent %s (%s) created, trust %s\ntoken (shown once): %s\n", p.Name, p.ID, p.Trust, p.Token)
			})
		case "list":
			ps, err := a.svc.ListAgents(ctx, a.operator())
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"agents": ps}, func(w io.Writer) {
				for _, p := range ps {
					state := "active"
					if p.Revoked() {
						state = "revoked"
					}
					fmt.Fprintf(w, "%s  %-20s %-10s %s\n", p.ID, p.Name, p.Trust, state)
				}
			})
		case "trust":
			p, err := a.svc.SetAgentTrust(ctx, a.operator(), target, memory.Trust(trust))
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"agent": p}, func(w io.Writer) {
				fmt.Fprintf(w, "agent %s (%s) now has trust %s\n", p.Name, p.ID, p.Trust)
			})
		case "rotate":
			p, err := a.svc.RotateAgent(ctx, a.operator(), target)
			if err != nil {
				return err
			}
			return output(env, asJSON, p, func(w io.Writer) {
				fmt.Fprintf(w, "agent %s (%s) has a new token; the old one no longer works\ntoken (shown once): %s\n", p.Name, p.ID, p.Token)
			})
		default:
			p, err := a.svc.RevokeAgent(ctx, a.operator(), target)
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"agent": p}, func(w io.Writer) {
				fmt.Fprintf(w, "agent %s revoked\n", p.Name)
			})
		}
	})
}

func runApprovals(env Env, args []string) error {
	sub, args, err := subcommand(args, "list", "approve", "reject", "expire")
	if err != nil {
		return err
	}
	fs, cfg := flags(env, "approvals "+sub, false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	var status, cursor, reason, content, category, access string
	var limit int
	var entities multiFlag
	switch sub {
	case "list":
		fs.StringVar(&status, "status", "pending", "pending, approved, rejected or expired")
		fs.StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
		fs.IntVar(&limit, "limit", 50, "page size (1-500)")
	case "approve":
		fs.StringVar(&content, "content", "", "edit: replace the content before approving")
		fs.StringVar(&category, "category", "", "edit: replace the category")
		fs.StringVar(&access, "access", "", "edit: set the access level")
		fs.Var(&entities, "entity", "edit: replace the entities (repeatable)")
	case "reject":
		fs.StringVar(&reason, "reason", "", "why (stored only as a hash)")
	}
	var id string
	if sub == "approve" || sub == "reject" {
		if id, err = positional(env, fs, cfg, args, "approval id"); err != nil {
			return err
		}
	} else if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		op := a.operator()
		switch sub {
		case "list":
			page, err := a.svc.ListApprovals(ctx, op, memory.ApprovalStatus(status), cursor, limit)
			if err != nil {
				return err
			}
			return output(env, asJSON, page, func(w io.Writer) {
				for _, it := range page.Items {
					fmt.Fprintf(w, "%s  %-13s %-22s record %s (%s)\n", it.ID, it.Kind, it.Reason, it.RecordID, it.Record.Type)
				}
				if page.NextCursor != "" {
					fmt.Fprintf(w, "more: --cursor %s\n", page.NextCursor)
				}
			})
		case "approve":
			var edit *core.ApprovalEdit
			set := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
			if set["content"] || set["category"] || set["access"] || set["entity"] {
				edit = &core.ApprovalEdit{}
				if set["content"] {
					edit.Content = &content
				}
				if set["category"] {
					edit.Category = &category
				}
				if set["access"] {
					acc := memory.Access(access)
					edit.Access = &acc
				}
				if set["entity"] {
					es := []string(entities)
					edit.Entities = &es
				}
			}
			it, err := a.svc.Approve(ctx, op, id, edit)
			if err != nil {
				return err
			}
			return output(env, asJSON, it, func(w io.Writer) {
				fmt.Fprintf(w, "approved: record %s is active at version %d\n", it.RecordID, it.Record.Version)
			})
		case "reject":
			it, err := a.svc.Reject(ctx, op, id, reason)
			if err != nil {
				return err
			}
			return output(env, asJSON, it, func(w io.Writer) {
				fmt.Fprintf(w, "rejected: record %s erased (tombstone kept)\n", it.RecordID)
			})
		default:
			n, err := a.svc.ExpireApprovals(ctx)
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"expired": n}, func(w io.Writer) {
				fmt.Fprintf(w, "%d expired\n", n)
			})
		}
	})
}

func runAudit(env Env, args []string) error {
	if _, rest, err := subcommand(args, "verify"); err != nil {
		return err
	} else {
		args = rest
	}
	fs, cfg := flags(env, "audit verify", false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		rep, err := a.svc.VerifyAudit(ctx, cfg.Workspace)
		if err != nil {
			return err
		}
		if err := output(env, asJSON, rep, func(w io.Writer) {
			if rep.OK {
				fmt.Fprintf(w, "audit chain of workspace %s verified: %d entries, head %s\n", rep.Workspace, rep.Entries, rep.Head)
			}
		}); err != nil {
			return err
		}
		if !rep.OK {
			fmt.Fprintf(env.Stderr, "memgate: %v\n", rep.Broken)
			return exitError{exitAuditBroken}
		}
		return nil
	})
}

func runUsers(env Env, args []string) error {
	sub, args, err := subcommand(args, "create", "list", "revoke", "rotate-key")
	if err != nil {
		return err
	}
	fs, cfg := flags(env, "users "+sub, false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	var userID string
	if sub == "create" {
		fs.StringVar(&userID, "user-id", "", "the user's id, as the chat runtime knows it")
	}
	if sub == "revoke" || sub == "rotate-key" {
		if userID, err = positional(env, fs, cfg, args, "user id"); err != nil {
			return err
		}
	} else if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if sub == "create" && userID == "" {
		return usagef("--user-id is required")
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		switch sub {
		case "create":
			u, err := a.svc.CreateUser(ctx, a.operator(), userID)
			if err != nil {
				return err
			}
			return output(env, asJSON, u, func(w io.Writer) {
				fmt.Fprintf(w, "user %s created\nuser key (shown once): %s\n", u.UserID, u.UserKey)
			})
		case "list":
			us, err := a.svc.ListUsers(ctx, a.operator())
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"users": us}, func(w io.Writer) {
				for _, u := range us {
					state := "active"
					if u.RevokedAt != nil {
						state = "revoked"
					}
					fmt.Fprintf(w, "%-40s %s  %s\n", u.UserID, u.CreatedAt.Format("2006-01-02 15:04"), state)
				}
			})
		case "rotate-key":
			u, err := a.svc.RotateUserKey(ctx, a.operator(), userID)
			if err != nil {
				return err
			}
			return output(env, asJSON, u, func(w io.Writer) {
				fmt.Fprintf(w, "user %s has a new key; the old one no longer works\nuser key (shown once): %s\n", u.UserID, u.UserKey)
			})
		default:
			u, err := a.svc.RevokeUser(ctx, a.operator(), userID)
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"user": u}, func(w io.Writer) {
				fmt.Fprintf(w, "user %s revoked\n", u.UserID)
			})
		}
	})
}
