package retrieve

import "github.com/memgate/memgate/internal/lexical"

// The opening boost (issue 18, item 4). A question asking for every
// instance of something ("how many weddings did I attend this year?")
// needs one turn of each session that tells one, and in a chat with an
// assistant the user's first turn of a session usually states what the
// session is about ("I just got back from my cousin's wedding..."), while
// the assistant's long replies, which share more of the question's words,
// crowd it out. For such questions the user's opening turn of each
// candidate session gets its fused score × (1 + Query.Opening). Per-
// session caps and coverage boosts lost (docs/retrieval-rounds.md, rounds two
// and four): they kept a session's best-scored turns, which are rarely
// the opening ones.

// openingBoost multiplies by 1+w the fused score of every candidate that
// opens its session and was said by the user, and records it in tr.
func (e *Engine) openingBoost(fused map[uint32]float64, w float64, tr *boostTrace) {
	user := lexical.FieldTerm(speakerField, speakerUser)
	if e.lex.DocFreq(user) == 0 {
		return
	}
	for k, s := range fused {
		sk, ok := e.sessionKey(k)
		if !ok || e.sessions[sk][0] != k || !e.lex.HasTerm(k, user) {
			continue
		}
		fused[k] = s * (1 + w)
		if tr != nil {
			tr.opening[k] = true
		}
	}
}
