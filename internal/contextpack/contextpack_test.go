package contextpack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/svctest"
)

// env is a real service over SQLite with an operator (who seeds) and two
// standard agents (who ask).
type env struct {
	t      testing.TB
	ctx    context.Context
	svc    *core.Service
	op     memory.Principal
	a, b   memory.Principal
	pinned *fakePinned
	asm    *contextpack.Assembler
}

func newEnv(t testing.TB, emb embed.Embedder) *env {
	t.Helper()
	ctx := context.Background()
	st := svctest.SQLite(t)
	ix := retrieve.New(retrieve.Options{Embedder: emb})
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	clk := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { clk = clk.Add(time.Millisecond); return clk }
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Now: now, Index: ix})
	tok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	op, err := svc.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, svc: svc, op: op, pinned: &fakePinned{}}
	for _, name := range []string{"a", "b"} {
		c, err := svc.CreateAgent(ctx, op, name, memory.Standard)
		if err != nil {
			t.Fatal(err)
		}
		if name == "a" {
			e.a = c.Principal
		} else {
			e.b = c.Principal
		}
	}
	e.asm = contextpack.New(svc, e.pinned)
	return e
}

func (e *env) write(p memory.Principal, req core.WriteRequest) memory.Record {
	e.t.Helper()
	res, err := e.svc.Write(e.ctx, p, req)
	if err != nil {
		e.t.Fatalf("write %q: %v", req.Content[:min(40, len(req.Content))], err)
	}
	return res.Record
}

func (e *env) assemble(p memory.Principal, req contextpack.Request) contextpack.Envelope {
	e.t.Helper()
	out, err := e.asm.Assemble(e.ctx, p, req)
	if err != nil {
		e.t.Fatalf("assemble: %v", err)
	}
	return out
}

// fakePinned stands in for the memory files of issue 15 (not on this
// branch): files in a fixed order.
type fakePinned struct{ files []contextpack.PinnedFile }

func (f *fakePinned) Pinned(context.Context, memory.Principal, memory.Scope) ([]contextpack.PinnedFile, error) {
	return f.files, nil
}

func section(env contextpack.Envelope, name string) contextpack.Section {
	for _, s := range env.Sections {
		if s.Name == name {
			return s
		}
	}
	return contextpack.Section{}
}

// checkBudget asserts every bound an envelope promises.
func checkBudget(t *testing.T, env contextpack.Envelope, req contextpack.Request) {
	t.Helper()
	if env.Tokens > req.BudgetTokens || contextpack.Tokens(env.Markdown) > req.BudgetTokens {
		t.Fatalf("budget %d: envelope %d tokens, markdown %d tokens", req.BudgetTokens, env.Tokens, contextpack.Tokens(env.Markdown))
	}
	sum := 0
	bounds := map[string]int{"constraints": 20, "procedures": 3, "knowledge": 6, "facts": 10, "recent": 3}
	for _, s := range env.Sections {
		sum += s.Tokens
		if len(s.Items) > bounds[s.Name] {
			t.Errorf("budget %d: section %s has %d items, bound %d", req.BudgetTokens, s.Name, len(s.Items), bounds[s.Name])
		}
		for _, it := range s.Items {
			if it.Tokens > contextpack.DefaultItemTokens {
				t.Errorf("budget %d: item of %d tokens", req.BudgetTokens, it.Tokens)
			}
		}
	}
	if sum > req.BudgetTokens {
		t.Fatalf("budget %d: sections sum to %d tokens", req.BudgetTokens, sum)
	}
	if got := []string{env.Sections[0].Name, env.Sections[1].Name, env.Sections[2].Name, env.Sections[3].Name, env.Sections[4].Name}; strings.Join(got, ",") != "constraints,procedures,knowledge,facts,recent" {
		t.Fatalf("sections %v", got)
	}
}

