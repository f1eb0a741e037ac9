package api_test

import (
	"math"
	"strings"
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

type relevanceResp struct {
	Results []struct {
		Record    struct{ Content string } `json:"record"`
		Score     float64                  `json:"score"`
		Relevance *float64                 `json:"relevance"`
		Evidence  *struct {
			Dense    *float64 `json:"dense"`
			Coverage float64  `json:"coverage"`
		} `json:"evidence"`
	} `json:"results"`
}

// TestSearchRelevanceAndMinRelevance: every REST hit carries a relevance
// in [0, 1] (and, with explain, its evidence); min_relevance drops what
// is below it, down to "nothing relevant"; a bad min_relevance is a 400
// naming the field.
func TestSearchRelevanceAndMinRelevance(t *testing.T) {
	h := builtinHarness(t, "My cousin Ines is a dentist", "I work as a nurse",
		"The meeting moved to Thursday", "I adopted a beagle named Rex last spring")
	var r relevanceResp
	h.mustDo("POST", "/v1/search", "std", map[string]any{"query": "which relative works in dental care?", "explain": true}, 200, &r)
	if len(r.Results) != 4 {
		t.Fatalf("results %+v", r.Results)
	}
	rel := map[string]float64{}
	for _, x := range r.Results {
		if x.Relevance == nil || !(*x.Relevance >= 0 && *x.Relevance <= 1) || x.Evidence == nil {
			t.Fatalf("hit %+v: relevance missing or out of [0, 1]", x)
		}
		rel[x.Record.Content] = *x.Relevance
	}
	if e := r.Results[0].Evidence; e.Dense == nil || *e.Dense <= 0 {
		t.Fatalf("top hit has no dense evidence: %+v", e)
	}
	// At the dentist's own relevance: the dentist stays, and only hits at
	// least as relevant.
	cut := rel["My cousin Ines is a dentist"]
	h.mustDo("POST", "/v1/search", "std", map[string]any{"query": "which relative works in dental care?", "min_relevance": cut}, 200, &r)
	kept := false
	for _, x := range r.Results {
		if *x.Relevance < cut {
			t.Fatalf("min_relevance %v kept %+v", cut, x)
		}
		kept = kept || x.Record.Content == "My cousin Ines is a dentist"
	}
	if !kept || len(r.Results) >= 4 {
		t.Fatalf("min_relevance %v: %+v (relevance %v)", cut, r.Results, rel)
	}
	// Nothing clears 1: an empty list, not an error.
	h.mustDo("POST", "/v1/search", "std", map[string]any{"query": "which relative works in dental care?", "min_relevance": 1}, 200, &r)
	if len(r.Results) != 0 {
		t.Fatalf("min_relevance 1 kept %+v", r.Results)
	}
	for _, bad := range []any{-0.1, 1.5} {
		code, _, body := h.do("POST", "/v1/search", "std", map[string]any{"query": "dentist", "min_relevance": bad})
		if code != 400 || !strings.Contains(string(body), "min_relevance") {
			t.Fatalf("min_relevance %v: %d %s", bad, code, body)
		}
	}
}

// TestGatewaySearchRelevance: gateway hits carry relevance (an extra
// field the contract's clients ignore) and the optional min_relevance
// filters; without it the contract's behaviour is unchanged.
func TestGatewaySearchRelevance(t *testing.T) {
	h := newHarness(t, nil)
	key := newUser(h, "u1")
	id := func(m map[string]any) map[string]any { m["user_id"], m["user_key"] = "u1", key; return m }
	h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": "chat:c1", "messages": []map[string]any{
		{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": "My VPN drops every hour with WireGuard."},
		{"sender_id": "u1", "role": "user", "timestamp": 1780000001000, "content": "The printer on floor two is out of toner."},
	}}), 200, nil)
	type gwResp struct {
		Results []struct {
			Text      string   `json:"text"`
			Relevance *float64 `json:"relevance"`
		} `json:"results"`
	}
	// The contract's answer is unchanged for a client that does not ask.
	var plain gwResp
	h.mustDo("POST", "/memories/search", "", id(map[string]any{"query": "WireGuard VPN drops", "top_k": 5}), 200, &plain)
	if len(plain.Results) == 0 || plain.Results[0].Relevance != nil {
		t.Fatalf("relevance without min_relevance: %+v", plain)
	}
	var all gwResp
	h.mustDo("POST", "/memories/search", "", id(map[string]any{"query": "WireGuard VPN drops", "top_k": 5, "min_relevance": 0}), 200, &all)
	if len(all.Results) == 0 {
		t.Fatal("no results")
	}
	top := all.Results[0]
	if top.Relevance == nil || !(*top.Relevance > 0 && *top.Relevance <= 1) {
		t.Fatalf("top hit relevance %v", top.Relevance)
	}
	var cut gwResp
	h.mustDo("POST", "/memories/search", "", id(map[string]any{"query": "WireGuard VPN drops", "top_k": 5, "min_relevance": *top.Relevance}), 200, &cut)
	if len(cut.Results) == 0 || cut.Results[0].Text != top.Text {
		t.Fatalf("min_relevance at the top hit's relevance dropped it: %+v", cut)
	}
	h.mustDo("POST", "/memories/search", "", id(map[string]any{"query": "WireGuard VPN drops", "top_k": 5, "min_relevance": math.Nextafter(*top.Relevance, 2)}), 200, &cut)
	for _, x := range cut.Results {
		if x.Text == top.Text {
			t.Fatalf("min_relevance above the top hit's relevance kept it: %+v", cut)
		}
	}
	code, _, body := h.do("POST", "/memories/search", "", id(map[string]any{"query": "x", "min_relevance": 2}))
	if code != 400 || !strings.Contains(string(body), "min_relevance") {
		t.Fatalf("bad min_relevance: %d %s", code, body)
	}
}
