package api_test

// The access matrix's probes: what each actor may read and write, asked
// through every transport (REST, MCP, the event stream), and the checks
// that compare the answers with the rules. The world they probe is built
// in accessmatrix_test.go.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// checkCoverage fails the test unless the records hold every access
// level agents can write and every status the rules speak of.
func (e *matrixEnv) checkCoverage() {
	e.t.Helper()
	seen := map[string]int{}
	for _, ws := range e.workspaces {
		for _, id := range e.ids[ws] {
			h := e.head(id)
			seen["access "+string(h.Access)]++
			if h.Gate.Decision == memory.DecisionFlagged && h.Access == memory.UserOnly && h.Status == memory.Active {
				seen["flagged own turn"]++
			}
			seen["status "+string(h.Status)]++
			if h.InvalidatedAt != nil {
				seen["invalidated"]++
			}
		}
	}
	for _, want := range []string{"access public", "access agent", "access user", "access sensitive", "flagged own turn",
		"status active", "status provisional", "status quarantined", "status superseded", "status forgotten", "invalidated"} {
		if seen[want] == 0 {
			e.t.Fatalf("seed %d: no record has %s: %v", e.seed, want, seen)
		}
	}
	e.t.Logf("records: %v", seen)
}

// checkReads runs every probe for every actor.
func (e *matrixEnv) checkReads(when string) {
	e.t.Helper()
	for _, pr := range readProbes {
		for _, a := range e.actors {
			if !pr.applies(a) {
				continue
			}
			shown, want := pr.run(e, a)
			for id := range shown {
				if !want[id] {
					e.t.Errorf("seed %d, %s: %s shows %s record %s it may not read: %s", e.seed, when, pr.name, a, id, e.describe(id))
				}
			}
			if pr.subset {
				continue
			}
			for id := range want {
				if !shown[id] {
					e.t.Errorf("seed %d, %s: %s hides from %s record %s it may read: %s", e.seed, when, pr.name, a, id, e.describe(id))
				}
			}
		}
	}
}

func (e *matrixEnv) describe(id string) string {
	if _, ok := e.wsOf[id]; !ok {
		return e.describeNode(id)
	}
	h := e.head(id)
	return fmt.Sprintf("access %s, status %s, writer %s (%s), v%d", h.Access, h.Status, h.Source.Agent, h.Source.PrincipalID, h.Version)
}

// checkWrites tries patch and forget on random records by every actor,
// through a random path, and approve and the operator-only routes, and
// compares each answer with accessRules; a refused change must leave the
// record as it was.
func (e *matrixEnv) checkWrites() {
	e.t.Helper()
	for _, a := range e.actors {
		ids := e.ids[a.p.Workspace]
		for k := 0; k < 6; k++ {
			id := ids[e.rng.IntN(len(ids))]
			before := e.head(id)
			var got, want int
			var path string
			if e.rng.IntN(2) == 0 {
				want = accessRules.patch(a.p, before)
				got, path = e.patch(a, before)
			} else {
				want = accessRules.forget(a.p, before)
				got, path = e.forget(a, id)
			}
			after := e.head(id)
			if got != want {
				e.t.Errorf("seed %d: %s by %s answered %d, the rules say %d: %s", e.seed, path, a, got, want, e.describe(id))
			}
			if got >= 300 && after.Version != before.Version {
				e.t.Errorf("seed %d: refused %s by %s still changed record %s (v%d -> v%d)", e.seed, path, a, id, before.Version, after.Version)
			}
			if got < 300 && after.Version != before.Version && after.Status != memory.Forgotten {
				if after.ModifiedBy != a.p.ID || after.Source.PrincipalID != before.Source.PrincipalID || after.Source.Agent != before.Source.Agent {
					e.t.Errorf("seed %d: %s by %s: modified_by %q, writer %s/%q; want modified_by %s and the writer kept (%s/%q)", e.seed, path, a,
						after.ModifiedBy, after.Source.Agent, after.Source.PrincipalID, a.p.ID, before.Source.Agent, before.Source.PrincipalID)
				}
			}
		}
		e.checkOperatorOnly(a)
	}
}

