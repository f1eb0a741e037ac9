package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/memory"
)

// RenderOptions describe the run for the printed report.
type RenderOptions struct {
	Data     string // data file, as given
	Embedder string // model id or "none"
	Wall     time.Duration
	JSONOnly bool
	Command  string // the command line that reproduces the run
}

// JSONLine is the machine-readable summary printed last.
type JSONLine struct {
	Bench            string                        `json:"bench"`
	Machine          Machine                       `json:"machine"`
	Command          string                        `json:"command,omitempty"`
	Data             string                        `json:"data,omitempty"`
	Embedder         string                        `json:"embedder"`
	Signals          []string                      `json:"signals"`
	SignalsRequested []string                      `json:"signals_requested,omitempty"`
	KMax             int                           `json:"k_max"`
	WallS            float64                       `json:"wall_s"`
	Overall          map[string]float64            `json:"overall"`
	Categories       map[string]map[string]float64 `json:"categories,omitempty"`
	Types            map[string]map[string]float64 `json:"types,omitempty"`
	Abstention       map[string]float64            `json:"abstention,omitempty"`
	Questions        int                           `json:"questions"`
	Skipped          int                           `json:"skipped"`
	Conversations    int                           `json:"conversations"`
	Turns            int                           `json:"turns"`
	Decisions        map[string]int                `json:"decisions"`
	Quarantined      int                           `json:"quarantined"`
	SearchErrors     int                           `json:"search_errors,omitempty"`
	Timings          map[string]float64            `json:"timings"`
	// AbstentionAUC: see Summary.AbstentionAUC.
	AbstentionAUC *float64 `json:"abstention_relevance_auc,omitempty"`
}

// figures flattens stats into "recall@k" style keys for the bench; a
// group without scored questions has no figures.
func figures(bench string, s *Stats, ks []int) map[string]float64 {
	m := map[string]float64{"questions": float64(s.N)}
	if s.N == 0 {
		return m
	}
	for _, k := range ks {
		if bench == LongMemEval {
			m[fmt.Sprintf("recall_any@%d", k)] = round4(s.Any[k])
			m[fmt.Sprintf("evidence_recall@%d", k)] = round4(s.Recall[k])
			m[fmt.Sprintf("session_recall@%d", k)] = round4(s.SessHit[k])
			m[fmt.Sprintf("session_evidence_recall@%d", k)] = round4(s.SessRecall[k])
			m[fmt.Sprintf("session_recall_all_distinct@%d", k)] = round4(s.SessAllDistinct[k])
		} else {
			m[fmt.Sprintf("recall@%d", k)] = round4(s.Recall[k])
			m[fmt.Sprintf("hit@%d", k)] = round4(s.Any[k])
		}
		m[fmt.Sprintf("recall_all@%d", k)] = round4(s.All[k])
	}
	if bench == LongMemEval {
		m["session_mrr"] = round4(s.SessMRR)
	}
	m["mrr"] = round4(s.MRR)
	return m
}

