package core

import (
	"testing"

	"github.com/memgate/memgate/internal/embed"
)

func TestDenseWeightByModel(t *testing.T) {
	for _, m := range []string{embed.USELiteModel, embed.BuiltinUSELiteModel} {
		if got := DenseWeight(m); got != 0.6 {
			t.Errorf("DenseWeight(%s) = %v, want 0.6 (measured best on both dev sets)", m, got)
		}
	}
	for _, m := range []string{"sif:glove.6B.100d", "openai:text-embedding-3-small", ""} {
		if got := DenseWeight(m); got != DefaultDenseWeight {
			t.Errorf("DenseWeight(%q) = %v, want the default %v", m, got, DefaultDenseWeight)
		}
	}
}

// The boosts measured to help on both dev sets are on by default (README,
// "What moved the numbers").
func TestRankingDefaults(t *testing.T) {
	if DefaultSpeaker != 0.4 || DefaultSession != 0.5 || DefaultContext != 0.5 || DefaultFeedback != 0 {
		t.Errorf("defaults speaker %v session %v context %v feedback %v; the README's figures were measured at 0.4, 0.5, 0.5, 0",
			DefaultSpeaker, DefaultSession, DefaultContext, DefaultFeedback)
	}
}
