package core

import (
	"testing"

	"github.com/memgate/memgate/internal/embed"
)

func TestDenseWeightByModel(t *testing.T) {
	if got := DenseWeight(embed.USELiteModel); got != 0.6 {
		t.Errorf("DenseWeight(%s) = %v, want 0.6 (measured best on both dev sets)", embed.USELiteModel, got)
	}
	for _, m := range []string{"sif:glove.6B.100d", "openai:text-embedding-3-small", ""} {
		if got := DenseWeight(m); got != DefaultDenseWeight {
			t.Errorf("DenseWeight(%q) = %v, want the default %v", m, got, DefaultDenseWeight)
		}
	}
}