// TestBudgetAdversarial: a megabyte record, a thousand long hard rules
// and hundreds of matching records never push an envelope over budget,
// down to budgets smaller than one record; rules come first.
func TestBudgetAdversarial(t *testing.T) {
	e := newEnv(t, nil)
	// The largest record the gate admits, and a megabyte pinned file,
	// both of multi-byte runes.
	huge := "deploy " + strings.Repeat("ünïcode deploy payload ", 1400)
	e.write(e.op, core.WriteRequest{Type: memory.Belief, Content: strings.ToValidUTF8(huge[:32000], "")})
	for i := range 1000 {
		e.write(e.op, core.WriteRequest{Type: memory.Belief, Category: "rule",
			Content: fmt.Sprintf("Rule %d: never deploy on Friday without a rollback plan. %s", i, filler(i, 150))})
	}
	for i := range 300 {
		e.write(e.op, core.WriteRequest{Type: memory.Decision, Content: fmt.Sprintf("Deploy decision %d: use blue-green deploys. %s", i, filler(i+5000, 8))})
	}
	run := func(budget int) {
		req := contextpack.Request{Query: "how do we deploy", BudgetTokens: budget}
		env := e.assemble(e.a, req)
		checkBudget(t, env, req)
		c := section(env, "constraints")
		if budget >= 40 && e.pinned.files == nil {
			if len(c.Items) == 0 || c.Items[0].Kind != contextpack.KindRule || c.Items[0].Truncated != (budget < 262) {
				t.Fatalf("budget %d: first constraint %.200q, want a rule, cut below 262 tokens", budget, env.Markdown)
			}
			if !strings.HasPrefix(env.Markdown, "## Constraints\n- Rule 0:") {
				t.Errorf("budget %d: markdown starts %q", budget, env.Markdown[:min(40, len(env.Markdown))])
			}
		}
		if budget == 9000 && (len(c.Items) != 20 || c.Omitted != 980) {
			t.Errorf("budget 9000: %d constraints, %d omitted; want the bound 20 and 980 omitted", len(c.Items), c.Omitted)
		}
		if budget <= 3 && env.Markdown != "" {
			t.Errorf("budget %d: markdown %q, want empty (nothing fits)", budget, env.Markdown)
		}
	}
	for _, budget := range []int{1, 3, 7, 12, 40, 100, 401, 2000, 9000} {
		run(budget)
	}
	e.pinned.files = []contextpack.PinnedFile{{Path: "AGENTS.md", Content: strings.Repeat("# Hüge\nRead me first.\n", 50000)}}
	for _, budget := range []int{1, 12, 100, 9000} {
		req := contextpack.Request{Query: "how do we deploy", BudgetTokens: budget}
		env := e.assemble(e.a, req)
		checkBudget(t, env, req)
		if c := section(env, "constraints"); budget >= 100 && (c.Items[0].Kind != contextpack.KindPinned || !c.Items[0].Truncated ||
			!strings.HasPrefix(env.Markdown, "## Constraints\n### AGENTS.md\n# Hüge\nRead me first.")) {
			t.Errorf("budget %d: pinned file not first, or not cut: %q", budget, env.Markdown[:min(80, len(env.Markdown))])
		}
	}
	e.pinned.files = nil
	// A smaller item bound and a budget below one record's size.
	req := contextpack.Request{Query: "deploy payload", BudgetTokens: 60, MaxItemTokens: 20, MaxConstraints: 1}
	env := e.assemble(e.a, req)
	if env.Tokens > 60 || len(section(env, "constraints").Items) != 1 {
		t.Fatalf("tight request: %d tokens, constraints %+v", env.Tokens, section(env, "constraints"))
	}
	for _, s := range env.Sections {
		for _, it := range s.Items {
			if it.Tokens > 20 {
				t.Errorf("item %d tokens over max_item_tokens 20", it.Tokens)
			}
		}
	}
	if !strings.Contains(env.Markdown, "…") {
		t.Errorf("cut content is not marked: %q", env.Markdown)
	}
}

// filler is n words unique to i, so that records are neither duplicates
// nor conflicts of each other.
func filler(i, n int) string {
	var b strings.Builder
	for j := range n {
		fmt.Fprintf(&b, "w%dx%d ", i, j)
	}
	return b.String()
}

