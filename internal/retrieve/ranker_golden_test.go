package retrieve

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

var updateRankGolden = flag.Bool("update-rank-golden", false, "rewrite testdata/ranker_features.golden")

// rankGoldenEngine is a deterministic conversation store for the ranker's
// golden features: sessions of turns by named speakers and by the user
// and the assistant, on a few topics, at times a day apart, with vectors.
func rankGoldenEngine(t *testing.T) *Engine {
	t.Helper()
	emb := hashEmbedder{"test:hash", 24}
	e := New(Options{Embedder: emb, Vectors: VectorExact})
	r := rand.New(rand.NewPCG(18, 11))
	names := [][2]string{{"Caroline", "Melanie"}, {"John", "Maria"}, {"user", "assistant"}}
	acts := []string{"went hiking", "painted a sunset", "went camping", "read two books", "adopted a dog",
		"ran a marathon", "bought a camping stove", "took pottery classes", "played the guitar", "visited the museum"}
	places := []string{"at the lake", "in Yosemite", "at the beach", "in the park", "with her family", "with friends", "near Boston"}
	times := []string{"yesterday", "last week", "last month", "in May", "on Saturday", ""}
	filler := []string{"honestly", "that sounds great", "I love it", "thanks", "what about you", "it was fun",
		"the weather was nice", "we should do it again", "my kids enjoyed it", "see you soon"}
	id := 0
	for s := range 30 {
		pair := names[s%len(names)]
		sid := fmt.Sprintf("s%02d", s)
		for i := range 20 + r.IntN(40) {
			speaker := pair[i%2]
			var sb strings.Builder
			if r.IntN(3) > 0 {
				who := speaker
				if who == "user" || who == "assistant" {
					who = "I"
				}
				fmt.Fprintf(&sb, "%s %s %s %s. ", who, acts[r.IntN(len(acts))], places[r.IntN(len(places))], times[r.IntN(len(times))])
			}
			for range 1 + r.IntN(3) {
				sb.WriteString(filler[r.IntN(len(filler))])
				sb.WriteString(". ")
			}
			at := t0.Add(time.Duration(s)*24*time.Hour + time.Duration(i)*time.Minute)
			text := strings.TrimSpace(sb.String())
			id++
			e.Upsert("w", rec(id, text, session(sid), spoken(speaker), func(m *memory.Record) {
				m.CreatedAt, m.UpdatedAt, m.IngestedAt = at, at, at
			}))
			if r.IntN(10) > 0 { // some turns have no vector yet
				rc := rec(id, text)
				e.SetVector("w", rc.ID, rc.ContentSHA256, emb.vec(text))
			}
		}
	}
	return e
}

// TestRankFeaturesGolden: the features of every hit of a handful of
// turns-only searches, and the order the default ranker gives them, are
// those recorded in testdata/ranker_features.golden, to the bit. It
// guards the ranker's cost passes: faster code must compute the same
// features (and so the same order, coverage and relevance) as the code
// the model was fitted on.
// Regenerate (only when a feature is meant to change) with
// go test ./internal/retrieve -run TestRankFeaturesGolden -update-rank-golden.
func TestRankFeaturesGolden(t *testing.T) {
	e := rankGoldenEngine(t)
	now := t0.Add(31 * 24 * time.Hour)
	questions := []string{
		"What books has Caroline read?",
		"How many times did Melanie go camping?",
		"When did John run a marathon?",
		"Which camping stove did I buy for Yosemite?",
		"What did you recommend for the museum last week?",
		"What activities does Maria do with her family?",
		"list all the places Caroline went hiking",
		"did I adopt a dog in May?",
	}
	var sb strings.Builder
	for _, ranker := range []bool{false, true} {
		for _, qtext := range questions {
			q := Query{Text: qtext, K: RankDepth, Now: now, RankFeatures: true,
				Filter:  Filter{Workspace: "w", Access: everyone, Types: []memory.Type{memory.Episode}},
				Speaker: 0.4, Session: 0.5, Time: 0.5, Opening: 0.5}
			if ranker {
				q.Ranker = &DefaultRanker
			}
			res, err := e.Search(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) < 20 {
				t.Fatalf("%q: %d hits, the fixture should give at least 20", qtext, len(res.Hits))
			}
			fmt.Fprintf(&sb, "# ranker=%v %s\n", ranker, qtext)
			for _, h := range res.Hits {
				if len(h.Evidence.Features) != numRankFeatures {
					t.Fatalf("%q: hit %s has %d features", qtext, h.ID, len(h.Evidence.Features))
				}
				sb.WriteString(h.ID[len(h.ID)-4:])
				// The features, then the hit's coverage and relevance.
				for _, x := range append(slices.Clone(h.Evidence.Features), h.Evidence.Coverage, h.Relevance) {
					sb.WriteByte(' ')
					sb.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
				}
				sb.WriteByte('\n')
			}
		}
	}
	path := filepath.Join("testdata", "ranker_features.golden")
	if *updateRankGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := strings.Split(sb.String(), "\n"), strings.Split(string(want), "\n")
	if len(gl) != len(wl) {
		t.Fatalf("%d lines, want %d", len(gl), len(wl))
	}
	for i := range gl {
		if !sameGoldenLine(gl[i], wl[i]) {
			t.Fatalf("line %d differs:\n got %s\nwant %s", i+1, gl[i], wl[i])
		}
	}
}

