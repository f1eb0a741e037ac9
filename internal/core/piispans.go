package core

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/gate"
)

// PIISpan is one PII screen finding in a text: its kind and where it is,
// as offsets in UTF-16 code units [Start, End), the unit browsers index
// strings by, so a page can mark the span without re-screening.
type PIISpan struct {
	Kind  string `json:"kind"`
	Start int    `json:"start"`
	End   int    `json:"end"`
}

// piiSpans screens text with the policy's PII kinds (all of them when the
// screen is off, since a reviewer should still see what is there).
func (s *Service) piiSpans(text string) []PIISpan {
	kinds := s.policy.PII.Kinds
	if !s.policy.PII.Enabled || len(kinds) == 0 {
		kinds = gate.PIIKinds
	}
	fs := gate.Screen(text, kinds)
	if len(fs) == 0 {
		return nil
	}
	out := make([]PIISpan, 0, len(fs))
	// Findings are ordered by Start; walk the text once, counting code
	// units up to each offset.
	pos, units := 0, 0
	advance := func(to int) int {
		for pos < to {
			r, n := utf8.DecodeRuneInString(text[pos:])
			units += utf16.RuneLen(r) // invalid bytes decode to U+FFFD: one unit, as in a browser
			pos += n
		}
		return units
	}
	for _, f := range fs {
		if f.Start < pos {
			// Overlapping kinds: recount from the start.
			pos, units = 0, 0
		}
		st := advance(f.Start)
		out = append(out, PIISpan{Kind: f.Kind, Start: st, End: advance(f.End)})
	}
	return out
}