// BuildJSON assembles the summary line.
func BuildJSON(sum *Summary, res *Result, ro RenderOptions) JSONLine {
	j := JSONLine{Bench: res.Bench, Machine: ThisMachine(), Command: ro.Command, Data: ro.Data, Embedder: ro.Embedder, Signals: res.SignalsUsed,
		SignalsRequested: res.SignalsRequested, KMax: res.KMax, WallS: round4(ro.Wall.Seconds()),
		Overall: figures(res.Bench, sum.Overall, sum.Ks), Questions: sum.Overall.N, Skipped: sum.Skipped,
		Conversations: res.Convs, Turns: res.Turns, Decisions: res.Decisions, Quarantined: res.Quarantined,
		SearchErrors: res.SearchErrors,
		Timings: map[string]float64{
			"ingest_s": round4(res.Ingest.Seconds()), "embed_s": round4(res.Embed.Seconds()),
			"query_s": round4(res.Query.Seconds()), "qps": round4(sum.QPS),
			"p50_ms": round4(ms(sum.P50)), "p95_ms": round4(ms(sum.P95)), "mean_ms": round4(ms(sum.Mean)),
		}}
	if sum.AbstentionN > 0 {
		auc := sum.AbstentionAUC
		j.AbstentionAUC = &auc
	}
	if j.Signals == nil {
		j.Signals = []string{}
	}
	groups := map[string]map[string]float64{}
	for _, g := range sum.Groups {
		fig := figures(res.Bench, g.Stats, sum.Ks)
		fig["skipped"] = float64(g.Skipped)
		if res.Bench == LongMemEval && g.Name == Abstention {
			j.Abstention = fig
			continue
		}
		groups[g.Name] = fig
		if res.Bench == LoCoMo && slices.Contains(sum.Ks, 10) {
			j.Overall[g.Name+"_recall@10"] = round4(g.Stats.Recall[10])
		}
	}
	if res.Bench == LongMemEval {
		j.Types = groups
	} else {
		j.Categories = groups
	}
	return j
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Render prints the human report (unless JSONOnly) and then, last, the
// JSON summary line.
func Render(w io.Writer, sum *Summary, res *Result, ro RenderOptions) error {
	bw := bufio.NewWriter(w)
	if !ro.JSONOnly {
		if ro.Command != "" {
			PrintHeader(bw, ro.Command)
		}
		renderText(bw, sum, res, ro)
	}
	line, err := json.Marshal(BuildJSON(sum, res, ro))
	if err != nil {
		return err
	}
	bw.Write(line)
	bw.WriteByte('\n')
	return bw.Flush()
}

func renderText(w io.Writer, sum *Summary, res *Result, ro RenderOptions) {
	renderRun(w, sum, res, ro)
	renderDecisions(w, res)
	label, tables, overallName := "category", locomoTables, "OVERALL (cat 1-4)"
	if res.Bench == LongMemEval {
		label, tables, overallName = "question type", longMemEvalTables, "OVERALL (non-abstention)"
	}
	for _, t := range tables {
		renderTable(w, t, sum, label, overallName)
	}
	if sum.AbstentionN > 0 {
		fmt.Fprintf(w, "\nrelevance: AUC %.3f of the top hit's relevance, answerable vs %d abstention questions\n",
			sum.AbstentionAUC, sum.AbstentionN)
	}
	renderTimings(w, sum, res, ro)
}

// renderRun is the head of the text report: the data, corpus and signals.
func renderRun(w io.Writer, sum *Summary, res *Result, ro RenderOptions) {
	req := "all available"
	if len(res.SignalsRequested) > 0 {
		req = strings.Join(res.SignalsRequested, ",")
	}
	used := strings.Join(res.SignalsUsed, "+")
	if used == "" {
		used = "none"
	}
	fmt.Fprintf(w, "memgate bench %s: %s\n", res.Bench, ro.Data)
	fmt.Fprintf(w, "  %d conversations, %d turns, %d questions scored (%d skipped: no valid evidence), k-max %d\n",
		res.Convs, res.Turns, len(res.Questions)-sum.AbstentionAsked, sum.Skipped, res.KMax)
	fmt.Fprintf(w, "  embedder %s, signals used %s (requested: %s)\n", ro.Embedder, used, req)
	if res.Ignored > 0 {
		fmt.Fprintf(w, "  %d turns of repeated sessions not ingested (first occurrence kept)\n", res.Ignored)
	}
	if res.BadDates > 0 {
		fmt.Fprintf(w, "  %d session dates could not be parsed (turns written without valid_from)\n", res.BadDates)
	}
}

// renderDecisions is what the gate decided about the turns written.
func renderDecisions(w io.Writer, res *Result) {
	fmt.Fprintf(w, "\nwrite decisions:")
	for _, k := range slices.Sorted(maps.Keys(res.Decisions)) {
		fmt.Fprintf(w, " %s %d", k, res.Decisions[k])
	}
	fmt.Fprintln(w)
	for _, k := range slices.Sorted(maps.Keys(res.Reasons)) {
		fmt.Fprintf(w, "  %-32s %d\n", k, res.Reasons[k])
	}
	fmt.Fprintf(w, "  quarantined turns (not searchable): %d\n", res.Quarantined)
	if n := res.Decisions[memory.DecisionFlagged]; n > 0 {
		fmt.Fprintf(w, "  flagged turns (the user's own contact details: searchable by that user and operators): %d\n", n)
	}
	for _, s := range res.RejectSamples {
		fmt.Fprintf(w, "  rejected: %s\n", s)
	}
}

// recallTable is one table of the text report: a recall figure per k,
// per question group.
type recallTable struct {
	title string
	pick  func(*Stats) map[int]float64
	// mrr adds an MRR column.
	mrr func(*Stats) float64
}

func turnMRR(s *Stats) float64 { return s.MRR }

// The tables of each benchmark, in the order printed.
var (
	longMemEvalTables = []recallTable{
		{"session recall@k (published protocol): questions with a top-k result inside an evidence session; MRR of the first",
			func(s *Stats) map[int]float64 { return s.SessHit }, func(s *Stats) float64 { return s.SessMRR }},
		{"session evidence recall@k: mean fraction of evidence sessions holding a top-k result",
			func(s *Stats) map[int]float64 { return s.SessRecall }, nil},
		{"session recall_all@k (LongMemEval paper, turn retrieval): every evidence session among the first k distinct sessions",
			func(s *Stats) map[int]float64 { return s.SessAllDistinct }, nil},
		{"recall_any@k: questions with at least one evidence turn in the top k; MRR of the first",
			func(s *Stats) map[int]float64 { return s.Any }, turnMRR},
		{"evidence recall@k: mean fraction of evidence turns in the top k",
			func(s *Stats) map[int]float64 { return s.Recall }, nil},
		{"recall_all@k: questions with every evidence turn in the top k", func(s *Stats) map[int]float64 { return s.All }, nil},
	}
	locomoTables = []recallTable{
		{"recall@k: mean fraction of evidence turns in the top k", func(s *Stats) map[int]float64 { return s.Recall }, nil},
		{"hit@k: questions with at least one evidence turn in the top k; MRR of the first",
			func(s *Stats) map[int]float64 { return s.Any }, turnMRR},
		{"recall_all@k: questions with every evidence turn in the top k", func(s *Stats) map[int]float64 { return s.All }, nil},
	}
)

// renderTable prints table t: the headline groups, their overall row,
// then the groups scored separately.
func renderTable(w io.Writer, t recallTable, sum *Summary, label, overallName string) {
	fmt.Fprintf(w, "\n%s\n", t.title)
	fmt.Fprintf(w, "  %-26s %5s %5s", label, "n", "skip")
	for _, k := range sum.Ks {
		fmt.Fprintf(w, " %7s", fmt.Sprintf("@%d", k))
	}
	if t.mrr != nil {
		fmt.Fprintf(w, " %7s", "MRR")
	}
	fmt.Fprintln(w)
	row := func(name string, s *Stats, skipped int) {
		fmt.Fprintf(w, "  %-26s %5d %5d", name, s.N, skipped)
		m := t.pick(s)
		for _, k := range sum.Ks {
			if s.N == 0 {
				fmt.Fprintf(w, " %7s", "-")
			} else {
				fmt.Fprintf(w, " %7.3f", m[k])
			}
		}
		if t.mrr != nil && s.N > 0 {
			fmt.Fprintf(w, " %7.3f", t.mrr(s))
		}
		fmt.Fprintln(w)
	}
	headSkipped := 0
	for _, g := range sum.Groups {
		if g.Headline {
			row(g.Name, g.Stats, g.Skipped)
			headSkipped += g.Skipped
		}
	}
	row(overallName, sum.Overall, headSkipped)
	for _, g := range sum.Groups {
		if !g.Headline {
			row(g.Name+" (separate)", g.Stats, g.Skipped)
		}
	}
}

// renderTimings is the tail of the text report: where the time went.
func renderTimings(w io.Writer, sum *Summary, res *Result, ro RenderOptions) {
	fmt.Fprintf(w, "\ntimings:\n")
	fmt.Fprintf(w, "  ingest %8.2fs  (%.0f turns/s)\n", res.Ingest.Seconds(), perSec(res.Turns, res.Ingest))
	if res.Embed > 0 || res.Embedded > 0 {
		fmt.Fprintf(w, "  embed  %8.2fs  (%d records embedded)\n", res.Embed.Seconds(), res.Embedded)
	}
	fmt.Fprintf(w, "  query  %8.2fs  (%.1f queries/s; latency p50 %.2fms, p95 %.2fms, mean %.2fms)\n",
		res.Query.Seconds(), sum.QPS, ms(sum.P50), ms(sum.P95), ms(sum.Mean))
	fmt.Fprintf(w, "  wall   %8.2fs\n", ro.Wall.Seconds())
	if len(res.Routes) > 0 {
		fmt.Fprintf(w, "  routes:")
		for _, k := range slices.Sorted(maps.Keys(res.Routes)) {
			fmt.Fprintf(w, " %s %d", k, res.Routes[k])
		}
		fmt.Fprintln(w)
	}
	for _, k := range slices.Sorted(maps.Keys(res.Degraded)) {
		fmt.Fprintf(w, "  degraded (%d searches): %s\n", res.Degraded[k], k)
	}
	if res.SearchErrors > 0 {
		fmt.Fprintf(w, "  search errors: %d (scored as empty results)\n", res.SearchErrors)
	}
	fmt.Fprintln(w)
}

func perSec(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// reportLine is one question in the --report file.
type reportLine struct {
	Conv     string          `json:"conv"`
	ID       string          `json:"id"`
	Group    string          `json:"group"`
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer,omitempty"`
	Route    string          `json:"route,omitempty"`
	Recall10 float64         `json:"recall@10"`
	All10    bool            `json:"all@10"`
	Evidence []reportTurn    `json:"evidence"`
	Hits     []reportHit     `json:"top10"`
	Error    string          `json:"error,omitempty"`
}

type reportTurn struct {
	Turn    string `json:"turn"`
	Rank    int    `json:"rank"` // 0: not in the top k-max
	Content string `json:"content"`
}

type reportHit struct {
	Rank    int      `json:"rank"`
	ID      string   `json:"id"`
	Turns   []string `json:"turns"`
	Content string   `json:"content"`
}

// WriteReport writes one JSON line per scored question: the question, its
// evidence with the rank each turn was found at, and the top 10 results
// with the turns they cover.
func WriteReport(w io.Writer, res *Result) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range res.Questions {
		q := &res.Questions[i]
		n := len(q.Question.Evidence)
		c := q.Covered(10)
		l := reportLine{Conv: q.Conv, ID: q.Question.ID, Group: q.Question.Group, Question: q.Question.Text,
			Answer: q.Question.Answer, Route: q.Route, All10: c == n, Error: q.Err,
			Evidence: []reportTurn{}, Hits: []reportHit{}}
		if n > 0 { // an abstention question asked without evidence has no recall
			l.Recall10 = round4(float64(c) / float64(n))
		}
		for _, e := range q.Question.Evidence {
			l.Evidence = append(l.Evidence, reportTurn{Turn: e, Rank: q.Rank[e], Content: res.turnText[q.Conv][e]})
		}
		for r, h := range q.Hits {
			if r >= ReportHits {
				break
			}
			turns := h.Turns
			if turns == nil {
				turns = []string{}
			}
			l.Hits = append(l.Hits, reportHit{Rank: r + 1, ID: h.ID, Turns: turns, Content: h.Content})
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return bw.Flush()
}
