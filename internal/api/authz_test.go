package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The two cases: a trusted agent made an operator's sensitive
// record public, and a standard agent rewrote an operator's public record
// that still named the operator as its writer. Agents change only what
// they wrote; every version names who made it.
func TestAgentsPatchOnlyTheirOwnRecords(t *testing.T) {
	h := newHarness(t, nil)
	secret := h.write("op", map[string]any{"type": "decision", "content": "Board meets on the 3rd floor", "access": "sensitive"}, http.StatusCreated)
	public := h.write("op", map[string]any{"type": "decision", "content": "Deploys happen on Tuesdays"}, http.StatusCreated)
	patch := func(id string, v int, extra map[string]any) map[string]any {
		b := map[string]any{"expected_version": v}
		for k, x := range extra {
			b[k] = x
		}
		return b
	}
	h.wantError("PATCH", "/v1/records/"+secret.Record.ID+"?include_sensitive=true", "trusted",
		patch(secret.Record.ID, 1, map[string]any{"access": "public"}), http.StatusForbidden, "permission_denied")
	h.wantError("PATCH", "/v1/records/"+public.Record.ID, "std",
		patch(public.Record.ID, 1, map[string]any{"content": "Deploys happen whenever"}), http.StatusForbidden, "permission_denied")
	// A record an agent cannot read is not found, whatever it asks.
	h.wantError("PATCH", "/v1/records/"+secret.Record.ID, "std",
		patch(secret.Record.ID, 1, map[string]any{"access": "public"}), http.StatusNotFound, "not_found")
	// Forget follows the same rule.
	h.wantError("DELETE", "/v1/records/"+public.Record.ID, "std", nil, http.StatusForbidden, "permission_denied")
	var got struct {
		memory.Record
	}
	h.mustDo("GET", "/v1/records/"+secret.Record.ID, "op", nil, http.StatusOK, &got)
	if got.Version != 1 || got.Access != memory.Sensitive {
		t.Fatalf("refused patch changed the record: v%d access %s", got.Version, got.Access)
	}

	// The writer may patch its own record, but not to a level it may not
	// write; the new version names the patcher, the writer stays.
	own := h.write("std", map[string]any{"type": "decision", "content": "Use WireGuard for the VPN"}, http.StatusCreated)
	h.wantError("PATCH", "/v1/records/"+own.Record.ID, "std", patch(own.Record.ID, 1, map[string]any{"access": "sensitive"}),
		http.StatusForbidden, "permission_denied")
	var res writeResult
	h.mustDo("PATCH", "/v1/records/"+own.Record.ID, "std", patch(own.Record.ID, 1, map[string]any{"content": "Use WireGuard, keepalive 25 s"}),
		http.StatusOK, &res)
	stdID := own.Record.Source.PrincipalID
	if res.Record.ModifiedBy != stdID || res.Record.Source.PrincipalID != stdID || res.Record.Source.Agent != "std" {
		t.Fatalf("own patch: modified_by %q, source %+v; want both the writer %s", res.Record.ModifiedBy, res.Record.Source, stdID)
	}
	// An operator may patch it; history tells the two apart.
	h.mustDo("PATCH", "/v1/records/"+own.Record.ID, "op", patch(own.Record.ID, 2, map[string]any{"content": "Use WireGuard (ops)"}),
		http.StatusOK, &res)
	var hist struct {
		Versions []memory.Record `json:"versions"`
	}
	h.mustDo("GET", "/v1/records/"+own.Record.ID+"/history", "op", nil, http.StatusOK, &hist)
	if len(hist.Versions) != 3 || hist.Versions[0].ModifiedBy != stdID || hist.Versions[1].ModifiedBy != stdID ||
		hist.Versions[2].ModifiedBy == stdID || hist.Versions[2].ModifiedBy == "" || hist.Versions[2].Source.Agent != "std" {
		t.Fatalf("history attributions: %+v", hist.Versions)
	}
}

