package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// runGraph is `memgate graph ...`, the memory graph operations of SPEC §8
// on the data directory.
func runGraph(env Env, args []string) error {
	if len(args) == 0 {
		return usagef("graph: want one of: node, nodes, edge, neighbors, path, health")
	}
	switch args[0] {
	case "node":
		return runGraphNode(env, args[1:])
	case "nodes":
		return runGraphNodes(env, args[1:])
	case "edge":
		return runGraphEdge(env, args[1:])
	case "neighbors":
		return runGraphNeighbors(env, args[1:])
	case "path":
		return runGraphPath(env, args[1:])
	case "health":
		fs, cfg := flags(env, "graph health", false)
		var asJSON bool
		fs.BoolVar(&asJSON, "json", false, "print JSON")
		if err := parse(env, fs, cfg, args[1:]); err != nil {
			return err
		}
		return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
			h, err := a.svc.GraphHealthcheck(ctx, a.operator())
			if err != nil {
				return err
			}
			return output(env, asJSON, h, func(w io.Writer) {
				fmt.Fprintf(w, "graph ok: %d nodes, %d live edges\n", h.IndexNodes, h.IndexEdges)
			})
		})
	}
	return usagef("graph: unknown subcommand %q, want node, nodes, edge, neighbors, path or health", args[0])
}

func printNode(w io.Writer, n memory.Node) {
	fmt.Fprintf(w, "%s  %s:%s  %s %s  %s\n", n.ID, n.Label, n.NaturalKey, n.Status, n.Provenance, n.Properties)
}

func runGraphNode(env Env, args []string) error {
	sub, args, err := subcommand(args, "upsert", "get", "archive")
	if err != nil {
		return err
	}
	fs, cfg := flags(env, "graph node "+sub, false)
	var asJSON, archived bool
	var label, key, props, status, access string
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	switch sub {
	case "upsert":
		fs.StringVar(&access, "access", "", "who may see the node: public (default when created), agent, user, sensitive")
		fs.StringVar(&label, "label", "", "node label, e.g. person")
		fs.StringVar(&key, "key", "", "natural key, unique per label")
		fs.StringVar(&props, "properties", "", `properties as a JSON object, e.g. '{"name":"Alice","aliases":["Ally"]}'`)
		fs.StringVar(&status, "status", "", "provisional, active or archived")
		if err := parse(env, fs, cfg, args); err != nil {
			return err
		}
		if label == "" || key == "" {
			return usagef("graph node upsert: --label and --key are required")
		}
	default:
		fs.BoolVar(&archived, "include-archived", false, "also an archived node")
		if key, err = positional(env, fs, cfg, args, "node id or label:key"); err != nil {
			return err
		}
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		var n memory.Node
		switch sub {
		case "upsert":
			res, err := a.svc.UpsertNode(ctx, a.operator(), core.NodeInput{Label: label, NaturalKey: key,
				Properties: json.RawMessage(props), Status: memory.NodeStatus(status), Access: memory.Access(access)})
			if err != nil {
				return err
			}
			n = res.Node
		case "get":
			if n, err = a.svc.GetNode(ctx, a.operator(), key, archived); err != nil {
				return err
			}
		default:
			if n, err = a.svc.ArchiveNode(ctx, a.operator(), key); err != nil {
				return err
			}
		}
		return output(env, asJSON, n, func(w io.Writer) { printNode(w, n) })
	})
}

func runGraphNodes(env Env, args []string) error {
	fs, cfg := flags(env, "graph nodes", false)
	var asJSON, archived bool
	var labels multiFlag
	var cursor string
	var limit int
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.Var(&labels, "label", "label (repeatable)")
	fs.BoolVar(&archived, "include-archived", false, "also archived nodes")
	fs.StringVar(&cursor, "cursor", "", "next_cursor of the previous page")
	fs.IntVar(&limit, "limit", 50, "page size (1-500)")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		page, err := a.svc.NodesByLabels(ctx, a.operator(), labels, archived, cursor, limit)
		if err != nil {
			return err
		}
		return output(env, asJSON, page, func(w io.Writer) {
			for _, n := range page.Nodes {
				printNode(w, n)
			}
			if page.NextCursor != "" {
				fmt.Fprintf(w, "next: --cursor %s\n", page.NextCursor)
			}
		})
	})
}

