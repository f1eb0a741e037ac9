package contextpack

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/extract"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
)

// candidates are each section's items in final order, before packing.
type candidates struct {
	constraints, procedures, knowledge, facts, recent []Item
	// relevance is the best dense similarity of the knowledge found, or
	// -1 when no dense score was available.
	relevance float64
	degraded  []string
}

func (a *Assembler) gather(ctx context.Context, p memory.Principal, req Request) (candidates, error) {
	c := candidates{relevance: -1}
	base := req.Scope
	base.SessionID = "" // knowledge and rules are not confined to one session
	seen := map[string]bool{}
	if err := a.gatherConstraints(ctx, p, req.Scope, base, seen, &c); err != nil {
		return c, err
	}
	if err := a.gatherProcedures(ctx, p, req, base, seen, &c); err != nil {
		return c, err
	}
	entities, err := a.gatherKnowledge(ctx, p, req, base, seen, &c)
	if err != nil {
		return c, err
	}

	// Graph facts about the entities of the knowledge found, through the
	// principal's graph reads.
	facts, err := a.facts(ctx, p, entities, req.MaxFacts)
	if err != nil {
		c.degraded = append(c.degraded, "graph")
	}
	c.facts = facts

	// Recent activity: the session's newest records.
	if req.Scope.SessionID != "" {
		lr, err := a.r.List(ctx, p, core.ListRequest{Scope: req.Scope, Statuses: []memory.Status{memory.Active},
			Limit: req.MaxRecent})
		if err != nil {
			return c, err
		}
		for _, r := range lr.Records {
			c.recent = append(c.recent, recordItem(KindActivity, r, 0))
		}
	}
	slices.Sort(c.degraded)
	c.degraded = slices.Compact(c.degraded)
	return c, nil
}

// gatherConstraints gathers the constraints: pinned files of scope first
// (in the source's order), then the hard rules of base, oldest first (ids
// are time-ordered).
func (a *Assembler) gatherConstraints(ctx context.Context, p memory.Principal, scope, base memory.Scope, seen map[string]bool, c *candidates) error {
	if a.pinned != nil {
		files, err := a.pinned.Pinned(ctx, p, scope)
		if err != nil {
			return err
		}
		for _, f := range files {
			c.constraints = append(c.constraints, Item{Kind: KindPinned, Path: f.Path, Content: f.Content, Citation: f.Citation})
		}
	}
	rules, err := a.rules(ctx, p, base)
	if err != nil {
		return err
	}
	for _, r := range rules {
		seen[r.ID] = true
		c.constraints = append(c.constraints, recordItem(KindRule, r, 0))
	}
	return nil
}

// gatherProcedures gathers the procedures: skills matching the task, best
// expected outcome first so failing procedures sink.
func (a *Assembler) gatherProcedures(ctx context.Context, p memory.Principal, req Request, base memory.Scope, seen map[string]bool, c *candidates) error {
	sr, err := a.r.Search(ctx, p, core.SearchRequest{Query: req.Query, K: min(core.MaxK, 2*req.MaxProcedures),
		Types: []memory.Type{memory.Skill}, Scope: base})
	if err != nil {
		return err
	}
	c.degraded = append(c.degraded, sr.Degraded...)
	for _, h := range sr.Results {
		if seen[h.Record.ID] {
			continue
		}
		seen[h.Record.ID] = true
		it := recordItem(KindProcedure, h.Record, h.Score)
		it.SuccessRate, it.UseCount = procedureStats(h.Record.Metadata)
		c.procedures = append(c.procedures, it)
	}
	slices.SortStableFunc(c.procedures, func(x, y Item) int {
		return cmp.Or(cmp.Compare(expected(y), expected(x)), cmp.Compare(x.ID, y.ID))
	})
	return nil
}

// gatherKnowledge gathers the knowledge: every other type, by fused score
// (ties by id), noting the best dense similarity. It returns the entities
// the knowledge found mentions, in order of first mention.
func (a *Assembler) gatherKnowledge(ctx context.Context, p memory.Principal, req Request, base memory.Scope, seen map[string]bool, c *candidates) ([]string, error) {
	kr, err := a.r.Search(ctx, p, core.SearchRequest{Query: req.Query, K: min(core.MaxK, 2*req.MaxChunks),
		Types: knowledgeTypes, Scope: base, Explain: true})
	if err != nil {
		return nil, err
	}
	c.degraded = append(c.degraded, kr.Degraded...)
	var entities []string
	for _, h := range kr.Results {
		if seen[h.Record.ID] {
			continue
		}
		seen[h.Record.ID] = true
		kind := KindRecord
		if h.Record.Type == memory.Resource {
			kind = KindChunk
		}
		it := recordItem(kind, h.Record, h.Score)
		it.ResourceURI = resourceURI(h.Record.Metadata)
		c.knowledge = append(c.knowledge, it)
		if d, ok := h.Explain[retrieve.SignalDense]; ok && d.Score > c.relevance {
			c.relevance = d.Score
		}
		for _, e := range h.Record.Entities {
			if !slices.Contains(entities, e) {
				entities = append(entities, e)
			}
		}
	}
	slices.SortStableFunc(c.knowledge, func(x, y Item) int {
		return cmp.Or(cmp.Compare(y.Score, x.Score), cmp.Compare(x.ID, y.ID))
	})
	return entities, nil
}

