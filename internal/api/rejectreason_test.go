package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// TestRejectReasonReadable: an operator's reason for rejecting an item
// stays readable on the rejected item (REST), is not in the logs, the
// metrics or the audit log (which keeps its hash), and is erased when
// the record is forgotten (its tombstone, by id) or a subject it named
// is forgotten; other reasons stay.
func TestRejectReasonReadable(t *testing.T) {
	h := newHarness(t, nil)
	byRecord := h.write("std", map[string]any{"type": "belief", "content": "write to carol@example.com", "entities": []string{"person:carol"}}, 202)
	bySubject := h.write("std", map[string]any{"type": "belief", "content": "write to dave@example.com", "entities": []string{"person:dave"}}, 202)
	stays := h.write("std", map[string]any{"type": "belief", "content": "write to erin@example.com", "entities": []string{"person:erin"}}, 202)
	reasons := map[string]string{byRecord.ApprovalID: "rsn-carol quotes her address", bySubject.ApprovalID: "rsn-dave a personal address",
		stays.ApprovalID: "rsn-erin not ours"}
	for id, why := range reasons {
		var item memory.Approval
		h.mustDo("POST", "/v1/approvals/"+id+"/reject", "op", map[string]any{"reason": why}, 200, &item)
		if item.DecisionReason != why {
			t.Fatalf("the reject answer shows reason %q, want %q", item.DecisionReason, why)
		}
	}
	rejected := func() map[string]string {
		t.Helper()
		var page struct {
			Items []map[string]any `json:"items"`
		}
		h.mustDo("GET", "/v1/approvals?status=rejected", "op", nil, 200, &page)
		out := map[string]string{}
		for _, it := range page.Items {
			if _, ok := it["reason_subjects"]; ok {
				t.Fatalf("an item shows its reason subjects: %v", it)
			}
			r, _ := it["decision_reason"].(string)
			out[it["id"].(string)] = r
		}
		return out
	}
	got := rejected()
	for id, why := range reasons {
		if got[id] != why {
			t.Fatalf("rejected item %s shows reason %q, want %q", id, got[id], why)
		}
	}

	// Forgetting the rejected record (a tombstone already) erases its reason.
	h.mustDo("DELETE", "/v1/records/"+byRecord.Record.ID, "op", nil, 200, nil)
	// Forgetting a subject erases the reasons of items that named it.
	h.mustDo("POST", "/v1/graph/forget_subject", "op", map[string]any{"subject": "person:dave"}, 200, nil)
	got = rejected()
	if got[byRecord.ApprovalID] != "" || got[bySubject.ApprovalID] != "" || got[stays.ApprovalID] != reasons[stays.ApprovalID] {
		t.Fatalf("after forgetting, reasons are %q", got)
	}

	_, _, metricsBody := h.do("GET", "/metrics", "", nil)
	audit, err := json.Marshal(h.auditLog())
	if err != nil {
		t.Fatal(err)
	}
	for _, why := range reasons {
		word := strings.Fields(why)[0]
		for where, text := range map[string]string{"logs": h.logs.String(), "metrics": string(metricsBody), "audit": string(audit)} {
			if strings.Contains(text, word) {
				t.Errorf("the %s hold the reason %q", where, why)
			}
		}
	}
	var hashed int
	for _, e := range h.auditLog() {
		if e.Event == "approval.reject" && e.Payload["reason_sha256"] == memory.SHA256Hex(reasons[strings.TrimSpace(e.Payload["approval_id"].(string))]) {
			hashed++
		}
	}
	if hashed != 3 {
		t.Errorf("%d reject entries keep the reason's hash, want 3", hashed)
	}
}
