package api_test

import (
	"database/sql"

	_ "modernc.org/sqlite"

	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
)

// TestRequestErrors is a table of single requests that must fail with a
// given status and code, and write nothing but (for gate decisions) an
// audit entry.
func TestRequestErrors(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.Limits.MaxRequestBytes = 64 << 10 })
	big := strings.Repeat("a", 40<<10)
	huge := `{"type":"belief","content":"` + strings.Repeat("b", 70<<10) + `"}`
	cases := []struct {
		name, method, path, who string
		body                    any
		status                  int
		code, field             string
	}{
		{"no token", "GET", "/v1/records", "", nil, 401, "unauthenticated", ""},
		{"garbage token", "GET", "/v1/records", "nope", nil, 401, "unauthenticated", ""},
		{"well-formed unknown token", "GET", "/v1/records", "mg_0123456789abcdef0123456789abcdef_" + strings.Repeat("A", 43), nil, 401, "unauthenticated", ""},
		{"agent on operator route", "GET", "/v1/agents", "std", nil, 403, "permission_denied", ""},
		{"unknown route", "GET", "/v2/nothing", "op", nil, 404, "not_found", ""},
		{"empty body", "POST", "/v1/records", "std", "", 400, "invalid_argument", ""},
		{"malformed JSON", "POST", "/v1/records", "std", `{"type":`, 400, "invalid_argument", ""},
		{"trailing data", "POST", "/v1/records", "std", `{"type":"belief","content":"x"} {}`, 400, "invalid_argument", ""},
		{"unknown field", "POST", "/v1/records", "std", `{"type":"belief","content":"x","colour":"red"}`, 400, "invalid_argument", "colour"},
		{"wrong field type", "POST", "/v1/records", "std", `{"type":"belief","content":42}`, 400, "invalid_argument", "content"},
		{"unknown type", "POST", "/v1/records", "std", map[string]any{"type": "blog", "content": "x"}, 400, "invalid_argument", "type"},
		{"empty content", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "  "}, 400, "invalid_argument", "content"},
		{"NUL in content", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "a\x00b"}, 400, "invalid_argument", "content"},
		{"bad entity", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "entities": []string{"alice"}}, 400, "invalid_argument", "entities[0]"},
		{"bad kind", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "source": map[string]any{"kind": "dreamt"}}, 400, "invalid_argument", "source.kind"},
		{"confidence out of range", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "source": map[string]any{"confidence": 1.5}}, 400, "invalid_argument", "source.confidence"},
		{"metadata not an object", "POST", "/v1/records", "std", `{"type":"belief","content":"x","metadata":[1]}`, 400, "invalid_argument", "metadata"},
		{"validity inverted", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "valid_from": "2026-02-01T00:00:00Z", "valid_until": "2026-01-01T00:00:00Z"}, 400, "invalid_argument", "valid_until"},
		{"bad time", "POST", "/v1/records", "std", `{"type":"belief","content":"x","valid_from":"yesterday"}`, 400, "invalid_argument", ""},
		{"status active not requestable", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "status": "archived"}, 400, "invalid_argument", "status"},
		{"evidence missing", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "source": map[string]any{"evidence": []string{memory.NewID()}}}, 400, "invalid_argument", "source.evidence"},
		{"content over limit", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": big}, 413, "too_large", "content"},
		{"body over limit", "POST", "/v1/records", "std", huge, 413, "too_large", ""},
		{"read_only writes", "POST", "/v1/records", "ro", map[string]any{"type": "belief", "content": "x"}, 403, "permission_denied", ""},
		{"standard writes sensitive", "POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "access": "sensitive"}, 403, "permission_denied", ""},
		{"system access", "POST", "/v1/records", "op", map[string]any{"type": "belief", "content": "x", "access": "system"}, 403, "permission_denied", ""},
		{"get bad id", "GET", "/v1/records/not-an-id", "std", nil, 404, "not_found", ""},
		{"get missing", "GET", "/v1/records/" + memory.NewID(), "std", nil, 404, "not_found", ""},
		{"list bad type", "GET", "/v1/records?type=blog", "std", nil, 400, "invalid_argument", "type"},
		{"list bad time", "GET", "/v1/records?as_of=soon", "std", nil, 400, "invalid_argument", "as_of"},
		{"list bad limit", "GET", "/v1/records?limit=100000", "std", nil, 400, "invalid_argument", "limit"},
		{"list bad cursor", "GET", "/v1/records?cursor=zzz", "std", nil, 400, "invalid_argument", "cursor"},
		{"patch without version", "PATCH", "/v1/records/" + memory.NewID(), "std", map[string]any{"content": "y"}, 400, "invalid_argument", "expected_version"},
		{"patch by restricted", "PATCH", "/v1/records/" + memory.NewID(), "restricted", map[string]any{"content": "y", "expected_version": 1}, 403, "permission_denied", ""},
		{"agent bad name", "POST", "/v1/agents", "op", map[string]any{"name": "a b"}, 400, "invalid_argument", "name"},
		{"agent bad trust", "POST", "/v1/agents", "op", map[string]any{"name": "x1", "trust": "god"}, 400, "invalid_argument", "trust"},
		{"agent name taken", "POST", "/v1/agents", "op", map[string]any{"name": "std"}, 409, "conflict", ""},
		{"approve unknown", "POST", "/v1/approvals/" + memory.NewID() + "/approve", "op", nil, 404, "not_found", ""},
		{"approvals bad status", "GET", "/v1/approvals?status=maybe", "op", nil, 400, "invalid_argument", "status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.t = t
			e := h.wantError(c.method, c.path, c.who, c.body, c.status, c.code)
			if c.field != "" && e.Error.Details["field"] != c.field {
				t.Errorf("details.field = %v, want %q (message %q)", e.Error.Details["field"], c.field, e.Error.Message)
			}
			if e.Error.Message == "" {
				t.Error("empty error message")
			}
		})
	}
	h.t = t
	// None of those requests created a record.
	var list struct{ Records []memory.Record }
	h.mustDo("GET", "/v1/records?status=active,provisional,quarantined", "op", nil, 200, &list)
	if len(list.Records) != 0 {
		t.Fatalf("rejected requests left %d records", len(list.Records))
	}
}

