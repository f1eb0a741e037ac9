package api_test

import (
	"testing"

	"github.com/memgate/memgate/internal/embed"
)

// builtinHarness is a harness whose dense signal is the built-in encoder,
// with the given records written and embedded.
func builtinHarness(t *testing.T, records ...string) *harness {
	t.Helper()
	emb, err := embed.BuiltinUSELite()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, nil, emb)
	for _, c := range records {
		h.write("std", map[string]any{"type": "episode", "content": c}, 201)
	}
	if n, err := h.svc.EmbedPending(t.Context(), 100); err != nil || n != len(records) {
		t.Fatalf("EmbedPending = %d, %v", n, err)
	}
	return h
}

// TestOneCommonWordDoesNotOutrankMeaning: a question sharing one common
// word ("work") with an unrelated record must not outrank the record that
// answers it by meaning, through REST with the built-in encoder.
func TestOneCommonWordDoesNotOutrankMeaning(t *testing.T) {
	h := builtinHarness(t, "My cousin Ines is a dentist", "I work as a nurse",
		"The meeting moved to Thursday", "I adopted a beagle named Rex last spring")
	r := h.search("std", map[string]any{"query": "which relative works in dental care?", "explain": true})
	got := contents(r)
	if len(got) == 0 || got[0] != "My cousin Ines is a dentist" {
		t.Fatalf("ranking: %q\n%+v", got, r.Results)
	}
}
