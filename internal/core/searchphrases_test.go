package core

import (
	"testing"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// TestSearchKeyphrasesByDefault: a search ranks the turn holding the
// question's phrase ("pride parade") above a shorter turn of the same
// session holding its words apart, through the keyphrase list the service weighs by default;
// weights.phrases 0 switches it off, and an unknown weight is a 400
// naming the field.
func TestSearchKeyphrasesByDefault(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		s, ps := graphAccessService(t, st)
		op := ps["op"]
		ctx := t.Context()
		write := func(content, sess string) string {
			res, err := s.Write(ctx, op, WriteRequest{Type: memory.Episode, Content: content,
				Scope: memory.Scope{ProjectID: "p", SessionID: sess}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Record.ID
		}
		phrase := write("Caroline: last week we all marched in the pride parade downtown with the whole crew from the centre", "a")
		apart := write("Melanie: pride matters to me; the parade was loud", "a")
		write("Melanie: I painted a sunset over the lake", "c")
		first := func(w map[string]float64) string {
			resp, err := s.Search(ctx, op, SearchRequest{Query: "When was the pride parade?", Weights: w,
				Types: []memory.Type{memory.Episode}, Scope: memory.Scope{ProjectID: "p"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Results) == 0 {
				t.Fatal("no results")
			}
			return resp.Results[0].Record.ID
		}
		if got := first(nil); got != phrase {
			t.Errorf("default weights: first %s, want the turn holding the phrase %s", got, phrase)
		}
		if got := first(map[string]float64{"phrases": 0}); got != apart {
			t.Errorf("phrases off: first %s, want the shorter turn %s", got, apart)
		}
		_, err := s.Search(ctx, op, SearchRequest{Query: "x", Weights: map[string]float64{"bogus": 1}})
		if fault.CodeOf(err) != fault.InvalidArgument || fault.As(err).Details["field"] != "weights" {
			t.Errorf("unknown weight: %v", err)
		}
	})
}
