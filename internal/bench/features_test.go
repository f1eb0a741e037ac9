package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestWriteFeatures: a run asked for evidence writes each question's hits
// with their fused score and signal ranks, the input of the ranker
// generator (internal/retrieve/rankgen).
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
	withSignals := 0
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
		}
	}
	if withSignals == 0 {
		t.Fatal("no hit carries its fused score and signals")
	}
}