// TestDeterministic: the same memory state gives byte-identical
// envelopes, also after searches moved retrieval counters.
func TestDeterministic(t *testing.T) {
	enc, err := embed.BuiltinUSELite()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, enc)
	for i := range 40 {
		e.write(e.op, core.WriteRequest{Type: memory.Belief, Content: fmt.Sprintf("The cache layer %d uses Redis with a TTL", i%7),
			Entities: []string{"technology:redis"}, Scope: memory.Scope{ProjectID: "p", SessionID: fmt.Sprintf("s%d", i%2)}})
	}
	e.write(e.op, core.WriteRequest{Type: memory.Skill, Content: "To warm the cache, run make warm", Scope: memory.Scope{ProjectID: "p"}})
	e.write(e.op, core.WriteRequest{Type: memory.Belief, Category: "rule", Content: "Never flush the production cache", Scope: memory.Scope{ProjectID: "p"}})
	if _, err := e.svc.EmbedPending(e.ctx, 1000); err != nil {
		t.Fatal(err)
	}
	req := contextpack.Request{Query: "how is the cache configured", Scope: memory.Scope{ProjectID: "p", SessionID: "s1"}, BudgetTokens: 600}
	env := e.assemble(e.a, req)
	if len(section(env, "knowledge").Items) == 0 || len(section(env, "recent").Items) == 0 || len(section(env, "constraints").Items) != 1 ||
		len(section(env, "procedures").Items) != 1 || len(section(env, "facts").Items) != 0 {
		t.Fatalf("envelope %+v", env.Sections)
	}
	first, _ := json.Marshal(env)
	for range 3 {
		if _, err := e.svc.Search(e.ctx, e.a, core.SearchRequest{Query: "cache redis", K: 10}); err != nil {
			t.Fatal(err)
		}
		env, err := contextpack.New(e.svc, e.pinned).Assemble(e.ctx, e.a, req)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(env)
		if string(again) != string(first) {
			t.Fatalf("envelopes differ:\n%s\n%s", first, again)
		}
	}
}

