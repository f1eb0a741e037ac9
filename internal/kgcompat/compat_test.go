package kgcompat

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// kgService is a service over a fresh SQLite database with an agent of
// each trust level the tests need.
func kgService(t *testing.T, tweak func(*gate.Policy)) (*Service, map[string]memory.Principal) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return kgServiceOn(t, st, tweak, map[string]memory.Trust{"std": memory.Standard, "restricted": memory.Restricted, "ro": memory.ReadOnly})
}

// kgServiceOn is a service over st, without rate limits, with an
// operator ("op") and the agents named; tweak, when not nil, changes the
// policy first.
func kgServiceOn(t *testing.T, st store.Store, tweak func(*gate.Policy), agents map[string]memory.Trust) (*Service, map[string]memory.Principal) {
	t.Helper()
	ctx := context.Background()
	ix := svctest.Index(t, st)
	pol := gate.Default()
	pol.RateLimit.Operator, pol.RateLimit.Agent = gate.Bucket{}, gate.Bucket{}
	if tweak != nil {
		tweak(&pol)
	}
	svc := core.New(core.Options{Store: st, Policy: pol, Index: ix})
	if _, _, err := svc.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := core.LocalOperator(memory.DefaultWorkspace)
	ps := map[string]memory.Principal{"op": op}
	for name, trust := range agents {
		cp, err := svc.CreateAgent(ctx, op, name, trust)
		if err != nil {
			t.Fatal(err)
		}
		ps[name] = cp.Principal
	}
	return New(svc), ps
}