// patch changes a record's content (keeping its marker) through a random
// path open to a.
func (e *matrixEnv) patch(a *actor, head memory.Record) (int, string) {
	v := head.Version
	content := "edited " + head.Content
	if head.Status == memory.Forgotten {
		content = "edited matrixnote"
	}
	// Half the patches also move the record to another level the patcher
	// may write, so that past versions differ in access from their head.
	var access *memory.Access
	if acc := writableAccess(a.p); len(acc) > 0 && e.rng.IntN(2) == 0 {
		access = &acc[e.rng.IntN(len(acc))]
	}
	if a.token != "" && e.rng.IntN(2) == 0 {
		body := map[string]any{"expected_version": v, "content": content}
		if access != nil {
			body["access"] = *access
		}
		code, _ := e.rest(a, "PATCH", "/v1/records/"+head.ID, body)
		return okClass(code), "REST PATCH"
	}
	_, err := e.svc.Patch(e.ctx, a.p, head.ID, core.PatchRequest{ExpectedVersion: &v, Content: &content, Access: access})
	return errStatus(err), "core Patch"
}

// forget forgets a record through a random path open to a.
func (e *matrixEnv) forget(a *actor, id string) (int, string) {
	switch {
	case a.token != "" && e.rng.IntN(3) == 0:
		code, _ := e.rest(a, "DELETE", "/v1/records/"+id, nil)
		return okClass(code), "REST DELETE"
	case a.mcp != nil && e.rng.IntN(2) == 0:
		return e.toolStatus(a, "memory_forget", map[string]any{"id": id}), "MCP memory_forget"
	}
	_, err := e.svc.Forget(e.ctx, a.p, id)
	return errStatus(err), "core Forget"
}

