package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// lmeFile writes a LongMemEval-format file of made-up conversations: 3
// instances whose haystacks share a session (as LongMemEval's do), one
// turn longer than 2 KB, one with an e-mail address (quarantined by the
// PII screen) and one tiny turn without plain words.
func lmeFile(t *testing.T) (path string, turns int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	syl := []string{"ba", "ko", "ri", "mu", "te", "lo", "sa", "ven", "dor", "pil", "quo", "zan", "fe", "gri", "hal"}
	word := func() string {
		w := ""
		for range 2 + rng.IntN(2) {
			w += syl[rng.IntN(len(syl))]
		}
		return w
	}
	sentence := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = word()
		}
		return strings.ToUpper(ws[0][:1]) + strings.Join(ws, " ")[1:] + "."
	}
	type turn struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		HasAnswer bool   `json:"has_answer,omitempty"`
	}
	session := func(n int) []turn {
		var s []turn
		for i := range n {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			s = append(s, turn{Role: role, Content: sentence(8 + rng.IntN(10))})
		}
		return s
	}
	shared := session(4)
	long := strings.Repeat(sentence(12)+" ", 40) // > 2 KB
	var insts []map[string]any
	for q := range 3 {
		sessions := [][]turn{shared, session(6), session(5)}
		ids := []string{"shared", fmt.Sprintf("s%d-1", q), fmt.Sprintf("s%d-2", q)}
		switch q {
		case 0:
			sessions[1][2].Content = long
		case 1:
			sessions[2][1].Content = "Write to hal.venko@example.com about the " + word() + " tickets."
			sessions[2][3].Content = "ok"
		}
		insts = append(insts, map[string]any{
			"question_id": fmt.Sprintf("q%d", q), "question_type": "single-session-user",
			"question": "What did I say about the " + word() + " and the " + word() + "?", "answer": "x",
			"question_date":        "2023/06/01 (Thu) 10:00",
			"haystack_session_ids": ids, "haystack_dates": []string{"2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "2023/05/22 (Mon) 11:00"},
			"haystack_sessions": sessions, "answer_session_ids": []string{ids[1]},
		})
	}
	b, err := json.Marshal(insts)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "lme.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, 4 + 3*(6+5)
}

func loadLME(t *testing.T, path string) *Dataset {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ds, err := LoadLongMemEval(f)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// opener opens dir the way the CLI does: store, index, service, bootstrap.
func opener(dir string, emb embed.Embedder) Opener {
	return func(ctx context.Context, mode retrieve.VectorMode) (*Opened, error) {
		st, err := sqlite.Open(ctx, filepath.Join(dir, "memgate.db"), sqlite.Options{})
		if err != nil {
			return nil, err
		}
		opts := retrieve.Options{Embedder: emb, Vectors: mode}
		ix := retrieve.New(opts)
		restored := false
		rs, err := ix.Restore(ctx, st, filepath.Join(dir, "index.snapshot"))
		took := rs.Total
		if err == nil {
			restored = true
		} else {
			ix = retrieve.New(opts)
			stats, err := ix.Load(ctx, st)
			if err != nil {
				st.Close()
				return nil, err
			}
			took = stats.Total
		}
		svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix})
		if _, _, err := svc.Bootstrap(ctx); err != nil {
			st.Close()
			return nil, err
		}
		return &Opened{Service: svc, Index: ix, Close: st.Close, IndexLoad: took, Restored: restored}, nil
	}
}

