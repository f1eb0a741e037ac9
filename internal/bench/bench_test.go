package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/svctest"
)

// Two LoCoMo conversations. conv-a has an exact duplicate turn (D1:4 of
// D1:3), an image turn, a turn the PII screen quarantines (D2:2), a
// session date without turns, and malformed evidence; conv-b repeats a
// conv-a turn verbatim, which scope isolation must keep apart.
const locomoFixture = `[
 {"sample_id": "conv-a",
  "conversation": {
   "speaker_a": "Alice", "speaker_b": "Bob",
   "session_1_date_time": "1:56 pm on 8 May, 2023",
   "session_1": [
    {"speaker": "Alice", "dia_id": "D1:1", "text": "I adopted a golden retriever puppy yesterday."},
    {"speaker": "Bob", "dia_id": "D1:2", "text": "Wonderful! My sister plays the cello in an orchestra."},
    {"speaker": "Alice", "dia_id": "D1:3", "text": "Grandma knitted a purple scarf."},
    {"speaker": "Alice", "dia_id": "D1:4", "text": "Grandma knitted a purple scarf."}
   ],
   "session_2_date_time": "10:05 am on 3 June, 2023",
   "session_2": [
    {"speaker": "Bob", "dia_id": "D2:1", "text": "We went kayaking across the glacier lake.", "img_url": ["x"], "blip_caption": "a photo of a red canoe"},
    {"speaker": "Alice", "dia_id": "D2:2", "text": "Reach me at alice.wong@example.com for the recipe."},
    {"speaker": "Bob", "dia_id": "D2:3", "text": "Tomorrow the marathon starts downtown."}
   ],
   "session_3_date_time": "2:00 pm on 9 June, 2023",
   "session_3": []
  },
  "qa": [
   {"question": "Which dog breed was the golden retriever puppy?", "answer": "golden retriever", "evidence": ["D1:1"], "category": 4},
   {"question": "Which instrument does the sister play in the orchestra?", "answer": "cello", "evidence": ["D1:2", "D2:3"], "category": 1},
   {"question": "Who knitted the purple scarf?", "answer": "Grandma", "evidence": ["D1:3; D1:4"], "category": 2},
   {"question": "What boat was in the kayaking photo?", "answer": "a canoe", "evidence": ["D:2:1", "D9:9"], "category": 3},
   {"question": "When is the marathon?", "answer": 2023, "evidence": ["D30:05"], "category": 2},
   {"question": "Where can the recipe be requested?", "adversarial_answer": "by email", "evidence": ["D2:2"], "category": 5}
  ]},
 {"sample_id": "conv-b",
  "conversation": {
   "speaker_a": "Alice", "speaker_b": "Dan",
   "session_1_date_time": "7:00 pm on 1 July, 2023",
   "session_1": [
    {"speaker": "Alice", "dia_id": "D1:1", "text": "I adopted a golden retriever puppy yesterday."},
    {"speaker": "Dan", "dia_id": "D1:2", "text": "The golden gate bridge looked foggy."}
   ]
  },
  "qa": [
   {"question": "Where was the foggy golden bridge?", "answer": "San Francisco", "evidence": ["D1:2"], "category": 4},
   {"question": "What about the retriever puppy and the bridge?", "answer": "both", "evidence": ["D1:1", "D1:2"], "category": 1}
  ]}
]`