func runGraphEdge(env Env, args []string) error {
	sub, args, err := subcommand(args, "upsert", "invalidate")
	if err != nil {
		return err
	}
	fs, cfg := flags(env, "graph edge "+sub, false)
	var asJSON bool
	var from, to, rel, props, access string
	var weight float64
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	var id string
	if sub == "upsert" {
		fs.StringVar(&from, "from", "", "node id or label:key")
		fs.StringVar(&to, "to", "", "node id or label:key")
		fs.StringVar(&rel, "relation", "", "one of SPEC §8's relations, e.g. USES")
		fs.Float64Var(&weight, "weight", 0, "weight (default 1)")
		fs.StringVar(&props, "properties", "", "properties as a JSON object")
		fs.StringVar(&access, "access", "", "who may see the relation beyond those who see both nodes: public (default when created), agent, user, sensitive")
		if err := parse(env, fs, cfg, args); err != nil {
			return err
		}
		if from == "" || to == "" || rel == "" {
			return usagef("graph edge upsert: --from, --to and --relation are required")
		}
	} else if id, err = positional(env, fs, cfg, args, "edge id"); err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		var e memory.Edge
		if sub == "upsert" {
			in := core.EdgeInput{From: from, To: to, Relation: rel, Properties: json.RawMessage(props), Access: memory.Access(access)}
			if weight != 0 {
				in.Weight = &weight
			}
			res, err := a.svc.UpsertEdge(ctx, a.operator(), in)
			if err != nil {
				return err
			}
			e = res.Edge
		} else if e, err = a.svc.InvalidateEdge(ctx, a.operator(), id); err != nil {
			return err
		}
		return output(env, asJSON, e, func(w io.Writer) {
			state := "live"
			if e.InvalidatedAt != nil {
				state = "invalidated"
			}
			fmt.Fprintf(w, "%s  %s -%s-> %s  weight %s  %s\n", e.ID, e.From, e.Relation, e.To, strconv.FormatFloat(e.Weight, 'g', -1, 64), state)
		})
	})
}

func printHops(w io.Writer, hops []core.Neighbor) {
	for _, h := range hops {
		arrow := "->"
		if !h.Forward {
			arrow = "<-"
		}
		fmt.Fprintf(w, "%d  %s%s%s  %s:%s  (%s)\n", h.Depth, strings.Repeat("  ", h.Depth-1), h.Relation, arrow, h.Node.Label, h.Node.NaturalKey, h.Node.ID)
	}
}

func runGraphNeighbors(env Env, args []string) error {
	fs, cfg := flags(env, "graph neighbors", false)
	var asJSON, archived bool
	var depth, limit int
	var rels multiFlag
	var dir string
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.IntVar(&depth, "depth", 1, "1-3")
	fs.IntVar(&limit, "limit", 100, "1-1000")
	fs.Var(&rels, "relation", "relation to follow (repeatable)")
	fs.StringVar(&dir, "direction", "both", "out, in or both")
	fs.BoolVar(&archived, "include-archived", false, "see and traverse archived nodes")
	ref, err := positional(env, fs, cfg, args, "node id or label:key")
	if err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		hops, err := a.svc.Neighbors(ctx, a.operator(), core.NeighborRequest{Node: ref, Depth: depth, Limit: limit, Relations: rels,
			Direction: dir, IncludeArchived: archived})
		if err != nil {
			return err
		}
		return output(env, asJSON, map[string]any{"neighbors": hops}, func(w io.Writer) { printHops(w, hops) })
	})
}

func runGraphPath(env Env, args []string) error {
	fs, cfg := flags(env, "graph path", false)
	var asJSON bool
	var maxDepth int
	var rels multiFlag
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	fs.IntVar(&maxDepth, "max-depth", 4, "1-6")
	fs.Var(&rels, "relation", "relation to follow (repeatable)")
	pos, err := positionals(env, fs, cfg, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("graph path: want FROM and TO (node ids or label:key)")
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		res, err := a.svc.Path(ctx, a.operator(), pos[0], pos[1], maxDepth, rels)
		if err != nil {
			return err
		}
		return output(env, asJSON, res, func(w io.Writer) {
			if !res.Found {
				fmt.Fprintf(w, "no path within %d hops\n", maxDepth)
				return
			}
			printHops(w, res.Hops)
		})
	})
}