func TestUnauthenticatedAnswersAreIdentical(t *testing.T) {
	h := newHarness(t, nil)
	_, _, revoked := h.do("GET", "/v1/records", "std2", nil)
	if !strings.Contains(string(revoked), "records") {
		t.Fatalf("std2 should work before revocation: %s", revoked)
	}
	h.mustDo("DELETE", "/v1/agents/std2", "op", nil, 200, nil)
	var bodies []string
	for _, who := range []string{"", "garbage", "std2", h.tokens["std"][:len(h.tokens["std"])-1] + "x"} {
		code, _, raw := h.do("GET", "/v1/records", who, nil)
		if code != 401 {
			t.Fatalf("%q: status %d", who, code)
		}
		bodies = append(bodies, string(raw))
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Fatalf("401 bodies differ: %q vs %q", b, bodies[0])
		}
	}
}

func TestWriteDefaultsAndDecisions(t *testing.T) {
	h := newHarness(t, nil)
	res := h.write("std", map[string]any{"type": "belief", "content": "Alice prefers PostgreSQL", "entities": []string{"person:alice"},
		"scope": map[string]any{"user_id": "alice"}, "source": map[string]any{"kind": "told"}}, http.StatusCreated)
	r := res.Record
	if res.Decision != "accepted" || r.Status != memory.Active || r.Version != 1 || r.Access != memory.Public {
		t.Fatalf("unexpected decision/record: %+v", res)
	}
	if r.Source.Agent != "std" || r.Source.Kind != memory.Told || r.Source.Confidence != 0.75 {
		t.Fatalf("source %+v", r.Source)
	}
	if res.Citation != "mem://"+r.ID+"@v1" || !memory.ValidID(r.ID) || r.ContentSHA256 != memory.SHA256Hex("Alice prefers PostgreSQL") {
		t.Fatalf("citation/id/hash wrong: %+v", res)
	}
	if r.Gate.DecisionID == "" || r.Gate.Origin != "external" || r.IngestedAt.IsZero() {
		t.Fatalf("gate info %+v", r.Gate)
	}
	for kind, conf := range map[string]float64{"observed": 0.9, "inferred": 0.6} {
		got := h.write("std", map[string]any{"type": "belief", "content": "conf " + kind, "source": map[string]any{"kind": kind}}, 201)
		if got.Record.Source.Confidence != conf {
			t.Errorf("%s confidence %v want %v", kind, got.Record.Source.Confidence, conf)
		}
	}

	// Exact duplicate in the same scope is a no-op returning the original.
	dup := h.write("std2", map[string]any{"type": "belief", "content": "Alice prefers PostgreSQL", "scope": map[string]any{"user_id": "alice"}}, http.StatusOK)
	if dup.Decision != "duplicate" || dup.Record.ID != r.ID {
		t.Fatalf("duplicate: %+v", dup)
	}
	// Different scope is not a duplicate.
	other := h.write("std", map[string]any{"type": "belief", "content": "Alice prefers PostgreSQL", "scope": map[string]any{"user_id": "bob"}}, http.StatusCreated)
	if other.Record.ID == r.ID {
		t.Fatal("different scope deduplicated")
	}

	// Restricted agents queue; the record is provisional and hidden from
	// default listings until an operator approves it.
	q := h.write("restricted", map[string]any{"type": "decision", "content": "Adopt Go 1.26"}, http.StatusAccepted)
	if q.Decision != "queued" || q.Record.Status != memory.Provisional || q.ApprovalID == "" {
		t.Fatalf("restricted write: %+v", q)
	}
	// Asking for provisional queues too.
	p := h.write("std", map[string]any{"type": "belief", "content": "Maybe Bob likes tea", "status": "provisional"}, http.StatusAccepted)
	if p.Decision != "provisional" || p.ApprovalID == "" {
		t.Fatalf("provisional write: %+v", p)
	}
	var list struct{ Records []memory.Record }
	h.mustDo("GET", "/v1/records", "std", nil, 200, &list)
	for _, rec := range list.Records {
		if rec.Status != memory.Active {
			t.Fatalf("default list shows %s record", rec.Status)
		}
	}
	h.mustDo("GET", "/v1/records?status=provisional", "std", nil, 200, &list)
	if len(list.Records) != 2 {
		t.Fatalf("provisional list has %d, want 2", len(list.Records))
	}

	// Every decision is one audit entry.
	decisions := map[string]int{}
	for _, e := range h.auditLog() {
		if e.Event == "record.write" {
			decisions[e.Payload["decision"].(string)]++
		}
	}
	want := map[string]int{"accepted": 4, "duplicate": 1, "queued": 1, "provisional": 1}
	for k, v := range want {
		if decisions[k] != v {
			t.Errorf("audit decisions[%s] = %d, want %d (%v)", k, decisions[k], v, decisions)
		}
	}
}