// A version held back (quarantined, then approved with the PII edited out
// and made public) must not be readable through ?version=, ?known_at= or
// the history.
func TestPastVersionsAreReadUnderTheirOwnAccess(t *testing.T) {
	h := newHarness(t, nil)
	w := h.write("std", map[string]any{"type": "decision", "content": "Escalate to dana.whitfield@example.com"}, http.StatusAccepted)
	if w.ApprovalID == "" {
		t.Fatalf("not quarantined: %+v", w)
	}
	h.clock.Advance(time.Minute)
	h.mustDo("POST", "/v1/approvals/"+w.ApprovalID+"/approve", "op",
		map[string]any{"content": "Escalate to the on-call lead", "access": "public"}, http.StatusOK, nil)
	id := w.Record.ID
	h.mustDo("GET", "/v1/records/"+id, "ro", nil, http.StatusOK, nil)
	h.wantError("GET", "/v1/records/"+id+"?version=1", "ro", nil, http.StatusNotFound, "not_found")
	at := url.QueryEscape(w.Record.UpdatedAt.Format(time.RFC3339Nano))
	h.wantError("GET", "/v1/records/"+id+"?known_at="+at, "ro", nil, http.StatusNotFound, "not_found")
	raw := h.mustDo("GET", "/v1/records/"+id+"/history", "ro", nil, http.StatusOK, nil)
	var hist struct {
		Versions []memory.Record `json:"versions"`
	}
	if err := json.Unmarshal(raw, &hist); err != nil || len(hist.Versions) != 1 || hist.Versions[0].Version != 2 {
		t.Fatalf("history for a read_only agent: %s", raw)
	}
	h.mustDo("GET", "/v1/records/"+id+"?version=1", "op", nil, http.StatusOK, nil)
}

// Item 13: after a supersession the successor is valid from where the old
// record stops, so as_of just before the change returns only the old one.
func TestSuccessorValidityStartsWhereTheOldEnds(t *testing.T) {
	h := newHarness(t, nil)
	old := h.write("std", map[string]any{"type": "preference", "content": "Prefers tabs for indentation"}, http.StatusCreated)
	h.clock.Advance(time.Hour)
	next := h.write("std", map[string]any{"type": "preference", "content": "Prefers spaces for indentation", "supersedes": old.Record.ID}, http.StatusCreated)
	var o struct{ memory.Record }
	h.mustDo("GET", "/v1/records/"+old.Record.ID, "std", nil, http.StatusOK, &o)
	if o.ValidUntil == nil || next.Record.ValidFrom == nil || !o.ValidUntil.Equal(*next.Record.ValidFrom) {
		t.Fatalf("old valid_until %v, successor valid_from %v: want equal", o.ValidUntil, next.Record.ValidFrom)
	}
	before := url.QueryEscape(o.ValidUntil.Add(-time.Microsecond).Format(time.RFC3339Nano))
	var page struct {
		Records []memory.Record `json:"records"`
	}
	h.mustDo("GET", "/v1/records?type=preference&as_of="+before, "std", nil, http.StatusOK, &page)
	if len(page.Records) != 1 || page.Records[0].ID != old.Record.ID {
		t.Fatalf("as_of just before the change: %d records, want only the old one", len(page.Records))
	}
	after := url.QueryEscape(o.ValidUntil.Format(time.RFC3339Nano))
	h.mustDo("GET", "/v1/records?type=preference&as_of="+after, "std", nil, http.StatusOK, &page)
	if len(page.Records) != 1 || page.Records[0].ID != next.Record.ID {
		t.Fatalf("as_of at the change: %d records, want only the successor", len(page.Records))
	}

	// The same when the successor waits for approval (a restricted agent).
	old2 := h.write("std", map[string]any{"type": "preference", "content": "Prefers dark mode"}, http.StatusCreated)
	h.clock.Advance(time.Hour)
	q := h.write("restricted", map[string]any{"type": "preference", "content": "Prefers light mode", "supersedes": old2.Record.ID}, http.StatusAccepted)
	h.clock.Advance(time.Hour)
	var item core.ApprovalItem
	h.mustDo("POST", "/v1/approvals/"+q.ApprovalID+"/approve", "op", map[string]any{}, http.StatusOK, &item)
	h.mustDo("GET", "/v1/records/"+old2.Record.ID, "std", nil, http.StatusOK, &o)
	if o.ValidUntil == nil || item.Record.ValidFrom == nil || !o.ValidUntil.Equal(*item.Record.ValidFrom) {
		t.Fatalf("approved successor: old valid_until %v, successor valid_from %v: want equal", o.ValidUntil, item.Record.ValidFrom)
	}
}

