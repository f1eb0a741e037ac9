package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
)

// decisionsPage lists decisions as the operator with the given query.
func decisionsPage(h *harness, q url.Values) core.DecisionPage {
	h.t.Helper()
	var page core.DecisionPage
	h.mustDo("GET", "/v1/decisions?"+q.Encode(), "op", nil, http.StatusOK, &page)
	return page
}

// TestDecisionsListing answers "why was this not remembered?" from both
// logs the gate keeps: a quarantined and a refused write (audit log) and
// a skipped chat turn (extraction gatekeeper log).
func TestDecisionsListing(t *testing.T) {
	h := newHarnessOpts(t, harnessOptions{jobs: true})
	start := h.clock.Now()
	ok := h.write("std", map[string]any{"type": "belief", "content": "The build uses Go 1.26"}, http.StatusCreated)
	h.clock.Advance(time.Second)
	q := h.write("std", map[string]any{"type": "belief", "content": "Reach Alice at alice.smith@example.org tomorrow"}, http.StatusAccepted)
	h.clock.Advance(time.Second)
	h.wantError("POST", "/v1/records", "ro", map[string]any{"type": "belief", "content": "read-only agents cannot write"}, http.StatusForbidden, "permission_denied")
	h.clock.Advance(time.Second)

	id := gatewayUser(h, "u1")
	h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": "chat:1", "messages": []map[string]any{
		{"sender_id": "bot", "role": "assistant", "timestamp": time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC).UnixMilli(),
			"content": "Sounds good. How is the weather?"},
	}}), http.StatusOK, nil)
	j := flushAndWait(t, h, id(map[string]any{"session_id": "chat:1"}))

	all := decisionsPage(h, url.Values{"since": {start.Format(time.RFC3339)}})
	if all.NextCursor != "" {
		t.Fatalf("one page expected, next_cursor %q", all.NextCursor)
	}
	var rejected, quarantined, skipped, accepted int
	for i, d := range all.Decisions {
		if i > 0 && d.At.Before(all.Decisions[i-1].At) {
			t.Errorf("not in time order at %d: %+v", i, all.Decisions)
		}
		if d.Reason == "" || d.ID == "" || d.Event == "" {
			t.Errorf("decision without reason, id or event: %+v", d)
		}
		switch {
		case d.Source == core.DecisionSourceGate && d.Decision == "rejected":
			rejected++
			if d.Code != "permission_denied" || d.ActorID == "" {
				t.Errorf("rejection %+v", d)
			}
		case d.Source == core.DecisionSourceGate && d.Decision == "quarantined":
			quarantined++
			if d.RecordID != q.Record.ID || d.Reason != q.Reason {
				t.Errorf("quarantine %+v, want record %s reason %s", d, q.Record.ID, q.Reason)
			}
		case d.Source == core.DecisionSourceGate && d.Decision == "accepted" && d.RecordID == ok.Record.ID:
			accepted++
		case d.Source == core.DecisionSourceExtraction && d.Decision == "skip":
			skipped++
			if d.JobID != j.ID || d.MessageID == "" || d.Event != core.EventExtraction {
				t.Errorf("extraction decision %+v", d)
			}
		}
	}
	if rejected != 1 || quarantined != 1 || skipped != 1 || accepted != 1 {
		t.Fatalf("rejected %d quarantined %d skipped %d accepted %d in %+v", rejected, quarantined, skipped, accepted, all.Decisions)
	}
	// No content of a refused or quarantined write reaches the listing.
	raw := h.mustDo("GET", "/v1/decisions", "op", nil, http.StatusOK, nil)
	for _, s := range []string{"alice.smith", "read-only agents cannot write", "weather"} {
		if strings.Contains(string(raw), s) {
			t.Errorf("listing leaks content %q", s)
		}
	}

	// Filters.
	for name, c := range map[string]struct {
		q    url.Values
		want func(core.Decision) bool
		n    int
	}{
		"decision":   {url.Values{"decision": {"rejected"}}, func(d core.Decision) bool { return d.Decision == "rejected" }, 1},
		"record":     {url.Values{"record_id": {q.Record.ID}}, func(d core.Decision) bool { return d.RecordID == q.Record.ID && d.Source == "gate" }, 1},
		"extraction": {url.Values{"source": {"extraction"}}, func(d core.Decision) bool { return d.Source == "extraction" }, 1},
		"event":      {url.Values{"event": {core.EventExtraction}, "decision": {"skip"}}, func(d core.Decision) bool { return d.Decision == "skip" }, 1},
		"job":        {url.Values{"job_id": {j.ID}}, func(d core.Decision) bool { return d.JobID == j.ID }, 1},
		"since":      {url.Values{"since": {h.clock.Now().Add(time.Hour).Format(time.RFC3339)}}, nil, 0},
	} {
		got := decisionsPage(h, c.q).Decisions
		if len(got) != c.n {
			t.Errorf("%s: %d decisions, want %d: %+v", name, len(got), c.n, got)
		}
		for _, d := range got {
			if !c.want(d) {
				t.Errorf("%s: %+v does not match", name, d)
			}
		}
	}

	// Paging one at a time visits exactly the same decisions, in order.
	var paged []core.Decision
	cursor := ""
	for range 100 {
		p := decisionsPage(h, url.Values{"since": {start.Format(time.RFC3339)}, "limit": {"1"}, "cursor": {cursor}})
		paged = append(paged, p.Decisions...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(paged) != len(all.Decisions) {
		t.Fatalf("paged %d decisions, want %d", len(paged), len(all.Decisions))
	}
	for i := range paged {
		if paged[i].ID != all.Decisions[i].ID {
			t.Fatalf("page order differs at %d: %s vs %s", i, paged[i].ID, all.Decisions[i].ID)
		}
	}

	// An operator's approval is a decision too, with its reason.
	h.mustDo("POST", "/v1/approvals/"+q.ApprovalID+"/approve", "op", map[string]any{}, http.StatusOK, nil)
	hist := decisionsPage(h, url.Values{"record_id": {q.Record.ID}}).Decisions
	if len(hist) != 2 || hist[0].Decision != "quarantined" || hist[1].Event != "approval.approve" ||
		hist[1].Decision != "accepted" || hist[1].Reason != "approved_by_operator" {
		t.Fatalf("record history of decisions %+v", hist)
	}

	// Operators only; bad input names its field.
	h.wantError("GET", "/v1/decisions", "std", nil, http.StatusForbidden, "permission_denied")
	for field, query := range map[string]string{
		"cursor": "cursor=nope", "source": "source=llm", "record_id": "record_id=x", "limit": "limit=501", "since": "since=yesterday",
	} {
		e := h.wantError("GET", "/v1/decisions?"+query, "op", nil, http.StatusBadRequest, "invalid_argument")
		if e.Error.Details["field"] != field {
			t.Errorf("%s: error names %v, want %s", query, e.Error.Details["field"], field)
		}
	}
}
