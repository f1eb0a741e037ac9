package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

func parseTimeFlag(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, usagef("--%s must be an RFC 3339 time, e.g. 2026-03-01T12:00:00Z", name)
	}
	return &t, nil
}

func runWrite(env Env, args []string) error {
	fs, cfg := flags(env, "write", false)
	var (
		typ, content, contentFile, category, kind, access, metadata, validFrom, validUntil, supersedes string
		confidence                                                                                     float64
		provisional, asJSON                                                                            bool
		entities, scope                                                                                multiFlag
	)
	fs.StringVar(&typ, "type", "", "record type: belief, decision, episode, skill, entity, preference, reflection, resource")
	fs.StringVar(&content, "content", "", "the record's text")
	fs.StringVar(&contentFile, "content-file", "", "read the text from a file ('-' for stdin)")
	fs.StringVar(&category, "category", "", "free category, e.g. preference, policy, technology")
	fs.StringVar(&kind, "kind", "", "source kind: observed, told or inferred")
	fs.Float64Var(&confidence, "confidence", -1, "confidence 0..1 (default by kind)")
	fs.StringVar(&access, "access", "", "access level: public, agent, user, sensitive")
	fs.StringVar(&metadata, "metadata", "", "metadata as a JSON object")
	fs.StringVar(&validFrom, "valid-from", "", "RFC 3339 time it became true")
	fs.StringVar(&validUntil, "valid-until", "", "RFC 3339 time it stopped being true")
	fs.StringVar(&supersedes, "supersedes", "", "id of an active record this one replaces")
	fs.BoolVar(&provisional, "provisional", false, "store as provisional, awaiting approval")
	fs.Var(&entities, "entity", "entity natural key label:key (repeatable)")
	fs.Var(&scope, "scope", "scope key=value (repeatable): user_id, agent_id, app_id, project_id, session_id")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if typ == "" {
		return usagef("--type is required")
	}
	if contentFile != "" {
		var b []byte
		var err error
		if contentFile == "-" {
			b, err = io.ReadAll(env.Stdin)
		} else {
			b, err = os.ReadFile(contentFile)
		}
		if err != nil {
			return usagef("cannot read --content-file: %v", err)
		}
		content = string(b)
	}
	sc, err := parseScope(scope)
	if err != nil {
		return err
	}
	req := core.WriteRequest{Type: memory.Type(typ), Category: category, Content: content, Entities: entities,
		Scope: sc, Access: memory.Access(access), Supersedes: supersedes}
	if metadata != "" {
		if !json.Valid([]byte(metadata)) {
			return usagef("--metadata must be a JSON object")
		}
		req.Metadata = json.RawMessage(metadata)
	}
	if kind != "" || confidence >= 0 {
		req.Source = &core.SourceInput{Kind: memory.SourceKind(kind)}
		if confidence >= 0 {
			req.Source.Confidence = &confidence
		}
	}
	if req.ValidFrom, err = parseTimeFlag("valid-from", validFrom); err != nil {
		return err
	}
	if req.ValidUntil, err = parseTimeFlag("valid-until", validUntil); err != nil {
		return err
	}
	if provisional {
		req.Status = memory.Provisional
	}
	return withApp(env, cfg, true, func(ctx context.Context, a *app) error {
		res, err := a.svc.Write(ctx, a.operator(), req)
		if err != nil {
			return err
		}
		return output(env, asJSON, res, func(w io.Writer) {
			fmt.Fprintf(w, "%s %s (%s, version %d)\n", res.Decision, res.Record.ID, res.Record.Status, res.Record.Version)
			if res.ApprovalID != "" {
				fmt.Fprintf(w, "approval %s waits for review\n", res.ApprovalID)
			}
		})
	})
}

// positional parses flags that may come before or after one positional
// argument ("get ID --json" and "get --json ID") and returns it.
func positional(env Env, fs *flag.FlagSet, cfg *config.Config, args []string, what string) (string, error) {
	pos, err := positionals(env, fs, cfg, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usagef("want exactly one %s", what)
	}
	return pos[0], nil
}

// positionals parses flags wherever they stand and returns the other
// arguments.
func positionals(env Env, fs *flag.FlagSet, cfg *config.Config, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(env, fs, cfg, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func runGet(env Env, args []string) error {
	fs, cfg := flags(env, "get", false)
	var version int
	var knownAt string
	var asJSON bool
	fs.IntVar(&version, "version", 0, "show this version")
	fs.StringVar(&knownAt, "known-at", "", "show the version current at this RFC 3339 transaction time")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, err := positional(env, fs, cfg, args, "record id")
	if err != nil {
		return err
	}
	o := core.GetOptions{Version: version, IncludeSensitive: true}
	if o.KnownAt, err = parseTimeFlag("known-at", knownAt); err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		r, err := a.svc.Get(ctx, a.operator(), pos, o)
		if err != nil {
			return err
		}
		return output(env, asJSON, r, func(w io.Writer) { printRecord(w, r) })
	})
}

func printRecord(w io.Writer, r memory.Record) {
	fmt.Fprintf(w, "%s  %s v%d  %s  %s\n", r.ID, r.Type, r.Version, r.Status, r.Access)
	if r.Content != "" {
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(r.Content, "\n", "\n  "))
	}
}