// Five LongMemEval instances: a repeated session id whose second copy
// must be ignored (q1), evidence split over two sessions with one turn the
// query cannot find (q2), evidence on an exact duplicate turn (q3), an
// abstention question with evidence (q4_abs) and one without (q5_abs).
const lmeFixture = `[
 {"question_id": "q1", "question_type": "single-session-user", "question": "Which colour was the bicycle I bought last weekend?",
  "question_date": "2023/06/01 (Thu) 10:00", "answer": "teal", "answer_session_ids": ["s1"],
  "haystack_session_ids": ["s1", "s2", "s1"],
  "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "2023/05/22 (Mon) 11:00"],
  "haystack_sessions": [
   [{"role": "user", "content": "I bought a teal bicycle last weekend.", "has_answer": true},
    {"role": "assistant", "content": "Lovely choice."}],
   [{"role": "user", "content": "Recommend a lasagna recipe."},
    {"role": "assistant", "content": "Try spinach lasagna."}],
   [{"role": "user", "content": "Never mind the teal bicycle I bought.", "has_answer": true}]
  ]},
 {"question_id": "q2", "question_type": "multi-session", "question": "How many marathons did I run, and what else?",
  "question_date": "2023/06/01 (Thu) 10:00", "answer": 3, "answer_session_ids": ["a1", "a2"],
  "haystack_session_ids": ["a1", "a2"],
  "haystack_dates": ["2023/04/01 (Sat) 09:00", "not a date"],
  "haystack_sessions": [
   [{"role": "user", "content": "I ran two marathons in spring.", "has_answer": true},
    {"role": "assistant", "content": "Impressive effort!"}],
   [{"role": "user", "content": "I finished one triathlon in August.", "has_answer": true},
    {"role": "assistant", "content": "ok"}, {"role": "user", "content": "ok"}, {"role": "assistant", "content": "ok"}]
  ]},
 {"question_id": "q3", "question_type": "single-session-user", "question": "What is my locker code?",
  "question_date": "2023/06/01 (Thu) 10:00", "answer": "seventeen", "answer_session_ids": ["x1"],
  "haystack_session_ids": ["x1"], "haystack_dates": ["2023/03/03 (Fri) 03:03"],
  "haystack_sessions": [
   [{"role": "user", "content": "My locker code is seventeen."},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "My locker code is seventeen.", "has_answer": true}]
  ]},
 {"question_id": "q4_abs", "question_type": "knowledge-update", "question": "When does the museum close?",
  "question_date": "2023/06/01 (Thu) 10:00", "answer": "unknown", "answer_session_ids": ["m1"],
  "haystack_session_ids": ["m1"], "haystack_dates": ["2023/03/03 (Fri) 03:03"],
  "haystack_sessions": [[{"role": "user", "content": "The museum opens at nine.", "has_answer": true}]]},
 {"question_id": "q5_abs", "question_type": "temporal-reasoning", "question": "When did I sail?",
  "question_date": "2023/06/01 (Thu) 10:00", "answer": "never", "answer_session_ids": [],
  "haystack_session_ids": ["z1"], "haystack_dates": ["2023/03/03 (Fri) 03:03"],
  "haystack_sessions": [[{"role": "user", "content": "I like boats."}]]}
]`

// newService opens a fresh data directory the way the CLI does (store,
// search index, service, bootstrap).
func newService(t *testing.T, emb embed.Embedder) *core.Service {
	t.Helper()
	ctx := context.Background()
	st := svctest.SQLite(t)
	ix := retrieve.New(retrieve.Options{Embedder: emb})
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	// The fixtures' duplicate turns must be deduplicated whatever the
	// default policy says about episodes.
	pol := gate.Default()
	pol.Duplicates.Exact, pol.Duplicates.IgnoreTypes = true, nil
	pol.RateLimit.User = gate.Bucket{}
	svc := core.New(core.Options{Store: st, Policy: pol, Index: ix})
	if _, _, err := svc.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	return svc
}