func TestRestrictedAutoAcceptPolicy(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.Trust.Restricted.AutoAcceptTypes = []memory.Type{memory.Episode} })
	ep := h.write("restricted", map[string]any{"type": "episode", "content": "user: hi / assistant: hello"}, 201)
	if ep.Decision != "accepted" {
		t.Fatalf("auto-accepted type queued: %+v", ep)
	}
	b := h.write("restricted", map[string]any{"type": "belief", "content": "The sky is green"}, 202)
	if b.Decision != "queued" {
		t.Fatalf("non-listed type not queued: %+v", b)
	}
}

func TestPIIQuarantine(t *testing.T) {
	h := newHarness(t, nil)
	cases := []struct {
		kind, content string
	}{
		{"email", "Reach Alice at alice.smith@example.org tomorrow"},
		{"phone", "Call the office on (555) 123-4567 after lunch"},
		{"ssn", "Her SSN is 123-45-6789 for the form"},
		{"card", "Card on file 4111 1111 1111 1111 expires soon"},
		{"secret", "The deploy key is AKIAIOSFODNN7EXAMPLE in the vault"},
		{"secret", "use sk-proj-" + strings.Repeat("Ab3dE", 8) + " for the bot"},
		{"secret", "export password=hunter2hunter2 before running"},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			h.t = t
			res := h.write("std", map[string]any{"type": "belief", "content": c.content}, http.StatusAccepted)
			if res.Decision != "quarantined" || res.Record.Status != memory.Quarantined || res.Record.Access != memory.Sensitive {
				t.Fatalf("not quarantined: %+v", res)
			}
			if len(res.PIIKinds) != 1 || res.PIIKinds[0] != c.kind || res.ApprovalID == "" {
				t.Fatalf("pii kinds %v approval %q", res.PIIKinds, res.ApprovalID)
			}
			// Standard agents cannot read it back; operators can.
			h.wantError("GET", "/v1/records/"+res.Record.ID, "std", nil, 404, "not_found")
			h.mustDo("GET", "/v1/records/"+res.Record.ID, "op", nil, 200, nil)
		})
	}
	h.t = t
	// A Luhn-invalid 16-digit number is not a card.
	ok := h.write("std", map[string]any{"type": "belief", "content": "Order reference 4111 1111 1111 1112 shipped"}, http.StatusCreated)
	if ok.Decision != "accepted" {
		t.Fatalf("Luhn-invalid number quarantined: %+v", ok)
	}
	// A record derived from a quarantined one inherits the flag.
	var items struct {
		Items []struct {
			RecordID string `json:"record_id"`
		} `json:"items"`
	}
	h.mustDo("GET", "/v1/approvals", "op", nil, 200, &items)
	derived := h.write("trusted", map[string]any{"type": "reflection", "content": "Contact details were shared",
		"source": map[string]any{"evidence": []string{items.Items[0].RecordID}}}, http.StatusAccepted)
	if derived.Decision != "quarantined" || derived.Reason != "pii_evidence" {
		t.Fatalf("derived record: %+v", derived)
	}
	// Audit payloads carry kinds and hashes, never the matched text.
	for _, e := range h.auditLog() {
		raw, _ := json.Marshal(e.Payload)
		for _, c := range cases {
			if strings.Contains(string(raw), c.content) {
				t.Fatalf("audit payload carries content: %s", raw)
			}
		}
	}
}