// TestSectionsAndAccess: each section holds what it should, in order, and
// nothing the asking agent cannot read (another agent's private records,
// its private graph).
func TestSectionsAndAccess(t *testing.T) {
	e := newEnv(t, nil)
	e.pinned.files = []contextpack.PinnedFile{{Path: "AGENTS.md", Content: "Use gofmt.", Citation: "file://AGENTS.md"}}
	scope := memory.Scope{ProjectID: "billing"}
	// A rule as conversation extraction writes it: category extracted,
	// tagged rule.
	rule := e.write(e.op, core.WriteRequest{Type: memory.Belief, Category: "extracted", Content: "Invoices must never be deleted",
		Metadata: json.RawMessage(`{"tags":["rule"]}`), Scope: scope})
	// The same tag on another category is not a rule.
	e.write(e.op, core.WriteRequest{Type: memory.Belief, Category: "notes", Content: "Invoices tagged but not a rule w1 w2 w3",
		Metadata: json.RawMessage(`{"tags":["rule"]}`), Scope: scope})
	good := e.write(e.op, core.WriteRequest{Type: memory.Skill, Content: "To regenerate invoices run make invoices",
		Metadata: json.RawMessage(`{"success_rate":0.9,"use_count":12}`), Scope: scope})
	bad := e.write(e.op, core.WriteRequest{Type: memory.Skill, Content: "To regenerate invoices edit the database by hand",
		Metadata: json.RawMessage(`{"success_rate":0.1,"use_count":9}`), Scope: scope})
	know := e.write(e.op, core.WriteRequest{Type: memory.Decision, Content: "Invoices are generated by the billing service nightly",
		Entities: []string{"service:billing"}, Scope: scope})
	secret := e.write(e.b, core.WriteRequest{Type: memory.Belief, Content: "Invoices secret plan of agent b", Access: memory.AgentOnly, Scope: scope})
	if _, err := e.svc.UpsertNode(e.ctx, e.op, core.NodeInput{Label: "team", NaturalKey: "finance"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.UpsertEdge(e.ctx, e.op, core.EdgeInput{From: "team:finance", To: "service:billing", Relation: "DEPENDS_ON"}); err != nil {
		t.Fatal(err)
	}
	sess := scope
	sess.SessionID = "s1"
	var recent []memory.Record
	for i := range 5 {
		recent = append(recent, e.write(e.a, core.WriteRequest{Type: memory.Episode, Content: fmt.Sprintf("step %d of the invoice run", i), Scope: sess}))
	}

	env := e.assemble(e.a, contextpack.Request{Query: "how are invoices regenerated", Scope: sess})
	c := section(env, "constraints")
	if len(c.Items) != 2 || c.Items[0].Kind != contextpack.KindPinned || c.Items[1].ID != rule.ID {
		t.Fatalf("constraints %+v", c.Items)
	}
	p := section(env, "procedures")
	if len(p.Items) != 2 || p.Items[0].ID != good.ID || p.Items[1].ID != bad.ID || *p.Items[0].SuccessRate != 0.9 || *p.Items[0].UseCount != 12 {
		t.Fatalf("procedures %+v, want the working one first", p.Items)
	}
	k := section(env, "knowledge")
	ids := map[string]bool{}
	for _, it := range k.Items {
		ids[it.ID] = true
		if it.Citation == "" {
			t.Errorf("knowledge without a citation: %+v", it)
		}
	}
	if !ids[know.ID] || ids[secret.ID] || ids[rule.ID] || ids[good.ID] {
		t.Fatalf("knowledge %+v: want %s, never agent b's private record or items of other sections", k.Items, know.ID)
	}
	f := section(env, "facts")
	if len(f.Items) != 1 || f.Items[0].Content != "team:finance DEPENDS_ON service:billing" {
		t.Fatalf("facts %+v", f.Items)
	}
	r := section(env, "recent")
	if len(r.Items) != 3 || r.Items[0].ID != recent[4].ID || r.Items[2].ID != recent[2].ID {
		t.Fatalf("recent %+v, want the newest three, newest first", r.Items)
	}
	for _, want := range []string{"## Constraints\n### AGENTS.md\nUse gofmt. (file://AGENTS.md)\n- Invoices must never be deleted (mem://",
		"## Procedures\n- To regenerate invoices run make invoices [success 0.90, used 12] (mem://", "## Facts\n- team:finance DEPENDS_ON service:billing\n",
		"## Recent activity\n- [episode] step 4 of the invoice run (mem://"} {
		if !strings.Contains(env.Markdown, want) {
			t.Errorf("markdown lacks %q:\n%s", want, env.Markdown)
		}
	}
	if strings.Contains(env.Markdown, "secret plan") {
		t.Fatal("agent a's context holds agent b's private record")
	}
	// Agent b, who wrote it, sees it.
	if kb := section(e.assemble(e.b, contextpack.Request{Query: "invoices secret plan", Scope: scope}), "knowledge"); !strings.Contains(fmt.Sprint(kb.Items), secret.ID) {
		t.Errorf("agent b does not see its own record: %+v", kb.Items)
	}
}

func TestSufficiency(t *testing.T) {
	e := newEnv(t, nil)
	if s := e.assemble(e.a, contextpack.Request{Query: "quantum chromodynamics"}).Sufficiency; s != contextpack.SufficiencyLow {
		t.Errorf("nothing found: %s, want low", s)
	}
	for i := range 4 {
		e.write(e.op, core.WriteRequest{Type: memory.Belief, Content: fmt.Sprintf("Kafka topic %d keeps events for seven days %s", i, filler(i, 3)),
			Source: &core.SourceInput{Kind: memory.Observed}})
	}
	if s := e.assemble(e.a, contextpack.Request{Query: "kafka topic retention events"}).Sufficiency; s != contextpack.SufficiencyHigh {
		t.Errorf("four confident matches: %s, want high", s)
	}
	conf := 0.3
	e.write(e.op, core.WriteRequest{Type: memory.Belief, Content: "Zookeeper maybe runs somewhere", Source: &core.SourceInput{Kind: memory.Inferred, Confidence: &conf}})
	if s := e.assemble(e.a, contextpack.Request{Query: "zookeeper"}).Sufficiency; s != contextpack.SufficiencyLow {
		t.Errorf("one unsure match: %s, want low", s)
	}
}

func TestRequestValidation(t *testing.T) {
	e := newEnv(t, nil)
	for field, req := range map[string]contextpack.Request{
		"query":           {},
		"budget_tokens":   {Query: "x", BudgetTokens: -1},
		"max_chunks":      {Query: "x", MaxChunks: 51},
		"max_item_tokens": {Query: "x", MaxItemTokens: -5},
	} {
		_, err := e.asm.Assemble(e.ctx, e.a, req)
		if fault.CodeOf(err) != fault.InvalidArgument || fault.As(err).Details["field"] != field {
			t.Errorf("%s: %v", field, err)
		}
	}
}
