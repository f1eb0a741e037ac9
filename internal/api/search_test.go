package api_test

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
)

// bagEmbedder is a deterministic test embedder: words hashed into 64
// dimensions, with synonyms folded so the dense signal can find what the
// lexical one cannot. It can be switched off to simulate an outage.
type bagEmbedder struct {
	down  atomic.Bool
	calls atomic.Int64
}

var synonyms = map[string]string{"automobile": "car", "vehicle": "car", "kitten": "cat", "feline": "cat"}

func (b *bagEmbedder) Model() string { return "test:bag" }
func (b *bagEmbedder) Dim() int      { return 64 }
func (b *bagEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	b.calls.Add(1)
	if b.down.Load() {
		return nil, errors.New("embedder down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			w = strings.Trim(w, ".,!?")
			if s, ok := synonyms[w]; ok {
				w = s
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%64]++
		}
		var n float32
		for _, x := range v {
			n += x * x
		}
		if n > 0 {
			n = float32(math.Sqrt(float64(n)))
			for j := range v {
				v[j] /= n
			}
		}
		out[i] = v
	}
	return out, nil
}

type searchResp struct {
	Route    string   `json:"route"`
	Signals  []string `json:"signals"`
	Degraded []string `json:"degraded"`
	Results  []struct {
		Record   memory.Record                   `json:"record"`
		Score    float64                         `json:"score"`
		Citation string                          `json:"citation"`
		Explain  map[string]retrieve.SignalScore `json:"explain"`
	} `json:"results"`
}

func (h *harness) search(who string, body map[string]any) searchResp {
	h.t.Helper()
	var r searchResp
	h.mustDo("POST", "/v1/search", who, body, 200, &r)
	return r
}

func contents(r searchResp) []string {
	var out []string
	for _, x := range r.Results {
		out = append(out, x.Record.Content)
	}
	return out
}

func TestSearchLexicalFiltersAndExplain(t *testing.T) {
	h := newHarness(t, nil)
	h.write("std", map[string]any{"type": "decision", "content": "We use SKIP LOCKED for job claims in PostgreSQL",
		"scope": map[string]any{"project_id": "jobs"}}, 201)
	h.write("std", map[string]any{"type": "belief", "content": "PostgreSQL runs on the db-1 host",
		"scope": map[string]any{"project_id": "infra"}}, 201)
	h.write("std", map[string]any{"type": "reflection", "content": "PostgreSQL vacuum tuning notes", "access": "agent"}, 201)
	h.write("restricted", map[string]any{"type": "belief", "content": "PostgreSQL is slow (unreviewed)"}, 202)

	r := h.search("std", map[string]any{"query": "PostgreSQL job claims", "explain": true})
	if r.Route != "simple" || len(r.Results) != 3 || r.Results[0].Record.Content != "We use SKIP LOCKED for job claims in PostgreSQL" {
		t.Fatalf("search: %+v", contents(r))
	}
	top := r.Results[0]
	if top.Citation != "mem://"+top.Record.ID+"@v1" || top.Explain["lexical"].Rank != 1 || top.Explain["lexical"].Score <= 0 || top.Score <= 0 {
		t.Fatalf("citation/explain: %+v", top)
	}
	// Filters apply before ranking.
	if got := contents(h.search("std", map[string]any{"query": "PostgreSQL", "scope": map[string]any{"project_id": "infra"}})); len(got) != 1 || got[0] != "PostgreSQL runs on the db-1 host" {
		t.Fatalf("scope filter: %v", got)
	}
	if got := contents(h.search("std", map[string]any{"query": "PostgreSQL", "types": []string{"decision"}})); len(got) != 1 {
		t.Fatalf("type filter: %v", got)
	}
	// Another agent does not see std's agent-level record; provisional
	// records need asking for.
	if got := contents(h.search("std2", map[string]any{"query": "PostgreSQL"})); len(got) != 2 {
		t.Fatalf("std2 sees %v", got)
	}
	if got := contents(h.search("op", map[string]any{"query": "PostgreSQL", "statuses": []string{"provisional"}})); len(got) != 1 || !strings.Contains(got[0], "unreviewed") {
		t.Fatalf("provisional: %v", got)
	}
	// Greetings are not looked up.
	if r := h.search("std", map[string]any{"query": "thanks!"}); r.Route != "skip" || len(r.Results) != 0 {
		t.Fatalf("skip route: %+v", r)
	}
	h.wantError("POST", "/v1/search", "std", map[string]any{"query": "x", "k": 1000}, 400, "invalid_argument")
	h.wantError("POST", "/v1/search", "std", map[string]any{"query": "x", "signals": []string{"psychic"}}, 400, "invalid_argument")
	h.wantError("POST", "/v1/search", "", map[string]any{"query": "x"}, 401, "unauthenticated")
}