func runList(env Env, args []string) error {
	fs, cfg := flags(env, "list", false)
	var ff filterFlags
	var cursor string
	var limit int
	var asJSON bool
	ff.bind(fs)
	fs.StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
	fs.IntVar(&limit, "limit", 50, "page size (1-500)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	f, err := ff.parse()
	if err != nil {
		return err
	}
	req := core.ListRequest{Types: f.types, Statuses: f.statuses, Category: f.category, Entity: f.entity, Scope: f.scope,
		AsOf: f.asOf, KnownAt: f.knownAt, Cursor: cursor, Limit: limit, IncludeSensitive: true}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		res, err := a.svc.List(ctx, a.operator(), req)
		if err != nil {
			return err
		}
		return output(env, asJSON, res, func(w io.Writer) {
			for _, r := range res.Records {
				printRecord(w, r)
			}
			if res.NextCursor != "" {
				fmt.Fprintf(w, "more: --cursor %s\n", res.NextCursor)
			}
		})
	})
}

func runHistory(env Env, args []string) error {
	fs, cfg := flags(env, "history", false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	id, err := positional(env, fs, cfg, args, "record id")
	if err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		vs, err := a.svc.History(ctx, a.operator(), id, true)
		if err != nil {
			return err
		}
		return output(env, asJSON, map[string]any{"versions": vs}, func(w io.Writer) {
			for _, r := range vs {
				fmt.Fprintf(w, "v%d  %s  %s  %s\n", r.Version, r.UpdatedAt.Format(time.RFC3339), r.Status, r.Gate.Decision)
			}
		})
	})
}

func runForget(env Env, args []string) error {
	fs, cfg := flags(env, "forget", false)
	var asJSON bool
	var subject string
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.StringVar(&subject, "subject", "", "forget a whole subject, label:key (e.g. user:alice): every record that mentions it or is scoped to it, its messages, node and edges")
	var preview bool
	fs.BoolVar(&preview, "preview", false, "with --subject: count what would be erased, by kind, and erase nothing")
	pos, err := positionals(env, fs, cfg, args)
	if err != nil {
		return err
	}
	if subject != "" {
		if len(pos) != 0 {
			return usagef("forget: give a record id or --subject, not both")
		}
		return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
			if preview {
				rep, err := a.svc.PreviewForgetSubject(ctx, a.operator(), subject)
				if err != nil {
					return err
				}
				return output(env, asJSON, api.ForgetPreview{ForgetReport: rep, Preview: true}, func(w io.Writer) {
					fmt.Fprintf(w, "forgetting subject %s would erase %d records, %d messages, %d nodes, %d edges (nothing erased)\n",
						rep.Subject, rep.Records, rep.Messages, rep.Nodes, rep.Edges)
				})
			}
			rep, err := a.svc.ForgetSubject(ctx, a.operator(), subject)
			if err != nil {
				return err
			}
			return output(env, asJSON, rep, func(w io.Writer) {
				fmt.Fprintf(w, "forgot subject %s: %d records, %d messages, %d nodes, %d edges (tombstones kept; database files scrubbed)\n",
					rep.Subject, rep.Records, rep.Messages, rep.Nodes, rep.Edges)
			})
		})
	}
	if preview {
		return usagef("forget: --preview goes with --subject")
	}
	if len(pos) != 1 {
		return usagef("want exactly one record id, or --subject label:key")
	}
	id := pos[0]
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		r, err := a.svc.Forget(ctx, a.operator(), id)
		if err != nil {
			return err
		}
		return output(env, asJSON, map[string]any{"record": r}, func(w io.Writer) {
			fmt.Fprintf(w, "forgot %s (tombstone v%d kept)\n", r.ID, r.Version)
		})
	})
}

// filterFlags are the record filters list and query share.
type filterFlags struct {
	types, statuses, scope          multiFlag
	category, entity, asOf, knownAt string
}

func (ff *filterFlags) bind(fs *flag.FlagSet) {
	fs.Var(&ff.types, "type", "record type (repeatable)")
	fs.Var(&ff.statuses, "status", "status (repeatable; default active)")
	fs.Var(&ff.scope, "scope", "scope key=value (repeatable)")
	fs.StringVar(&ff.category, "category", "", "category")
	fs.StringVar(&ff.entity, "entity", "", "entity natural key")
	fs.StringVar(&ff.asOf, "as-of", "", "world time (RFC 3339)")
	fs.StringVar(&ff.knownAt, "known-at", "", "transaction time (RFC 3339)")
}

// recordFilter is filterFlags parsed.
type recordFilter struct {
	types            []memory.Type
	statuses         []memory.Status
	scope            memory.Scope
	category, entity string
	asOf, knownAt    *time.Time
}

func (ff *filterFlags) parse() (recordFilter, error) {
	f := recordFilter{category: ff.category, entity: ff.entity}
	var err error
	if f.scope, err = parseScope(ff.scope); err != nil {
		return f, err
	}
	for _, t := range ff.types {
		f.types = append(f.types, memory.Type(t))
	}
	for _, st := range ff.statuses {
		f.statuses = append(f.statuses, memory.Status(st))
	}
	if f.asOf, err = parseTimeFlag("as-of", ff.asOf); err != nil {
		return f, err
	}
	f.knownAt, err = parseTimeFlag("known-at", ff.knownAt)
	return f, err
}
