package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// sdkMethods names the SDK method serving each REST route. A route added
// to the server without its method here fails TestSDKCoversEveryRoute.
var sdkMethods = map[string]string{
	"GET /v1/whoami":                                          "Client.WhoAmI",
	"POST /v1/records":                                        "Client.Write",
	"GET /v1/records":                                         "Client.List",
	"GET /v1/records/{id}":                                    "Client.Get",
	"PATCH /v1/records/{id}":                                  "Client.Patch",
	"DELETE /v1/records/{id}":                                 "Client.Forget",
	"POST /v1/records/{id}/outcome":                           "Client.RecordOutcome",
	"POST /v1/records/{id}/restore":                           "Client.Restore",
	"GET /v1/records/{id}/history":                            "Client.History",
	"POST /v1/sessions/{session_id}/events":                   "Client.AppendEvent",
	"GET /v1/sessions/{session_id}/events":                    "Client.ListEvents",
	"POST /v1/search":                                         "Client.Search",
	"POST /v1/context":                                        "Client.Context",
	"GET /v1/index":                                           "Client.IndexStatus",
	"POST /v1/agents":                                         "Client.CreateAgent",
	"GET /v1/agents":                                          "Client.ListAgents",
	"DELETE /v1/agents/{id}":                                  "Client.RevokeAgent",
	"POST /v1/agents/{id}/rotate":                             "Client.RotateAgent",
	"GET /v1/approvals":                                       "Client.ListApprovals",
	"POST /v1/approvals/{id}/approve":                         "Client.Approve",
	"POST /v1/approvals/{id}/reject":                          "Client.Reject",
	"POST /users":                                             "Client.CreateUser",
	"GET /users":                                              "Client.ListUsers",
	"DELETE /users/{user_id}":                                 "Client.RevokeUser",
	"POST /users/{user_id}/rotate-key":                        "Client.RotateUserKey",
	"GET /v1/jobs/{id}":                                       "Client.Job",
	"GET /v1/jobs":                                            "Client.ListJobs",
	"PATCH /v1/agents/{id}":                                   "Client.SetAgentTrust",
	"POST /memories/search":                                   "GatewayClient.Search",
	"POST /memories/add":                                      "GatewayClient.Add",
	"POST /memories/flush":                                    "GatewayClient.Flush",
	"POST /memories/jobs/get":                                 "GatewayClient.Job",
	"POST /memories/update":                                   "GatewayClient.Update",
	"POST /memories/delete":                                   "GatewayClient.Delete",
	"POST /memories/resources":                                "GatewayClient.AddResource",
	"POST /v1/graph/nodes":                                    "Client.UpsertNode",
	"GET /v1/graph/nodes":                                     "Client.NodesByLabels",
	"GET /v1/graph/nodes/{ref}":                               "Client.GetNode",
	"POST /v1/graph/nodes/{ref}/archive":                      "Client.ArchiveNode",
	"GET /v1/graph/nodes/{ref}/neighbors":                     "Client.Neighbors",
	"GET /v1/graph/path":                                      "Client.Path",
	"POST /v1/graph/edges":                                    "Client.UpsertEdge",
	"DELETE /v1/graph/edges/{id}":                             "Client.InvalidateEdge",
	"GET /v1/graph/health":                                    "Client.GraphHealthcheck",
	"POST /v1/graph/forget_subject":                           "Client.ForgetSubject",
	"GET /v1/export":                                          "Client.Export",
	"POST /v1/import":                                         "Client.Import",
	"POST /v1/files":                                          "Client.CreateFile",
	"GET /v1/files":                                           "Client.ListFiles",
	"GET /v1/files/{id}":                                      "Client.GetFile",
	"PATCH /v1/files/{id}":                                    "Client.UpdateFile",
	"DELETE /v1/files/{id}":                                   "Client.DeleteFile",
	"GET /v1/files/{id}/history":                              "Client.FileHistory",
	"POST /v1/files/{id}/versions/{version}/redact":           "Client.RedactFileVersion",
	"POST /v1/memory-tool":                                    "Client.HandleMemoryToolUse",
	"POST /v1/memory_stores":                                  "Client.CreateMemoryStore",
	"GET /v1/memory_stores":                                   "Client.ListMemoryStores",
	"GET /v1/memory_stores/{store}":                           "Client.GetMemoryStore",
	"POST /v1/memory_stores/{store}":                          "Client.UpdateMemoryStore",
	"DELETE /v1/memory_stores/{store}":                        "Client.DeleteMemoryStore",
	"POST /v1/memory_stores/{store}/archive":                  "Client.ArchiveMemoryStore",
	"POST /v1/memory_stores/{store}/memories":                 "Client.CreateStoreMemory",
	"GET /v1/memory_stores/{store}/memories":                  "Client.ListStoreMemories",
	"GET /v1/memory_stores/{store}/memories/{memory}":         "Client.GetStoreMemory",
	"POST /v1/memory_stores/{store}/memories/{memory}":        "Client.UpdateStoreMemory",
	"DELETE /v1/memory_stores/{store}/memories/{memory}":      "Client.DeleteStoreMemory",
	"GET /v1/memory_stores/{store}/memory_versions":           "Client.ListMemoryVersions",
	"GET /v1/memory_stores/{store}/memory_versions/{version}": "Client.GetMemoryVersion",
	"POST /v1/memory_stores/{store}/memory_versions/{version}/redact": "Client.RedactMemoryVersion",
	"GET /v1/audit":                    "Client.Audit",
	"GET /v1/audit/verify":             "Client.VerifyAudit",
	"GET /v1/decisions":                "Client.Decisions",
	"POST /v1/admin/backup":            "Client.Backup",
	"GET /.well-known/agent-card.json": "Client.AgentCard",
	"GET /v1/events":                   "Client.Events",
	"POST /v1/webhooks":                "Client.CreateWebhook",
	"GET /v1/webhooks":                 "Client.ListWebhooks",
	"DELETE /v1/webhooks/{id}":         "Client.DeleteWebhook",
	"GET /v1/webhooks/deliveries":      "Client.WebhookDeliveries",
	"POST /v1/resources":               "Client.Ingest",
	"GET /v1/resources":                "Client.Resources",
	"POST /v1/resources/search":        "Client.SearchResources",
	"GET /v1/resources/{id}/source":    "Client.Source",
	"DELETE /v1/resources/{id}":        "Client.ForgetResource",
}

