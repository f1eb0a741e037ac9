package kgcompat

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// Drop-in fidelity: what the reference memory server keeps, memgate keeps
// (issue 20). Each test failed on the code before it.

func TestKGDistinctNamesAreDistinctEntities(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := t.Context(), ps["std"]
	names := []string{"Alice", "alice", " Alice", "Bob Smith", "Bob_Smith", ""}
	for _, n := range names {
		if _, err := s.CreateEntities(ctx, p, []Entity{{Name: n, EntityType: "person", Observations: []string{"knows"}}}); err != nil {
			t.Fatalf("create %q: %v", n, err)
		}
	}
	g := mustGraph(t)(s.ReadGraph(ctx, p, 0))
	if len(g.Entities) != len(names) {
		t.Fatalf("entities %+v", g.Entities)
	}
	for i, e := range g.Entities {
		if e.Name != names[i] || !slices.Equal(e.Observations, []string{"knows"}) {
			t.Errorf("entity %d: %+v, want %q with [knows]", i, e, names[i])
		}
	}
	// Within one entity, duplicates are exact and case-sensitive.
	added, err := s.AddObservations(ctx, p, []Observations{{EntityName: "Alice", Contents: []string{"LIKES TEA"}}, {EntityName: "Alice", Contents: []string{"likes tea", "LIKES TEA"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(added[0].AddedObservations, []string{"LIKES TEA"}) || !slices.Equal(added[1].AddedObservations, []string{"likes tea"}) {
		t.Fatalf("added %+v", added)
	}
}

func TestKGAcceptsWhatTheReferenceAccepts(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := t.Context(), ps["std"]
	// A relation to names that are no entities yet is stored and read.
	rels := []Relation{{From: "Ann", To: "Zed", RelationType: "knows"}, {From: "Ann", To: "Ann", RelationType: "admires"}, {From: "Ann", To: "Zed", RelationType: ""}}
	got, err := s.CreateRelations(ctx, p, rels)
	if err != nil || !reflect.DeepEqual(got, rels) {
		t.Fatalf("relations to missing entities: %+v %v", got, err)
	}
	g := mustGraph(t)(s.ReadGraph(ctx, p, 0))
	if len(g.Entities) != 0 || !reflect.DeepEqual(g.Relations, rels) {
		t.Fatalf("graph %+v", g)
	}
	// Creating the entity joins the relations; its empty observation is kept.
	if _, err := s.CreateEntities(ctx, p, []Entity{{Name: "Ann", EntityType: "", Observations: []string{""}}}); err != nil {
		t.Fatal(err)
	}
	g = mustGraph(t)(s.OpenNodes(ctx, p, []string{"Ann"}))
	want := Graph{Entities: []Entity{{Name: "Ann", EntityType: "", Observations: []string{""}}}, Relations: rels}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("open Ann %+v, want %+v", g, want)
	}
	// Deleting a name that is no entity deletes its relations, as in the
	// reference.
	if err := s.DeleteEntities(ctx, p, []string{"Zed"}); err != nil {
		t.Fatal(err)
	}
	g = mustGraph(t)(s.ReadGraph(ctx, p, 0))
	if !reflect.DeepEqual(g.Relations, []Relation{rels[1]}) {
		t.Fatalf("after deleting Zed %+v", g.Relations)
	}
}

func TestKGSearchFoldsCaseLikeJavaScript(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := t.Context(), ps["std"]
	for _, n := range []string{"Πέτρος", "İstanbul", "ΟΔΟΣ Σ"} {
		if _, err := s.CreateEntities(ctx, p, []Entity{{Name: n, EntityType: "x", Observations: []string{}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"ΠΈΤΡΟΣ", []string{"Πέτρος"}},
		{"istanbul", nil},
		{"i\u0307stanbul", []string{"İstanbul"}},
		{"οδος σ", []string{"ΟΔΟΣ Σ"}}, // a lone capital sigma is no final sigma
		{"οδοσ", nil},
	} {
		g := mustGraph(t)(s.SearchNodes(ctx, p, c.q, 0))
		var names []string
		for _, e := range g.Entities {
			names = append(names, e.Name)
		}
		if !slices.Equal(names, c.want) {
			t.Errorf("search %q: %q, want %q", c.q, names, c.want)
		}
	}
}

func TestKGReadsAreNotCut(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := t.Context(), ps["std"]
	ents := make([]Entity, 120)
	for i := range ents {
		ents[i] = Entity{Name: fmt.Sprintf("node %03d", i), EntityType: "thing", Observations: []string{"is a node"}}
	}
	if _, err := s.CreateEntities(ctx, p, ents); err != nil {
		t.Fatal(err)
	}
	if g := mustGraph(t)(s.ReadGraph(ctx, p, 0)); len(g.Entities) != 120 || g.Omitted != 0 {
		t.Fatalf("read_graph gave %d entities (omitted %d), want 120", len(g.Entities), g.Omitted)
	}
	if g := mustGraph(t)(s.SearchNodes(ctx, p, "node", 0)); len(g.Entities) != 120 {
		t.Fatalf("search_nodes gave %d entities, want 120", len(g.Entities))
	}
	if g := mustGraph(t)(s.ReadGraph(ctx, p, 100)); len(g.Entities) != 100 || g.Omitted != 20 {
		t.Fatalf("read_graph with limit 100 gave %d, omitted %d", len(g.Entities), g.Omitted)
	}
}

func TestKGReferenceOrder(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := t.Context(), ps["std"]
	mk := func(n string) {
		t.Helper()
		if _, err := s.CreateEntities(ctx, p, []Entity{{Name: n, EntityType: "t", Observations: []string{}}}); err != nil {
			t.Fatal(err)
		}
	}
	mk("A")
	mk("B")
	mk("C")
	rels := []Relation{{From: "A", To: "B", RelationType: "x"}, {From: "B", To: "C", RelationType: "x"}, {From: "A", To: "B", RelationType: "y"}}
	for _, r := range rels {
		if _, err := s.CreateRelations(ctx, p, []Relation{r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteEntities(ctx, p, []string{"A"}); err != nil {
		t.Fatal(err)
	}
	mk("A")
	if _, err := s.CreateRelations(ctx, p, []Relation{rels[0]}); err != nil {
		t.Fatal(err)
	}
	g := mustGraph(t)(s.ReadGraph(ctx, p, 0))
	var names []string
	for _, e := range g.Entities {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"B", "C", "A"}) {
		t.Errorf("entities %q, want the re-created A last", names)
	}
	if want := []Relation{rels[1], rels[0]}; !reflect.DeepEqual(g.Relations, want) {
		t.Errorf("relations %+v, want creation order %+v", g.Relations, want)
	}
}
