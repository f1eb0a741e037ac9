package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/memory"
)

// runIngest ingests files, directories and git working trees as
// resource chunks (internal/knowledge). It acts as the operator, or as
// --agent NAME (the agent's trust then applies per chunk).
func runIngest(env Env, args []string) error {
	fs, cfg := flags(env, "ingest", false)
	var include, exclude, scope multiFlag
	var agent, access string
	var sync, asJSON, quiet bool
	fs.Var(&include, "include", "only files matching this glob (repeatable; '**' spans directories, a glob without '/' matches the base name)")
	fs.Var(&exclude, "exclude", "skip files matching this glob (repeatable)")
	fs.Var(&scope, "scope", "scope key=value of the documents (repeatable): user_id, agent_id, app_id, project_id, session_id")
	fs.StringVar(&agent, "agent", "", "ingest as this agent (its trust applies to every chunk); default: the operator")
	fs.StringVar(&access, "access", "", "access level of the chunks (public, agent, user, system, sensitive; default public)")
	fs.BoolVar(&sync, "sync", true, "retire the documents of each directory whose files are gone (after a complete walk)")
	fs.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	fs.BoolVar(&quiet, "quiet", false, "no progress on stderr")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the ingestion to this file (docs/knowledge.md figures)")
	paths, err := positionals(env, fs, cfg, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usagef("ingest needs at least one PATH (a file, directory or git working tree)")
	}
	sc, err := parseScope(scope)
	if err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		p, err := a.actingAs(ctx, cfg.Workspace, agent)
		if err != nil {
			return err
		}
		o := knowledge.TreeOptions{Include: include, Exclude: exclude, Scope: sc, Access: memory.Access(access), Sync: sync}
		if !quiet {
			o.Progress = ingestProgress(env.Stderr)
		}
		kn := knowledge.New(a.svc, knowledge.Options{})
		if *cpuProfile != "" {
			pf, err := os.Create(*cpuProfile)
			if err != nil {
				return fmt.Errorf("ingest: cpuprofile: %w", err)
			}
			if err := pprof.StartCPUProfile(pf); err != nil {
				pf.Close()
				return fmt.Errorf("ingest: cpuprofile: %w", err)
			}
			defer func() {
				pprof.StopCPUProfile()
				pf.Close()
			}()
		}
		sum, err := kn.IngestPaths(ctx, p, paths, o)
		if o.Progress != nil && isTerminal(env.Stderr) {
			fmt.Fprintln(env.Stderr)
		}
		if err != nil {
			// What was ingested stays; running again resumes (unchanged
			// files write nothing).
			fmt.Fprintf(env.Stderr, "memgate: ingest stopped after %d files; run it again to resume\n", sum.Files)
			return err
		}
		if asJSON {
			return json.NewEncoder(env.Stdout).Encode(sum)
		}
		fmt.Fprintf(env.Stdout, "%d files in %.1fs (%.0f files/s): %d created, %d updated, %d unchanged, %d retired; %d chunks written, %d quarantined, %d awaiting approval, %d skipped\n",
			sum.Files, sum.Seconds, float64(sum.Files)/max(sum.Seconds, 1e-9), sum.Created, sum.Updated, sum.Unchanged, sum.Retired,
			sum.Chunks, sum.Quar, sum.Pending, len(sum.Skipped))
		for _, s := range sum.Skipped {
			fmt.Fprintf(env.Stdout, "skipped %s: %s\n", s.Path, s.Reason)
		}
		return nil
	})
}

// ingestProgress draws a bar with counts, rate and ETA on a terminal,
// and a line every two seconds elsewhere.
func ingestProgress(w io.Writer) func(knowledge.Progress) {
	term := isTerminal(w)
	var last time.Time
	return func(p knowledge.Progress) {
		now := time.Now()
		if now.Sub(last) < 200*time.Millisecond && p.Done != p.Total || !term && now.Sub(last) < 2*time.Second {
			return
		}
		last = now
		rate := float64(p.Done) / max(p.Elapsed.Seconds(), 1e-9)
		eta := time.Duration(float64(p.Total-p.Done)/max(rate, 1e-9)) * time.Second
		if term {
			const width = 30
			n := width * p.Done / max(p.Total, 1)
			bar := make([]byte, width)
			for i := range bar {
				bar[i] = '.'
				if i < n {
					bar[i] = '#'
				}
			}
			fmt.Fprintf(w, "\r[%s] %d/%d files, %d chunks written, %.0f files/s, ETA %s   ", bar, p.Done, p.Total, p.Written, rate, eta.Round(time.Second))
			return
		}
		fmt.Fprintf(w, "memgate: ingest: %d/%d files, %d chunks written (%.0f files/s, ETA %s)\n", p.Done, p.Total, p.Written, rate, eta.Round(time.Second))
	}
}

// runCite prints exactly the lines a res:// citation names, from the
// indexed version of the document.
func runCite(env Env, args []string) error {
	fs, cfg := flags(env, "cite", false)
	var agent string
	var asJSON bool
	fs.StringVar(&agent, "agent", "", "read as this agent (its access applies); default: the operator")
	fs.BoolVar(&asJSON, "json", false, "print JSON (the lines, the resource, its version)")
	uri, err := positional(env, fs, cfg, args, "res:// citation")
	if err != nil {
		return err
	}
	rid, from, to, err := knowledge.ParseCitation(uri)
	if err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		p, err := a.actingAs(ctx, cfg.Workspace, agent)
		if err != nil {
			return err
		}
		src, err := knowledge.New(a.svc, knowledge.Options{}).Source(ctx, p, rid, from, to)
		if err != nil {
			return err
		}
		if asJSON {
			return json.NewEncoder(env.Stdout).Encode(src)
		}
		_, err = fmt.Fprintln(env.Stdout, src.Text)
		return err
	})
}