func TestSearchSeesPatchesAndForgets(t *testing.T) {
	h := newHarness(t, nil)
	r := h.write("std", map[string]any{"type": "belief", "content": "The staging cluster lives in Frankfurt"}, 201).Record
	h.mustDo("PATCH", "/v1/records/"+r.ID, "std", map[string]any{"expected_version": 1, "content": "The staging cluster lives in Dublin"}, 200, nil)
	if got := contents(h.search("std", map[string]any{"query": "Frankfurt"})); len(got) != 0 {
		t.Fatalf("old content still indexed: %v", got)
	}
	if res := h.search("std", map[string]any{"query": "Dublin staging"}); len(res.Results) != 1 || res.Results[0].Citation != "mem://"+r.ID+"@v2" {
		t.Fatalf("patched content: %+v", res)
	}
	h.mustDo("DELETE", "/v1/records/"+r.ID, "std", nil, 200, nil)
	if got := contents(h.search("std", map[string]any{"query": "Dublin staging"})); len(got) != 0 {
		t.Fatalf("forgotten record found: %v", got)
	}
	// Superseded records are found only as of a time they were valid.
	old := h.write("std", map[string]any{"type": "belief", "content": "Standup is at nine", "valid_from": "2026-01-01T00:00:00Z"}, 201).Record
	h.write("std", map[string]any{"type": "belief", "content": "Standup is at ten", "valid_from": "2026-02-01T00:00:00Z", "supersedes": old.ID}, 201)
	if got := contents(h.search("std", map[string]any{"query": "standup"})); len(got) != 1 || got[0] != "Standup is at ten" {
		t.Fatalf("current: %v", got)
	}
	if got := contents(h.search("std", map[string]any{"query": "standup", "as_of": "2026-01-15T00:00:00Z"})); len(got) != 1 || got[0] != "Standup is at nine" {
		t.Fatalf("as_of: %v", got)
	}
	// known_at reads the versions current then.
	if got := contents(h.search("std", map[string]any{"query": "standup", "known_at": "2026-03-01T12:00:00Z"})); len(got) != 1 {
		t.Fatalf("known_at: %v", got)
	}
}

func TestNearDuplicatesAndConflicts(t *testing.T) {
	h := newHarness(t, nil)
	first := h.write("std", map[string]any{"type": "preference", "content": "Alice prefers PostgreSQL for backend work",
		"entities": []string{"person:alice"}, "scope": map[string]any{"user_id": "alice"}}, 201).Record
	dup := h.write("std2", map[string]any{"type": "preference", "content": "alice prefers PostgreSQL for backend work!",
		"entities": []string{"person:alice"}, "scope": map[string]any{"user_id": "alice"}}, 200)
	if dup.Decision != "duplicate" || dup.Reason != "near_duplicate" || dup.Record.ID != first.ID {
		t.Fatalf("near duplicate: %+v", dup)
	}
	// Same words in another scope are not duplicates.
	h.write("std", map[string]any{"type": "preference", "content": "alice prefers PostgreSQL for backend work!",
		"entities": []string{"person:alice"}, "scope": map[string]any{"user_id": "bob"}}, 201)
	// Episodes are events: the same words twice are two records.
	h.write("std", map[string]any{"type": "episode", "content": "user: thanks!"}, 201)
	h.write("std", map[string]any{"type": "episode", "content": "user: thanks!"}, 201)

	// A contradiction supersedes the old value by default.
	c := h.write("std", map[string]any{"type": "preference", "content": "Alice prefers MySQL for backend work",
		"entities": []string{"person:alice"}, "scope": map[string]any{"user_id": "alice"}}, 201)
	if c.Decision != "accepted" || c.Reason != "conflict" || c.Record.Supersedes == nil || *c.Record.Supersedes != first.ID {
		t.Fatalf("conflict: %+v", c)
	}
	var old memory.Record
	h.mustDo("GET", "/v1/records/"+first.ID, "std", nil, 200, &old)
	if old.Status != memory.Superseded || old.SupersededBy == nil || *old.SupersededBy != c.Record.ID {
		t.Fatalf("old record: %+v", old)
	}
	// Unrelated facts about the same subject are not conflicts.
	other := h.write("std", map[string]any{"type": "preference", "content": "Alice likes long design documents before coding",
		"entities": []string{"person:alice"}, "scope": map[string]any{"user_id": "alice"}}, 201)
	if other.Reason == "conflict" {
		t.Fatalf("false conflict: %+v", other)
	}
}

func TestConflictQueueAction(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.Conflicts.Action = gate.ConflictQueue })
	first := h.write("std", map[string]any{"type": "belief", "content": "The release train leaves on Tuesday"}, 201).Record
	c := h.write("std", map[string]any{"type": "belief", "content": "The release train leaves on Thursday"}, 202)
	if c.Decision != "queued" || c.Reason != "conflict" || c.ApprovalID == "" {
		t.Fatalf("queued conflict: %+v", c)
	}
	var page struct {
		Items []struct{ Kind string } `json:"items"`
	}
	h.mustDo("GET", "/v1/approvals", "op", nil, 200, &page)
	if len(page.Items) != 1 || page.Items[0].Kind != "conflict" {
		t.Fatalf("queue: %+v", page)
	}
	h.mustDo("POST", "/v1/approvals/"+c.ApprovalID+"/approve", "op", nil, 200, nil)
	var old memory.Record
	h.mustDo("GET", "/v1/records/"+first.ID, "std", nil, 200, &old)
	if old.Status != memory.Superseded {
		t.Fatalf("approval did not supersede: %s", old.Status)
	}
}