func TestPIIRejectAction(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.PII.Action = gate.PIIReject })
	e := h.wantError("POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "mail me at a@b.example"}, 422, "gate_rejected")
	if e.Error.Details["reason"] != "pii" {
		t.Fatalf("details %v", e.Error.Details)
	}
	var n int
	for _, a := range h.auditLog() {
		if a.Event == "record.write" && a.Payload["decision"] == "rejected" && a.Payload["reason"] == "pii" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("rejection audited %d times", n)
	}
}

func TestRateLimit(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.RateLimit.Agent = gate.Bucket{PerSecond: 1, Burst: 2} })
	h.write("std", map[string]any{"type": "belief", "content": "one"}, 201)
	h.write("std", map[string]any{"type": "belief", "content": "two"}, 201)
	code, hdr, raw := h.do("POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "three"})
	if code != 429 || hdr.Get("Retry-After") != "1" || !strings.Contains(string(raw), "rate_limited") {
		t.Fatalf("third write: %d Retry-After=%q %s", code, hdr.Get("Retry-After"), raw)
	}
	// Buckets are per principal.
	h.write("std2", map[string]any{"type": "belief", "content": "other agent"}, 201)
	h.clock.Advance(time.Second)
	h.write("std", map[string]any{"type": "belief", "content": "four"}, 201)
}

func TestPatchVersionsAndConflicts(t *testing.T) {
	h := newHarness(t, nil)
	r := h.write("std", map[string]any{"type": "belief", "content": "The VPN drops hourly"}, 201).Record
	t1 := h.clock.Now()
	h.clock.Advance(time.Minute)

	var p writeResult
	h.mustDo("PATCH", "/v1/records/"+r.ID, "std", map[string]any{"expected_version": 1, "content": "The VPN drops every 50 minutes"}, 200, &p)
	if p.Record.Version != 2 || p.Record.Content != "The VPN drops every 50 minutes" || p.Citation != "mem://"+r.ID+"@v2" {
		t.Fatalf("patch: %+v", p)
	}
	auditBefore := len(h.auditLog())
	e := h.wantError("PATCH", "/v1/records/"+r.ID, "std", map[string]any{"expected_version": 1, "content": "stale"}, 409, "version_conflict")
	if e.Error.Details["current_version"] != float64(2) {
		t.Fatalf("details %v", e.Error.Details)
	}
	if n := len(h.auditLog()); n != auditBefore {
		t.Fatalf("conflict wrote %d audit entries", n-auditBefore)
	}
	var hist struct{ Versions []memory.Record }
	h.mustDo("GET", "/v1/records/"+r.ID+"/history", "std", nil, 200, &hist)
	if len(hist.Versions) != 2 || hist.Versions[0].Content != "The VPN drops hourly" || hist.Versions[1].Version != 2 {
		t.Fatalf("history %+v", hist.Versions)
	}

	// Transaction-time reads.
	var rec memory.Record
	h.mustDo("GET", "/v1/records/"+r.ID+"?known_at="+url.QueryEscape(t1.Format(time.RFC3339Nano)), "std", nil, 200, &rec)
	if rec.Version != 1 {
		t.Fatalf("known_at before patch gave v%d", rec.Version)
	}
	h.mustDo("GET", "/v1/records/"+r.ID+"?version=1", "std", nil, 200, &rec)
	if rec.Content != "The VPN drops hourly" {
		t.Fatalf("version=1 gave %q", rec.Content)
	}
	h.wantError("GET", "/v1/records/"+r.ID+"?known_at=2020-01-01T00:00:00Z", "std", nil, 404, "not_found")

	// A patch that introduces PII quarantines the record.
	var q writeResult
	h.mustDo("PATCH", "/v1/records/"+r.ID, "std", map[string]any{"expected_version": 2, "content": "ask ops@example.com"}, 200, &q)
	if q.Record.Status != memory.Quarantined || q.ApprovalID == "" {
		t.Fatalf("pii patch %+v", q)
	}
}

