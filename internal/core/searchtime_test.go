package core

import (
	"testing"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// TestSearchReferenceTime: "last weekend" counts from the request's
// reference_time (the question's date), not from the clock, and the
// bad values of time are 400s naming the field.
func TestSearchReferenceTime(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		s, ps := graphAccessService(t, st)
		op := ps["op"]
		ctx := t.Context()
		write := func(content string, at time.Time) string {
			res, err := s.Write(ctx, op, WriteRequest{Type: memory.Episode, Content: content, ValidFrom: &at,
				Scope: memory.Scope{ProjectID: "p", SessionID: at.Format(time.DateOnly)}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Record.ID
		}
		old := write("user: last weekend I finally beat the game Hollow Knight", time.Date(2023, 3, 4, 12, 0, 0, 0, time.UTC))
		recent := write("user: I finally beat the game Celeste", time.Date(2023, 5, 28, 12, 0, 0, 0, time.UTC))
		ask := func(ref *time.Time) string {
			resp, err := s.Search(ctx, op, SearchRequest{Query: "What game did I finally beat last weekend?", ReferenceTime: ref,
				Scope: memory.Scope{ProjectID: "p"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Results) == 0 {
				t.Fatal("no results")
			}
			return resp.Results[0].Record.ID
		}
		ref := time.Date(2023, 5, 30, 21, 0, 0, 0, time.UTC)
		if got := ask(&ref); got != recent {
			t.Errorf("asked on 30 May 2023: first %s, want the turn of 28 May (%s)", got, recent)
		}
		if got := ask(nil); got != old {
			t.Errorf("asked now (no reference time): first %s, want the better word match %s", got, old)
		}
		bad := -1.0
		for field, req := range map[string]SearchRequest{
			"time": {Query: "x", Time: &bad},
		} {
			_, err := s.Search(ctx, op, req)
			if fault.CodeOf(err) != fault.InvalidArgument || fault.As(err).Details["field"] != field {
				t.Errorf("%s out of range: %v", field, err)
			}
		}
	})
}
