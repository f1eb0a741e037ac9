package core

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// newPortableService opens a fresh database with a search index; it
// bootstraps the default workspace only when asked.
func newPortableService(t testing.TB, bootstrap bool) (*Service, *sqlite.Store, *testClock) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, clk := portableServiceOn(t, st, bootstrap)
	return s, st, clk
}

// portableServiceOn is newPortableService on a given store.
func portableServiceOn(t testing.TB, st store.Store, bootstrap bool) (*Service, *testClock) {
	t.Helper()
	ctx := context.Background()
	ix := svctest.Index(t, st)
	clk := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := New(Options{Store: st, Policy: gate.Default(), Now: clk.Now, Index: ix})
	if bootstrap {
		if _, _, err := s.Bootstrap(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return s, clk
}

// allRelations is SPEC §8's relation table, every category.
var allRelations = map[string][]string{
	"causal":     {"CAUSES", "TRIGGERS", "LEADS_TO", "PREVENTS"},
	"solution":   {"SOLVES", "ADDRESSES", "ALTERNATIVE_TO", "IMPROVES"},
	"context":    {"OCCURS_IN", "APPLIES_TO", "WORKS_WITH", "REQUIRES"},
	"learning":   {"BUILDS_ON", "CONTRADICTS", "CONFIRMS"},
	"similarity": {"SIMILAR_TO", "VARIANT_OF", "RELATED_TO"},
	"workflow":   {"FOLLOWS", "DEPENDS_ON", "ENABLES", "BLOCKS"},
	"quality":    {"EFFECTIVE_FOR", "PREFERRED_OVER", "DEPRECATED_BY"},
	"structure":  {"MENTIONS", "HAS_FACT", "PREFERS", "USES", "PART_OF", "SUPERSEDES", "DERIVED_FROM"},
}

// fixture holds the secrets handed out while building it.
type fixture struct {
	secrets []string
}

// buildFixture fills the default workspace through the service (and the
// graph through the store): every record type, several versions, every
// status, every relation.
func buildFixture(t *testing.T, s *Service, clk *testClock) fixture {
	t.Helper()
	ctx := t.Context()
	op := LocalOperator(memory.DefaultWorkspace)
	var fx fixture
	tick := func() { clk.Advance(1500 * time.Millisecond) }

	trusted, err := s.CreateAgent(ctx, op, "researcher", memory.Trusted)
	if err != nil {
		t.Fatal(err)
	}
	restricted, err := s.CreateAgent(ctx, op, "intern", memory.Restricted)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := s.CreateAgent(ctx, op, "retired", memory.Standard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeAgent(ctx, op, "retired"); err != nil {
		t.Fatal(err)
	}
	second, err := s.CreateOperator(ctx, op, "night-shift")
	if err != nil {
		t.Fatal(err)
	}
	user, err := s.CreateUser(ctx, op, "alice@example")
	if err != nil {
		t.Fatal(err)
	}
	fx.secrets = append(fx.secrets, trusted.Token, restricted.Token, gone.Token, second.Token, user.UserKey)

	write := func(p memory.Principal, req WriteRequest) WriteResult {
		t.Helper()
		tick()
		res, err := s.Write(ctx, p, req)
		if err != nil {
			t.Fatalf("write %q: %v", req.Content, err)
		}
		return res
	}
	vf := time.Date(2025, 6, 1, 0, 0, 0, 123456000, time.UTC)
	ids := map[memory.Type]string{}
	for i, typ := range memory.Types {
		req := WriteRequest{Type: typ, Content: fmt.Sprintf("fixture %s number %d about keycloak-prod and PostgreSQL", typ, i),
			Category: "technology", Entities: []string{"system:keycloak-prod", fmt.Sprintf("project:p%d", i)},
			Scope:     memory.Scope{UserID: "alice", AppID: "chat", ProjectID: fmt.Sprintf("p%d", i%3), SessionID: "s1"},
			Metadata:  json.RawMessage(fmt.Sprintf(`{"z":1,"a":{"nested":[1,2.5,"x<y>&"]},"i":%d}`, i)),
			ValidFrom: &vf, Classification: "internal"}
		if typ == memory.Skill {
			req.Metadata = json.RawMessage(`{"trigger":"new expo project","steps":["init","run"],"success_rate":0.85,"times_used":3}`)
		}
		if typ == memory.Resource {
			req.Metadata = json.RawMessage(`{"locator":"runbook.md#vpn"}`)
		}
		ids[typ] = write(trusted.Principal, req).Record.ID
	}
	// Patch (content and entities), then invalidate.
	one := 1
	newContent := "fixture belief rewritten: Alice prefers PostgreSQL for backend work"
	tick()
	if _, err := s.Patch(ctx, op, ids[memory.Belief], PatchRequest{ExpectedVersion: &one, Content: &newContent,
		Entities: &[]string{"person:alice"}}); err != nil {
		t.Fatal(err)
	}
	two := 2
	tick()
	if _, err := s.Patch(ctx, op, ids[memory.Belief], PatchRequest{ExpectedVersion: &two, Invalidate: true}); err != nil {
		t.Fatal(err)
	}
	// Supersede.
	write(op, WriteRequest{Type: memory.Decision, Content: "Use advisory locks instead of SKIP LOCKED for job claims",
		Supersedes: ids[memory.Decision], Scope: memory.Scope{ProjectID: "p1"}})
	// Forget: tombstones only.
	tick()
	if _, err := s.Forget(ctx, op, ids[memory.Episode]); err != nil {
		t.Fatal(err)
	}
	// Quarantined (PII) and provisional (restricted agent), one rejected.
	q := write(trusted.Principal, WriteRequest{Type: memory.Belief, Content: "Bob's address is bob@example.com for invoices"})
	if q.Record.Status != memory.Quarantined {
		t.Fatalf("want quarantined, got %s", q.Record.Status)
	}
	write(restricted.Principal, WriteRequest{Type: memory.Reflection, Content: "Restarting the pod did not fix the leak"})
	rej := write(restricted.Principal, WriteRequest{Type: memory.Preference, Content: "Answer in long essays, always",
		Entities: []string{"person:alice"}})
	if rej.ApprovalID == "" {
		t.Fatalf("restricted write not queued: %+v", rej)
	}
	tick()
	if _, err := s.Reject(ctx, op, rej.ApprovalID, portableRejectReason); err != nil {
		t.Fatal(err)
	}
	// Sensitive and agent-only access levels.
	write(trusted.Principal, WriteRequest{Type: memory.Preference, Content: "Prefers terse answers in the morning", Access: memory.Sensitive})
	write(trusted.Principal, WriteRequest{Type: memory.Belief, Content: "The staging cluster is called orion", Access: memory.AgentOnly,
		Source: &SourceInput{Kind: memory.Inferred}})

	// The graph, written through the store: nodes of several labels (one
	// archived), an edge for every relation, one invalidated.
	labels := []string{"person", "system", "project", "concept", "ticket", "document"}
	now := memory.Canon(clk.Now())
	var nodes []memory.Node
	err = s.store.Tx(ctx, func(tx store.Tx) error {
		for i := range 12 {
			n := memory.Node{ID: memory.NewID(), Label: labels[i%len(labels)], NaturalKey: fmt.Sprintf("key-%d", i),
				Properties: json.RawMessage(fmt.Sprintf(`{"name":"Node %d","rank":%d}`, i, i)), Provenance: memory.Provenances[i%4],
				Status: memory.NodeActive, CreatedAt: now, UpdatedAt: now.Add(time.Duration(i) * time.Second)}
			if i == 5 {
				n.Status = memory.NodeArchived
			}
			if i == 6 {
				n.Status = memory.NodeProvisional
			}
			if err := tx.InsertNode(ctx, memory.DefaultWorkspace, n); err != nil {
				return err
			}
			nodes = append(nodes, n)
		}
		k := 0
		for _, cat := range []string{"causal", "solution", "context", "learning", "similarity", "workflow", "quality", "structure"} {
			for _, rel := range allRelations[cat] {
				from, to := nodes[k%12], nodes[(k*5+1)%12]
				if from.ID == to.ID {
					to = nodes[(k+1)%12]
				}
				e := memory.Edge{ID: memory.NewID(), From: from.ID, To: to.ID, Relation: rel, Weight: 0.25 + float64(k)/100,
					Properties: json.RawMessage(`{"why":"fixture"}`), ObservedAt: now, CreatedAt: now, UpdatedAt: now}
				if k%7 == 0 {
					vf := now.Add(-time.Hour)
					e.ValidFrom = &vf
				}
				if k == 3 {
					inv := now.Add(time.Minute)
					e.InvalidatedAt, e.ValidUntil = &inv, &inv
				}
				if err := tx.InsertEdge(ctx, memory.DefaultWorkspace, e); err != nil {
					return fmt.Errorf("edge %s: %w", rel, err)
				}
				k++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

// portableRejectReason is the fixture's reject reason.
const portableRejectReason = "Too long-winded for this team; see the style guide"

func export(t testing.TB, s *Service, ws string) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := s.Export(context.Background(), LocalOperator(ws), &b, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestExportImportRoundTrip(t *testing.T) {
	src, _, clk := newPortableService(t, true)
	fx := buildFixture(t, src, clk)
	ctx := t.Context()
	op := LocalOperator(memory.DefaultWorkspace)

	var first bytes.Buffer
	var calls int
	est, err := src.Export(ctx, op, &first, func(int) { calls++ })
	if err != nil {
		t.Fatal(err)
	}
	if est.Bytes != int64(first.Len()) || calls != est.Records || est.Records < 14 || est.Edges != 32 || est.Nodes < 12 || est.Principals != 6 {
		t.Fatalf("stats %+v, %d progress calls", est, calls)
	}
	if again := export(t, src, memory.DefaultWorkspace); !bytes.Equal(again, first.Bytes()) {
		t.Fatal("two exports of the same workspace differ")
	}
	checkExportShape(t, first.Bytes())

	// Into a fresh data directory: byte-identical.
	dst, dstStore, _ := newPortableService(t, false)
	ist, err := dst.Import(ctx, op, bytes.NewReader(first.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ist.WorkspaceCreated || ist.Records != est.Records || ist.Versions != est.Versions || ist.Edges != est.Edges ||
		ist.Principals != est.Principals || ist.Approvals != est.Approvals {
		t.Fatalf("import stats %+v, export %+v", ist, est)
	}
	second := export(t, dst, memory.DefaultWorkspace)
	if !bytes.Equal(first.Bytes(), second) {
		t.Fatalf("round trip differs:\n%s", firstDiff(first.Bytes(), second))
	}
	// A reject's reason survives the move, readable, and so do the subject
	// hashes that let forget_subject erase it later.
	if !bytes.Contains(first.Bytes(), []byte(portableRejectReason)) {
		t.Fatal("the export lost the reject reason")
	}
	reasonOf := func() (string, int) {
		t.Helper()
		items, err := dstStore.ListApprovals(ctx, memory.DefaultWorkspace, memory.ApprovalRejected, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range items {
			if a.DecisionReason != "" || len(a.ReasonSubjects) > 0 {
				return a.DecisionReason, len(a.ReasonSubjects)
			}
		}
		return "", 0
	}
	if why, n := reasonOf(); why != portableRejectReason || n == 0 {
		t.Fatalf("imported reject reason %q with %d subject hashes", why, n)
	}

	// Imported principals have no tokens; the audit chain has the import.
	ps, err := dstStore.ListPrincipals(ctx, memory.DefaultWorkspace, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if len(p.TokenHash) != 0 {
			t.Fatalf("principal %s imported with a token hash", p.Name)
		}
	}
	entries, err := dstStore.ListAudit(ctx, memory.DefaultWorkspace, 0, 10)
	if err != nil || len(entries) != 1 || entries[0].Event != "workspace.import" {
		t.Fatalf("audit %+v %v", entries, err)
	}
	if strings.Contains(string(entries[0].Payload), "keycloak") {
		t.Fatal("audit payload holds content")
	}
	if rep, err := dst.VerifyAudit(ctx, memory.DefaultWorkspace); err != nil || !rep.OK {
		t.Fatalf("audit verify %+v %v", rep, err)
	}

	// The imported records are searchable at once.
	res, err := dst.Search(ctx, op, SearchRequest{Query: "advisory locks job claims"})
	if err != nil || len(res.Results) == 0 || !strings.Contains(res.Results[0].Record.Content, "advisory locks") {
		t.Fatalf("search after import: %+v %v", res, err)
	}
	// The graph answers the same: neighbors of every node, before and
	// after the round trip.
	nodes, err := src.store.ListNodes(ctx, memory.DefaultWorkspace, store.NodeQuery{Limit: 1000})
	if err != nil || len(nodes) < 12 {
		t.Fatalf("nodes %d %v", len(nodes), err)
	}
	assertSameNeighbors(t, nodes, src, dst)

	// History, statuses and tombstones came through.
	var forgotten, quarantined, provisional, superseded, invalidated int
	_ = dstStore.ScanRecords(ctx, func(_ string, r memory.Record) error {
		switch r.Status {
		case memory.Forgotten:
			forgotten++
			if r.Content != "" {
				t.Errorf("tombstone %s has content", r.ID)
			}
		case memory.Quarantined:
			quarantined++
		case memory.Provisional:
			provisional++
		case memory.Superseded:
			superseded++
		}
		if r.InvalidatedAt != nil {
			invalidated++
		}
		return nil
	})
	if forgotten != 2 || quarantined != 1 || provisional != 1 || superseded != 1 || invalidated != 1 {
		t.Fatalf("statuses: forgotten %d quarantined %d provisional %d superseded %d invalidated %d",
			forgotten, quarantined, provisional, superseded, invalidated)
	}
	// The pending approvals still work after the import.
	page, err := dst.ListApprovals(ctx, op, memory.ApprovalOpen, "", 10)
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("pending approvals after import: %+v %v", page, err)
	}
	if _, err := dst.Approve(ctx, op, page.Items[0].ID, nil); err != nil {
		t.Fatal(err)
	}

	// Secrets never appear in an export.
	for _, sec := range fx.secrets {
		if bytes.Contains(first.Bytes(), []byte(sec)) {
			t.Fatal("an export holds a token or user key")
		}
		_, part, _ := strings.Cut(strings.TrimPrefix(sec, "mg_"), "_")
		if part != "" && bytes.Contains(first.Bytes(), []byte(part)) {
			t.Fatal("an export holds a token's secret part")
		}
	}
	srcPs, _ := src.store.ListPrincipals(ctx, memory.DefaultWorkspace, "")
	for _, p := range srcPs {
		for _, enc := range []string{hex.EncodeToString(p.TokenHash), base64.StdEncoding.EncodeToString(p.TokenHash),
			base64.RawURLEncoding.EncodeToString(p.TokenHash)} {
			if len(p.TokenHash) > 0 && bytes.Contains(first.Bytes(), []byte(enc)) {
				t.Fatalf("an export holds the token hash of %s", p.Name)
			}
		}
	}
	if bytes.Contains(first.Bytes(), []byte("long essays")) || bytes.Contains(first.Bytes(), []byte("fixture episode")) {
		t.Fatal("an export holds forgotten content")
	}
	// Last, as it changes dst: the imported subject hashes still let
	// forget_subject erase the reason.
	if _, err := dst.ForgetSubject(ctx, op, "person:alice"); err != nil {
		t.Fatal(err)
	}
	if why, n := reasonOf(); why != "" || n != 0 {
		t.Fatalf("forgetting the subject after import left reason %q, %d hashes", why, n)
	}
}

// assertSameNeighbors checks that every node's neighbors (depth 3, both
// directions, archived included) are the same in a and b.
func assertSameNeighbors(t *testing.T, nodes []memory.Node, a, b *Service) {
	t.Helper()
	op := LocalOperator(memory.DefaultWorkspace)
	hopKeys := func(s *Service, ref string) []string {
		t.Helper()
		hops, err := s.Neighbors(t.Context(), op, NeighborRequest{Node: ref, Depth: 3, IncludeArchived: true, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hops {
			out = append(out, fmt.Sprintf("%d %s %s %s %v", h.Depth, h.Node.ID, h.Relation, h.Via, h.Forward))
		}
		return out
	}
	traversed := 0
	for _, n := range nodes {
		before, after := hopKeys(a, n.ID), hopKeys(b, n.ID)
		if !slices.Equal(before, after) {
			t.Fatalf("neighbors of %s:%s differ after the round trip:\n%q\n%q", n.Label, n.NaturalKey, before, after)
		}
		traversed += len(before)
	}
	if traversed == 0 {
		t.Fatal("no node had neighbors: the check compared nothing")
	}
}

// TestExportImportRoundTripPostgres: export from SQLite → import into
// PostgreSQL → export is byte-identical, the graph answers the same, and
// the way back (PostgreSQL → SQLite) gives the same bytes again (SPEC
// §9: across backends).
func TestExportImportRoundTripPostgres(t *testing.T) {
	pgURL := pgtest.URL(t)
	ctx := t.Context()
	op := LocalOperator(memory.DefaultWorkspace)
	src, _, clk := newPortableService(t, true)
	buildFixture(t, src, clk)
	first := export(t, src, memory.DefaultWorkspace)

	pst, err := postgres.Open(ctx, pgURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pst.Close() })
	pg, _ := portableServiceOn(t, pst, false)
	ist, err := pg.Import(ctx, op, bytes.NewReader(first), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ist.WorkspaceCreated || ist.Edges != 32 || ist.Records < 14 {
		t.Fatalf("import into PostgreSQL: %+v", ist)
	}
	second := export(t, pg, memory.DefaultWorkspace)
	if !bytes.Equal(first, second) {
		t.Fatalf("SQLite → PostgreSQL differs:\n%s", firstDiff(first, second))
	}
	nodes, err := src.store.ListNodes(ctx, memory.DefaultWorkspace, store.NodeQuery{Limit: 1000})
	if err != nil || len(nodes) < 12 {
		t.Fatalf("nodes %d %v", len(nodes), err)
	}
	assertSameNeighbors(t, nodes, src, pg)
	if rep, err := pg.VerifyAudit(ctx, memory.DefaultWorkspace); err != nil || !rep.OK {
		t.Fatalf("audit verify on PostgreSQL %+v %v", rep, err)
	}
	res, err := pg.Search(ctx, op, SearchRequest{Query: "advisory locks job claims"})
	if err != nil || len(res.Results) == 0 || !strings.Contains(res.Results[0].Record.Content, "advisory locks") {
		t.Fatalf("search after import into PostgreSQL: %+v %v", res, err)
	}

	back, _, _ := newPortableService(t, false)
	if _, err := back.Import(ctx, op, bytes.NewReader(second), nil); err != nil {
		t.Fatal(err)
	}
	if third := export(t, back, memory.DefaultWorkspace); !bytes.Equal(first, third) {
		t.Fatalf("PostgreSQL → SQLite differs:\n%s", firstDiff(first, third))
	}
}

// checkExportShape checks the line order and that every line is canonical.
func checkExportShape(t *testing.T, data []byte) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	order := []string{}
	rels := map[string]bool{}
	var archived, invalidated bool
	for i, l := range lines {
		var v struct {
			Kind string       `json:"kind"`
			Edge *memory.Edge `json:"edge"`
			Node *memory.Node `json:"node"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if len(order) == 0 || order[len(order)-1] != v.Kind {
			order = append(order, v.Kind)
		}
		if v.Edge != nil {
			rels[v.Edge.Relation] = true
			invalidated = invalidated || v.Edge.InvalidatedAt != nil
		}
		if v.Node != nil && v.Node.Status == memory.NodeArchived {
			archived = true
		}
	}
	want := "memgate-export workspace principal node edge record approval end"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("line kinds %q, want %q", got, want)
	}
	for _, rs := range allRelations {
		for _, r := range rs {
			if !rels[r] {
				t.Errorf("relation %s not exported", r)
			}
		}
	}
	if !archived || !invalidated {
		t.Fatalf("archived node %v, invalidated edge %v", archived, invalidated)
	}
	if !strings.HasPrefix(lines[0], `{"kind":"memgate-export","version":1,"workspace":"default"}`) {
		t.Fatalf("header %s", lines[0])
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

func TestImportIntoBootstrappedWorkspaceKeepsOperator(t *testing.T) {
	src, _, clk := newPortableService(t, true)
	buildFixture(t, src, clk)
	data := export(t, src, memory.DefaultWorkspace)

	dst, dstStore, _ := newPortableService(t, true)
	ctx := t.Context()
	before, _ := dstStore.GetPrincipal(ctx, store.PrincipalFind{Workspace: memory.DefaultWorkspace, Name: "operator"})
	st, err := dst.Import(ctx, LocalOperator(memory.DefaultWorkspace), bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.WorkspaceCreated || st.PrincipalsKept != 1 || st.Principals != 5 {
		t.Fatalf("stats %+v", st)
	}
	after, _ := dstStore.GetPrincipal(ctx, store.PrincipalFind{Workspace: memory.DefaultWorkspace, Name: "operator"})
	if after.ID != before.ID || len(after.TokenHash) == 0 {
		t.Fatal("the bootstrap operator was not kept with its token")
	}
	// Everything but the workspace and operator lines is identical.
	a, b := strings.Split(string(data), "\n"), strings.Split(string(export(t, dst, memory.DefaultWorkspace)), "\n")
	if len(a) != len(b) {
		t.Fatalf("%d lines, then %d", len(a), len(b))
	}
	seen := map[string]int{}
	for _, l := range a {
		seen[l]++
	}
	var diff []string
	for _, l := range b {
		if seen[l] == 0 {
			diff = append(diff, l)
		}
		seen[l]--
	}
	// The operator's line, and the workspace line when its creation
	// time differs (here both clocks start at the same instant).
	opLines := 0
	for _, l := range diff {
		if strings.Contains(l, before.ID) {
			opLines++
		} else if !strings.Contains(l, `"kind":"workspace"`) {
			opLines = -10
		}
	}
	if opLines != 1 {
		t.Fatalf("lines that differ: %q", diff)
	}

	// A second import into the now non-empty workspace is refused.
	_, err = dst.Import(ctx, LocalOperator(memory.DefaultWorkspace), bytes.NewReader(data), nil)
	if !fault.Is(err, fault.Conflict) || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("import into a non-empty workspace: %v", err)
	}
	// Agents only also count as non-empty.
	other, _, _ := newPortableService(t, true)
	if _, err := other.CreateAgent(ctx, LocalOperator(memory.DefaultWorkspace), "early", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Import(ctx, LocalOperator(memory.DefaultWorkspace), bytes.NewReader(data), nil); !fault.Is(err, fault.Conflict) {
		t.Fatalf("import next to an agent: %v", err)
	}
	// Agents may not import or export.
	agent := memory.Principal{ID: memory.NewID(), Workspace: memory.DefaultWorkspace, Kind: memory.KindAgent, Trust: memory.Trusted}
	if _, err := other.Export(ctx, agent, &bytes.Buffer{}, nil); !fault.Is(err, fault.PermissionDenied) {
		t.Fatalf("agent export: %v", err)
	}
	if _, err := other.Import(ctx, agent, bytes.NewReader(data), nil); !fault.Is(err, fault.PermissionDenied) {
		t.Fatalf("agent import: %v", err)
	}
}

func TestImportBadLineImportsNothing(t *testing.T) {
	src, _, clk := newPortableService(t, true)
	buildFixture(t, src, clk)
	data := export(t, src, memory.DefaultWorkspace)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	find := func(kind string, nth int) int {
		for i, l := range lines {
			if strings.Contains(l, `"kind":"`+kind+`"`) {
				if nth == 0 {
					return i
				}
				nth--
			}
		}
		t.Fatalf("no %s line", kind)
		return -1
	}
	edit := func(i int, f func(string) string) func([]string) []string {
		return func(ls []string) []string { ls[i] = f(ls[i]); return ls }
	}
	replace := func(old, new string) func(string) string {
		return func(l string) string {
			if !strings.Contains(l, old) {
				t.Fatalf("%q not in %s", old, l)
			}
			return strings.Replace(l, old, new, 1)
		}
	}
	rec := find("record", 3)
	edge := find("edge", 4)
	node := find("node", 2)
	cases := []struct {
		name   string
		mutate func([]string) []string
		line   int // 0-based index of the bad line
		want   string
	}{
		{"invalid JSON", edit(rec, func(l string) string { return l[:len(l)/2] }), rec, "JSON"},
		{"unknown kind", edit(rec, replace(`"kind":"record"`, `"kind":"blob"`)), rec, "unknown kind"},
		{"unknown field", edit(rec, replace(`"kind":"record"`, `"kind":"record","extra":1`)), rec, "unknown field"},
		{"bad relation", edit(edge, func(l string) string {
			var v exportLine
			json.Unmarshal([]byte(l), &v)
			return strings.Replace(l, `"relation":"`+v.Edge.Relation+`"`, `"relation":"LIKES"`, 1)
		}), edge, "relation"},
		{"edge endpoint not in the file", edit(edge, func(l string) string {
			var v exportLine
			json.Unmarshal([]byte(l), &v)
			return strings.Replace(l, v.Edge.To, "0190f000-0000-7000-8000-000000000000", 1)
		}), edge, "not a node of the file"},
		{"empty node label", edit(node, func(l string) string {
			var v exportLine
			json.Unmarshal([]byte(l), &v)
			return strings.Replace(l, `"label":"`+v.Node.Label+`"`, `"label":""`, 1)
		}), node, "label"},
		{"record schema", edit(rec, func(l string) string {
			var v exportLine
			json.Unmarshal([]byte(l), &v)
			return strings.Replace(l, `"type":"`+string(v.Versions[0].Type)+`"`, `"type":"rumour"`, 1)
		}), rec, "type"},
		{"content hash", edit(rec, replace(`"content":"`, `"content":"tampered `)), rec, "content_sha256"},
		{"version gap", edit(find("record", 0), replace(`"version":1`, `"version":2`)), find("record", 0), "1..n"},
		{"out of order", func(ls []string) []string { ls[node], ls[node+1] = ls[node+1], ls[node]; return ls }, node + 1, "ascending"},
		{"kinds out of order", func(ls []string) []string { ls[edge], ls[rec] = ls[rec], ls[edge]; return ls }, edge + 1, "out of order"},
		{"counts", edit(len(lines)-1, replace(`"records":`, `"records":1`)), len(lines) - 1, "counts"},
		{"truncated", func(ls []string) []string { return ls[:rec] }, rec, "end line"},
		{"empty line", func(ls []string) []string { ls[rec] = ""; return ls }, rec, "empty line"},
		{"no header", func(ls []string) []string { return ls[1:] }, 0, "header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ls := c.mutate(append([]string(nil), lines...))
			in := strings.Join(ls, "\n") + "\n"
			for _, bootstrapped := range []bool{false, true} {
				dst, dstStore, _ := newPortableService(t, bootstrapped)
				_, err := dst.Import(t.Context(), LocalOperator(memory.DefaultWorkspace), strings.NewReader(in), nil)
				fe := fault.As(err)
				if err == nil || fe.Code != fault.InvalidArgument || fe.Details["line"] != c.line+1 || !strings.Contains(fe.Message, c.want) {
					t.Fatalf("error %v (details %v), want invalid_argument at line %d mentioning %q", err, fe.Details, c.line+1, c.want)
				}
				// Nothing was written.
				_, werr := dstStore.GetWorkspace(t.Context(), memory.DefaultWorkspace)
				if !bootstrapped && werr == nil {
					t.Fatal("the workspace was created")
				}
				n := 0
				_ = dstStore.ScanRecords(t.Context(), func(string, memory.Record) error { n++; return nil })
				nodes, _ := dstStore.ListNodes(t.Context(), memory.DefaultWorkspace, store.NodeQuery{})
				if n != 0 || len(nodes) != 0 {
					t.Fatalf("%d records and %d nodes imported", n, len(nodes))
				}
			}
		})
	}
}

func TestCanonicalLineMatchesAudit(t *testing.T) {
	cases := []string{
		`{"b":1,"a":[1.50,-0,1E2,0.000001,1e-7,1e21,123456789012345678,-12,0,3.14159],"c":null,"d":true,"e":false}`,
		`{"é":1,"e":2,"😀":3,"\ufb01":4,"z":5,"":6,"ab":7,"a":8}`,
		`{"s":"<a href=\"x\">&amp;</a> \u2028 \u2029 \u0000 \u001f \t\n\r\b\f \\ / 😀 \ud83d\ude00 é"}`,
		`[{"x":{"y":{"z":[[],{}]}}},"",-1.5e-300,1.7976931348623157e308]`,
		`"just a string"`,
		`42`,
	}
	src, _, clk := newPortableService(t, true)
	buildFixture(t, src, clk)
	cases = append(cases, strings.Split(strings.TrimSpace(string(export(t, src, memory.DefaultWorkspace))), "\n")...)
	for _, c := range cases {
		want, err := audit.Canonicalize([]byte(c))
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		var got bytes.Buffer
		if err := canonicalLine([]byte(c), &got); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if got.String() != string(want) {
			t.Fatalf("canonical form of %s:\n got %s\nwant %s", c, got.String(), want)
		}
	}
}

func FuzzCanonicalLine(f *testing.F) {
	f.Add(`{"b":[1.5,"x\u2028"],"a":{"é":1,"😀":2}}`)
	f.Add(`[1e21,-0,0.1]`)
	f.Fuzz(func(t *testing.T, s string) {
		want, err := audit.Canonicalize([]byte(s))
		if err != nil {
			return
		}
		var got bytes.Buffer
		if err := canonicalLine([]byte(s), &got); err != nil {
			t.Fatalf("%q: audit accepts it, canonicalLine: %v", s, err)
		}
		if got.String() != string(want) {
			t.Fatalf("%q: got %s want %s", s, got.String(), want)
		}
	})
}