// knowledgeTypes are the types searched for knowledge: all but skills,
// which are procedures.
var knowledgeTypes = slices.DeleteFunc(slices.Clone(memory.Types), func(t memory.Type) bool { return t == memory.Skill })

// rules returns the active hard rules in scope, oldest first: records
// written with category "rule" (up to ruleScan), and the facts extraction
// tagged "rule" (extract.TagRule) among the newest extractedScan
// extracted records. The category filter runs in the store, so a
// workspace without rules costs two short reads.
func (a *Assembler) rules(ctx context.Context, p memory.Principal, scope memory.Scope) ([]memory.Record, error) {
	var out []memory.Record
	for _, c := range []struct {
		category string
		scan     int
	}{{categoryRule, ruleScan}, {categoryExtracted, extractedScan}} {
		req := core.ListRequest{Types: []memory.Type{memory.Belief, memory.Preference, memory.Decision}, Scope: scope,
			Category: c.category, Statuses: []memory.Status{memory.Active}, Limit: min(500, c.scan)}
		for scanned := 0; scanned < c.scan; {
			page, err := a.r.List(ctx, p, req)
			if err != nil {
				return nil, err
			}
			for _, r := range page.Records {
				if isRule(r) {
					out = append(out, r)
				}
			}
			scanned += len(page.Records)
			if page.NextCursor == "" {
				break
			}
			req.Cursor = page.NextCursor
		}
	}
	slices.SortFunc(out, func(x, y memory.Record) int { return cmp.Compare(x.ID, y.ID) })
	return out, nil
}

// categoryRule is the category that makes a record a hard rule;
// categoryExtracted is the category conversation extraction writes facts
// with (core's factRequest).
const (
	categoryRule      = "rule"
	categoryExtracted = "extracted"
)

func isRule(r memory.Record) bool {
	if r.Category == categoryRule {
		return true
	}
	var m struct {
		Tags []string `json:"tags"`
	}
	return json.Unmarshal(r.Metadata, &m) == nil && slices.Contains(m.Tags, extract.TagRule)
}

// facts reads the one-hop neighbourhood of each entity (those that are
// graph nodes p may see) as "A RELATION B" lines, in entity order, then
// relation and node key.
func (a *Assembler) facts(ctx context.Context, p memory.Principal, entities []string, limit int) ([]Item, error) {
	var out []Item
	seen := map[string]bool{}
	n := 0
	for _, e := range entities {
		if n == factEntities {
			break
		}
		node, err := a.r.GetNode(ctx, p, e, false)
		if err != nil {
			// Not every entity key is a node p may see; that is no failure.
			if c := fault.CodeOf(err); c == fault.NotFound || c == fault.InvalidArgument {
				continue
			}
			return out, err
		}
		n++
		hops, err := a.r.Neighbors(ctx, p, core.NeighborRequest{Node: node.ID, Depth: 1, Limit: 4 * limit})
		if err != nil {
			return out, err
		}
		var mine []Item
		for _, h := range hops {
			from, to := node.EntityKey(), h.Node.EntityKey()
			if !h.Forward {
				from, to = to, from
			}
			line := from + " " + h.Relation + " " + to
			if seen[line] {
				continue
			}
			seen[line] = true
			mine = append(mine, Item{Kind: KindFact, ID: h.Via, Content: line})
		}
		slices.SortFunc(mine, func(x, y Item) int { return cmp.Compare(x.Content, y.Content) })
		out = append(out, mine...)
	}
	return out, nil
}

func recordItem(kind string, r memory.Record, score float64) Item {
	return Item{Kind: kind, ID: r.ID, Type: r.Type, Content: r.Content, Citation: r.Citation(), Score: score,
		Confidence: r.Source.Confidence}
}

// procedureStats reads a skill's success rate and use count from its
// metadata, when the procedure lifecycle recorded them.
func procedureStats(meta json.RawMessage) (*float64, *int64) {
	var m struct {
		SuccessRate *float64 `json:"success_rate"`
		UseCount    *int64   `json:"use_count"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return nil, nil
	}
	return m.SuccessRate, m.UseCount
}

// expected ranks a procedure: its relevance weighted by its success rate
// (0.5 when unknown), so a procedure that keeps failing sinks below one
// that works.
func expected(it Item) float64 {
	rate := 0.5
	if it.SuccessRate != nil {
		rate = *it.SuccessRate
	}
	return it.Score * (0.5 + rate)
}

func resourceURI(meta json.RawMessage) string {
	var m struct {
		URI string `json:"resource_uri"`
	}
	_ = json.Unmarshal(meta, &m)
	return m.URI
}