// episodes lists the episode records of one benchmark conversation.
func episodes(t *testing.T, svc *core.Service, project string) []memory.Record {
	t.Helper()
	res, err := svc.List(context.Background(), core.LocalOperator(memory.DefaultWorkspace), core.ListRequest{
		Types: []memory.Type{memory.Episode}, Statuses: []memory.Status{memory.Active, memory.Quarantined},
		Scope: memory.Scope{AppID: AppID, ProjectID: project}, IncludeSensitive: true, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	return res.Records
}

// spy records every write request.
type spy struct {
	Service
	mu     sync.Mutex
	writes []core.WriteRequest
}

func (s *spy) Write(ctx context.Context, p memory.Principal, req core.WriteRequest) (core.WriteResult, error) {
	s.mu.Lock()
	s.writes = append(s.writes, req)
	s.mu.Unlock()
	return s.Service.Write(ctx, p, req)
}

func run(t *testing.T, ds *Dataset, svc Service, o Options) *Result {
	t.Helper()
	if o.Principal.ID == "" {
		o.Principal = core.LocalOperator(memory.DefaultWorkspace)
	}
	if o.Gateway == nil {
		cs, ok := svc.(*core.Service)
		if !ok {
			cs = svc.(*spy).Service.(*core.Service)
		}
		g, stop, err := StartGateway(context.Background(), cs, memory.DefaultWorkspace, true)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		o.Gateway = g
	}
	res, err := Run(context.Background(), svc, ds, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func checkFig(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !near(got, want) {
		t.Errorf("%s = %.4f, want %.4f", what, got, want)
	}
}

func group(t *testing.T, sum *Summary, name string) GroupStats {
	t.Helper()
	for _, g := range sum.Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %q in %+v", name, sum.Groups)
	return GroupStats{}
}

func TestLoCoMoPipeline(t *testing.T) {
	ds, err := LoadLoCoMo(strings.NewReader(locomoFixture))
	if err != nil {
		t.Fatal(err)
	}
	sp := &spy{Service: newService(t, nil)}
	res := run(t, ds, sp, Options{Workers: 3, IngestWorkers: 2})

	// Ingestion through the gateway and the gate, one episode per turn.
	eps := episodes(t, sp.Service.(*core.Service), "conv-a")
	if res.Turns != 9 || res.Flushes != 3 {
		t.Fatalf("%d turns, %d flushes; want 9 turns in 3 sessions", res.Turns, res.Flushes)
	}
	// The turn with the speaker's own email address is flagged, not
	// quarantined: it stays searchable (docs/gate.md).
	want := map[string]int{memory.DecisionAccepted: 7, memory.DecisionDuplicate: 1, memory.DecisionFlagged: 1}
	for k, v := range want {
		if res.Decisions[k] != v {
			t.Errorf("decisions %v, want %v", res.Decisions, want)
			break
		}
	}
	if res.Quarantined != 0 || res.Decisions[memory.DecisionQuarantined] != 0 {
		t.Errorf("quarantined %d, want 0", res.Quarantined)
	}
	var img memory.Record
	for _, r := range eps {
		if strings.Contains(r.Content, "kayaking") {
			img = r
		}
	}
	if img.Content != "Bob: We went kayaking across the glacier lake. [shares a photo of a red canoe]" || img.Type != memory.Episode {
		t.Errorf("image turn written as %q (%s)", img.Content, img.Type)
	}
	if img.Scope.AppID != "bench" || img.Scope.ProjectID != "conv-a" || img.Scope.SessionID != "conv-a:2" || img.Scope.UserID == "" {
		t.Errorf("scope %+v", img.Scope)
	}
	if img.ValidFrom == nil || !img.ValidFrom.Equal(time.Date(2023, 6, 3, 10, 5, 0, 0, time.UTC)) {
		t.Errorf("valid_from %v", img.ValidFrom)
	}
	var meta map[string]any
	if err := json.Unmarshal(img.Metadata, &meta); err != nil || meta["speaker"] != "Bob" || meta["role"] != "user" {
		t.Errorf("metadata %s", img.Metadata)
	}

	// Metrics, by hand. Headline questions (categories 1-4):
	//   a1 D1:1 found first                         1 at every k
	//   a2 D1:2 found, D2:3 unreachable              1/2 at every k
	//   a3 D1:3+D1:4 are one record (duplicate)      1 at every k
	//   a4 "D:2:1" → D2:1 found; D9:9 dropped        1 at every k
	//   a5 "D30:05" → D30:5 does not exist           skipped
	//   b1 D1:2 first                                1 at every k
	//   b2 D1:1, D1:2 both match: one at k=1         1/2 at k=1, 1 at k>=5
	sum := Summarize(ds, res)
	if sum.Overall.N != 6 || sum.Skipped != 1 {
		t.Fatalf("scored %d, skipped %d; want 6 and 1", sum.Overall.N, sum.Skipped)
	}
	checkFig(t, "recall@1", sum.Overall.Recall[1], 5.0/6)
	checkFig(t, "recall_all@1", sum.Overall.All[1], 4.0/6)
	for _, k := range []int{5, 10, 20, 50} {
		checkFig(t, "recall@k", sum.Overall.Recall[k], 5.5/6)
		checkFig(t, "recall_all@k", sum.Overall.All[k], 5.0/6)
	}
	mh := group(t, sum, "multi_hop")
	checkFig(t, "multi_hop recall@1", mh.Stats.Recall[1], 0.5)
	checkFig(t, "multi_hop recall@10", mh.Stats.Recall[10], 0.75)
	checkFig(t, "multi_hop recall_all@10", mh.Stats.All[10], 0.5)
	if tg := group(t, sum, "temporal"); tg.Stats.N != 1 || tg.Skipped != 1 {
		t.Errorf("temporal: %d scored, %d skipped", tg.Stats.N, tg.Skipped)
	}
	// Category 5 is separate; its evidence, the flagged turn, is found.
	adv := group(t, sum, "adversarial")
	if adv.Headline || adv.Stats.N != 1 || adv.Stats.Recall[50] != 1 {
		t.Errorf("adversarial %+v %+v", adv, adv.Stats)
	}

	// Scope isolation: conv-a's puppy question finds only its own turn.
	for _, q := range res.Questions {
		if q.Question.ID == "conv-a#q1" {
			if len(q.Hits) != 1 || q.Rank["D1:1"] != 1 {
				t.Errorf("conv-a#q1 hits %+v ranks %v", q.Hits, q.Rank)
			}
		}
		if q.Question.ID == "conv-a#q3" && (len(q.Hits) == 0 || len(q.Hits[0].Turns) != 2) {
			t.Errorf("duplicate turns not mapped to one record: %+v", q.Hits)
		}
	}

	// The report: one line per scored question.
	var rep bytes.Buffer
	if err := WriteReport(&rep, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(rep.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("report has %d lines, want 7", len(lines))
	}
	var l reportLine
	if err := json.Unmarshal([]byte(lines[1]), &l); err != nil {
		t.Fatal(err)
	}
	if l.ID != "conv-a#q2" || l.Recall10 != 0.5 || l.All10 || len(l.Evidence) != 2 || l.Evidence[1].Rank != 0 ||
		l.Evidence[0].Content != "Bob: Wonderful! My sister plays the cello in an orchestra." || len(l.Hits) == 0 || l.Hits[0].Turns[0] != "D1:2" {
		t.Errorf("report line %s", lines[1])
	}
}

func TestLongMemEvalPipeline(t *testing.T) {
	ds, err := LoadLongMemEval(strings.NewReader(lmeFixture))
	if err != nil {
		t.Fatal(err)
	}
	sp := &spy{Service: newService(t, nil)}
	res := run(t, ds, sp, Options{KMax: 20})
	// q1 ingests 4 turns (the repeated s1 is ignored), q2 6, q3 3, q4 1, q5 1.
	if res.Turns != 15 || res.Ignored != 1 || res.Decisions[memory.DecisionAccepted]+res.Decisions[memory.DecisionDuplicate] != 15 {
		t.Fatalf("turns %d ignored %d decisions %v", res.Turns, res.Ignored, res.Decisions)
	}
	if res.BadDates != 1 {
		t.Errorf("bad dates %d, want 1", res.BadDates)
	}
	// Exact duplicates within a session: q2's second "user: ok", q3's
	// repeated locker turn.
	if res.Decisions[memory.DecisionDuplicate] != 2 || res.Decisions[memory.DecisionAccepted] != 13 {
		t.Errorf("decisions %v", res.Decisions)
	}
	var w memory.Record
	for _, r := range episodes(t, sp.Service.(*core.Service), "q1") {
		if strings.Contains(r.Content, "teal bicycle") {
			w = r
		}
	}
	var meta map[string]any
	_ = json.Unmarshal(w.Metadata, &meta)
	if w.Content != "user: I bought a teal bicycle last weekend." || w.Scope.ProjectID != "q1" || w.Scope.SessionID != "q1:s1" ||
		w.Scope.AppID != "bench" || w.ValidFrom == nil || !w.ValidFrom.Equal(time.Date(2023, 5, 20, 2, 21, 0, 0, time.UTC)) ||
		meta["role"] != "user" || meta["speaker"] != "user" {
		t.Errorf("first turn stored as %+v %s", w, w.Metadata)
	}

	// q1: s1#0 first (any and all); q2: a1#0 first, a2#0 unreachable
	// (any only); q3: evidence x1#2 is a duplicate of x1#0, found first.
	sum := Summarize(ds, res)
	if sum.Overall.N != 3 || sum.Skipped != 1 {
		t.Fatalf("scored %d skipped %d", sum.Overall.N, sum.Skipped)
	}
	for _, k := range sum.Ks {
		checkFig(t, "recall_any", sum.Overall.Any[k], 1)
		checkFig(t, "recall_all", sum.Overall.All[k], 2.0/3)
	}
	if g := group(t, sum, "single-session-user"); g.Stats.N != 2 || g.Stats.All[1] != 1 {
		t.Errorf("single-session-user %+v", g.Stats)
	}
	if g := group(t, sum, "multi-session"); g.Stats.N != 1 || g.Stats.Any[1] != 1 || g.Stats.All[20] != 0 {
		t.Errorf("multi-session %+v", g.Stats)
	}
	abs := group(t, sum, Abstention)
	if abs.Headline || abs.Stats.N != 1 || abs.Skipped != 1 || abs.Stats.Any[1] != 1 {
		t.Errorf("abstention %+v %+v", abs, abs.Stats)
	}
	j := BuildJSON(sum, res, RenderOptions{Embedder: "none"})
	if j.Abstention["recall_any@1"] != 1 || j.Overall["recall_all@10"] != 0.6667 || j.Types["multi-session"]["recall_all@10"] != 0 ||
		j.Types[Abstention] != nil || j.Overall["recall@10"] != 0 {
		t.Errorf("json %+v", j)
	}
}

// hashEmbedder is a toy embedder: hashed bag of lowercase words.
type hashEmbedder struct{}

func (hashEmbedder) Model() string { return "test-hash" }
func (hashEmbedder) Dim() int      { return 32 }
func (hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		v := make([]float32, 32)
		for _, w := range strings.Fields(strings.ToLower(s)) {
			h := fnv.New32a()
			h.Write([]byte(strings.Trim(w, ".,!?:")))
			v[h.Sum32()%32]++
		}
		embed.Normalize(v)
		out[i] = v
	}
	return out, nil
}

func TestEmbedBeforeQuerying(t *testing.T) {
	ds, err := LoadLoCoMo(strings.NewReader(locomoFixture))
	if err != nil {
		t.Fatal(err)
	}
	svc := newService(t, hashEmbedder{})
	res := run(t, ds, svc, Options{Embed: true, Limit: 1})
	if res.Convs != 1 || res.Turns != 7 {
		t.Fatalf("limit: %d conversations, %d turns", res.Convs, res.Turns)
	}
	if res.Embedded < 5 {
		t.Errorf("embedded %d records", res.Embedded)
	}
	if len(res.SignalsUsed) < 2 || res.SignalsUsed[0] != "lexical" || res.SignalsUsed[1] != "dense" {
		t.Errorf("signals used %v", res.SignalsUsed)
	}
	// Dense only: the puppy question still finds its turn.
	dense := run(t, ds, svc, Options{Signals: []string{"dense"}, Limit: 1})
	if len(dense.SignalsUsed) != 1 || dense.SignalsUsed[0] != "dense" {
		t.Errorf("signals used %v", dense.SignalsUsed)
	}
	for _, q := range dense.Questions {
		if q.Question.ID == "conv-a#q1" && q.Rank["D1:1"] == 0 {
			t.Errorf("dense search missed the puppy turn: %+v", q.Hits)
		}
	}
	// The second run ingests as another gateway user, into that user's
	// scope: the same decisions as the first.
	if dense.Decisions[memory.DecisionAccepted] != 5 || dense.Decisions[memory.DecisionDuplicate] != 1 || dense.Decisions[memory.DecisionFlagged] != 1 {
		t.Errorf("re-ingest decisions %v", dense.Decisions)
	}
}

func TestRenderEndsWithJSONLine(t *testing.T) {
	ds, err := LoadLoCoMo(strings.NewReader(locomoFixture))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, ds, newService(t, nil), Options{})
	sum := Summarize(ds, res)
	for _, jsonOnly := range []bool{false, true} {
		var out bytes.Buffer
		if err := Render(&out, sum, res, RenderOptions{Data: "fixture.json", Embedder: "none", Wall: 1500 * time.Millisecond, JSONOnly: jsonOnly,
			Command: "memgate bench locomo --data fixture.json"}); err != nil {
			t.Fatal(err)
		}
		text := out.String()
		if !strings.HasSuffix(text, "}\n") {
			t.Fatalf("output does not end with the JSON line: %q", text)
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		if jsonOnly && len(lines) != 1 {
			t.Errorf("--json-only printed %d lines", len(lines))
		}
		if !jsonOnly && (len(lines) < 10 || !strings.Contains(text, "multi_hop") || !strings.Contains(text, "p95")) {
			t.Errorf("human report missing: %s", text)
		}
		var j map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &j); err != nil {
			t.Fatalf("last line is not JSON: %v", err)
		}
		overall, _ := j["overall"].(map[string]any)
		cats, _ := j["categories"].(map[string]any)
		if j["bench"] != "locomo" || j["embedder"] != "none" || j["wall_s"] != 1.5 || overall["recall@1"] != 0.8333 ||
			overall["multi_hop_recall@10"] != 0.75 || overall["recall_all@10"] != 0.8333 || cats["adversarial"] == nil {
			t.Errorf("json line %s", lines[len(lines)-1])
		}
		if m, _ := j["machine"].(map[string]any); m["cores"] == nil || j["command"] != "memgate bench locomo --data fixture.json" {
			t.Errorf("json line without the machine or the command: %v", j)
		}
		if !jsonOnly && !strings.HasPrefix(text, "machine: ") {
			t.Errorf("summary does not start with the machine: %s", text)
		}
		// "Which instrument does the sister play" names a category: the derived
		// keys signal answers it too.
		if sigs, _ := j["signals"].([]any); len(sigs) != 2 || sigs[0] != "lexical" || sigs[1] != "keys" {
			t.Errorf("signals %v", j["signals"])
		}
	}
}
