package bench

import (
	"math"
	"strings"
	"testing"
)

// hand builds a question result: evidence turns, evidence sessions and
// the turns each ranked hit covers, in rank order.
func hand(group string, ev, sessions []string, hits ...[]string) QuestionResult {
	q := QuestionResult{Question: Question{Group: group, Headline: true, Evidence: ev, EvidenceSessions: sessions},
		Rank: map[string]int{}}
	for _, e := range ev {
		q.Rank[e] = 0
	}
	for r, turns := range hits {
		q.Hits = append(q.Hits, Hit{Turns: turns})
		for _, t := range turns {
			if rk, ok := q.Rank[t]; ok && rk == 0 {
				q.Rank[t] = r + 1
			}
		}
	}
	return q
}

func nearly(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func TestTurnSession(t *testing.T) {
	for in, want := range map[string]string{"D3:12": "D3", "answer_4be1_2#7": "answer_4be1_2", "a#b#3": "a#b", "plain": "plain"} {
		if got := TurnSession(in); got != want {
			t.Errorf("TurnSession(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSessionMetrics checks the published LongMemEval protocol on hand-made
// rankings: a question is a hit at k when a top-k result is a turn of an
// evidence session, whichever turn of it.
func TestSessionMetrics(t *testing.T) {
	// q1: evidence turn s1#3; rank 1 is s9 (filler), rank 2 s1#0 (the
	// evidence session, not the evidence turn), rank 3 s1#3.
	q1 := hand("multi-session", []string{"s1#3"}, []string{"s1"}, []string{"s9#0"}, []string{"s1#0"}, []string{"s1#3"})
	// q2: evidence in s2 and s3; rank 1 s3#1 (evidence), s2 never found.
	q2 := hand("multi-session", []string{"s2#0", "s3#1"}, []string{"s2", "s3"}, []string{"s3#1"}, []string{"s9#1"})
	// q3: nothing found.
	q3 := hand("single-session-user", []string{"s4#0"}, []string{"s4"}, []string{"s9#2"})
	ks := []int{1, 5}
	s := newStats()
	for _, q := range []QuestionResult{q1, q2, q3} {
		s.add(&q, ks)
	}
	s.finish()
	nearly(t, "session hit@1", s.SessHit[1], 1.0/3)  // q2 only
	nearly(t, "session hit@5", s.SessHit[5], 2.0/3)  // q1 (rank 2), q2
	nearly(t, "session MRR", s.SessMRR, (0.5+1+0)/3) // first session hit at 2, 1, never
	nearly(t, "session recall@5", s.SessRecall[5], (1+0.5+0)/3)
	nearly(t, "turn MRR", s.MRR, (1.0/3+1+0)/3) // first evidence turn at 3, 1, never
	nearly(t, "turn any@1", s.Any[1], 1.0/3)
	nearly(t, "evidence recall@5", s.Recall[5], (1+0.5+0)/3)
	nearly(t, "all@5", s.All[5], 1.0/3)
	// Distinct sessions: q1 s9, s1; q2 s3, s9; q3 s9.
	nearly(t, "session all distinct@1", s.SessAllDistinct[1], 0)
	nearly(t, "session all distinct@5", s.SessAllDistinct[5], 1.0/3) // q1 only: q2 never reaches s2
	if s.N != 3 {
		t.Errorf("N = %d", s.N)
	}
}

// TestLoCoMoHitAndMRR: hit@k counts questions with any evidence turn in the
// top k, recall@k the fraction, MRR the first evidence turn's rank; a hit
// covering several turns (a merged duplicate) counts for each.
func TestLoCoMoHitAndMRR(t *testing.T) {
	q1 := hand("multi_hop", []string{"D1:2", "D4:5"}, []string{"D1", "D4"}, []string{"D2:1"}, []string{"D4:5"}, []string{"D1:1", "D1:2"})
	q2 := hand("single_hop", []string{"D7:1"}, []string{"D7"}, []string{"D7:1", "D7:3"})
	ks := []int{1, 2, 3}
	s := newStats()
	for _, q := range []QuestionResult{q1, q2} {
		s.add(&q, ks)
	}
	s.finish()
	nearly(t, "hit@1", s.Any[1], 0.5)
	nearly(t, "hit@2", s.Any[2], 1)
	nearly(t, "recall@2", s.Recall[2], (0.5+1)/2)
	nearly(t, "recall@3", s.Recall[3], 1)
	nearly(t, "all@2", s.All[2], 0.5)
	nearly(t, "MRR", s.MRR, (0.5+1)/2)
	j := figures(LoCoMo, s, ks)
	if j["hit@1"] != 0.5 || j["mrr"] != 0.75 || j["recall@3"] != 1 {
		t.Errorf("figures %v", j)
	}
	if _, ok := j["session_mrr"]; ok {
		t.Errorf("LoCoMo figures carry session_mrr: %v", j)
	}
}

// TestReportWithoutEvidence: an abstention question asked without
// evidence turns (for the relevance AUC only) still makes a valid report
// line (its recall was 0/0, which JSON cannot hold).
func TestReportWithoutEvidence(t *testing.T) {
	q := hand(Abstention, nil, nil, []string{"s1#0"})
	res := &Result{Questions: []QuestionResult{q}, turnText: map[string]map[string]string{}}
	var b strings.Builder
	if err := WriteReport(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"recall@10":0`) {
		t.Errorf("report %s", b.String())
	}
}