// mustGraph fails the test on a read's error: mustGraph(t)(s.ReadGraph(...)).
func mustGraph(t *testing.T) func(Graph, error) Graph {
	return func(g Graph, err error) Graph {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
}

func TestKGNodeKeyRoundTrip(t *testing.T) {
	names := []string{"John Smith", "snake_case", "100%", "tab\there", "new\nline", "Ünïcode name", "a:b", "%5F", " lead", "x_ y"}
	seen := map[string]string{}
	for _, n := range names {
		k := NodeKey(n)
		if got := EntityName(k); got != n {
			t.Errorf("EntityName(NodeKey(%q)) = %q", n, got)
		}
		if !gate.ValidEntityKey(EntityLabel + ":" + k) {
			t.Errorf("key %q of %q is not a valid entity key", k, n)
		}
		if o, dup := seen[k]; dup {
			t.Errorf("%q and %q share key %q", n, o, k)
		}
		seen[k] = n
	}
	if got := NodeKey("John Smith"); got != "John_Smith" {
		t.Errorf("NodeKey(John Smith) = %q, want John_Smith", got)
	}
}

func TestKGCreateEntitiesSkipsExistingNames(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := context.Background(), ps["std"]
	got, err := s.CreateEntities(ctx, p, []Entity{
		{Name: "Alice", EntityType: "person", Observations: []string{"Prefers PostgreSQL", "Lives in Lisbon"}},
		{Name: "Acme", EntityType: "organization", Observations: []string{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "Alice" || !slices.Equal(got[0].Observations, []string{"Prefers PostgreSQL", "Lives in Lisbon"}) {
		t.Fatalf("created %+v", got)
	}
	// Alice exists: skipped, even with another type and observations; Bob
	// is new; a repeat within the call counts once.
	got, err = s.CreateEntities(ctx, p, []Entity{
		{Name: "Alice", EntityType: "robot", Observations: []string{"Is a robot"}},
		{Name: "Bob", EntityType: "person", Observations: []string{"Plays the violin"}},
		{Name: "Bob", EntityType: "person", Observations: []string{"Plays the violin"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entity{{Name: "Bob", EntityType: "person", Observations: []string{"Plays the violin"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("second create = %+v, want %+v", got, want)
	}
	g := mustGraph(t)(s.OpenNodes(ctx, p, []string{"Alice"}))
	wantAlice := Entity{Name: "Alice", EntityType: "person", Observations: []string{"Prefers PostgreSQL", "Lives in Lisbon"}}
	if len(g.Entities) != 1 || !reflect.DeepEqual(g.Entities[0], wantAlice) {
		t.Fatalf("Alice = %+v, want %+v", g.Entities, wantAlice)
	}
}

func TestKGRelationsDuplicatesAndMapping(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := context.Background(), ps["std"]
	if _, err := s.CreateEntities(ctx, p, []Entity{
		{Name: "api", EntityType: "system", Observations: []string{}},
		{Name: "postgres", EntityType: "system", Observations: []string{}},
	}); err != nil {
		t.Fatal(err)
	}
	rels := []Relation{
		{From: "api", To: "postgres", RelationType: "depends on"}, // a memgate relation: DEPENDS_ON
		{From: "api", To: "postgres", RelationType: "talks_to"},   // free text: RELATED_TO
		{From: "api", To: "postgres", RelationType: "is_cached_by"},
	}
	got, err := s.CreateRelations(ctx, p, append(slices.Clone(rels), rels[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rels) {
		t.Fatalf("created %+v, want %+v", got, rels)
	}
	again, err := s.CreateRelations(ctx, p, rels[:1])
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Fatalf("duplicate triple created again: %+v", again)
	}
	g := mustGraph(t)(s.ReadGraph(ctx, p, 0))
	if !reflect.DeepEqual(g.Relations, rels) {
		t.Fatalf("relations read back %+v, want exactly %+v", g.Relations, rels)
	}
	// Two free-text relations share one RELATED_TO edge; the enum one has
	// its own.
	api, err := s.svc.GetNode(ctx, p, EntityLabel+":api", false)
	if err != nil {
		t.Fatal(err)
	}
	es, err := liveEdges(ctx, s.svc.Store(), p.Workspace, api.ID)
	if err != nil {
		t.Fatal(err)
	}
	relOf := map[string][]string{}
	for _, e := range es {
		relOf[e.Relation] = edgeRelationTypes(e)
	}
	if !reflect.DeepEqual(relOf, map[string][]string{"DEPENDS_ON": {"depends on"}, "RELATED_TO": {"talks_to", "is_cached_by"}}) {
		t.Fatalf("edges %v", relOf)
	}
	// Deleting one of two relationTypes keeps the edge for the other.
	if err := s.DeleteRelations(ctx, p, []Relation{rels[1], {From: "api", To: "nobody", RelationType: "x"}}); err != nil {
		t.Fatal(err)
	}
	g = mustGraph(t)(s.ReadGraph(ctx, p, 0))
	if want := []Relation{rels[0], rels[2]}; !reflect.DeepEqual(g.Relations, want) {
		t.Fatalf("after delete %+v, want %+v", g.Relations, want)
	}
}

func TestKGRelationErrors(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := context.Background(), ps["std"]
	if _, err := s.CreateEntities(ctx, p, []Entity{{Name: "a", EntityType: "t", Observations: []string{}}}); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateRelations(ctx, ps["ro"], []Relation{{From: "a", To: "b", RelationType: "knows"}})
	if !fault.Is(err, fault.PermissionDenied) {
		t.Fatalf("read_only agent: %v, want permission_denied", err)
	}
}

func TestKGAddObservations(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := context.Background(), ps["std"]
	if _, err := s.CreateEntities(ctx, p, []Entity{{Name: "Alice", EntityType: "person", Observations: []string{"Likes tea"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.AddObservations(ctx, p, []Observations{{EntityName: "Alice", Contents: []string{"Likes tea", "Runs marathons", "Runs marathons"}}})
	if err != nil {
		t.Fatal(err)
	}
	// As in the reference: what the entity had is skipped, a repeat within
	// the item is added twice.
	if want := []Added{{EntityName: "Alice", AddedObservations: []string{"Runs marathons", "Runs marathons"}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("added %+v, want %+v", got, want)
	}
	// A missing entity fails the whole call: Alice's new observation is
	// not stored either.
	_, err = s.AddObservations(ctx, p, []Observations{
		{EntityName: "Alice", Contents: []string{"Speaks Portuguese"}},
		{EntityName: "Nobody", Contents: []string{"x"}},
	})
	if !fault.Is(err, fault.NotFound) {
		t.Fatalf("missing entity: %v, want not_found", err)
	}
	g := mustGraph(t)(s.OpenNodes(ctx, p, []string{"Alice"}))
	if want := []string{"Likes tea", "Runs marathons", "Runs marathons"}; !slices.Equal(g.Entities[0].Observations, want) {
		t.Fatalf("observations %q, want %q", g.Entities[0].Observations, want)
	}
}

func TestKGObservationsAreMemories(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := context.Background(), ps["std"]
	if _, err := s.CreateEntities(ctx, p, []Entity{{Name: "Keycloak prod", EntityType: "system",
		Observations: []string{"Is the SSO for Hartwell Law"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.svc.Search(ctx, p, core.SearchRequest{Query: "which system does SSO for Hartwell"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 {
		t.Fatal("search found nothing")
	}
	r := res.Results[0].Record
	if r.Content != "Keycloak prod: Is the SSO for Hartwell Law" || r.Type != memory.Entity || r.Category != ObservationCategory ||
		!slices.Equal(r.Entities, []string{"entity:Keycloak_prod"}) || r.Source.Agent != "std" {
		t.Fatalf("top hit %+v", r)
	}
}

func TestKGDeleteEntitiesCascades(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := context.Background(), ps["std"]
	if _, err := s.CreateEntities(ctx, p, []Entity{
		{Name: "Alice", EntityType: "person", Observations: []string{"Likes tea"}},
		{Name: "Bob", EntityType: "person", Observations: []string{"Likes coffee"}},
		{Name: "Carol", EntityType: "person", Observations: []string{}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRelations(ctx, p, []Relation{
		{From: "Alice", To: "Bob", RelationType: "knows"}, {From: "Carol", To: "Alice", RelationType: "manages"},
		{From: "Bob", To: "Carol", RelationType: "knows"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteEntities(ctx, ps["restricted"], []string{"Alice"}); !fault.Is(err, fault.PermissionDenied) {
		t.Fatalf("restricted agent deleting: %v, want permission_denied", err)
	}
	if err := s.DeleteEntities(ctx, p, []string{"Alice", "Nobody"}); err != nil {
		t.Fatal(err)
	}
	g := mustGraph(t)(s.ReadGraph(ctx, p, 0))
	want := Graph{
		Entities:  []Entity{{Name: "Bob", EntityType: "person", Observations: []string{"Likes coffee"}}, {Name: "Carol", EntityType: "person", Observations: []string{}}},
		Relations: []Relation{{From: "Bob", To: "Carol", RelationType: "knows"}},
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("graph after delete %+v, want %+v", g, want)
	}
	// Alice's observation is invalidated, not erased, and no longer found.
	res, err := s.svc.Search(ctx, p, core.SearchRequest{Query: "tea"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 0 {
		t.Fatalf("deleted observation still found: %+v", res.Results[0].Record)
	}
	recs, err := s.svc.List(ctx, p, core.ListRequest{Entity: "entity:Alice", IncludeInvalidated: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Records) != 1 || recs.Records[0].InvalidatedAt == nil || recs.Records[0].Content != "Alice: Likes tea" {
		t.Fatalf("Alice's records after delete: %+v", recs.Records)
	}
	// The name can be used again: a fresh entity, without the old
	// observations or relations.
	got, err := s.CreateEntities(ctx, p, []Entity{{Name: "Alice", EntityType: "robot", Observations: []string{"Beeps"}}})
	if err != nil || len(got) != 1 {
		t.Fatalf("re-create: %+v %v", got, err)
	}
	g = mustGraph(t)(s.OpenNodes(ctx, p, []string{"Alice"}))
	if want := (Graph{Entities: []Entity{{Name: "Alice", EntityType: "robot", Observations: []string{"Beeps"}}}, Relations: []Relation{}}); !reflect.DeepEqual(g, want) {
		t.Fatalf("re-created Alice %+v, want %+v", g, want)
	}
}

func TestKGDeleteObservations(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := context.Background(), ps["std"]
	if _, err := s.CreateEntities(ctx, p, []Entity{{Name: "Alice", EntityType: "person", Observations: []string{"Likes tea", "Runs", "Sings"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteObservations(ctx, p, []Observations{{EntityName: "Alice", Contents: []string{"Runs", "never said"}}, {EntityName: "Nobody", Contents: []string{"x"}}}); err != nil {
		t.Fatal(err)
	}
	g := mustGraph(t)(s.OpenNodes(ctx, p, []string{"Alice"}))
	if want := []string{"Likes tea", "Sings"}; !slices.Equal(g.Entities[0].Observations, want) {
		t.Fatalf("observations %q, want %q", g.Entities[0].Observations, want)
	}
	// An observation deleted can be added again.
	got, err := s.AddObservations(ctx, p, []Observations{{EntityName: "Alice", Contents: []string{"Runs"}}})
	if err != nil || !slices.Equal(got[0].AddedObservations, []string{"Runs"}) {
		t.Fatalf("re-add: %+v %v", got, err)
	}
}

func TestKGSearchAndOpen(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, p := context.Background(), ps["std"]
	if _, err := s.CreateEntities(ctx, p, []Entity{
		{Name: "Spanish class", EntityType: "event", Observations: []string{"Every Tuesday"}},
		{Name: "Alice", EntityType: "person", Observations: []string{"Speaks Spanish", "Teaches the spanish class"}},
		{Name: "Bob", EntityType: "person", Observations: []string{"Speaks French"}},
		{Name: "Spanish", EntityType: "language", Observations: []string{}},
		{Name: "Dan", EntityType: "spanish_speaker", Observations: []string{}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRelations(ctx, p, []Relation{{From: "Alice", To: "Bob", RelationType: "knows"}, {From: "Bob", To: "Spanish class", RelationType: "skips"}}); err != nil {
		t.Fatal(err)
	}
	g := mustGraph(t)(s.SearchNodes(ctx, p, "SPANISH", 0))
	var names []string
	for _, e := range g.Entities {
		names = append(names, e.Name)
	}
	// Exact name, then names containing it, then types, then observations.
	if want := []string{"Spanish", "Spanish class", "Dan", "Alice"}; !slices.Equal(names, want) {
		t.Fatalf("search order %q, want %q", names, want)
	}
	// Relations touching a match, even when the other end is not one.
	if want := []Relation{{From: "Alice", To: "Bob", RelationType: "knows"}, {From: "Bob", To: "Spanish class", RelationType: "skips"}}; !reflect.DeepEqual(g.Relations, want) {
		t.Fatalf("search relations %+v, want %+v", g.Relations, want)
	}
	g = mustGraph(t)(s.SearchNodes(ctx, p, "spanish", 2))
	if len(g.Entities) != 2 || g.Entities[0].Name != "Spanish" {
		t.Fatalf("limited search %+v", g.Entities)
	}
	if g.Omitted != 2 {
		t.Fatalf("limited search omitted %d, want 2", g.Omitted)
	}
	if _, err := s.SearchNodes(ctx, p, "x", -1); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("negative limit: %v", err)
	}
	g = mustGraph(t)(s.OpenNodes(ctx, p, []string{"Bob", "Nobody", "Alice"}))
	if len(g.Entities) != 2 || g.Entities[0].Name != "Alice" || g.Entities[1].Name != "Bob" {
		t.Fatalf("open order %+v", g.Entities)
	}
	if len(g.Relations) != 2 {
		t.Fatalf("open relations %+v", g.Relations)
	}
	g = mustGraph(t)(s.ReadGraph(ctx, p, 2))
	if len(g.Entities) != 2 || g.Entities[0].Name != "Spanish class" || g.Entities[1].Name != "Alice" {
		t.Fatalf("read_graph limit 2 %+v", g.Entities)
	}
}

func TestKGGovernedWrites(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx := context.Background()
	// A restricted agent's observations wait for review but are shown.
	got, err := s.CreateEntities(ctx, ps["restricted"], []Entity{{Name: "Eve", EntityType: "person", Observations: []string{"Works nights"}}})
	if err != nil || len(got) != 1 || len(got[0].Observations) != 1 {
		t.Fatalf("restricted create: %+v %v", got, err)
	}
	recs, err := s.svc.List(ctx, ps["op"], core.ListRequest{Entity: "entity:Eve", Statuses: []memory.Status{memory.Provisional}})
	if err != nil || len(recs.Records) != 1 {
		t.Fatalf("provisional records: %+v %v", recs.Records, err)
	}
	g := mustGraph(t)(s.OpenNodes(ctx, ps["std"], []string{"Eve"}))
	if len(g.Entities) != 1 || !slices.Equal(g.Entities[0].Observations, []string{"Works nights"}) {
		t.Fatalf("Eve %+v", g.Entities)
	}
	// A read_only agent writes nothing.
	if _, err := s.CreateEntities(ctx, ps["ro"], []Entity{{Name: "X", EntityType: "t", Observations: []string{}}}); !fault.Is(err, fault.PermissionDenied) {
		t.Fatalf("read_only create: %v", err)
	}
	// Personal data is quarantined: stored for review, readable (flagged)
	// by its writer and operators, hidden from other agents.
	got, err = s.CreateEntities(ctx, ps["std"], []Entity{{Name: "Frank", EntityType: "person", Observations: []string{"Email frank@example.com"}}})
	if err != nil || len(got) != 1 || !slices.Equal(got[0].Held, []string{"Email frank@example.com"}) {
		t.Fatalf("quarantine create: %+v %v", got, err)
	}
	for _, who := range []string{"std", "op"} {
		g = mustGraph(t)(s.OpenNodes(ctx, ps[who], []string{"Frank"}))
		if !slices.Equal(g.Entities[0].Observations, []string{"Email frank@example.com"}) || !slices.Equal(g.Entities[0].Held, g.Entities[0].Observations) {
			t.Fatalf("%s: the writer or an operator does not read back the held observation: %+v", who, g.Entities[0])
		}
	}
	g = mustGraph(t)(s.OpenNodes(ctx, ps["restricted"], []string{"Frank"}))
	if len(g.Entities[0].Observations) != 0 {
		t.Fatalf("quarantined observation visible to another agent: %+v", g.Entities[0])
	}
	// Approved, it stays readable by its writer (no longer flagged).
	page, err := s.svc.ListApprovals(ctx, ps["op"], memory.ApprovalOpen, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(page.Items, func(a core.ApprovalItem) bool { return a.Kind == memory.ApprovalQuarantine })
	if i < 0 {
		t.Fatalf("no quarantine item among %d", len(page.Items))
	}
	if _, err := s.svc.Approve(ctx, ps["op"], page.Items[i].ID, nil); err != nil {
		t.Fatal(err)
	}
	g = mustGraph(t)(s.OpenNodes(ctx, ps["std"], []string{"Frank"}))
	if !slices.Equal(g.Entities[0].Observations, []string{"Email frank@example.com"}) || len(g.Entities[0].Held) != 0 {
		t.Fatalf("the writer lost the approved observation: %+v", g.Entities[0])
	}
	// Re-adding it is no addition.
	added, err := s.AddObservations(ctx, ps["std"], []Observations{{EntityName: "Frank", Contents: []string{"Email frank@example.com"}}})
	if err != nil || len(added[0].AddedObservations) != 0 {
		t.Fatalf("re-adding a held observation: %+v %v", added, err)
	}
	// A credential is refused with an error naming the item; nothing stays.
	_, err = s.AddObservations(ctx, ps["std"], []Observations{{EntityName: "Frank", Contents: []string{"Likes jazz", "password: hunter2hunter2"}}})
	if !fault.Is(err, fault.GateRejected) || fault.As(err).Details["field"] != "observations[0].contents[1]" || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("credential: %v %+v", err, fault.As(err).Details)
	}
	g = mustGraph(t)(s.OpenNodes(ctx, ps["std"], []string{"Frank"}))
	if len(g.Entities[0].Observations) != 1 {
		t.Fatalf("refused call left %+v", g.Entities[0])
	}
}

// TestKGRefusalWritesNothing: under pii.action reject, one refused
// observation fails the call, which then stores nothing — not the
// entity, not its other observations — and the refusal is audited.
func TestKGRefusalWritesNothing(t *testing.T) {
	s, ps := kgService(t, func(p *gate.Policy) { p.PII.Action = gate.PIIReject })
	ctx, p := context.Background(), ps["std"]
	before := auditCount(t, s)
	_, err := s.CreateEntities(ctx, p, []Entity{{Name: "Gina", EntityType: "person", Observations: []string{"Likes jazz", "Card 4111 1111 1111 1111"}}})
	if !fault.Is(err, fault.GateRejected) {
		t.Fatalf("create with a card number: %v, want gate_rejected", err)
	}
	g := mustGraph(t)(s.ReadGraph(ctx, p, 0))
	if len(g.Entities) != 0 {
		t.Fatalf("refused call left %+v", g.Entities)
	}
	recs, err := s.svc.List(ctx, ps["op"], core.ListRequest{Statuses: []memory.Status{memory.Provisional, memory.Active, memory.Quarantined, memory.Archived, memory.Superseded}})
	if err != nil || len(recs.Records) != 0 {
		t.Fatalf("refused call left records %+v %v", recs.Records, err)
	}
	entries, err := s.svc.Store().ListAudit(ctx, p.Workspace, before, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Event != "record.write" {
		t.Fatalf("audit after refusal: %+v", entries)
	}
}

func auditCount(t *testing.T, s *Service) int64 {
	t.Helper()
	es, err := s.svc.Store().ListAudit(context.Background(), memory.DefaultWorkspace, 0, store.MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}

func TestKGImport(t *testing.T) {
	s, ps := kgService(t, nil)
	ctx, op := context.Background(), ps["op"]
	// A name on two lines is one entity with the observations of both.
	file := `{"type":"entity","name":"Alice","entityType":"person","observations":["Likes tea"]}
{"type":"entity","name":"Alice","entityType":"robot","observations":["Likes tea","Runs"]}
{"type":"entity","name":"Acme","entityType":"organization","observations":[]}
{"type":"relation","from":"Alice","to":"Acme","relationType":"works_at"}
{"type":"relation","from":"Alice","to":"Acme","relationType":"works_at"}
`
	st, err := s.Import(ctx, op, strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	want := ImportStats{Lines: 5, EntitiesCreated: 2, ObservationsAdded: 2, RelationsCreated: 1, RelationsExisting: 1}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	g := mustGraph(t)(s.ReadGraph(ctx, ps["std"], 0))
	wantG := Graph{
		Entities:  []Entity{{Name: "Alice", EntityType: "person", Observations: []string{"Likes tea", "Runs"}}, {Name: "Acme", EntityType: "organization", Observations: []string{}}},
		Relations: []Relation{{From: "Alice", To: "Acme", RelationType: "works_at"}},
	}
	if !reflect.DeepEqual(g, wantG) {
		t.Fatalf("graph %+v, want %+v", g, wantG)
	}
	// Relations may name entities already in the graph.
	st, err = s.Import(ctx, op, strings.NewReader(`{"type":"relation","from":"Acme","to":"Alice","relationType":"employs"}`))
	if err != nil || st.RelationsCreated != 1 {
		t.Fatalf("relation to existing entities: %+v %v", st, err)
	}
	for _, c := range []struct{ file, want string }{
		{"{\"type\":\"entity\",\"name\":\"B\",\"entityType\":\"t\",\"observations\":[]}\n\n{\"type\":\"relation\",\"from\":\"B\"}", "line 3"},
		{`{"type":"entity","name":"B","entityType":"t","observations":[]} {"x":1}`, "line 1"},
		{`[1,2]`, "line 1"},
	} {
		_, err := s.Import(ctx, op, strings.NewReader(c.file))
		if !fault.Is(err, fault.InvalidArgument) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("import %q: %v, want invalid_argument naming %s", c.file, err, c.want)
		}
	}
	if g := mustGraph(t)(s.OpenNodes(ctx, op, []string{"B"})); len(g.Entities) != 0 {
		t.Fatalf("a rejected file imported %+v", g.Entities)
	}
}
