package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/store"
)

// runReembed switches a data directory to another embedder: it embeds
// every record that lacks a current vector of the new embedder, then
// stores the new embedder as the directory's. Vectors are stored batch by
// batch, so an interrupted run loses nothing and the next run resumes
// where it stopped. The old embedder's vectors stay (switching back costs
// nothing) until their records change.
func runReembed(env Env, args []string) error {
	fs, cfg := flags(env, "reembed", false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("reembed takes no arguments; name the new embedder with --embedder (and --embedder-path, --embedder-url, --embedder-model)")
	}
	if cfg.Embedder == "" || cfg.Embedder == embed.KindNone {
		return usagef("reembed: --embedder must name the new embedder: local, use or openai")
	}
	ctx, stop := env.runContext()
	defer stop()
	st, _, err := openDB(ctx, cfg, databaseOf(cfg), true)
	if err != nil {
		return err
	}
	defer st.Close()
	want, _ := requestedEmbedder(cfg)
	emb, err := buildEmbedder(ctx, want, env.Getenv, nil)
	if err != nil {
		return err
	}
	prev, hadPrev, err := readEmbedderSetting(ctx, st)
	if err != nil {
		return err
	}
	done, total, err := reembed(ctx, st, emb, env.Stderr, 2*time.Second)
	if err != nil {
		return err
	}
	want.ID, want.Dim = emb.Model(), emb.Dim()
	if err := writeEmbedderSetting(ctx, st, want); err != nil {
		return err
	}
	from := "none"
	if hadPrev {
		from = prev.describe()
	}
	res := map[string]any{"from": from, "to": want.describe(), "embedded": done, "records": total}
	return output(env, asJSON, res, func(w io.Writer) {
		fmt.Fprintf(w, "embedded %d records; %d records now have vectors of %s (was %s)\n", done, total, want.describe(), from)
	})
}

// reembedBatch is the number of records embedded and stored at a time.
var reembedBatch = 64

// reembed embeds every record lacking a current vector of emb, in
// batches, reporting progress (count, rate, ETA) to w at most every
// interval. It returns how many records it embedded and how many records
// there are.
func reembed(ctx context.Context, st store.Store, emb embed.Embedder, w io.Writer, every time.Duration) (int, int, error) {
	model := emb.Model()
	have, total, err := st.CountVectors(ctx, model)
	if err != nil {
		return 0, 0, fault.Wrap(fault.Unavailable, err, "cannot count vectors")
	}
	todo := total - have
	fmt.Fprintf(w, "memgate: reembed: %d of %d records to embed with %s\n", todo, total, model)
	start, last := time.Now(), time.Now()
	done := 0
	after := ""
	for {
		tasks, err := st.ListMissingVectors(ctx, model, after, reembedBatch)
		if err != nil {
			return done, total, fault.Wrap(fault.Unavailable, err, "cannot list records to embed")
		}
		if len(tasks) == 0 {
			break
		}
		after = tasks[len(tasks)-1].ID
		texts := make([]string, len(tasks))
		for i, t := range tasks {
			texts[i] = t.Content
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			if ctx.Err() != nil {
				return done, total, fault.Wrap(fault.Unavailable, err, "reembed interrupted after %d records; run the same command again to resume", done)
			}
			return done, total, fault.Wrap(fault.Unavailable, err, "embedder failed after %d records (run the same command again to resume): %v", done, err)
		}
		rows := make([]store.Vector, 0, len(tasks))
		for i, t := range tasks {
			if len(vecs[i]) == emb.Dim() {
				rows = append(rows, store.Vector{Workspace: t.Workspace, RecordID: t.ID, ContentSHA256: t.ContentSHA256, Vec: vecs[i]})
			}
		}
		if err := st.Tx(ctx, func(tx store.Tx) error { return tx.PutVectors(ctx, model, rows) }); err != nil {
			return done, total, fault.Wrap(fault.Unavailable, err, "cannot store vectors after %d records; run the same command again to resume", done)
		}
		done += len(rows)
		if now := time.Now(); now.Sub(last) >= every {
			last = now
			rate := float64(done) / now.Sub(start).Seconds()
			eta := "unknown"
			if rate > 0 {
				eta = time.Duration(float64(max(todo-done, 0)) / rate * float64(time.Second)).Round(time.Second).String()
			}
			fmt.Fprintf(w, "memgate: reembed: %d/%d (%.1f%%), %.0f records/s, ETA %s\n",
				done, todo, 100*float64(done)/float64(max(todo, 1)), rate, eta)
		}
	}
	el := time.Since(start)
	fmt.Fprintf(w, "memgate: reembed: %d/%d done in %s (%.0f records/s)\n", done, todo, el.Round(time.Millisecond), float64(done)/max(el.Seconds(), 1e-9))
	return done, total, nil
}
