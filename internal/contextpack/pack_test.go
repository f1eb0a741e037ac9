package contextpack

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPackNeverOverBudget drives pack with random candidates (empty,
// tiny, huge, multi-byte, many) and budgets: the Markdown and the section
// estimates stay within the budget, items within their cap, the text
// valid UTF-8, and the same input packs the same way.
func TestPackNeverOverBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	runes := []string{"a", "é", "漢", "🙂", " ", "\n", "word "}
	text := func() string {
		n := []int{0, 1, 5, 40, 400, 3000, 20000}[r.IntN(7)]
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(runes[r.IntN(len(runes))])
		}
		return b.String()
	}
	items := func(kind string) []Item {
		out := make([]Item, r.IntN(60))
		for i := range out {
			out[i] = Item{Kind: kind, ID: string(rune('a' + r.IntN(20))), Content: text(), Citation: "mem://x@v1", Path: "F.md"}
			if kind == KindProcedure && r.IntN(2) == 0 {
				rate := r.Float64()
				out[i].SuccessRate = &rate
			}
		}
		return out
	}
	for range 120 {
		req := Request{Query: "q", BudgetTokens: 1 + r.IntN(3000), MaxItemTokens: 1 + r.IntN(500),
			MaxConstraints: 1 + r.IntN(50), MaxProcedures: 1 + r.IntN(50), MaxChunks: 1 + r.IntN(50), MaxFacts: 1 + r.IntN(50), MaxRecent: 1 + r.IntN(50)}
		c := candidates{constraints: append(items(KindPinned), items(KindRule)...), procedures: items(KindProcedure),
			knowledge: items(KindRecord), facts: items(KindFact), recent: items(KindActivity), relevance: -1}
		env := pack(req, c)
		sum := 0
		for _, s := range env.Sections {
			sum += s.Tokens
			for _, it := range s.Items {
				if it.Tokens > req.MaxItemTokens || !utf8.ValidString(it.Content) {
					t.Fatalf("item of %d tokens (cap %d), valid %v", it.Tokens, req.MaxItemTokens, utf8.ValidString(it.Content))
				}
			}
		}
		if env.Tokens > req.BudgetTokens || sum > req.BudgetTokens || Tokens(env.Markdown) != env.Tokens || !utf8.ValidString(env.Markdown) {
			t.Fatalf("budget %d: markdown %d tokens, sections %d", req.BudgetTokens, env.Tokens, sum)
		}
		if again := pack(req, c); again.Markdown != env.Markdown {
			t.Fatal("the same input packed differently")
		}
	}
}
