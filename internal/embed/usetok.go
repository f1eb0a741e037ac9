package embed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// useReservedPieces is the number of leading vocabulary entries that are
// never produced by segmentation (unknown, control and user-defined
// symbols). Entry 0 is the unknown piece.
const useReservedPieces = 6

// useUnkID is the id given to a character no piece covers.
const useUnkID = 0

// useSeparator marks word boundaries: SentencePiece's "lower one eighth
// block", U+2581.
const useSeparator = "\u2581"

// useTokenizer is the SentencePiece unigram segmenter of USE Lite, built
// from vocab.json: a JSON array of [piece, score] pairs whose index is the
// piece id.
//
// It reproduces the tokenizer that ships with the TensorFlow.js model (the
// universal-sentence-encoder and @energetic-ai/embeddings packages), so
// that ids match the ones the model was published with:
//
//   - The text is normalised to NFKC. If the result is not empty, every
//     U+0020 space becomes "▁" and one "▁" is prepended. Nothing else: no
//     lowercasing, and other white space (tabs, newlines) stays as is.
//   - The text is split into Unicode code points. At each position the
//     candidate pieces are the vocabulary entries (from index 6 on) that
//     are a prefix of the rest of the text; where there is none, the
//     single code point is a candidate with id 0 (unknown) and score 0.
//   - A Viterbi pass keeps, for each end position, the best total score,
//     visiting candidates by increasing start position. As in the reference,
//     a best score of exactly 0 counts as "not set yet" and ties go to the
//     later candidate; a JSON null score counts as 0.
//   - The backward pass steps back by the UTF-16 length of each chosen
//     piece (the reference measures JavaScript strings), and runs of
//     unknown ids are merged into one.
//
// When two entries spell the same piece, the later one wins.
type useTokenizer struct {
	pieces   map[string]int32 // piece -> id (ids >= useReservedPieces)
	scores   []float64        // by id
	stepBack []int32          // by id: UTF-16 length of the piece
	maxRunes int              // longest piece, in code points
}

// parseUSEVocab builds a tokenizer from the JSON text of vocab.json.
func parseUSEVocab(data []byte) (*useTokenizer, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	if len(raw) <= useReservedPieces {
		return nil, fmt.Errorf("vocabulary: %d entries, want more than %d", len(raw), useReservedPieces)
	}
	if len(raw) > 1<<24 {
		return nil, fmt.Errorf("vocabulary: %d entries is too many", len(raw))
	}
	t := &useTokenizer{
		pieces:   make(map[string]int32, len(raw)),
		scores:   make([]float64, len(raw)),
		stepBack: make([]int32, len(raw)),
	}
	for id, r := range raw {
		var entry []json.RawMessage
		if err := json.Unmarshal(r, &entry); err != nil || len(entry) != 2 {
			return nil, fmt.Errorf("vocabulary entry %d: want [piece, score]", id)
		}
		var piece string
		if err := json.Unmarshal(entry[0], &piece); err != nil {
			return nil, fmt.Errorf("vocabulary entry %d: piece: %w", id, err)
		}
		var score float64 // null stays 0, as null + x == x in JavaScript
		if !bytes.Equal(bytes.TrimSpace(entry[1]), []byte("null")) {
			if err := json.Unmarshal(entry[1], &score); err != nil {
				return nil, fmt.Errorf("vocabulary entry %d: score: %w", id, err)
			}
		}
		t.scores[id] = score
		t.stepBack[id] = int32(useUTF16Len(piece))
		if id < useReservedPieces {
			continue
		}
		if piece == "" {
			return nil, fmt.Errorf("vocabulary entry %d: empty piece", id)
		}
		t.pieces[piece] = int32(id)
		t.maxRunes = max(t.maxRunes, utf8.RuneCountInString(piece))
	}
	if t.stepBack[useUnkID] < 1 {
		return nil, errors.New("vocabulary: the unknown piece (entry 0) is empty")
	}
	return t, nil
}

func useUTF16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// useTokState is scratch space for one segmentation.
type useTokState struct {
	offs  []int // byte offset of each code point, plus len(text)
	best  []float64
	words []int32
	ids   []int32
}

// encode appends the piece ids of text to st.ids[:0] and returns them.
// The result is valid until the next call with the same st.
func (t *useTokenizer) encode(text string, st *useTokState) []int32 {
	st.ids = st.ids[:0]
	text = useNFKC(text)
	if text == "" {
		return st.ids
	}
	text = useSeparator + strings.ReplaceAll(text, " ", useSeparator)

	offs := st.offs[:0]
	for i := range text {
		offs = append(offs, i)
	}
	n := len(offs) // code points
	offs = append(offs, len(text))
	st.offs = offs

	best := useGrow(st.best, n+1)
	words := useGrow(st.words, n+1)
	clear(best)
	clear(words)
	st.best, st.words = best, words

	// Forward pass. Updates reach best[end] in increasing order of start,
	// and best[start] is final when start is visited, exactly as in the
	// reference's end-major loop.
	for start := 0; start < n; start++ {
		base := best[start]
		found := false
		for l := 1; l <= t.maxRunes && start+l <= n; l++ {
			id, ok := t.pieces[text[offs[start]:offs[start+l]]]
			if !ok {
				continue
			}
			found = true
			end := start + l
			if s := t.scores[id] + base; best[end] == 0 || s >= best[end] {
				best[end], words[end] = s, id
			}
		}
		if !found { // the code point alone, as the unknown piece
			end := start + 1
			if s := base; best[end] == 0 || s >= best[end] {
				best[end], words[end] = s, useUnkID
			}
		}
	}

	// Backward pass, then reverse and merge runs of unknowns.
	ids := st.ids
	for i := n; i > 0; i -= int(t.stepBack[words[i]]) {
		ids = append(ids, words[i])
	}
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	out := ids[:0]
	prevUnk := false
	for _, id := range ids {
		if !(prevUnk && id == useUnkID) {
			out = append(out, id)
		}
		prevUnk = id == useUnkID
	}
	st.ids = out
	return out
}

func useGrow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// cutsAtSpaces reports whether the text may be cut at its maxLen-th space:
// when "▁" is a piece, no piece has "▁" after its first character, and
// every piece steps back by its own length (no surrogate pairs).
func cutsAtSpaces(tok *useTokenizer) bool {
	if _, sepPiece := tok.pieces[useSeparator]; !sepPiece {
		return false
	}
	for p, id := range tok.pieces {
		_, first := utf8.DecodeRuneInString(p)
		if strings.Contains(p[first:], useSeparator) ||
			int(tok.stepBack[id]) != utf8.RuneCountInString(p) {
			return false
		}
	}
	return true
}
