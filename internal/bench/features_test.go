package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/retrieve"
)

// TestWriteFeatures: a run asked for evidence writes each question's hits
// with their fused score, signal ranks and the ranker's features as the
// engine computed them, the input of the ranker generator
// (internal/retrieve/rankgen).
func TestWriteFeatures(t *testing.T) {
	ds, err := LoadLongMemEval(strings.NewReader(lmeFixture))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, ds, newService(t, nil), Options{KMax: 20, Evidence: true})
	var buf bytes.Buffer
	if err := WriteFeatures(&buf, res); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) == 0 {
		t.Fatal("no feature lines")
	}
	withSignals, withFeatures := 0, 0
	for _, l := range lines {
		var fl FeatureLine
		if err := json.Unmarshal([]byte(l), &fl); err != nil {
			t.Fatal(err)
		}
		if len(fl.Evidence) == 0 || fl.Conv == "" {
			t.Fatalf("line without evidence or conversation: %s", l)
		}
		for _, h := range fl.Hits {
			if h.Score > 0 && len(h.Signals) > 0 {
				withSignals++
			}
			if len(h.Evidence.Features) == len(retrieve.RankFeatureNames) {
				withFeatures++
			} else if len(h.Evidence.Features) != 0 {
				t.Fatalf("a hit has %d features, want %d", len(h.Evidence.Features), len(retrieve.RankFeatureNames))
			}
		}
	}
	if withSignals == 0 || withFeatures == 0 {
		t.Fatalf("hits with fused score and signals: %d, with the ranker's features: %d", withSignals, withFeatures)
	}
}