// sameGoldenLine compares a golden line to the bit, except the features
// divided by the fused score (score, neighbour): fuse sums the signals'
// shares in map order, so a fused score varies in its last bit from run
// to run (a defect of fuse, not of the ranker); those must agree to 1e-12.
func sameGoldenLine(got, want string) bool {
	if got == want {
		return true
	}
	g, w := strings.Fields(got), strings.Fields(want)
	if len(g) != len(w) || len(g) != numRankFeatures+3 || g[0] != w[0] {
		return false
	}
	for i := 1; i < len(g); i++ {
		if g[i] == w[i] {
			continue
		}
		if f := i - 1; f != fScore && f != fNeighbour {
			return false
		}
		a, errA := strconv.ParseFloat(g[i], 64)
		b, errB := strconv.ParseFloat(w[i], 64)
		if errA != nil || errB != nil || math.Abs(a-b) > 1e-12*math.Max(1, math.Abs(b)) {
			return false
		}
	}
	return true
}

// TestCandidateTermsMatchLookups: the one-walk candidate terms are what
// asking the index term by term gives, both for a question whose terms
// fit a mask and for one with more than 64 (answered term by term).
func TestCandidateTermsMatchLookups(t *testing.T) {
	e := rankGoldenEngine(t)
	var long []string
	for i := range 70 {
		long = append(long, fmt.Sprintf("word%d", i))
	}
	for _, q := range []string{"Which camping stove did Caroline buy in Yosemite?", "camping Melanie " + strings.Join(long, " ")} {
		e.mu.RLock()
		qt := newQueryTerms(e.lex, lexical.Analyze(q, true), e.lex.Len())
		var keys []uint32
		for k := range uint32(120) {
			keys = append(keys, k*7%400)
		}
		in := &rankInputs{qt: qt, docs: e.lex.Len(), matchTerms: e.queryMatchTerms(q)}
		ct := e.candidateTerms(in, keys)
		spk := e.lex.FieldTerms(keys[0], speakerField)
		for i, k := range keys {
			if got, want := ct.cov[i], qt.coverage(e.lex, k); got != want {
				t.Errorf("%q key %d: coverage %v, want %v", q, k, got, want)
			}
			if got, want := ct.user[i], e.lex.HasTerm(k, "\x00speaker\x00user"); got != want {
				t.Errorf("key %d: user %v, want %v", k, got, want)
			}
			var km float64
			for _, m := range in.matchTerms {
				if e.lex.HasTerm(k, m) {
					km++
				}
			}
			if ct.keyMatch[i] != km {
				t.Errorf("key %d: key matches %v, want %v", k, ct.keyMatch[i], km)
			}
			same := false
			for _, s := range spk {
				same = same || e.lex.HasTerm(k, s)
			}
			if ct.sameSpeaker[i] != same {
				t.Errorf("key %d: same speaker %v, want %v", k, ct.sameSpeaker[i], same)
			}
		}
		if len(qt.terms) == 0 || slices.Max(ct.cov) == 0 {
			t.Fatalf("%q: no coverage at all (%d terms): the test proves nothing", q, len(qt.terms))
		}
		e.mu.RUnlock()
	}
}
