package api_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

type ingestOut struct {
	ResourceID  string `json:"resource_id"`
	Outcome     string `json:"outcome"`
	Version     int    `json:"version"`
	Added       int    `json:"added"`
	Changed     int    `json:"changed"`
	Quarantined int    `json:"quarantined"`
	Pending     int    `json:"pending_approval"`
	Chunks      []struct {
		ID, Citation, Decision, Status string
		ApprovalID                     string `json:"approval_id"`
	} `json:"chunks"`
}

const runbook = "# Runbook\n\nGeneral notes.\n\n## Restart\n\nTo restart the ingest worker, run systemctl restart ingest-worker.\n\n## Keys\n\nThe staging deploy key is sk-proj-Zq8Xv2Lm9Np4Rt7Wy1Kb3Hd6Fs0Gj5Ce8Ua2Ti4Oo7 for now.\n"

// TestResourcesREST: ingestion for every principal, the gate per chunk
// (an API key is quarantined, a restricted agent waits for approval, a
// read_only agent cannot ingest), citations whose source call returns
// exactly the cited lines, access checks on the source, and forgetting.
func TestResourcesREST(t *testing.T) {
	h := newHarness(t, nil)
	var out ingestOut
	h.mustDo("POST", "/v1/resources", "std", map[string]any{"uri": "https://wiki.example/runbook.md", "content": runbook}, http.StatusAccepted, &out)
	if out.Outcome != "created" || out.Added != 3 || out.Quarantined != 1 {
		t.Fatalf("ingest: %+v", out)
	}
	for _, c := range out.Chunks {
		if strings.Contains(c.Citation, "#Runbook > Keys#") != (c.Decision == "quarantined") {
			t.Fatalf("chunk %s: decision %s", c.Citation, c.Decision)
		}
	}
	// The same document again writes nothing.
	var again ingestOut
	h.mustDo("POST", "/v1/resources", "std", map[string]any{"uri": "https://wiki.example/runbook.md", "content": runbook}, http.StatusOK, &again)
	if again.Outcome != "unchanged" || again.ResourceID != out.ResourceID || len(again.Chunks) != 0 {
		t.Fatalf("re-ingest: %+v", again)
	}

	// Search finds the restart section first with a res:// citation whose
	// source is exactly those lines.
	var res struct {
		Results []struct {
			Citation   string `json:"citation"`
			ResourceID string `json:"resource_id"`
			LineStart  int    `json:"line_start"`
			LineEnd    int    `json:"line_end"`
		} `json:"results"`
	}
	h.mustDo("POST", "/v1/resources/search", "std", map[string]any{"query": "how do I restart the ingest worker"}, http.StatusOK, &res)
	if len(res.Results) == 0 || !strings.HasPrefix(res.Results[0].Citation, "res://"+out.ResourceID+"#Runbook > Restart#L5-L7") {
		t.Fatalf("search: %+v", res.Results)
	}
	var src struct {
		Text string `json:"text"`
	}
	h.mustDo("GET", "/v1/resources/"+out.ResourceID+"/source?lines=5-7", "std", nil, http.StatusOK, &src)
	if want := strings.Join(strings.Split(runbook, "\n")[4:7], "\n"); src.Text != want {
		t.Fatalf("source %q, want %q", src.Text, want)
	}
	// The generic search cites chunks the same way.
	var gs struct {
		Results []struct{ Citation string } `json:"results"`
	}
	h.mustDo("POST", "/v1/search", "std", map[string]any{"query": "restart the ingest worker"}, http.StatusOK, &gs)
	if len(gs.Results) == 0 || !strings.HasPrefix(gs.Results[0].Citation, "res://") {
		t.Fatalf("/v1/search citation: %+v", gs.Results)
	}
	// Lines in the quarantined chunk are not readable by another agent,
	// nor by its writer without asking for sensitive records.
	h.wantError("GET", "/v1/resources/"+out.ResourceID+"/source?lines=9-11", "std2", nil, http.StatusNotFound, "not_found")
	h.wantError("GET", "/v1/resources/"+out.ResourceID+"/source?lines=1-99", "std", nil, http.StatusBadRequest, "invalid_argument")
	h.wantError("GET", "/v1/resources/"+out.ResourceID+"/source?lines=x", "std", nil, http.StatusBadRequest, "invalid_argument")
	h.wantError("GET", "/v1/resources/res_000000000000000000000000/source", "std", nil, http.StatusNotFound, "not_found")

	// A private document is not readable by another agent.
	var priv ingestOut
	h.mustDo("POST", "/v1/resources", "std", map[string]any{"uri": "notes.txt", "content": "private plan for the harbour\n", "access": "agent"}, http.StatusCreated, &priv)
	h.wantError("GET", "/v1/resources/"+priv.ResourceID+"/source", "std2", nil, http.StatusNotFound, "not_found")
	h.mustDo("GET", "/v1/resources/"+priv.ResourceID+"/source", "std", nil, http.StatusOK, nil)

	// read_only cannot ingest; restricted waits for approval.
	h.wantError("POST", "/v1/resources", "ro", map[string]any{"uri": "a.md", "content": "# A\n\ntext\n"}, http.StatusForbidden, "permission_denied")
	var restricted ingestOut
	h.mustDo("POST", "/v1/resources", "restricted", map[string]any{"uri": "r.md", "content": "# R\n\nrestricted text\n"}, http.StatusAccepted, &restricted)
	if restricted.Pending != 1 || restricted.Chunks[0].ApprovalID == "" || restricted.Chunks[0].Status == "active" {
		t.Fatalf("restricted ingest: %+v", restricted)
	}
	var queue struct {
		Items []struct {
			RecordID string `json:"record_id"`
		} `json:"items"`
	}
	h.mustDo("GET", "/v1/approvals", "op", nil, http.StatusOK, &queue)
	found := false
	for _, it := range queue.Items {
		found = found || it.RecordID == restricted.Chunks[0].ID
	}
	if !found {
		t.Fatalf("restricted chunk not queued: %+v", queue)
	}
	// Bad input: a clear 4xx naming the field.
	e := h.wantError("POST", "/v1/resources", "std", map[string]any{"content": "x"}, http.StatusBadRequest, "invalid_argument")
	if e.Error.Details["field"] != "uri" {
		t.Fatalf("missing uri: %+v", e)
	}
	h.wantError("POST", "/v1/resources", "std", map[string]any{"uri": "x.txt", "content_base64": "@@"}, http.StatusBadRequest, "invalid_argument")
	h.wantError("POST", "/v1/resources", "std", map[string]any{"uri": "x.bin", "media_type": "application/zip", "content": "x"}, http.StatusBadRequest, "invalid_argument")

	// A multipart upload.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("uri", "file:///srv/app/main.py")
	fw, _ := mw.CreateFormFile("file", "main.py")
	fw.Write([]byte("def handler(event):\n    \"\"\"Handle one queue event.\"\"\"\n    return event\n"))
	mw.Close()
	req, _ := http.NewRequest("POST", h.srv.URL+"/v1/resources", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+h.tokens["std"])
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up ingestOut
	json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || up.Added != 1 || !strings.Contains(up.Chunks[0].Citation, "#def handler#L1-L3") {
		t.Fatalf("multipart: %d %+v", resp.StatusCode, up)
	}

	// Forget: the resource is gone everywhere.
	// Its writer forgets what it can see; the quarantined chunk is the
	// operator's (docs/knowledge.md), whose forget erases the rest.
	var fr struct {
		Forgotten int `json:"forgotten_chunks"`
		Remaining int `json:"remaining_chunks"`
	}
	h.mustDo("DELETE", "/v1/resources/"+out.ResourceID, "std", nil, http.StatusOK, &fr)
	if fr.Forgotten != 2 || fr.Remaining != 1 {
		t.Fatalf("writer forgot %+v", fr)
	}
	h.mustDo("DELETE", "/v1/resources/"+out.ResourceID, "op", nil, http.StatusOK, &fr)
	if fr.Forgotten != 1 || fr.Remaining != 0 {
		t.Fatalf("operator forgot %+v", fr)
	}
	h.wantError("DELETE", "/v1/resources/"+out.ResourceID, "op", nil, http.StatusNotFound, "not_found")
	h.wantError("GET", "/v1/resources/"+out.ResourceID+"/source", "std", nil, http.StatusNotFound, "not_found")
	h.mustDo("POST", "/v1/search", "std", map[string]any{"query": "restart the ingest worker"}, http.StatusOK, &gs)
	for _, r := range gs.Results {
		if strings.Contains(r.Citation, out.ResourceID) {
			t.Fatalf("forgotten chunk still found: %s", r.Citation)
		}
	}
}