// checkOperatorOnly: approve, the approval queue, export, audit and
// principal management answer as accessRules.operatorOnly says.
func (e *matrixEnv) checkOperatorOnly(a *actor) {
	e.t.Helper()
	want := accessRules.operatorOnly(a.p)
	var op *actor
	for _, o := range e.actorsOf(a.p.Workspace) {
		if o.p.Kind == memory.KindOperator {
			op = o
		}
	}
	page, err := e.svc.ListApprovals(e.ctx, op.p, memory.ApprovalOpen, "", 50)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(page.Items) > 0 {
		it := page.Items[e.rng.IntN(len(page.Items))]
		before := e.head(it.RecordID)
		var got int
		if a.token != "" && e.rng.IntN(2) == 0 {
			code, _ := e.rest(a, "POST", "/v1/approvals/"+it.ID+"/approve", map[string]any{})
			got = okClass(code)
		} else {
			_, err := e.svc.Approve(e.ctx, a.p, it.ID, nil)
			got = errStatus(err)
		}
		if got != want {
			e.t.Errorf("seed %d: approve by %s answered %d, the rules say %d", e.seed, a, got, want)
		}
		if after := e.head(it.RecordID); got >= 300 && after.Version != before.Version {
			e.t.Errorf("seed %d: refused approve by %s changed record %s", e.seed, a, it.RecordID)
		} else if got < 300 && after.ModifiedBy != a.p.ID {
			e.t.Errorf("seed %d: approved version of %s has modified_by %q, want the approver %s", e.seed, it.RecordID, after.ModifiedBy, a.p.ID)
		}
	}
	if a.token == "" {
		return // gateway users have no token: the routes answer 401
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/approvals"}, {"GET", "/v1/audit"}, {"GET", "/v1/decisions"}, {"GET", "/v1/agents"}, {"GET", "/users"},
		{"GET", "/v1/webhooks"}, {"GET", "/v1/webhooks/deliveries"}, {"GET", "/v1/events?after=0&follow=false"},
		{"GET", "/v1/jobs?state=done"}, {"GET", "/v1/audit?actor=operator&action=approval."},
	} {
		if code, _ := e.rest(a, r.method, r.path, nil); okClass(code) != want {
			e.t.Errorf("seed %d: %s %s by %s answered %d, the rules say %d", e.seed, r.method, r.path, a, code, want)
		}
	}
	// Changing an agent's trust is an operator's act; the probe sets an
	// agent of a's workspace to the level it has, so the matrix's rules
	// stay as they are.
	for _, ag := range e.actorsOf(a.p.Workspace) {
		if ag.p.Kind != memory.KindAgent {
			continue
		}
		if code, _ := e.rest(a, "PATCH", "/v1/agents/"+ag.p.ID, map[string]any{"trust": ag.p.Trust}); okClass(code) != want {
			e.t.Errorf("seed %d: PATCH /v1/agents/%s by %s answered %d, the rules say %d", e.seed, ag.p.Name, a, code, want)
		}
		if got, err := e.st.GetPrincipal(e.ctx, store.PrincipalFind{Workspace: ag.p.Workspace, ID: ag.p.ID}); err != nil || got.Trust != ag.p.Trust {
			e.t.Errorf("seed %d: after PATCH by %s agent %s has trust %q (%v), want %q", e.seed, a, ag.p.Name, got.Trust, err, ag.p.Trust)
		}
		break
	}
	// The console's forget-subject preview reads counts across the
	// workspace: operators only, as the erasure itself.
	if code, _ := e.rest(a, "POST", "/v1/graph/forget_subject", map[string]any{"subject": "user:alice", "preview": true}); okClass(code) != want {
		e.t.Errorf("seed %d: forget_subject preview by %s answered %d, the rules say %d", e.seed, a, code, want)
	}
	e.checkEventStream(a, want)
	code, body := e.rest(a, "GET", "/v1/export", nil)
	if okClass(code) != want {
		e.t.Fatalf("seed %d: export by %s answered %d, the rules say %d", e.seed, a, code, want)
	}
	if code == http.StatusOK {
		// The operator's export holds its workspace's records, all of
		// them, and nothing of another workspace.
		got := map[string]bool{}
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var l struct {
				Kind     string          `json:"kind"`
				Versions []memory.Record `json:"versions"`
			}
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Kind == "record" {
				got[l.Versions[0].ID] = true
			}
		}
		want := e.wantSet(a, func(h memory.Record) bool { return true })
		if !mapsEqual(got, want) {
			e.t.Errorf("seed %d: export by %s has %d records, want the %d of its workspace", e.seed, a, len(got), len(want))
		}
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// found interprets a core read's error: nil is shown, not_found hidden,
// anything else fails the test.
func (e *matrixEnv) found(a *actor, what string, err error) bool {
	e.t.Helper()
	if err == nil {
		return true
	}
	if !fault.Is(err, fault.NotFound) {
		e.t.Fatalf("seed %d: %s as %s: %v", e.seed, what, a, err)
	}
	return false
}

func (e *matrixEnv) rest(a *actor, method, path string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (e *matrixEnv) restFound(a *actor, path string) bool {
	e.t.Helper()
	code, raw := e.rest(a, "GET", path, nil)
	switch code {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	e.t.Fatalf("seed %d: GET %s as %s: %d %s", e.seed, path, a, code, raw)
	return false
}

func (e *matrixEnv) restJSON(a *actor, path string, out any) {
	e.t.Helper()
	code, raw := e.rest(a, "GET", path, nil)
	if code != http.StatusOK || json.Unmarshal(raw, out) != nil {
		e.t.Fatalf("seed %d: GET %s as %s: %d %s", e.seed, path, a, code, raw)
	}
}

// callTool calls an MCP tool; it returns the structured result, or the
// status of the tool error's code.
func (e *matrixEnv) callTool(a *actor, name string, args map[string]any) (json.RawMessage, int) {
	e.t.Helper()
	res, err := a.mcp.CallTool(e.ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		e.t.Fatalf("seed %d: %s as %s: protocol error %v", e.seed, name, a, err)
	}
	if res.IsError {
		text := res.Content[0].(*sdk.TextContent).Text
		code, _, _ := strings.Cut(text, ":")
		return nil, fault.HTTPStatus(fault.Code(code))
	}
	raw, _ := json.Marshal(res.StructuredContent)
	return raw, http.StatusOK
}

func (e *matrixEnv) toolFound(a *actor, name string, args map[string]any) bool {
	e.t.Helper()
	_, code := e.callTool(a, name, args)
	switch code {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	e.t.Fatalf("seed %d: %s as %s answered %d", e.seed, name, a, code)
	return false
}

func (e *matrixEnv) toolStatus(a *actor, name string, args map[string]any) int {
	_, code := e.callTool(a, name, args)
	return code
}

// okClass folds every 2xx into 200.
func okClass(code int) int {
	if code >= 200 && code < 300 {
		return http.StatusOK
	}
	return code
}

func errStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return fault.HTTPStatus(fault.CodeOf(err))
}

// checkEventStream: the event stream holds only the operator's workspace's
// events, and some when the matrix queued approvals there.
func (e *matrixEnv) checkEventStream(a *actor, want int) {
	e.t.Helper()
	code, body := e.rest(a, "GET", "/v1/events?after=0&follow=false", nil)
	if okClass(code) != want || code != http.StatusOK {
		return // the status was checked with the other operator-only reads
	}
	n := 0
	for line := range strings.SplitSeq(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Workspace string `json:"workspace"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Workspace != a.p.Workspace {
			e.t.Errorf("seed %d: the event stream of %s holds %s", e.seed, a, data)
		}
		n++
	}
	if items, err := e.st.ListApprovals(e.ctx, a.p.Workspace, "", "", 1); err != nil {
		e.t.Fatal(err)
	} else if n == 0 && len(items) > 0 {
		e.t.Errorf("seed %d: the event stream of %s is empty; the matrix queued approvals there", e.seed, a)
	}
}