func TestParallelPatchesExactlyOneWins(t *testing.T) {
	h := newHarness(t, nil)
	r := h.write("std", map[string]any{"type": "belief", "content": "contended"}, 201).Record
	const n = 16
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			codes[i], _, _ = h.do("PATCH", "/v1/records/"+r.ID, "std", map[string]any{"expected_version": 1, "content": fmt.Sprintf("winner %c", 'a'+i)})
		})
	}
	wg.Wait()
	wins, conflicts := 0, 0
	for _, c := range codes {
		switch c {
		case 200:
			wins++
		case 409:
			conflicts++
		}
	}
	if wins != 1 || conflicts != n-1 {
		t.Fatalf("codes %v: %d wins, %d conflicts", codes, wins, conflicts)
	}
	var hist struct{ Versions []memory.Record }
	h.mustDo("GET", "/v1/records/"+r.ID+"/history", "std", nil, 200, &hist)
	if len(hist.Versions) != 2 {
		t.Fatalf("%d versions after the race", len(hist.Versions))
	}
}

func TestBitemporalAndSupersession(t *testing.T) {
	h := newHarness(t, nil)
	march1 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	old := h.write("std", map[string]any{"type": "belief", "content": "Team lunch is on Tuesdays",
		"valid_from": "2026-01-01T00:00:00Z", "entities": []string{"concept:lunch"}}, 201).Record
	learnedOld := h.clock.Now()
	h.clock.Advance(24 * time.Hour)
	nw := h.write("std", map[string]any{"type": "belief", "content": "Team lunch is on Thursdays",
		"valid_from": "2026-03-02T00:00:00Z", "supersedes": old.ID, "entities": []string{"concept:lunch"}}, 201).Record

	var got memory.Record
	h.mustDo("GET", "/v1/records/"+old.ID, "std", nil, 200, &got)
	if got.Status != memory.Superseded || got.SupersededBy == nil || *got.SupersededBy != nw.ID || got.Version != 2 ||
		got.ValidUntil == nil || !got.ValidUntil.Equal(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("superseded record %+v", got)
	}
	if nw.Supersedes == nil || *nw.Supersedes != old.ID {
		t.Fatalf("new record does not point back")
	}
	list := func(q string) []string {
		var l struct{ Records []memory.Record }
		h.mustDo("GET", "/v1/records?entity=concept:lunch&"+q, "std", nil, 200, &l)
		var out []string
		for _, r := range l.Records {
			out = append(out, r.Content)
		}
		return out
	}
	// Now: only the new fact is active.
	if got := list(""); len(got) != 1 || got[0] != "Team lunch is on Thursdays" {
		t.Fatalf("current: %v", got)
	}
	// As of 1 March in the world: the old fact was true.
	if got := list("as_of=" + url.QueryEscape(march1.Format(time.RFC3339))); len(got) != 1 || got[0] != "Team lunch is on Tuesdays" {
		t.Fatalf("as_of 1 March: %v", got)
	}
	// As we knew it before the new fact arrived: only the old one, active.
	if got := list("known_at=" + url.QueryEscape(learnedOld.Format(time.RFC3339Nano))); len(got) != 1 || got[0] != "Team lunch is on Tuesdays" {
		t.Fatalf("known_at before supersession: %v", got)
	}
	// Superseding twice is refused.
	h.wantError("POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "Lunch moves again", "supersedes": old.ID}, 409, "conflict")

	// Invalidation hides a record unless asked for.
	var p writeResult
	h.mustDo("PATCH", "/v1/records/"+nw.ID, "std", map[string]any{"expected_version": 1, "invalidate": true}, 200, &p)
	if p.Record.InvalidatedAt == nil {
		t.Fatal("invalidated_at not set")
	}
	if got := list(""); len(got) != 0 {
		t.Fatalf("invalidated record listed: %v", got)
	}
	if got := list("include_invalidated=true"); len(got) != 1 {
		t.Fatalf("include_invalidated: %v", got)
	}
}

func TestAccessLevels(t *testing.T) {
	h := newHarness(t, nil)
	mine := h.write("std", map[string]any{"type": "reflection", "content": "My own note", "access": "agent"}, 201).Record
	usr := h.write("std", map[string]any{"type": "preference", "content": "User-only preference", "access": "user"}, 201).Record
	sens := h.write("trusted", map[string]any{"type": "belief", "content": "Sensitive but clean", "access": "sensitive"}, 201).Record

	h.mustDo("GET", "/v1/records/"+mine.ID, "std", nil, 200, nil)
	h.wantError("GET", "/v1/records/"+mine.ID, "std2", nil, 404, "not_found")
	h.mustDo("GET", "/v1/records/"+mine.ID, "op", nil, 200, nil)
	h.wantError("GET", "/v1/records/"+usr.ID, "std", nil, 404, "not_found")
	h.mustDo("GET", "/v1/records/"+usr.ID, "op", nil, 200, nil)
	h.wantError("GET", "/v1/records/"+sens.ID, "trusted", nil, 404, "not_found")
	h.mustDo("GET", "/v1/records/"+sens.ID+"?include_sensitive=true", "trusted", nil, 200, nil)
	h.wantError("GET", "/v1/records/"+sens.ID+"?include_sensitive=true", "std", nil, 404, "not_found")

	count := func(who, q string) int {
		var l struct{ Records []memory.Record }
		h.mustDo("GET", "/v1/records?"+q, who, nil, 200, &l)
		return len(l.Records)
	}
	if n := count("std", ""); n != 1 {
		t.Errorf("std sees %d, want 1 (its own)", n)
	}
	if n := count("std2", ""); n != 0 {
		t.Errorf("std2 sees %d, want 0", n)
	}
	if n := count("trusted", "include_sensitive=true"); n != 1 {
		t.Errorf("trusted+sensitive sees %d, want 1", n)
	}
	if n := count("op", ""); n != 3 {
		t.Errorf("operator sees %d, want 3", n)
	}
	// Agents cannot forget records of others.
	h.wantError("DELETE", "/v1/records/"+mine.ID, "std2", nil, 404, "not_found")
	pub := h.write("std", map[string]any{"type": "belief", "content": "public fact"}, 201).Record
	h.wantError("DELETE", "/v1/records/"+pub.ID, "std2", nil, 403, "permission_denied")
	h.wantError("DELETE", "/v1/records/"+pub.ID, "ro", nil, 403, "permission_denied")
}

func TestListPaginationAndFilters(t *testing.T) {
	h := newHarness(t, nil)
	ids := map[string]bool{}
	for i := range 7 {
		r := h.write("std", map[string]any{"type": "episode", "content": fmt.Sprintf("turn %c", 'a'+i),
			"scope": map[string]any{"session_id": "chat:1"}, "category": "chat"}, 201).Record
		ids[r.ID] = true
	}
	h.write("std", map[string]any{"type": "belief", "content": "not in the session"}, 201)
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		var l struct {
			Records    []memory.Record
			NextCursor string `json:"next_cursor"`
		}
		h.mustDo("GET", "/v1/records?session_id=chat:1&type=episode&category=chat&limit=3&cursor="+cursor, "std", nil, 200, &l)
		pages++
		for _, r := range l.Records {
			if seen[r.ID] || !ids[r.ID] {
				t.Fatalf("page %d: unexpected or repeated %s", pages, r.ID)
			}
			seen[r.ID] = true
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	if len(seen) != 7 || pages != 3 {
		t.Fatalf("saw %d records in %d pages", len(seen), pages)
	}
	var l struct{ Records []memory.Record }
	h.mustDo("GET", "/v1/records?min_confidence=0.95", "std", nil, 200, &l)
	if len(l.Records) != 0 {
		t.Fatalf("min_confidence filter let %d through", len(l.Records))
	}
}

func TestForgetKeepsTombstone(t *testing.T) {
	h := newHarness(t, nil)
	r := h.write("std", map[string]any{"type": "belief", "content": "Bob's birthday is in May", "metadata": map[string]any{"k": "v"}}, 201).Record
	h.mustDo("PATCH", "/v1/records/"+r.ID, "std", map[string]any{"expected_version": 1, "content": "Bob's birthday is on 3 May"}, 200, nil)
	var f struct{ Record memory.Record }
	h.mustDo("DELETE", "/v1/records/"+r.ID, "std", nil, 200, &f)
	if f.Record.Status != memory.Forgotten || f.Record.Content != "" || f.Record.ContentSHA256 == "" || f.Record.Version != 3 {
		t.Fatalf("tombstone %+v", f.Record)
	}
	var hist struct{ Versions []memory.Record }
	h.mustDo("GET", "/v1/records/"+r.ID+"/history", "op", nil, 200, &hist)
	for _, v := range hist.Versions {
		if v.Content != "" || string(v.Metadata) != "{}" || strings.Contains(fmt.Sprint(v), "birthday") {
			t.Fatalf("version %d keeps content: %+v", v.Version, v)
		}
	}
	// Forgotten records cannot be patched; forgetting again is idempotent.
	h.wantError("PATCH", "/v1/records/"+r.ID, "std", map[string]any{"expected_version": 3, "content": "x"}, 409, "conflict")
	h.mustDo("DELETE", "/v1/records/"+r.ID, "std", nil, 200, nil)
	var found int
	for _, e := range h.auditLog() {
		if e.Event == "record.forget" && e.Payload["record_id"] == r.ID {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("forget audited %d times", found)
	}
}

func TestApprovalQueue(t *testing.T) {
	h := newHarness(t, nil)
	a := h.write("restricted", map[string]any{"type": "belief", "content": "Deploys happen on Fridays"}, 202)
	b := h.write("restricted", map[string]any{"type": "belief", "content": "Staging is in eu-west"}, 202)
	c := h.write("std", map[string]any{"type": "belief", "content": "write to carol@example.com"}, 202)

	var page struct {
		Items []struct {
			ID     string        `json:"id"`
			Kind   string        `json:"kind"`
			Record memory.Record `json:"record"`
		} `json:"items"`
	}
	h.mustDo("GET", "/v1/approvals", "op", nil, 200, &page)
	if len(page.Items) != 3 || page.Items[2].Kind != "quarantine" || page.Items[0].Kind != "pending_write" {
		t.Fatalf("queue %+v", page.Items)
	}
	// Approve as is.
	var item struct {
		Status string        `json:"status"`
		Record memory.Record `json:"record"`
	}
	h.mustDo("POST", "/v1/approvals/"+a.ApprovalID+"/approve", "op", nil, 200, &item)
	if item.Status != "approved" || item.Record.Status != memory.Active || item.Record.Version != 2 {
		t.Fatalf("approve %+v", item)
	}
	h.wantError("POST", "/v1/approvals/"+a.ApprovalID+"/approve", "op", nil, 409, "conflict")
	// Edit then approve; the quarantined item loses its PII.
	h.mustDo("POST", "/v1/approvals/"+c.ApprovalID+"/approve", "op", map[string]any{"content": "write to Carol", "access": "public"}, 200, &item)
	if item.Record.Content != "write to Carol" || item.Record.Status != memory.Active || item.Record.Access != memory.Public {
		t.Fatalf("edit-approve %+v", item.Record)
	}
	// Reject erases content.
	h.mustDo("POST", "/v1/approvals/"+b.ApprovalID+"/reject", "op", map[string]any{"reason": "wrong region"}, 200, &item)
	if item.Status != "rejected" || item.Record.Status != memory.Forgotten || item.Record.Content != "" {
		t.Fatalf("reject %+v", item)
	}
	h.mustDo("GET", "/v1/approvals", "op", nil, 200, &page)
	if len(page.Items) != 0 {
		t.Fatalf("queue not empty: %d", len(page.Items))
	}
	h.mustDo("GET", "/v1/approvals?status=approved", "op", nil, 200, &page)
	if len(page.Items) != 2 {
		t.Fatalf("approved items %d", len(page.Items))
	}
}

func TestApprovalTTLExpiry(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.Approvals.TTL = gate.Duration(time.Hour) })
	q := h.write("restricted", map[string]any{"type": "belief", "content": "Expiring claim"}, 202)
	if n, err := h.svc.ExpireApprovals(t.Context()); err != nil || n != 0 {
		t.Fatalf("expired early: %d %v", n, err)
	}
	h.clock.Advance(time.Hour + time.Second)
	if n, err := h.svc.ExpireApprovals(t.Context()); err != nil || n != 1 {
		t.Fatalf("expire: %d %v", n, err)
	}
	var rec memory.Record
	h.mustDo("GET", "/v1/records/"+q.Record.ID, "op", nil, 200, &rec)
	if rec.Status != memory.Forgotten {
		t.Fatalf("expired record status %s", rec.Status)
	}
	var expired int
	for _, e := range h.auditLog() {
		if e.Event == "approval.expire" && e.ActorKind == "system" {
			expired++
		}
	}
	if expired != 1 {
		t.Fatalf("expiry audited %d times", expired)
	}
}

func TestAgentsLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	var created struct {
		ID, Name, Trust, Token string
	}
	h.mustDo("POST", "/v1/agents", "op", map[string]any{"name": "newbie"}, 201, &created)
	if created.Trust != "restricted" || !strings.HasPrefix(created.Token, "mg_") {
		t.Fatalf("created %+v", created)
	}
	var who memory.Principal
	h.mustDo("GET", "/v1/whoami", created.Token, nil, 200, &who)
	if who.Name != "newbie" || who.Kind != memory.KindAgent {
		t.Fatalf("whoami %+v", who)
	}
	var list struct{ Agents []map[string]any }
	raw := h.mustDo("GET", "/v1/agents", "op", nil, 200, &list)
	if len(list.Agents) != 6 || strings.Contains(string(raw), created.Token) || strings.Contains(string(raw), "token") {
		t.Fatalf("agents list %s", raw)
	}
	h.mustDo("DELETE", "/v1/agents/"+created.ID, "op", nil, 200, nil)
	h.wantError("GET", "/v1/whoami", created.Token, nil, 401, "unauthenticated")
}

