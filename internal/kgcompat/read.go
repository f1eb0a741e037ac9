package kgcompat

// The knowledge-graph compatibility layer's reads: listing the observations
// p may read, the entity and relation views, and read_graph, search_nodes
// and open_nodes.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// kgStatuses are the record statuses compatibility reads show.
var kgStatuses = []memory.Status{memory.Active, memory.Provisional}

// observationRecords lists the live observation records of an entity that
// p may read (of every entity when ref is "", else of the entity whose
// record entity kgEntityRef gives), oldest first: active and
// provisional ones, and those the gate holds for review (quarantined) that
// p wrote, or all of them for an operator, and p's own sensitive ones (an
// approved quarantine stays sensitive) — a writer always reads back what
// a write reported as stored (docs/mcp-dropin.md).
func (s *Service) observationRecords(ctx context.Context, r store.Reader, p memory.Principal, ref string) ([]memory.Record, error) {
	q := store.RecordQuery{Types: []memory.Type{memory.Entity}, Category: ObservationCategory, Statuses: kgStatuses,
		Access: core.ReadAccess(p), Limit: store.MaxLimit, Entity: ref}
	list := func(q store.RecordQuery, keep func(memory.Record) bool) ([]memory.Record, error) {
		var out []memory.Record
		for {
			page, err := r.ListRecords(ctx, p.Workspace, q)
			if err != nil {
				return nil, err
			}
			for _, rec := range page {
				if keep(rec) {
					out = append(out, rec)
				}
			}
			if len(page) < q.Limit {
				return out, nil
			}
			q.Before = page[len(page)-1].ID
		}
	}
	out, err := list(q, func(memory.Record) bool { return true })
	if err != nil {
		return nil, err
	}
	if p.Kind == memory.KindOperator || p.Kind == memory.KindAgent {
		// An operator's first query read every level but system; an
		// agent's left out its own sensitive records, which a quarantine
		// makes of personal data, approved or not.
		q.Statuses, q.Before = []memory.Status{memory.Quarantined}, ""
		q.Access = store.AccessFilter{Levels: []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.Sensitive}}
		if p.Kind == memory.KindAgent {
			q.Statuses = append(q.Statuses, kgStatuses...)
			q.Access = store.AccessFilter{Levels: []memory.Access{memory.Sensitive}}
		}
		held, err := list(q, func(rec memory.Record) bool {
			return p.Kind == memory.KindOperator || rec.Source.Agent == p.Name
		})
		if err != nil {
			return nil, err
		}
		out = append(out, held...)
	}
	slices.SortFunc(out, func(a, b memory.Record) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// kgObs collects an entity's observations in order, every one (the
// reference keeps repeats), noting those held for review.
type kgObs struct {
	texts, held []string
}

func (o *kgObs) add(name string, rec memory.Record) {
	t := kgObservationText(name, rec.Content)
	o.texts = append(o.texts, t)
	if rec.Status == memory.Quarantined {
		o.held = append(o.held, t)
	}
}

// observationTexts returns an entity's observations, oldest first.
func (s *Service) observationTexts(ctx context.Context, r store.Reader, p memory.Principal, name string) (kgObs, error) {
	recs, err := s.observationRecords(ctx, r, p, kgEntityRef(name))
	if err != nil {
		return kgObs{}, err
	}
	out := kgObs{texts: make([]string, 0, len(recs))}
	for _, rec := range recs {
		out.add(name, rec)
	}
	return out, nil
}

// kgEntityType is the entityType a node keeps in its properties.
func kgEntityType(n memory.Node) string {
	var props struct {
		EntityType string `json:"entity_type"`
	}
	_ = json.Unmarshal(n.Properties, &props)
	return props.EntityType
}

// kgLive reports whether n is a compatibility node (an entity's or a
// placeholder's) that reads show.
func kgLive(n memory.Node) bool {
	return n.Label == EntityLabel && n.Status != memory.NodeArchived && !strings.HasPrefix(n.NaturalKey, "forgotten-")
}

func kgLimit(limit int) (int, error) {
	if limit < 0 {
		return 0, fault.Field("limit", "must be positive (or 0 for every entity)")
	}
	return limit, nil
}
