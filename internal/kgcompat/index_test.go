package kgcompat

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// TestKGIndexMatchesStore drives random compatibility writes (and plain
// record writes naming entities, and deletions) as principals of every
// kind, and after each compares what read_graph, search_nodes and
// open_nodes answer from the index with what the store-scanning reads
// they replaced answer (oracle_test.go), for every principal — through
// the writing service and through a second service on the same database,
// whose index learns every change from the change logs only.
func TestKGIndexMatchesStore(t *testing.T) {
	ctx := context.Background()
	s, ps := kgService(t, nil)
	other := New(core.New(core.Options{Store: s.svc.Store(), Policy: s.svc.Policy()}))
	readers := []memory.Principal{ps["op"], ps["std"], ps["restricted"], ps["ro"]}
	writers := []memory.Principal{ps["op"], ps["std"], ps["restricted"]}
	names := []string{"Alice", "Bob", "Carol", "dave", "Σοφία", "Acme Corp"}
	texts := []string{"likes tea", "works at Acme", "born in Lisbon", "my email is alice@example.com", "Likes TEA a lot", "speaks Greek"}
	// Queries of three bytes or more go through the trigram index
	// (grams.go); shorter ones through the scan.
	queries := []string{"alice", "tea", "acme", "person", "lisbon", "σοφία", "", "a", "ea", "likes tea a", "at acme", "note 1", "ghost", "@example.com", "works at acme corp"}
	r := rand.New(rand.NewPCG(14, 14))
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	for step := 0; step < 60; step++ {
		p := writers[r.IntN(len(writers))]
		var err error
		switch r.IntN(8) {
		case 0, 1:
			_, err = s.CreateEntities(ctx, p, []Entity{{Name: pick(names), EntityType: pick([]string{"person", "org"}), Observations: []string{pick(texts)}}})
		case 2:
			_, err = s.AddObservations(ctx, p, []Observations{{EntityName: pick(names), Contents: []string{pick(texts), fmt.Sprint("note ", step)}}})
		case 3:
			_, err = s.CreateRelations(ctx, p, []Relation{{From: pick(names), To: pick(names), RelationType: pick([]string{"knows", "works_at"})}})
		case 4:
			err = s.DeleteObservations(ctx, p, []Observations{{EntityName: pick(names), Contents: []string{pick(texts)}}})
		case 5:
			if r.IntN(3) == 0 {
				err = s.DeleteEntities(ctx, p, []string{pick(names)})
			} else {
				err = s.DeleteRelations(ctx, p, []Relation{{From: pick(names), To: pick(names), RelationType: "knows"}})
			}
		case 6:
			// A memory written outside the compatibility tools that
			// names an entity: an observation to the drop-in's reads.
			name := pick(names)
			_, err = s.svc.Write(ctx, p, core.WriteRequest{Type: memory.Entity, Category: ObservationCategory, Content: name + ": " + pick(texts) + fmt.Sprint(" #", step),
				Entities: []string{kgEntityRef(name)}, Access: memory.Access(pick([]string{"", string(memory.AgentOnly)}))})
		case 7:
			// Relations to a name no entity has yet (placeholders).
			_, err = s.CreateRelations(ctx, p, []Relation{{From: pick(names), To: "ghost " + pick(names), RelationType: "knows"}})
		}
		_ = err // refusals and permission errors are part of the mix
		for _, rd := range readers {
			who := fmt.Sprintf("step %d, %s (%s)", step, rd.Name, rd.Kind)
			// The oracle scans the store: computed once, compared with
			// both services' indexes.
			q := pick(queries)
			ns := []string{pick(names), pick(names), "nobody"}
			whole, werr1 := s.oracleReadGraph(ctx, rd, 0)
			cut, werr2 := s.oracleReadGraph(ctx, rd, 2)
			found, werr3 := s.oracleSearchNodes(ctx, rd, q, 0)
			opened, werr4 := s.oracleOpenNodes(ctx, rd, ns)
			for _, svc := range []*Service{s, other} {
				got, gerr := svc.ReadGraph(ctx, rd, 0)
				kgSame(t, who+" read_graph", whole, got, werr1, gerr)
				got, gerr = svc.ReadGraph(ctx, rd, 2)
				kgSame(t, who+" read_graph limit 2", cut, got, werr2, gerr)
				if werr3 != nil || len(found.Entities) > 0 { // no match: ranked, TestKGSearchRanked
					got, gerr = svc.SearchNodes(ctx, rd, q, 0)
					kgSame(t, who+" search_nodes "+q, found, got, werr3, gerr)
				}
				got, gerr = svc.OpenNodes(ctx, rd, ns)
				kgSame(t, who+" open_nodes", opened, got, werr4, gerr)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
}

func kgSame(t *testing.T, what string, want, got Graph, werr, gerr error) {
	t.Helper()
	if (werr == nil) != (gerr == nil) {
		t.Errorf("%s: error %v, want %v", what, gerr, werr)
		return
	}
	got.Next = "" // the oracle has no cursors
	if len(want.Entities) == 0 {
		want.Entities = []Entity{}
	}
	if len(want.Relations) == 0 && len(got.Relations) == 0 {
		want.Relations, got.Relations = nil, nil
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// TestKGSearchRanked: a question no entity contains finds the entities
// whose observations answer it, best first, flagged as ranked; a question
// about nothing stored finds none; ranking never shows an observation
// its reader may not see.
func TestKGSearchRanked(t *testing.T) {
	ctx := context.Background()
	s, ps := kgService(t, nil)
	op, std := ps["op"], ps["std"]
	if _, err := s.CreateEntities(ctx, op, []Entity{
		{Name: "Marta", EntityType: "person", Observations: []string{"reviewed the kernel scheduler design", "lives in Oslo"}},
		{Name: "Ivo", EntityType: "person", Observations: []string{"plays the violin"}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.svc.Write(ctx, op, core.WriteRequest{Type: memory.Entity, Category: ObservationCategory, Access: memory.AgentOnly,
		Content: "Ivo: secretly reviewed the kernel scheduler budget", Entities: []string{kgEntityRef("Ivo")}}); err != nil {
		t.Fatal(err)
	}
	q := "who reviewed the kernel scheduler design?"
	if g := mustGraph(t)(s.oracleSearchNodes(ctx, std, q, 0)); len(g.Entities) != 0 {
		t.Fatalf("the reference's matching finds %v; the test needs a question nothing contains", g.Entities)
	}
	g := mustGraph(t)(s.SearchNodes(ctx, std, q, 0))
	if len(g.Entities) == 0 || g.Entities[0].Name != "Marta" || g.Ranked != len(g.Entities) {
		t.Fatalf("ranked search: %+v, want Marta first, all ranked", g)
	}
	for _, e := range g.Entities {
		for _, o := range e.Observations {
			if o == "secretly reviewed the kernel scheduler budget" {
				t.Fatalf("std sees the operator's agent-only observation: %+v", g)
			}
		}
	}
	if g := mustGraph(t)(s.SearchNodes(ctx, std, "what is the capital of Peru?", 0)); len(g.Entities) != 0 {
		t.Fatalf("a question about nothing stored found %+v", g)
	}
	if g := mustGraph(t)(s.SearchNodes(ctx, std, "oslo", 0)); len(g.Entities) != 1 || g.Ranked != 0 {
		t.Fatalf("a keyword: %+v, want Marta by the reference's matching", g)
	}
}

// TestKGReadGraphPages: read_graph's pages, cursor to cursor, list every
// entity once, in the whole graph's order, each with the relations that
// touch it; a cursor not given by the server is refused naming it.
func TestKGReadGraphPages(t *testing.T) {
	ctx := context.Background()
	s, ps := kgService(t, nil)
	op := ps["op"]
	var ents []Entity
	for i := range 23 {
		ents = append(ents, Entity{Name: fmt.Sprint("e", i), EntityType: "thing", Observations: []string{fmt.Sprint("fact ", i)}})
	}
	if _, err := s.CreateEntities(ctx, op, ents); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRelations(ctx, op, []Relation{{From: "e0", To: "e22", RelationType: "knows"}}); err != nil {
		t.Fatal(err)
	}
	whole := mustGraph(t)(s.ReadGraph(ctx, op, 0))
	var paged []Entity
	rels := 0
	cursor := ""
	for pages := 0; ; pages++ {
		g := mustGraph(t)(s.ReadGraphPage(ctx, op, 5, cursor))
		paged = append(paged, g.Entities...)
		rels += len(g.Relations)
		if g.Next == "" {
			if pages != 4 || g.Omitted != 0 {
				t.Fatalf("last page after %d pages, omitted %d; want 5 pages", pages+1, g.Omitted)
			}
			break
		}
		if g.Omitted != 23-len(paged) {
			t.Fatalf("page %d: omitted %d, want %d", pages, g.Omitted, 23-len(paged))
		}
		cursor = g.Next
	}
	if !reflect.DeepEqual(paged, whole.Entities) {
		t.Fatalf("pages list %v, want %v", paged, whole.Entities)
	}
	if rels != 2 { // e0's page and e22's page
		t.Fatalf("pages carried %d relations, want the one relation on both ends' pages", rels)
	}
	if _, err := s.ReadGraphPage(ctx, op, 5, "not-a-cursor"); !fault.Is(err, fault.InvalidArgument) || fault.As(err).Details["field"] != "cursor" {
		t.Fatalf("bad cursor: %v, want invalid_argument naming cursor", err)
	}
}
