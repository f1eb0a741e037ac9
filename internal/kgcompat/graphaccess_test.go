package kgcompat

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// eachBackend runs fn on a fresh SQLite store and a fresh PostgreSQL
// database.
func eachBackend(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
}

// TestKGGraphVisibility: an entity named only by a record a principal may
// not read is invisible to it on read_graph, search_nodes and open_nodes,
// and so are the relations to it (core's TestGraphVisibility covers the
// graph's own read paths, with the same fixture); the writes treat the
// hidden entity as taken: no relation to it, no takeover by
// create_entities. On both backends.
func TestKGGraphVisibility(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		s, ps := kgServiceOn(t, st, nil, map[string]memory.Trust{"trusted": memory.Trusted, "std": memory.Standard,
			"std2": memory.Standard, "restricted": memory.Restricted, "ro": memory.ReadOnly})
		for who, req := range map[string]core.WriteRequest{
			"op": {Type: memory.Entity, Category: ObservationCategory, Content: "Secret Person: salary 1", Access: memory.Sensitive,
				Entities: []string{"entity:Secret_Person"}},
			"std": {Type: memory.Belief, Content: "alice leads the platform team", Entities: []string{"person:alice"}},
		} {
			if _, err := s.svc.Write(ctx, ps[who], req); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.svc.UpsertEdge(ctx, ps["op"], core.EdgeInput{From: "person:alice", To: "entity:Secret_Person", Relation: "WORKS_WITH"}); err != nil {
			t.Fatal(err)
		}
		for who, p := range ps {
			kg := mustGraph(t)(s.ReadGraph(ctx, p, 0))
			found := mustGraph(t)(s.SearchNodes(ctx, p, "secret", 0))
			opened := mustGraph(t)(s.OpenNodes(ctx, p, []string{"Secret Person"}))
			sees := who == "op"
			if got := len(kg.Entities) > 0; got != sees {
				t.Errorf("%s read_graph: %+v, want the entity visible=%v", who, kg, sees)
			}
			if got := len(found.Entities) > 0; got != sees {
				t.Errorf("%s search_nodes: %+v, want the entity visible=%v", who, found, sees)
			}
			if got := len(opened.Entities) > 0; got != sees {
				t.Errorf("%s open_nodes: %+v, want the entity visible=%v", who, opened, sees)
			}
			if !sees && len(kg.Relations)+len(found.Relations)+len(opened.Relations) > 0 {
				t.Errorf("%s sees relations of a hidden entity: %+v %+v %+v", who, kg.Relations, found.Relations, opened.Relations)
			}
		}
		_, err := s.CreateRelations(ctx, ps["std"], []Relation{{From: "Someone", To: "Secret Person", RelationType: "knows"}})
		if fe := fault.As(err); fe.Code != fault.Conflict || fe.Details["field"] != "relations[0].to" {
			t.Errorf("relation to a hidden entity: %v, want conflict on relations[0].to", err)
		}
		created, err := s.CreateEntities(ctx, ps["std"], []Entity{{Name: "Secret Person", EntityType: "person"}})
		if err != nil || len(created) != 0 {
			t.Errorf("create_entities over a hidden entity: %+v %v, want it skipped", created, err)
		}
	})
}

// TestKGScreen: credentials in an entity name, an entity type or a
// relation type are refused with 422 naming the field, never echoing the
// value, and nothing is stored (core's TestGraphScreen covers the graph's
// own writes).
func TestKGScreen(t *testing.T) {
	ctx := t.Context()
	s, ps := kgService(t, nil)
	const token = "mg_0190d5c1-7a3b-7c4d-8e5f-0a1b2c3d4e5f_Zq3xV8mN2pL7rT9wK4yH6jB1cF5gD0sA"
	const key = "sk-proj-4fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0kM"
	for name, tc := range map[string]struct {
		call  func() error
		field string
	}{
		"entity name": {func() error {
			_, err := s.CreateEntities(ctx, ps["std"], []Entity{{Name: "ok"}, {Name: key, EntityType: "secret"}})
			return err
		}, "entities[1].name"},
		"entity type": {func() error {
			_, err := s.CreateEntities(ctx, ps["std"], []Entity{{Name: "dave", EntityType: "token " + token}})
			return err
		}, "entities[0].entityType"},
		"relation type": {func() error {
			_, err := s.CreateRelations(ctx, ps["std"], []Relation{{From: "a", To: "b", RelationType: "uses " + key}})
			return err
		}, "relations[0].relationType"},
	} {
		err := tc.call()
		fe := fault.As(err)
		if fe.Code != fault.GateRejected || fe.Details["field"] != tc.field {
			t.Errorf("%s: %v, want gate_rejected on %s", name, err, tc.field)
			continue
		}
		msg, _ := json.Marshal(fe)
		if strings.Contains(string(msg), key) || strings.Contains(string(msg), token) {
			t.Errorf("%s: the refusal echoes the value: %s", name, msg)
		}
	}
	page, err := s.svc.NodesByLabels(ctx, ps["op"], nil, true, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range page.Nodes {
		raw, _ := json.Marshal(n)
		if strings.Contains(string(raw), key) || strings.Contains(string(raw), token) || slices.Contains([]string{"ok", "dave", "a", "b"}, n.NaturalKey) {
			t.Fatalf("a refused graph write left %s", raw)
		}
	}
}