// notSDK are routes that are not client capabilities: the probes and the
// document, and the mem0-compatible API, which mem0's own clients call.
func notSDK(key string) bool {
	switch key {
	case "GET /healthz", "GET /readyz", "GET /openapi.json":
		return true
	}
	return strings.HasSuffix(key, "/") // the mem0 routes (docs/mem0.md)
}

func TestSDKCoversEveryRoute(t *testing.T) {
	types := map[string]reflect.Type{"Client": reflect.TypeOf(&Client{}), "GatewayClient": reflect.TypeOf(&GatewayClient{})}
	seen := map[string]bool{}
	for _, rt := range (&api.Server{}).Routes() {
		key := rt.Method + " " + rt.Path
		seen[key] = true
		if notSDK(key) {
			continue
		}
		m, ok := sdkMethods[key]
		if !ok {
			t.Errorf("route %s has no SDK method (add one, and a row to sdkMethods)", key)
			continue
		}
		typ, name, _ := strings.Cut(m, ".")
		if _, ok := types[typ].MethodByName(name); !ok {
			t.Errorf("%s: %s does not exist", key, m)
		}
	}
	for key := range sdkMethods {
		if !seen[key] {
			t.Errorf("sdkMethods names %s, which is not a route", key)
		}
	}
}

// realServer runs the API over SQLite with the search index and the job
// workers on a loopback port, and returns it with its operator token.
func realServer(t *testing.T) (string, string) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix, Jobs: core.JobOptions{Poll: 20 * time.Millisecond}})
	op, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	jobsCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); svc.RunJobs(jobsCtx) }()
	t.Cleanup(func() { srv.Close(); stop(); <-done; st.Close() })
	return srv.URL, op
}

func must[T any](t *testing.T, what string) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

func field(t *testing.T, raw json.RawMessage, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	s, _ := m[name].(string)
	return s
}

