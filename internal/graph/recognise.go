package graph

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// maxPhraseWords is the longest name, in words, that Recognise can match;
// longer names are not indexed for recognition.
const maxPhraseWords = 12

// words is a normalised word sequence: word i is buf[start[i]:end[i]], and
// words are separated in buf by single spaces, so words i..j are the
// contiguous text buf[start[i]:end[j]].
type words struct {
	buf        []byte
	start, end []int32
}

// split normalises s into words: maximal runs of Unicode letters and digits
// (combining marks stay attached), lower-cased; everything else, including
// '_', '-', apostrophes and invalid UTF-8, separates words.
func (w *words) split(s string) {
	w.buf, w.start, w.end = w.buf[:0], w.start[:0], w.end[:0]
	in := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		isWord := r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r) || (in && unicode.Is(unicode.Mn, r)))
		if !isWord {
			if in {
				w.end = append(w.end, int32(len(w.buf)))
				in = false
			}
			continue
		}
		if !in {
			if len(w.buf) > 0 {
				w.buf = append(w.buf, ' ')
			}
			w.start = append(w.start, int32(len(w.buf)))
			in = true
		}
		if r < utf8.RuneSelf {
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			w.buf = append(w.buf, byte(r))
		} else {
			w.buf = utf8.AppendRune(w.buf, unicode.ToLower(r))
		}
	}
	if in {
		w.end = append(w.end, int32(len(w.buf)))
	}
}

func (w *words) len() int { return len(w.start) }

// phrase is one recognisable spelling of a node.
type phrase struct {
	text  string
	words int
}

// nodePhrases returns the distinct normalised spellings of a node: its
// name, its key and its aliases. A spelling of one single-character word
// ("C", "R") is not recognisable: it would match too much ordinary text.
func nodePhrases(r *nodeRec) []phrase {
	var out []phrase
	var w words
	add := func(s string) {
		w.split(s)
		n := w.len()
		if n == 0 || n > maxPhraseWords {
			return
		}
		if n == 1 && utf8.RuneCount(w.buf) == 1 {
			return
		}
		t := string(w.buf)
		for _, p := range out {
			if p.text == t {
				return
			}
		}
		out = append(out, phrase{text: t, words: n})
	}
	add(r.name)
	add(r.key)
	for _, a := range r.aliases {
		add(a)
	}
	return out
}

// Recognise returns the non-archived nodes of workspace ws named in text,
// in order of first mention; nodes sharing one spelling are ordered by id.
//
// Matching is on whole words after the normalisation of words.split (case
// folded, punctuation, '_' and '-' as spaces), so "go" never matches
// "going" and "payment_service" matches "Payment-Service". Spans are found
// left to right and the longest spelling starting at a word wins: with
// nodes "New York" and "York", "New York" hides "York" in "new york".
// A spelling shared by several nodes names them all.
func (x *Index) Recognise(ws, text string) []string { return x.RecogniseFor(ws, text, nil) }

// RecogniseFor is Recognise over the nodes v sees only (nil: all), so a
// node v may not see neither seeds a search nor hides a shorter name.
func (x *Index) RecogniseFor(ws, text string, v *Viewer) []string {
	var w words
	w.split(text)
	x.mu.RLock()
	defer x.mu.RUnlock()
	g := x.ws[ws]
	if g == nil || len(g.phrases) == 0 {
		return nil
	}
	maxL := 0
	for l := maxPhraseWords; l > 0; l-- {
		if g.phraseLen[l] > 0 {
			maxL = l
			break
		}
	}
	var out []string
	seen := make(map[int32]struct{})
	var hit []int32
	n := w.len()
	for i := 0; i < n; {
		l := min(maxL, n-i)
		for ; l > 0; l-- {
			if g.phraseLen[l] == 0 {
				continue
			}
			hit = hit[:0]
			for _, o := range g.phrases[string(w.buf[w.start[i]:w.end[i+l-1]])] {
				if g.flags[o]&archived == 0 && g.visible(o, v) {
					hit = append(hit, o)
				}
			}
			if len(hit) > 0 {
				break
			}
		}
		if l == 0 {
			i++
			continue
		}
		slices.SortFunc(hit, g.cmpID)
		for _, o := range hit {
			if _, dup := seen[o]; !dup {
				seen[o] = struct{}{}
				out = append(out, g.nodes[o].id)
			}
		}
		i += l
	}
	return out
}