// Item 5: gateway users created by the operator of another workspace work
// there (their key names them), and only there.
func TestGatewayUsersOfAnotherWorkspace(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	err := h.store.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "team-b", Settings: json.RawMessage(`{}`), CreatedAt: h.clock.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	opB, err := h.svc.CreateOperator(ctx, core.LocalOperator("team-b"), "op-b")
	if err != nil {
		t.Fatal(err)
	}
	h.tokens["opB"] = opB.Token
	var u core.CreatedUser
	h.mustDo("POST", "/users", "opB", map[string]any{"user_id": "bea"}, http.StatusCreated, &u)
	add := map[string]any{"user_id": "bea", "user_key": u.UserKey, "session_id": "s1", "messages": []map[string]any{
		{"sender_id": "bea", "role": "user", "timestamp": 1780000000000, "content": "Our standup moved to 9:30"}}}
	h.mustDo("POST", "/memories/add", "", add, http.StatusOK, nil)
	// The memory is in team-b, not in default.
	var page struct {
		Records []memory.Record `json:"records"`
	}
	h.mustDo("GET", "/v1/records?type=episode", "opB", nil, http.StatusOK, &page)
	if len(page.Records) != 1 {
		t.Fatalf("team-b has %d episodes, want 1", len(page.Records))
	}
	h.mustDo("GET", "/v1/records?type=episode", "op", nil, http.StatusOK, &page)
	if len(page.Records) != 0 {
		t.Fatalf("default has %d episodes of team-b's user", len(page.Records))
	}
	// Another user id with bea's key is refused.
	bad := map[string]any{"user_id": "someone", "user_key": u.UserKey, "session_id": "s1", "messages": add["messages"]}
	h.wantError("POST", "/memories/add", "", bad, http.StatusUnauthorized, "unauthenticated")
}

// Item 5b: rotation replaces a credential at once, is audited, is for
// operators only, and reinstates a revoked name.
func TestCredentialRotation(t *testing.T) {
	h := newHarness(t, nil)
	old := h.tokens["std"]
	var rot core.CreatedPrincipal
	h.wantError("POST", "/v1/agents/std/rotate", "std", nil, http.StatusForbidden, "permission_denied")
	h.mustDo("POST", "/v1/agents/std/rotate", "op", nil, http.StatusOK, &rot)
	if rot.Token == "" || rot.Token == old || rot.Name != "std" {
		t.Fatalf("rotate answered %+v", rot)
	}
	h.wantError("GET", "/v1/whoami", old, nil, http.StatusUnauthorized, "unauthenticated")
	h.mustDo("GET", "/v1/whoami", rot.Token, nil, http.StatusOK, nil)
	h.wantError("POST", "/v1/agents/nobody/rotate", "op", nil, http.StatusNotFound, "not_found")

	// A revoked agent is reinstated by rotation, under the same id.
	h.mustDo("DELETE", "/v1/agents/ro", "op", nil, http.StatusOK, nil)
	h.wantError("GET", "/v1/whoami", "ro", nil, http.StatusUnauthorized, "unauthenticated")
	h.mustDo("POST", "/v1/agents/ro/rotate", "op", nil, http.StatusOK, &rot)
	var who memory.Principal
	h.mustDo("GET", "/v1/whoami", rot.Token, nil, http.StatusOK, &who)
	if who.Name != "ro" || who.ID != rot.ID || who.Revoked() {
		t.Fatalf("reinstated agent: %+v", who)
	}

	var u, u2 core.CreatedUser
	h.mustDo("POST", "/users", "op", map[string]any{"user_id": "ann"}, http.StatusCreated, &u)
	h.wantError("POST", "/users/ann/rotate-key", "std2", nil, http.StatusForbidden, "permission_denied")
	h.mustDo("POST", "/users/ann/rotate-key", "op", nil, http.StatusOK, &u2)
	search := func(key string) map[string]any {
		return map[string]any{"user_id": "ann", "user_key": key, "query": "standup"}
	}
	h.wantError("POST", "/memories/search", "", search(u.UserKey), http.StatusUnauthorized, "unauthenticated")
	h.mustDo("POST", "/memories/search", "", search(u2.UserKey), http.StatusOK, nil)

	events := map[string]int{}
	for _, e := range h.auditLog() {
		events[e.Event]++
		for _, s := range []string{rot.Token, u.UserKey, u2.UserKey, old} {
			if raw, _ := json.Marshal(e.Payload); strings.Contains(string(raw), s) {
				t.Fatalf("audit entry %s holds a secret", e.Event)
			}
		}
	}
	if events["agent.rotate"] != 2 || events["user.rotate"] != 1 {
		t.Fatalf("audit events %v: want 2 agent.rotate and 1 user.rotate", events)
	}
}

// Item 2: internal names are reserved.
func TestReservedNames(t *testing.T) {
	h := newHarness(t, nil)
	for _, name := range []string{"cli", "CLI", "system", "memgate", "operator"} {
		h.wantError("POST", "/v1/agents", "op", map[string]any{"name": name, "trust": "read_only"}, http.StatusBadRequest, "invalid_argument")
	}
}