func TestAuditVerifyAndReadyz(t *testing.T) {
	h := newHarness(t, nil)
	h.write("std", map[string]any{"type": "belief", "content": "audited"}, 201)
	var rep struct {
		OK      bool  `json:"ok"`
		Entries int64 `json:"entries"`
	}
	h.mustDo("GET", "/v1/audit/verify", "op", nil, 200, &rep)
	if !rep.OK || rep.Entries < 7 {
		t.Fatalf("verify %+v", rep)
	}
	h.svc.CheckAllAudit(t.Context())
	h.mustDo("GET", "/readyz", "", nil, 200, nil)
	h.mustDo("GET", "/healthz", "", nil, 200, nil)
	code, _, body := h.do("GET", "/metrics", "", nil)
	if code != 200 || !strings.Contains(string(body), `memgate_gate_decisions_total{decision="accepted"`) {
		t.Fatalf("metrics %d", code)
	}
}

func TestReadyzReportsBrokenChain(t *testing.T) {
	h := newHarness(t, nil)
	h.write("std", map[string]any{"type": "belief", "content": "soon tampered"}, 201)
	h.svc.CheckAllAudit(t.Context())
	h.mustDo("GET", "/readyz", "", nil, 200, nil)

	db, err := sql.Open("sqlite", h.store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// An attacker with the file drops the append-only triggers first.
	var triggers []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		triggers = append(triggers, n)
	}
	rows.Close()
	for _, n := range triggers {
		if _, err := db.Exec(`DROP TRIGGER "` + n + `"`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`UPDATE audit_log SET actor_id = 'someone-else' WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	st := h.svc.CheckAllAudit(t.Context())
	if st.OK || len(st.Broken) != 1 || st.Broken[0].Broken.Seq != 2 {
		t.Fatalf("status %+v", st)
	}
	var body struct {
		Status string `json:"status"`
	}
	h.mustDo("GET", "/readyz", "", nil, 503, &body)
	if body.Status != "audit_chain_broken" {
		t.Fatalf("readyz status %q", body.Status)
	}
}