// TestSDKOperatorsAndAdmin drives the operator and admin routes against
// a real server.
func TestSDKOperatorsAndAdmin(t *testing.T) {
	ctx := context.Background()
	url, opTok := realServer(t)
	op := must[*Client](t, "client")(NewClient(url, opTok))
	agent := must[CreatedPrincipal](t, "create agent")(op.CreateAgent(ctx, "coder", "standard"))
	intern := must[CreatedPrincipal](t, "create agent")(op.CreateAgent(ctx, "intern", "restricted"))
	if agent.Token == "" || agent.Name != "coder" {
		t.Fatalf("agent = %+v", agent)
	}
	if names := must[[]Principal](t, "list agents")(op.ListAgents(ctx)); len(names) < 2 {
		t.Fatalf("agents = %+v", names)
	}
	c := must[*Client](t, "client")(NewClient(url, agent.Token))

	// Errors: the code and the field a 400 names.
	_, err := c.Write(ctx, WriteRequest{Type: "nope", Content: "x"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidArgument || e.Field() != "type" {
		t.Fatalf("bad type: %v", err)
	}
	if _, err := c.ListApprovals(ctx, "", "", 0); !errors.As(err, &e) || e.Code != CodePermissionDenied {
		t.Fatalf("agent lists approvals: %v", err)
	}

	// Procedures, restore, events, index.
	skill := must[WriteResult](t, "write skill")(c.Write(ctx, WriteRequest{Type: TypeSkill, Content: "To deploy: run make release, then tag the commit"}))
	if o := must[OutcomeResult](t, "outcome")(c.RecordOutcome(ctx, skill.Record.ID, 1)); o.Record.ID != skill.Record.ID {
		t.Fatalf("outcome = %+v", o)
	}
	if r := must[Record](t, "restore")(op.Restore(ctx, skill.Record.ID)); r.Status != StatusActive {
		t.Fatalf("restore = %+v", r)
	}
	must[WriteResult](t, "append event")(c.AppendEvent(ctx, "s1", SessionEvent{Kind: "note", Content: "started"}))
	if evs := must[ListResult](t, "events")(c.ListEvents(ctx, "s1", "", 10)); len(evs.Records) != 1 {
		t.Fatalf("events = %+v", evs)
	}
	if st := must[IndexStats](t, "index")(c.IndexStatus(ctx)); st.Docs < 1 {
		t.Fatalf("index = %+v", st)
	}

	// Approvals: queue, approve with an edit, reject.
	w1 := must[WriteResult](t, "queued write")(must[*Client](t, "client")(NewClient(url, intern.Token)).Write(ctx, WriteRequest{Type: TypeBelief, Content: "The staging host is db-7"}))
	w2 := must[WriteResult](t, "queued write")(must[*Client](t, "client")(NewClient(url, intern.Token)).Write(ctx, WriteRequest{Type: TypeBelief, Content: "Deploys freeze on Fridays"}))
	if w1.Decision != DecisionQueued || w1.ApprovalID == "" {
		t.Fatalf("restricted write = %+v", w1)
	}
	page := must[ApprovalPage](t, "approvals")(op.ListApprovals(ctx, "pending", "", 10))
	if len(page.Items) != 2 || page.Items[0].Record.ID == "" {
		t.Fatalf("queue = %+v", page)
	}
	edited := "The staging host is db-8"
	if a := must[Approval](t, "approve")(op.Approve(ctx, w1.ApprovalID, &ApprovalEdit{Content: &edited})); a.Status != "approved" || a.Record.Content != edited {
		t.Fatalf("approve = %+v", a)
	}
	if a := must[Approval](t, "reject")(op.Reject(ctx, w2.ApprovalID, "unverified")); a.Status != "rejected" {
		t.Fatalf("reject = %+v", a)
	}

	// Agents: rotate, revoke.
	rot := must[CreatedPrincipal](t, "rotate")(op.RotateAgent(ctx, "intern"))
	if rot.Token == "" || rot.Token == intern.Token {
		t.Fatal("rotate gave no new token")
	}
	if p := must[Principal](t, "revoke")(op.RevokeAgent(ctx, "intern")); p.RevokedAt == nil {
		t.Fatalf("revoke = %+v", p)
	}

	// Gateway users and the gateway's update, delete and resources.
	u := must[User](t, "create user")(op.CreateUser(ctx, "alice"))
	gw := must[*GatewayClient](t, "gateway")(NewGatewayClient(url))
	who := Identity{UserID: u.UserID, UserKey: u.UserKey}
	if err := gw.Add(ctx, AddRequest{UserID: u.UserID, UserKey: u.UserKey, SessionID: "chat:c1", Messages: []Message{
		{SenderID: "alice", Role: RoleUser, Timestamp: time.Now().UnixMilli(), Content: "I prefer tea"}}}); err != nil {
		t.Fatal(err)
	}
	fr := must[FlushResponse](t, "flush")(gw.Flush(ctx, FlushRequest{UserID: u.UserID, UserKey: u.UserKey, SessionID: "chat:c1"}))
	if j := must[JobView](t, "job")(op.Job(ctx, fr.JobID)); j.ID != fr.JobID {
		t.Fatalf("job = %+v", j)
	}
	hits := must[SearchResponse](t, "gateway search")(gw.Search(ctx, SearchRequest{UserID: u.UserID, UserKey: u.UserKey, ConversationID: "c1", Query: "tea"}))
	if len(hits.Results) == 0 {
		t.Fatal("gateway search found nothing")
	}
	if up := must[UpdateResult](t, "gateway update")(gw.Update(ctx, who, hits.Results[0].ID, "I prefer green tea")); up.Version != 2 {
		t.Fatalf("update = %+v", up)
	}
	if d := must[DeleteResult](t, "gateway delete")(gw.Delete(ctx, who, hits.Results[0].ID)); !d.Deleted {
		t.Fatalf("delete = %+v", d)
	}
	if rr := must[ResourceResult](t, "resource")(gw.AddResource(ctx, who, Resource{Name: "handbook.md", ContentType: "text/markdown", Content: "# Travel\nBook window seats."})); len(rr.Chunks) == 0 {
		t.Fatalf("resource = %+v", rr)
	}
	if users := must[[]GatewayUser](t, "users")(op.ListUsers(ctx)); len(users) != 1 || users[0].UserID != "alice" {
		t.Fatalf("users = %+v", users)
	}
	if nu := must[User](t, "rotate key")(op.RotateUserKey(ctx, "alice")); nu.UserKey == "" || nu.UserKey == u.UserKey {
		t.Fatal("rotate key gave no new key")
	}
	if gu := must[GatewayUser](t, "revoke user")(op.RevokeUser(ctx, "alice")); gu.RevokedAt == nil {
		t.Fatalf("revoke user = %+v", gu)
	}

	// Audit and decisions.
	if ap := must[AuditPage](t, "audit")(op.Audit(ctx, 0, 500)); len(ap.Entries) < 5 {
		t.Fatalf("audit = %d entries", len(ap.Entries))
	}
	if vr := must[VerifyReport](t, "verify")(op.VerifyAudit(ctx)); !vr.OK {
		t.Fatalf("verify = %+v", vr)
	}
	if dp := must[DecisionPage](t, "decisions")(op.Decisions(ctx, DecisionQuery{Source: "gate", Limit: 50})); len(dp.Decisions) == 0 {
		t.Fatal("no decisions")
	}
}

// TestSDKFilesStoresGraphPortable drives memory files, memory stores, the
// graph, and export then import into a fresh server.
func TestSDKFilesStoresGraphPortable(t *testing.T) {
	ctx := context.Background()
	url, opTok := realServer(t)
	op := must[*Client](t, "client")(NewClient(url, opTok))

	fr := must[FileResult](t, "create file")(op.CreateFile(ctx, FileCreateRequest{Path: "/memories/notes.md", Content: "first\n", Scope: &Scope{UserID: "alice"}}))
	id := fr.File.ID
	if fs := must[[]File](t, "list files")(op.ListFiles(ctx, FileListRequest{PathPrefix: "/memories/", Scope: Scope{UserID: "alice"}})); len(fs) != 1 || fs[0].ID != id {
		t.Fatalf("files = %+v", fs)
	}
	second := "second\n"
	must[FileResult](t, "update file")(op.UpdateFile(ctx, id, FileUpdateRequest{Content: &second}))
	if f := must[File](t, "get file v1")(op.GetFile(ctx, id, 1)); f.Content != "first\n" {
		t.Fatalf("v1 = %+v", f)
	}
	if red := must[File](t, "redact")(op.RedactFileVersion(ctx, id, 1)); !red.Redacted {
		t.Fatalf("redact = %+v", red)
	}
	if h := must[[]File](t, "file history")(op.FileHistory(ctx, id)); len(h) != 2 {
		t.Fatalf("history = %+v", h)
	}
	must[FileResult](t, "delete file")(op.DeleteFile(ctx, id, ""))

	store := must[StoreObject](t, "create store")(op.CreateMemoryStore(ctx, StoreRequest{Name: "team"}))
	sid := field(t, store, "id")
	if field(t, must[StoreObject](t, "get store")(op.GetMemoryStore(ctx, sid)), "name") != "team" {
		t.Fatal("store name")
	}
	must[StoreObject](t, "update store")(op.UpdateMemoryStore(ctx, sid, StoreRequest{Description: "shared"}))
	if p := must[StorePage](t, "list stores")(op.ListMemoryStores(ctx, StoreListOptions{Limit: 10})); len(p.Data) != 1 {
		t.Fatalf("stores = %d", len(p.Data))
	}
	mem := must[StoreObject](t, "create memory")(op.CreateStoreMemory(ctx, sid, "/prefs.md", "likes tea"))
	mid := field(t, mem, "id")
	must[StoreObject](t, "get memory")(op.GetStoreMemory(ctx, sid, mid))
	content := "likes green tea"
	must[StoreObject](t, "update memory")(op.UpdateStoreMemory(ctx, sid, mid, StoreMemoryUpdate{Content: &content}))
	if p := must[StorePage](t, "list memories")(op.ListStoreMemories(ctx, sid, StoreListOptions{})); len(p.Data) != 1 {
		t.Fatalf("memories = %d", len(p.Data))
	}
	vp := must[StorePage](t, "versions")(op.ListMemoryVersions(ctx, sid, StoreListOptions{ID: mid}))
	if len(vp.Data) != 2 {
		t.Fatalf("versions = %d", len(vp.Data))
	}
	old := field(t, vp.Data[1], "id")
	must[StoreObject](t, "get version")(op.GetMemoryVersion(ctx, sid, old))
	must[StoreObject](t, "redact version")(op.RedactMemoryVersion(ctx, sid, old))
	must[StoreObject](t, "delete memory")(op.DeleteStoreMemory(ctx, sid, mid, ""))
	must[StoreObject](t, "archive store")(op.ArchiveMemoryStore(ctx, sid))
	must[StoreObject](t, "delete store")(op.DeleteMemoryStore(ctx, sid))

	a := must[NodeResult](t, "node")(op.UpsertNode(ctx, NodeInput{Label: "person", NaturalKey: "alice"}))
	must[NodeResult](t, "node")(op.UpsertNode(ctx, NodeInput{Label: "team", NaturalKey: "platform"}))
	if !a.Created {
		t.Fatal("node not created")
	}
	e := must[EdgeResult](t, "edge")(op.UpsertEdge(ctx, EdgeInput{From: "person:alice", To: "team:platform", Relation: "PART_OF"}))
	if n := must[Node](t, "get node")(op.GetNode(ctx, "person:alice", false)); n.ID != a.Node.ID {
		t.Fatalf("node = %+v", n)
	}
	if np := must[NodePage](t, "nodes")(op.NodesByLabels(ctx, []string{"person", "team"}, false, "", 10)); len(np.Nodes) != 2 {
		t.Fatalf("nodes = %+v", np)
	}
	if nb := must[[]Neighbor](t, "neighbors")(op.Neighbors(ctx, "person:alice", NeighborQuery{Depth: 1})); len(nb) != 1 || nb[0].Node.Label != "team" {
		t.Fatalf("neighbors = %+v", nb)
	}
	if pr := must[PathResult](t, "path")(op.Path(ctx, "person:alice", "team:platform", 3, nil)); !pr.Found || len(pr.Hops) != 1 {
		t.Fatalf("path = %+v", pr)
	}
	if h := must[GraphHealth](t, "health")(op.GraphHealthcheck(ctx)); !h.OK {
		t.Fatalf("health = %+v", h)
	}
	if inv := must[Edge](t, "invalidate")(op.InvalidateEdge(ctx, e.Edge.ID)); inv.InvalidatedAt == nil {
		t.Fatalf("edge = %+v", inv)
	}
	must[Node](t, "archive node")(op.ArchiveNode(ctx, "team:platform"))
	must[WriteResult](t, "write")(op.Write(ctx, WriteRequest{Type: TypePreference, Content: "Bob likes jazz", Scope: Scope{UserID: "bob"}}))
	if rep := must[ForgetReport](t, "forget subject")(op.ForgetSubject(ctx, "user:bob")); rep.Records != 1 {
		t.Fatalf("forget = %+v", rep)
	}

	var buf bytes.Buffer
	n := must[int64](t, "export")(op.Export(ctx, &buf))
	if n == 0 || !bytes.Contains(buf.Bytes(), []byte("person")) {
		t.Fatalf("export: %d bytes", n)
	}
	url2, op2 := realServer(t)
	c2 := must[*Client](t, "client")(NewClient(url2, op2))
	if st := must[ImportStats](t, "import")(c2.Import(ctx, &buf)); st.Nodes != 2 || st.Records == 0 {
		t.Fatalf("import = %+v", st)
	}
	var ie *Error
	if _, err := c2.Import(ctx, strings.NewReader("not an export\n")); !errors.As(err, &ie) || ie.Status/100 != 4 || ie.Code == "" {
		t.Fatalf("importing what is not an export: %v", err)
	}
}
