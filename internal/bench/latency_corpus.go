package bench

// The latency benchmark's corpus: records made from conversation turns,
// their types and scopes, and the queries run against them.

import (
	"errors"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
)

// ---------------------------------------------------------------------
// Corpus.

const (
	latScopes    = 100
	latMaxBase   = 1900 // bytes kept of a turn; the variation adds < 150
	latMaxRecord = 2048
	latChunk     = 10_000
	latQueryLen  = 8 // words of a turn-derived query
)

// latCorpus turns the distinct turns of a benchmark file into any number
// of distinct, realistic record contents.
type latCorpus struct {
	turns     []string // distinct turn contents, file order, ≤ latMaxBase bytes
	questions []string
	seen      map[uint64]struct{}
}

func newLatCorpus(ds *Dataset) (*latCorpus, error) {
	c := &latCorpus{seen: map[uint64]struct{}{}}
	have := map[string]bool{}
	qs := map[string]bool{}
	for _, conv := range ds.Convs {
		for _, t := range conv.Turns {
			s := cutWords(strings.TrimSpace(t.Content), latMaxBase)
			if s == "" || have[s] {
				continue
			}
			have[s] = true
			c.turns = append(c.turns, s)
		}
		for _, q := range conv.Questions {
			if q.Text != "" && !qs[q.Text] {
				qs[q.Text] = true
				c.questions = append(c.questions, q.Text)
			}
		}
	}
	if len(c.turns) == 0 {
		return nil, errors.New("bench: the benchmark file has no turns")
	}
	return c, nil
}

// cutWords shortens s to at most n bytes, at a space when there is one.
func cutWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = truncate(s, n)
	if i := strings.LastIndexByte(s, ' '); i > n/2 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// mix is SplitMix64's finaliser: a fixed, well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// plainWords returns the words of a turn made of letters only (no digits,
// so no PII-looking runs), without its role prefix.
func plainWords(turn string) []string {
	var out []string
	for i, f := range strings.Fields(turn) {
		if i == 0 && strings.HasSuffix(f, ":") {
			continue // "user:", "assistant:"
		}
		w := strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) })
		if len(w) < 2 || len(w) > 20 || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			continue
		}
		out = append(out, w)
	}
	return out
}

// text returns record i's content. The first pass over the corpus writes
// the turns as they are; later passes append three to six words of
// another turn chosen by a fixed hash of i. Contents are distinct: a
// rare collision takes the next choice. Calls must come in order of i.
func (c *latCorpus) text(i int) string {
	L := len(c.turns)
	base := c.turns[i%L]
	s := base
	for salt := uint64(0); ; salt++ {
		if i >= L || salt > 0 {
			h := mix(uint64(i)<<8 | salt)
			var words []string
			for try := range uint64(8) {
				words = plainWords(c.turns[(h+try*7919)%uint64(L)])
				if len(words) >= 3 {
					break
				}
			}
			if len(words) > 0 {
				n := min(len(words), 3+int(h>>40)%4)
				at := int(h>>48) % (len(words) - n + 1)
				s = base + " " + strings.Join(words[at:at+n], " ")
			}
		}
		h := fnv.New64a()
		io.WriteString(h, s)
		sum := h.Sum64()
		if _, dup := c.seen[sum]; !dup || salt >= 16 {
			c.seen[sum] = struct{}{}
			return truncate(s, latMaxRecord)
		}
	}
}

// latType is record i's type: blocks of 100 (one per scope) alternate
// between episodes and beliefs, so every scope holds both.
func latType(i int) memory.Type {
	if (i/latScopes)%2 == 1 {
		return memory.Belief
	}
	return memory.Episode
}

func latProject(i int) string { return "p" + strconv.Itoa(i%latScopes) }

type latQuery struct {
	text    string
	project string // "" = unscoped
	turn    bool
}

// queries draws q queries: the benchmark's questions (up to half) and
// the first words of random written turns; nine in ten are scoped to one
// project (a turn-derived query to a project that holds its turn).
func (c *latCorpus) queries(q, written int, seed uint64) []latQuery {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var out []latQuery
	qs := slices.Clone(c.questions)
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	for _, t := range qs[:min(len(qs), q/2)] {
		if retrieve.Route(t) == retrieve.RouteSkip {
			continue
		}
		lq := latQuery{text: truncate(t, 4096)}
		if rng.IntN(10) != 0 {
			lq.project = "p" + strconv.Itoa(rng.IntN(latScopes))
		}
		out = append(out, lq)
	}
	for tries := 0; len(out) < q && tries < 100*q; tries++ {
		i := rng.IntN(written)
		f := strings.Fields(c.turns[i%len(c.turns)])
		if len(f) > 0 && strings.HasSuffix(f[0], ":") {
			f = f[1:]
		}
		f = f[:min(len(f), latQueryLen)]
		t := strings.Join(f, " ")
		if len(f) < 4 || retrieve.Route(t) == retrieve.RouteSkip {
			continue
		}
		lq := latQuery{text: t, turn: true}
		if rng.IntN(10) != 0 {
			lq.project = latProject(i)
		}
		out = append(out, lq)
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
