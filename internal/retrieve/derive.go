package retrieve

// Write-time key expansion (issue 18). A conversation turn is indexed
// with keys a question is likely to ask about it but that its own words
// do not hold: the categories of the things it names ("I signed up for a
// pottery class" is asked about as "What activities does Melanie partake
// in?"), and the days its relative dates point at, resolved against the
// turn's own time ("yesterday", said on 8 May 2023, is 7 May 2023).
//
// The keys are field terms of the turn's lexical document (see
// lexical.FieldTerm), so they are linked to their turn by construction:
// they are indexed, snapshotted and removed with it, and a forget erases
// them with the turn's words. They are derived from the content and the
// turn's event time only, so every replica and every rebuild derives the
// same keys.

import (
	"container/heap"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

const (
	keyField = "key" // a category key: the analysed category word
	dayField = "day" // an event day a relative date in the turn resolves to: "2006-01-02"
)

// maxDerivedDays bounds the day keys of one span: a span longer than a
// month ("last year") says little about a day.
const maxDerivedDays = 31

// categories maps a category word (as a question asks it) to the words of
// the things it covers. General English, not drawn from the benchmark
// files' evidence. (The encoder's nearest words and WordNet's hypernyms
// were tried as more members and lost: docs/retrieval-rounds.md.)
var categories = map[string][]string{
	"activity": {"pottery", "painting", "drawing", "sketching", "hiking", "hike", "camping", "swimming", "jogging", "cycling",
		"biking", "yoga", "dancing", "dance", "singing", "photography", "gardening", "knitting", "sewing", "fishing", "climbing",
		"surfing", "skiing", "skating", "kayaking", "baking", "cooking", "volunteering", "volunteer", "meditation", "pilates",
		"workout", "gym", "chess", "puzzle", "woodworking", "crafts", "calligraphy", "scrapbooking", "sculpting", "ceramics",
		"karate", "boxing", "archery", "sailing", "skateboarding", "snowboarding", "marathon", "trekking", "birdwatching",
		"stargazing", "concert", "museum", "festival", "picnic", "beach", "class", "lessons", "workshop", "club", "painted",
		"hiked", "camped", "swam", "ran", "danced", "baked", "cooked", "volunteered", "played", "gaming", "running", "walk", "walks"},
	"hobby": {"pottery", "painting", "drawing", "photography", "gardening", "knitting", "sewing", "fishing", "baking", "cooking",
		"reading", "writing", "chess", "woodworking", "crafts", "calligraphy", "scrapbooking", "sculpting", "ceramics", "hiking",
		"camping", "yoga", "dancing", "singing", "guitar", "piano", "violin", "gaming", "collecting", "birdwatching", "surfing"},
	"sport": {"soccer", "football", "basketball", "baseball", "tennis", "golf", "volleyball", "hockey", "rugby", "cricket",
		"swimming", "running", "marathon", "cycling", "skiing", "surfing", "boxing", "karate", "badminton", "softball",
		"lacrosse", "wrestling", "climbing", "triathlon", "rowing", "gymnastics", "judo", "fencing"},
	"instrument": {"guitar", "piano", "violin", "drums", "flute", "cello", "saxophone", "ukulele", "trumpet", "clarinet",
		"keyboard", "harp", "banjo", "harmonica", "viola", "trombone"},
	"music": {"song", "songs", "band", "concert", "album", "singer", "singing", "playlist", "guitar", "piano", "violin",
		"drums", "jazz", "rock", "classical", "hip", "pop", "choir", "melody", "lyrics"},
	"pet": {"dog", "dogs", "puppy", "cat", "cats", "kitten", "hamster", "rabbit", "bunny", "parrot", "bird", "fish",
		"turtle", "horse", "guinea", "snake", "lizard", "gecko", "pup"},
	"animal": {"dog", "puppy", "cat", "kitten", "hamster", "rabbit", "bunny", "parrot", "bird", "turtle", "horse", "snake",
		"lizard", "deer", "bear", "owl", "fox", "dolphin", "whale"},
	"family": {"mom", "mother", "dad", "father", "sister", "brother", "son", "daughter", "kids", "children", "husband",
		"wife", "grandma", "grandmother", "grandpa", "grandfather", "aunt", "uncle", "cousin", "niece", "nephew",
		"parents", "baby", "siblings", "sibling"},
	"relative": {"mom", "mother", "dad", "father", "sister", "brother", "son", "daughter", "grandma", "grandmother",
		"grandpa", "grandfather", "aunt", "uncle", "cousin", "niece", "nephew", "parents", "sibling"},
	"food": {"pizza", "pasta", "sushi", "cake", "cookies", "bread", "salad", "soup", "tacos", "burger", "chocolate",
		"curry", "pie", "pancakes", "ramen", "steak", "chicken", "dessert", "recipe", "dish", "meal", "snack", "cupcakes",
		"muffins", "lasagna", "noodles", "sandwich", "cheese", "fruit", "vegetables"},
	"book":  {"novel", "novels", "read", "reading", "author", "poem", "poetry", "library", "kindle", "memoir", "chapter"},
	"movie": {"film", "films", "cinema", "netflix", "documentary", "watched", "theater", "theatre", "trailer"},
	"travel": {"trip", "vacation", "holiday", "visited", "flight", "flew", "abroad", "cruise", "hotel", "tour",
		"journey", "roadtrip", "backpacking", "sightseeing"},
	"place": {"city", "country", "beach", "mountain", "mountains", "park", "lake", "museum", "town", "village", "island",
		"forest", "river", "coast"},
	"job": {"work", "career", "office", "boss", "coworker", "colleague", "promotion", "interview", "hired", "company",
		"startup", "business", "internship", "nurse", "teacher", "engineer", "doctor", "lawyer", "counselor",
		"counseling", "manager", "employer", "salary", "shift", "profession"},
	"career": {"job", "work", "promotion", "interview", "hired", "internship", "counseling", "profession", "degree"},
	"education": {"school", "college", "university", "degree", "course", "studying", "exam", "graduate", "graduated",
		"major", "classes", "semester", "diploma", "certificate"},
	"health": {"doctor", "hospital", "sick", "illness", "injury", "therapy", "therapist", "surgery", "medication",
		"diet", "exercise", "fitness", "clinic", "symptoms", "allergy", "checkup"},
	"art": {"painting", "drawing", "sculpture", "pottery", "ceramics", "artwork", "canvas", "mural", "photography",
		"sketch", "gallery", "portrait", "watercolor"},
	"event": {"party", "wedding", "birthday", "concert", "festival", "parade", "conference", "graduation", "ceremony",
		"celebration", "reunion", "fundraiser", "race", "marathon"},
	"clothing": {"shirt", "jacket", "dress", "shoes", "boots", "sweater", "jeans", "coat", "hat", "scarf", "sneakers",
		"blouse", "skirt", "hoodie", "socks", "pants"},
	"plant": {"succulent", "succulents", "fern", "orchid", "basil", "tomato", "tomatoes", "cactus", "herbs", "roses",
		"flowers", "tulips", "sunflowers", "garden"},
	"furniture": {"sofa", "couch", "table", "chair", "desk", "bookshelf", "bed", "dresser", "cabinet", "shelf"},
	"vehicle":   {"car", "truck", "motorcycle", "van", "suv", "bike", "bicycle", "scooter"},
	"game":      {"chess", "poker", "boardgame", "videogame", "puzzle", "monopoly", "minecraft", "fortnite", "zelda"},
	"gift":      {"present", "presents", "gifted", "surprise"},
}

var (
	catOnce  sync.Once
	catIndex map[string][]string // analysed member word → analysed category words
)

// categoryIndex builds catIndex: member and category words analysed as
// documents and queries are, so a query's "activities" finds the key
// "activity" derived from "pottery".
func categoryIndex() map[string][]string {
	catOnce.Do(func() {
		catIndex = map[string][]string{}
		for cat, members := range categories {
			ct := lexical.Analyze(cat, true)
			if len(ct) != 1 {
				continue
			}
			for _, m := range members {
				for _, mt := range lexical.Analyze(m, true) {
					if mt != ct[0] && !containsStr(catIndex[mt], ct[0]) {
						catIndex[mt] = append(catIndex[mt], ct[0])
					}
				}
			}
		}
	})
	return catIndex
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// derivedFields lists the derived keys of a record as field terms. Only
// conversation turns are expanded: they are short and said at a known
// time; stored facts already say what they are about.
func derivedFields(r *memory.Record, event time.Time) []string {
	if r.Type != memory.Episode {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	{
		ci := categoryIndex()
		for _, t := range lexical.Analyze(r.Content, true) {
			for _, c := range ci[t] {
				add(lexical.FieldTerm(keyField, c))
			}
		}
	}
	for _, d := range eventDays(r.Content, event) {
		add(lexical.FieldTerm(dayField, d))
	}
	return out
}

// linkFields lists the keys of a record that link it to others — a
// turn's entity keys, a fact's source turns — as field terms that do not
// count towards its length: they make it findable by them without
// changing how BM25 weighs its words.
func linkFields(r *memory.Record) []string {
	if r.Type == memory.Episode {
		return append(entityFields(r.Content), phraseFields(r.Content)...) // keyphrase.go
	}
	return sourceFields(r)
}

// eventDays resolves the relative dates of a turn against the turn's own
// time (never the processing time) and lists the days they name. The
// turn's own day is left out: the event time already says it.
func eventDays(content string, event time.Time) []string {
	if event.IsZero() {
		return nil
	}
	own := event.UTC().Format(time.DateOnly)
	var out []string
	for _, sp := range turnSpans(content, event) {
		n := 0
		for d := sp.From; d.Before(sp.To) && n < maxDerivedDays; d = d.AddDate(0, 0, 1) {
			n++
		}
		if n >= maxDerivedDays {
			continue
		}
		for d := sp.From; d.Before(sp.To); d = d.AddDate(0, 0, 1) {
			if s := d.Format(time.DateOnly); s != own {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// keyTerms lists the category-key field terms a query asks for: the
// words of its focus ("What activities does Melanie partake in?"). Every
// category word of the question was tried first: "What did Melanie do
// with her family?" then pulled in every turn naming a relative, and
// recall@1 fell (docs/retrieval.md).
func keyTerms(text string) []string {
	var out []string
	for _, t := range focusTerms(text) {
		f := lexical.FieldTerm(keyField, t)
		if !containsStr(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// keySearch ranks the admitted documents holding a category key the query
// names, by the summed inverse document frequency of those keys.
func (e *Engine) keySearch(text string, pool int, allow func(uint32) bool) ([]uint32, []float64) {
	return e.idfSearch(keyTerms(text), pool, allow)
}

// idfSearch ranks the documents allow admits holding any of the field
// terms by the summed inverse document frequency of the terms they hold:
// the scoring of the keys and keyphrases lists.
func (e *Engine) idfSearch(terms []string, pool int, allow func(uint32) bool) ([]uint32, []float64) {
	sc := map[uint32]float64{}
	n := float64(max(1, e.lex.Len()))
	for _, f := range terms {
		df := e.lex.DocFreq(f)
		if df == 0 {
			continue
		}
		idf := logIDF(n, float64(df))
		e.lex.Postings(f, func(k uint32, _ int) {
			if allow(k) {
				sc[k] += idf
			}
		})
	}
	return e.topScored(sc, pool)
}

// daysIn lists the day-key field terms of a span, or nil when it is
// longer than maxDerivedDays (no day key is derived for such spans).
func daysIn(sp Span) []string {
	var out []string
	for d := sp.From; d.Before(sp.To); d = d.AddDate(0, 0, 1) {
		if len(out) >= 366 {
			break
		}
		out = append(out, lexical.FieldTerm(dayField, d.Format(time.DateOnly)))
	}
	return out
}

// derivedInSpans returns the keys whose derived event days fall in one of
// the spans.
func (e *Engine) derivedInSpans(spans []Span) map[uint32]bool {
	var in map[uint32]bool
	for _, sp := range spans {
		for _, f := range daysIn(sp) {
			e.lex.Postings(f, func(k uint32, _ int) {
				if in == nil {
					in = map[uint32]bool{}
				}
				in[k] = true
			})
		}
	}
	return in
}

// logIDF is the BM25 inverse document frequency of a term in df of n documents.
func logIDF(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// focusRe finds the thing a question asks for: the words after "what",
// "which", "how many" or "kinds of" ("What activities does ...", "Which
// sports ...", "What kind of pets ...").
var focusRe = regexp.MustCompile(`(?i)\b(?:what|which|how many|kinds? of|types? of|sorts? of)\s+((?:[\p{L}'’-]+\s+){0,2}[\p{L}'’-]+)`)

// focusTerms lists the analysed words of the question's focus phrases.
func focusTerms(text string) []string {
	var out []string
	for _, m := range focusRe.FindAllStringSubmatch(text, -1) {
		out = append(out, lexical.Analyze(m[1], true)...)
	}
	return out
}

// maxTimeSentences bounds the sentences of one turn whose dates are
// resolved: a long assistant answer full of dates ("book two months
// ahead, visit in April ...") is advice, not the turn's events, and the
// patterns cost about 2.5 ms on 3,000 such characters.
const maxTimeSentences = 8

// turnSpans is TimeSpans over the sentences of a turn that hold a time
// word, at most maxTimeSentences of them: a sentence without one costs a
// scan of its words only.
func turnSpans(content string, ref time.Time) []Span {
	var out []Span
	n := 0
	for sent := range strings.FieldsFuncSeq(content, func(r rune) bool { return r == '\n' || r == '!' || r == '?' || r == ';' }) {
		for part := range strings.SplitSeq(sent, ". ") {
			if timeWords(strings.ToLower(part)) == 0 {
				continue
			}
			if n++; n > maxTimeSentences {
				return out
			}
			out = append(out, TimeSpans(part, ref)...)
		}
	}
	return out
}

// topScored returns the pool best-scored documents of sc, best first, ties
// in id order, with their scores (the derived-key and entity-walk lists).
// A common key is held by thousands of turns: the pool best are selected
// with a heap of pool entries, and only they are sorted.
func (e *Engine) topScored(sc map[uint32]float64, pool int) ([]uint32, []float64) {
	if pool <= 0 || len(sc) == 0 {
		return nil, nil
	}
	h := &worstFirst{e: e, xs: make([]scoredKey, 0, min(pool, len(sc)))}
	for k, s := range sc {
		x := scoredKey{k, s}
		if h.Len() < pool {
			heap.Push(h, x)
		} else if h.better(x, h.xs[0]) {
			h.xs[0] = x
			heap.Fix(h, 0)
		}
	}
	sort.Slice(h.xs, func(i, j int) bool { return h.better(h.xs[i], h.xs[j]) })
	keys, out := make([]uint32, len(h.xs)), make([]float64, len(h.xs))
	for i, x := range h.xs {
		keys[i], out[i] = x.k, x.s
	}
	return keys, out
}

// worstFirst is a heap of scored keys whose root is the worst kept: a
// higher score is better, then the lower id (Engine.idLess).
type worstFirst struct {
	e  *Engine
	xs []scoredKey
}

func (h *worstFirst) better(a, b scoredKey) bool {
	if a.s != b.s {
		return a.s > b.s
	}
	return h.e.idLess(a.k, b.k)
}
func (h *worstFirst) Len() int           { return len(h.xs) }
func (h *worstFirst) Less(i, j int) bool { return h.better(h.xs[j], h.xs[i]) }
func (h *worstFirst) Swap(i, j int)      { h.xs[i], h.xs[j] = h.xs[j], h.xs[i] }
func (h *worstFirst) Push(x any)         { h.xs = append(h.xs, x.(scoredKey)) }
func (h *worstFirst) Pop() any {
	x := h.xs[len(h.xs)-1]
	h.xs = h.xs[:len(h.xs)-1]
	return x
}

type scoredKey struct {
	k uint32
	s float64
}
