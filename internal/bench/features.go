package bench

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/memgate/memgate/internal/retrieve"
)

// FeatureLine is one question of a features file (memgate bench
// --features): every hit with the evidence and signals a ranker can be
// trained on, and the question's evidence, so a generator can score
// rankings offline (see internal/retrieve/rankgen).
type FeatureLine struct {
	Conv             string       `json:"conv"`
	Group            string       `json:"group"`
	Headline         bool         `json:"headline"`
	Evidence         []string     `json:"evidence"`
	EvidenceSessions []string     `json:"evidence_sessions,omitempty"`
	Hits             []FeatureHit `json:"hits"`
}

// FeatureHit is one ranked hit of a FeatureLine.
type FeatureHit struct {
	Turns    []string                        `json:"turns"`
	Score    float64                         `json:"score"`
	Evidence retrieve.Evidence               `json:"evidence"`
	Signals  map[string]retrieve.SignalScore `json:"signals"`
}

// WriteFeatures writes a FeatureLine per question asked with evidence (a
// run with Options.Evidence).
func WriteFeatures(w io.Writer, res *Result) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range res.Questions {
		q := &res.Questions[i]
		if len(q.Question.Evidence) == 0 {
			continue
		}
		l := FeatureLine{Conv: q.Conv, Group: q.Question.Group, Headline: q.Question.Headline,
			Evidence: q.Question.Evidence, EvidenceSessions: q.Question.EvidenceSessions, Hits: []FeatureHit{}}
		for _, h := range q.Hits {
			fh := FeatureHit{Turns: h.Turns, Score: h.Score, Signals: h.Signals}
			if h.Evidence != nil {
				fh.Evidence = *h.Evidence
			}
			l.Hits = append(l.Hits, fh)
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return bw.Flush()
}