func TestDenseSignalAndDegradation(t *testing.T) {
	emb := &bagEmbedder{}
	h := newHarnessWith(t, nil, emb)
	h.write("std", map[string]any{"type": "belief", "content": "Bob bought a new car last spring"}, 201)
	h.write("std", map[string]any{"type": "belief", "content": "The office plant needs water on Mondays"}, 201)
	// Writes did not call the embedder: vectors are filled in by the job.
	if n := emb.calls.Load(); n != 0 {
		t.Fatalf("writes called the embedder %d times", n)
	}
	if n, err := h.svc.EmbedPending(t.Context(), 100); err != nil || n != 2 {
		t.Fatalf("EmbedPending = %d, %v", n, err)
	}
	var st core.IndexStats
	h.mustDo("GET", "/v1/index", "std", nil, 200, &st)
	if st.Vectors != 2 || st.Embedded != 2 || st.Total != 2 || st.Model != "test:bag" || st.VectorIndex != "exact" {
		t.Fatalf("index status %+v", st)
	}
	// "automobile" shares no term with "car": only the dense signal finds it.
	r := h.search("std", map[string]any{"query": "automobile purchase", "explain": true})
	if len(r.Results) == 0 || r.Results[0].Record.Content != "Bob bought a new car last spring" {
		t.Fatalf("dense: %+v", contents(r))
	}
	if _, ok := r.Results[0].Explain["dense"]; !ok || !containsStr(r.Signals, "dense") {
		t.Fatalf("explain lacks dense: %+v", r.Results[0].Explain)
	}
	if got := h.search("std", map[string]any{"query": "automobile purchase", "signals": []string{"lexical"}}); len(got.Results) != 0 {
		t.Fatalf("lexical alone found %v", contents(got))
	}
	// The embedder goes down: search degrades to lexical and says so.
	emb.down.Store(true)
	r = h.search("std", map[string]any{"query": "office plant"})
	if len(r.Results) != 1 || len(r.Degraded) == 0 || containsStr(r.Signals, "dense") {
		t.Fatalf("degraded search: %+v", r)
	}
	// Writes still succeed, and the job catches up when it recovers.
	h.write("std", map[string]any{"type": "belief", "content": "The kitten sleeps on the sofa"}, 201)
	if _, err := h.svc.EmbedPending(t.Context(), 100); err == nil {
		t.Fatal("EmbedPending succeeded with the embedder down")
	}
	emb.down.Store(false)
	if n, err := h.svc.EmbedPending(t.Context(), 100); err != nil || n != 1 {
		t.Fatalf("catch-up EmbedPending = %d, %v", n, err)
	}
	if got := contents(h.search("std", map[string]any{"query": "feline", "signals": []string{"dense"}})); len(got) == 0 || got[0] != "The kitten sleeps on the sofa" {
		t.Fatalf("after recovery: %v", got)
	}
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func TestIndexFollowsOtherWriters(t *testing.T) {
	h := newHarness(t, nil)
	// A second service on the same database, as the CLI would be.
	other := core.New(core.Options{Store: h.store, Policy: gate.Default()})
	if _, err := other.Write(t.Context(), core.LocalOperator("default"), core.WriteRequest{Type: "belief", Content: "Written by the CLI about zeppelins"}); err != nil {
		t.Fatal(err)
	}
	if got := contents(h.search("std", map[string]any{"query": "zeppelins"})); len(got) != 0 {
		t.Fatalf("visible before catch-up: %v", got)
	}
	if n, err := h.index.CatchUp(t.Context(), h.store); err != nil || n == 0 {
		t.Fatalf("CatchUp = %d, %v", n, err)
	}
	if got := contents(h.search("std", map[string]any{"query": "zeppelins"})); len(got) != 1 {
		t.Fatalf("after catch-up: %v", got)
	}
}

func TestRetrievalUpdatesUsageAsynchronously(t *testing.T) {
	h := newHarness(t, nil)
	r := h.write("std", map[string]any{"type": "belief", "content": "Counters count retrievals"}, 201).Record
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { h.svc.RunUsage(ctx, time.Hour) })
	h.search("std", map[string]any{"query": "counters"})
	h.search("std", map[string]any{"query": "retrievals"})
	cancel()
	wg.Wait() // RunUsage drains and flushes on shutdown
	var got memory.Record
	h.mustDo("GET", "/v1/records/"+r.ID, "std", nil, 200, &got)
	if got.RetrievalCount != 1 || got.LastRetrievedAt == nil {
		t.Fatalf("usage: count %d last %v (two searches in one batch count once per record)", got.RetrievalCount, got.LastRetrievedAt)
	}
}