func TestLatencyCorpus(t *testing.T) {
	path, turns := lmeFile(t)
	c, err := newLatCorpus(loadLME(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.turns) != turns || len(c.questions) != 3 {
		t.Fatalf("%d distinct turns, %d questions; want %d and 3", len(c.turns), len(c.questions), turns)
	}
	seen := map[string]bool{}
	for i := range 2000 {
		s := c.text(i)
		base := c.turns[i%len(c.turns)]
		if seen[s] {
			t.Fatalf("record %d repeats %q", i, s)
		}
		seen[s] = true
		if len(s) > latMaxRecord || !strings.HasPrefix(s, base) {
			t.Fatalf("record %d (%d bytes) is not its turn varied: %q", i, len(s), s)
		}
		if i < len(c.turns) && s != base {
			t.Errorf("first pass record %d varied: %q", i, s)
		}
		extra := strings.TrimPrefix(s, base)
		if i >= len(c.turns) && (len(strings.Fields(extra)) < 1 || len(strings.Fields(extra)) > 6) {
			t.Errorf("record %d adds %q", i, extra)
		}
		if strings.IndexFunc(extra, unicode.IsDigit) >= 0 {
			t.Errorf("record %d adds digits: %q", i, extra)
		}
	}
	if latType(0) != memory.Episode || latType(100) != memory.Belief || latProject(1234) != "p34" {
		t.Error("types or scopes")
	}
	qs := c.queries(40, 500, 1)
	scoped := 0
	for _, q := range qs {
		if q.project != "" {
			scoped++
		}
		if q.turn && len(strings.Fields(q.text)) > latQueryLen {
			t.Errorf("query %q", q.text)
		}
	}
	if len(qs) != 40 || scoped == 0 || scoped == 40 {
		t.Errorf("%d queries, %d scoped", len(qs), scoped)
	}
}

// checkLatencyLine parses the last output line and checks that the
// counts add up.
func checkLatencyLine(t *testing.T, out string, res *LatencyResult, dense bool) map[string]any {
	t.Helper()
	if !strings.HasSuffix(out, "}\n") {
		t.Fatalf("output does not end with the JSON line: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var j map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &j); err != nil {
		t.Fatalf("last line is not JSON: %v", err)
	}
	if j["bench"] != "latency" || j["records"] != 300.0 {
		t.Errorf("json %v", j)
	}
	sum := 0.0
	for _, v := range j["decisions"].(map[string]any) {
		sum += v.(float64)
	}
	types := j["types"].(map[string]any)
	// Blocks of 100 records alternate: 0-99 episodes, 100-199 beliefs, ...
	if sum != 300 || types["episode"] != 200.0 || types["belief"] != 100.0 {
		t.Errorf("decisions %v types %v do not add up to 300", j["decisions"], types)
	}
	dec := j["decisions"].(map[string]any)
	dup, _ := dec["duplicate"].(float64)
	rej, _ := dec["rejected"].(float64)
	if j["docs"] != 300-dup-rej {
		t.Errorf("docs %v, decisions %v", j["docs"], dec)
	}
	if q, _ := dec["quarantined"].(float64); q < 1 || j["quarantined"] != q {
		t.Errorf("quarantined %v, decisions %v", j["quarantined"], dec)
	}
	w := j["write"].(map[string]any)
	for _, k := range []string{"per_s", "p50_ms", "p95_ms", "p99_ms"} {
		if v, _ := w[k].(float64); v <= 0 {
			t.Errorf("write %s = %v", k, w[k])
		}
	}
	if w["p50_ms"].(float64) > w["p95_ms"].(float64) || w["p95_ms"].(float64) > w["p99_ms"].(float64) {
		t.Errorf("write percentiles %v", w)
	}
	search := j["search"].(map[string]any)
	want := []string{"lexical", "hybrid"}
	if dense {
		want = []string{"lexical", "dense_exact", "dense_hnsw", "hybrid_exact", "hybrid_hnsw"}
	}
	if len(search) != len(want) {
		t.Errorf("search modes %v, want %v", search, want)
	}
	for _, m := range want {
		s, ok := search[m].(map[string]any)
		if !ok || s["p50_ms"].(float64) <= 0 || s["p50_ms"].(float64) > s["p99_ms"].(float64) {
			t.Errorf("search %s: %v", m, search[m])
		}
		if mr := res.Mode(m); mr == nil || mr.Lat.N != res.Queries || mr.Errors != 0 || mr.Hits == 0 ||
			mr.Scoped.N+mr.Unscoped.N != res.Rounds*res.Queries || mr.Scoped.N == 0 {
			t.Errorf("mode %s: %+v", m, mr)
		}
	}
	if j["queries"] != 30.0 || res.Queries != 30 || j["search_rounds"] != float64(res.Rounds) || res.Rounds < 1 {
		t.Errorf("queries %v", j["queries"])
	}
	cold, rebuild := j["cold_start_s"].(map[string]any), j["cold_rebuild_s"].(map[string]any)
	if cold["exact"].(float64) <= 0 || cold["hnsw"].(float64) <= 0 || rebuild["exact"].(float64) <= 0 || rebuild["hnsw"].(float64) <= 0 {
		t.Errorf("cold start %v, rebuild %v", cold, rebuild)
	}
	for _, c := range res.Cold {
		if c.Rebuild.Docs != int(j["docs"].(float64)) || c.Rebuild.Restored || c.Rebuild.IndexLoad <= 0 {
			t.Errorf("cold start %s: %+v", c.Mode, c.Rebuild)
		}
	}
	if j["rss_mib"].(float64) <= 0 || j["heap_mib"].(float64) <= 0 || j["db_mib"].(float64) <= 0 {
		t.Errorf("memory or disk: %v %v %v", j["rss_mib"], j["heap_mib"], j["db_mib"])
	}
	return j
}

func TestLatencyLexicalOnly(t *testing.T) {
	path, _ := lmeFile(t)
	ds := loadLME(t, path)
	dir := t.TempDir()
	res, err := RunLatency(context.Background(), ds, LatencyOptions{Records: 300, Queries: 30, Warmup: 5, Writers: 3,
		Principal: core.LocalOperator(memory.DefaultWorkspace), Open: opener(dir, nil), DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, jsonOnly := range []bool{false, true} {
		var out bytes.Buffer
		if err := RenderLatency(&out, res, LatencyRender{Data: path, JSONOnly: jsonOnly}); err != nil {
			t.Fatal(err)
		}
		j := checkLatencyLine(t, out.String(), res, false)
		if j["embedder"] != "none" || j["hnsw_recall@10"] != nil || j["vectors"] != 0.0 {
			t.Errorf("json %v", j)
		}
		text := out.String()
		if n := strings.Count(text, "\n"); jsonOnly && n != 1 || !jsonOnly && (n < 20 || !strings.Contains(text, "p95 ms") ||
			!strings.Contains(text, "cold start")) {
			t.Errorf("report (json-only %v):\n%s", jsonOnly, text)
		}
	}
}

func TestLatencyWithEmbedder(t *testing.T) {
	path, _ := lmeFile(t)
	ds := loadLME(t, path)
	dir := t.TempDir()
	var progress bytes.Buffer
	profiles := t.TempDir()
	res, err := RunLatency(context.Background(), ds, LatencyOptions{Records: 300, Queries: 30, Warmup: 5, Writers: 2, Rounds: 2,
		Principal: core.LocalOperator(memory.DefaultWorkspace), Open: opener(dir, hashEmbedder{}), DataDir: dir,
		Progress: &progress, ProfileDir: profiles,
		Snapshot: func(ix *retrieve.Engine) (string, error) {
			path := filepath.Join(dir, "index.snapshot")
			return path, ix.SaveSnapshot(path)
		}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := RenderLatency(&out, res, LatencyRender{Data: path}); err != nil {
		t.Fatal(err)
	}
	j := checkLatencyLine(t, out.String(), res, true)
	r, _ := j["hnsw_recall@10"].(float64)
	if j["embedder"] != "test-hash" || r <= 0 || r > 1 || res.RecallN == 0 {
		t.Errorf("embedder %v recall %v over %d", j["embedder"], j["hnsw_recall@10"], res.RecallN)
	}
	if res.Embedded != res.Docs || res.Vectors != res.Docs || res.VectorIndex != "exact" || res.AltIndex != "hnsw" {
		t.Errorf("embedded %d, vectors %d, docs %d, indexes %s/%s", res.Embedded, res.Vectors, res.Docs, res.VectorIndex, res.AltIndex)
	}
	calls := 0
	for _, c := range res.EmbedCalls {
		calls += c.Vectors
	}
	if calls != res.Embedded || len(res.EmbedCalls) == 0 {
		t.Errorf("embedding calls %+v add up to %d, want %d", res.EmbedCalls, calls, res.Embedded)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.snapshot")); err == nil {
		t.Error("the index snapshot was left behind")
	}
	snaps, _ := j["snapshot"].(map[string]any)
	for _, c := range res.Cold {
		r := c.Restore
		if c.Rebuild.Vectors != res.Docs || string(c.Mode) != c.Rebuild.VectorIndex || r == nil || !r.Restored ||
			r.Docs != res.Docs || r.Vectors != res.Docs || r.VectorIndex != string(c.Mode) || c.SnapshotBytes == 0 || snaps[string(c.Mode)] == nil {
			t.Errorf("cold start %s: rebuild %+v restore %+v snapshot %d bytes", c.Mode, c.Rebuild, r, c.SnapshotBytes)
		}
	}
	p := progress.String()
	if !strings.Contains(p, "write") || !strings.Contains(p, "embed") || !strings.Contains(p, "done in") {
		t.Errorf("progress %q", p)
	}
	for _, f := range []string{"write.pprof", "embed.pprof", "search.pprof", "load.pprof"} {
		if fi, err := os.Stat(filepath.Join(profiles, f)); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v", f, err)
		}
	}
}
