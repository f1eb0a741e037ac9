package api

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/mem0compat"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// oaService returns a core service over a fresh SQLite database, with
// the operator's rate limit off. It is shared by the OpenAPI and fuzz
// tests.
func oaService(tb testing.TB) *core.Service {
	tb.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		tb.Fatalf("open sqlite: %v", err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	pol := gate.Default()
	pol.RateLimit.Operator = gate.Bucket{}
	return core.New(core.Options{Store: st, Policy: pol})
}

// oaLoad parses the embedded document.
func oaLoad(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	return doc
}

// oaResolve follows a local JSON pointer reference ("#/a/b").
func oaResolve(doc map[string]any, ref string) (any, bool) {
	ptr, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = doc
	for _, tok := range strings.Split(ptr, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// oaDeref resolves v if it is a {"$ref": ...} object, repeatedly.
func oaDeref(t *testing.T, doc map[string]any, v any) map[string]any {
	t.Helper()
	for range 16 {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("expected an object, got %T", v)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		if v, ok = oaResolve(doc, ref); !ok {
			t.Fatalf("unresolvable $ref %q", ref)
		}
	}
	t.Fatal("$ref chain too long")
	return nil
}

var oaMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

var oaPathParam = regexp.MustCompile(`\{([^{}]+)\}`)

func authName(a auth) string {
	switch a {
	case public:
		return "public"
	case anyToken:
		return "token"
	case operator:
		return "operator"
	case userKey:
		return "user_key"
	case mem0Key:
		return "mem0_token"
	}
	return fmt.Sprint(int(a))
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := oaLoad(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("openapi = %q, want 3.1.x", v)
	}
	scheme, ok := oaResolve(doc, "#/components/securitySchemes/bearerAuth")
	if !ok {
		t.Fatal("components.securitySchemes.bearerAuth is missing")
	}
	if sm := scheme.(map[string]any); sm["type"] != "http" || !strings.EqualFold(fmt.Sprint(sm["scheme"]), "bearer") {
		t.Errorf("bearerAuth = %v, want an http bearer scheme", sm)
	}

	// The route table, plus /metrics which Handler registers on its own.
	want := map[string]Route{}
	for _, rt := range (&Server{}).Routes() {
		want[rt.Method+" "+rt.Path] = rt
	}
	want["GET /metrics"] = Route{Method: "GET", Path: "/metrics", Auth: public, Summary: "Prometheus metrics"}

	paths, ok := doc["paths"].(map[string]any)
	if !ok {
		t.Fatal("paths is missing")
	}
	got := map[string]bool{}
	opIDs := map[string]string{}
	for path, pv := range paths {
		item := oaDeref(t, doc, pv)
		for _, method := range oaMethods {
			ov, ok := item[method]
			if !ok {
				continue
			}
			key := strings.ToUpper(method) + " " + path
			got[key] = true
			rt, known := want[key]
			if !known {
				continue // reported below
			}
			op := ov.(map[string]any)
			checkOperation(t, doc, key, rt, item, op)
			id, _ := op["operationId"].(string)
			if prev, dup := opIDs[id]; dup && id != "" {
				t.Errorf("operationId %q used by %s and %s", id, prev, key)
			}
			opIDs[id] = key
		}
	}
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from openapi.json: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("operations in openapi.json with no route: %v", extra)
	}

	checkRefs(t, doc)
	checkSchemasMatchStructs(t, doc)
	checkEnums(t, doc)
}

func checkOperation(t *testing.T, doc map[string]any, key string, rt Route, item, op map[string]any) {
	t.Helper()
	if id, _ := op["operationId"].(string); id == "" {
		t.Errorf("%s: no operationId", key)
	}
	if s, _ := op["summary"].(string); s != rt.Summary {
		t.Errorf("%s: summary %q, want the route's %q", key, s, rt.Summary)
	}
	if a, _ := op["x-memgate-auth"].(string); a != authName(rt.Auth) {
		t.Errorf("%s: x-memgate-auth %q, want %q", key, a, authName(rt.Auth))
	}

	// Security: none for public and gateway routes (whose credentials
	// travel in the body), bearerAuth for the others.
	sec, hasSec := op["security"].([]any)
	if _, present := op["security"]; present && !hasSec {
		t.Errorf("%s: security is not an array", key)
	}
	switch {
	case rt.Auth == public || rt.Auth == userKey:
		if len(sec) > 0 {
			t.Errorf("%s: public route declares security %v", key, sec)
		}
	case rt.Auth == mem0Key:
		// mem0's "Token <key>" scheme, or a bearer token.
		if len(sec) != 2 || sec[0].(map[string]any)["mem0Token"] == nil || sec[1].(map[string]any)["bearerAuth"] == nil {
			t.Errorf("%s: security %v, want [{mem0Token: []}, {bearerAuth: []}]", key, sec)
		}
	default:
		if len(sec) != 1 {
			t.Errorf("%s: security %v, want exactly [{bearerAuth: []}]", key, sec)
		} else if req, _ := sec[0].(map[string]any); len(req) != 1 || req["bearerAuth"] == nil {
			t.Errorf("%s: security %v, want [{bearerAuth: []}]", key, sec)
		}
	}

	// Every {param} of the path is declared as a required path parameter,
	// and nothing else is.
	wantParams := map[string]bool{}
	for _, m := range oaPathParam.FindAllStringSubmatch(rt.Path, -1) {
		wantParams[m[1]] = true
	}
	declared := map[string]bool{}
	seen := map[string]bool{}
	var params []any
	if ps, ok := item["parameters"].([]any); ok {
		params = append(params, ps...)
	}
	if ps, ok := op["parameters"].([]any); ok {
		params = append(params, ps...)
	}
	for _, pv := range params {
		p := oaDeref(t, doc, pv)
		name, _ := p["name"].(string)
		in, _ := p["in"].(string)
		if seen[in+":"+name] {
			t.Errorf("%s: parameter %s declared twice in %s", key, name, in)
		}
		seen[in+":"+name] = true
		if in != "path" {
			continue
		}
		declared[name] = true
		if p["required"] != true {
			t.Errorf("%s: path parameter %s is not required", key, name)
		}
	}
	for name := range wantParams {
		if !declared[name] {
			t.Errorf("%s: path parameter {%s} is not declared", key, name)
		}
	}
	for name := range declared {
		if !wantParams[name] {
			t.Errorf("%s: declares path parameter %s that the path does not have", key, name)
		}
	}

	resps, _ := op["responses"].(map[string]any)
	has2xx := false
	for code := range resps {
		if strings.HasPrefix(code, "2") {
			has2xx = true
		}
	}
	if !has2xx {
		t.Errorf("%s: no 2xx response", key)
	}
	if rt.Auth != public && resps["401"] == nil {
		t.Errorf("%s: authenticated route documents no 401", key)
	}
	if rt.Auth == operator && resps["403"] == nil {
		t.Errorf("%s: operator route documents no 403", key)
	}
}

// checkRefs asserts that every $ref in the document resolves to a
// component.
func checkRefs(t *testing.T, doc map[string]any) {
	t.Helper()
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"]; ok {
				s, _ := ref.(string)
				if !strings.HasPrefix(s, "#/components/") {
					t.Errorf("%s: $ref %v does not name a component", at, ref)
				} else if _, ok := oaResolve(doc, s); !ok {
					t.Errorf("%s: $ref %q does not resolve", at, s)
				}
			}
			for k, c := range v {
				walk(c, at+"/"+k)
			}
		case []any:
			for i, c := range v {
				walk(c, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc, "#")
}

// jsonFields returns the JSON names encoding/json uses for t's fields and
// whether each is always present (no omitempty).
func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for k, v := range jsonFields(ft) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = !slices.Contains(strings.Split(opts, ","), "omitempty")
	}
	return out
}

// schemaFields returns a schema's property names and its required ones,
// following $ref and merging allOf.
func schemaFields(t *testing.T, doc map[string]any, v any) (props, required map[string]bool) {
	t.Helper()
	props, required = map[string]bool{}, map[string]bool{}
	s := oaDeref(t, doc, v)
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			p, r := schemaFields(t, doc, sub)
			for k := range p {
				props[k] = true
			}
			for k := range r {
				required[k] = true
			}
		}
	}
	if ps, ok := s["properties"].(map[string]any); ok {
		for k := range ps {
			props[k] = true
		}
	}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			required[fmt.Sprint(r)] = true
		}
	}
	return props, required
}

func keys(m map[string]bool, only func(bool) bool) []string {
	var out []string
	for k, v := range m {
		if only == nil || only(v) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// checkSchemasMatchStructs pins each schema's properties to the Go struct
// it describes. For response bodies the required set must be exactly the
// fields without omitempty; request bodies must reject unknown fields, as
// Decode does.
func checkSchemasMatchStructs(t *testing.T, doc map[string]any) {
	t.Helper()
	cases := []struct {
		schema   string
		v        any
		response bool
	}{
		{"Record", memory.Record{}, true},
		{"Source", memory.Source{}, true},
		{"Scope", memory.Scope{}, true},
		{"GateInfo", memory.GateInfo{}, true},
		{"RecordWithCitation", recordView{}, true},
		{"WriteResult", core.WriteResult{}, true},
		{"ListResult", core.ListResult{}, true},
		{"Principal", memory.Principal{}, true},
		{"CreatedPrincipal", core.CreatedPrincipal{}, true},
		{"Approval", memory.Approval{}, true},
		{"ApprovalItem", core.ApprovalItem{}, true},
		{"ApprovalPage", core.ApprovalPage{}, true},
		{"AuditEntry", audit.Entry{}, true},
		{"AuditPage", core.AuditPage{}, true},
		{"DecisionEntry", core.Decision{}, true},
		{"DecisionPage", core.DecisionPage{}, true},
		{"VerifyReport", core.VerifyReport{}, true},
		{"BrokenLink", audit.BrokenError{}, true},
		{"AuditStatus", core.AuditStatus{}, true},
		{"Error", errorBody{}, true},
		{"SearchResponse", core.SearchResponse{}, true},
		{"SearchHit", core.SearchHit{}, true},
		{"SignalScore", retrieve.SignalScore{}, true},
		{"IndexStats", core.IndexStats{}, true},
		{"GatewayHit", core.GatewayHit{}, true},
		{"AddResult", core.AddResult{}, true},
		{"FlushResult", core.FlushResult{}, true},
		{"JobView", core.JobView{}, true},
		{"ResourceChunk", core.ResourceChunk{}, true},
		{"ResourceResult", core.ResourceResult{}, true},
		{"CreatedUser", core.CreatedUser{}, true},
		{"GatewayUser", core.GatewayUser{}, true},
		{"CreateUserRequest", createUserBody{}, false},
		{"ForgetReport", core.ForgetReport{}, true},
		{"Webhook", core.WebhookView{}, true},
		{"CreatedWebhook", core.WebhookCreated{}, true},
		{"Delivery", core.DeliveryView{}, true},
		{"DeliveryPage", core.DeliveryPage{}, true},
		{"EventPayload", events.Payload{}, true},
		{"Mem0Memory", mem0compat.Memory{}, true},
		{"Mem0AddResult", mem0compat.AddResult{}, true},
		{"Mem0AddResponse", mem0compat.AddResponse{}, true},
		{"Mem0SearchResponse", mem0compat.SearchResponse{}, true},
		{"Mem0Page", mem0compat.Page{}, true},
		{"Mem0Deleted", mem0compat.Deleted{}, true},
		{"Mem0HistoryEntry", mem0compat.HistoryEntry{}, true},
		{"Mem0Ping", mem0compat.Ping{}, true},
		{"Mem0Event", mem0compat.Event{}, true},
		{"ForgetPreview", ForgetPreview{}, true},
		{"ImportStats", core.ImportStats{}, true},
		{"Node", memory.Node{}, true},
		{"Edge", memory.Edge{}, true},
		{"NodeResult", core.NodeResult{}, true},
		{"EdgeResult", core.EdgeResult{}, true},
		{"Neighbor", core.Neighbor{}, true},
		{"PathResult", core.PathResult{}, true},
		{"NodePage", core.NodePage{}, true},
		{"GraphHealth", core.GraphHealth{}, true},
		{"NodeInput", core.NodeInput{}, false},
		{"EdgeInput", core.EdgeInput{}, false},
		{"ForgetSubjectRequest", forgetSubjectRequest{}, false},
		{"Error/properties/error", errorDetail{}, true},

		{"WriteRequest", core.WriteRequest{}, false},
		{"SourceInput", core.SourceInput{}, false},
		{"PatchRequest", core.PatchRequest{}, false},
		{"CreateAgentRequest", createAgentRequest{}, false},
		{"ApprovalEdit", core.ApprovalEdit{}, false},
		{"RejectRequest", rejectRequest{}, false},
		{"SearchRequest", core.SearchRequest{}, false},
		{"File", files.File{}, true},
		{"FileResult", files.Result{}, true},
		{"FileCreateRequest", files.CreateRequest{}, false},
		{"FileUpdateRequest", files.UpdateRequest{}, false},
		{"MemoryToolResult", memoryToolResult{}, true},
		{"MemoryStore", files.Store{}, true},
		{"StoreMemory", files.Memory{}, true},
		{"MemoryVersion", files.MemoryVersion{}, true},
		{"MemoryStoreRequest", storeBody{}, false},
		{"StoreMemoryCreate", memoryCreateBody{}, false},
		{"StoreMemoryUpdate", files.MemoryUpdate{}, false},
		{"ContextRequest", contextpack.Request{}, false},
		{"ContextEnvelope", contextpack.Envelope{}, true},
		{"ContextSection", contextpack.Section{}, true},
		{"ContextItem", contextpack.Item{}, true},
	}
	for _, c := range cases {
		ref := "#/components/schemas/" + c.schema
		sv, ok := oaResolve(doc, ref)
		if !ok {
			t.Errorf("schema %s is missing", ref)
			continue
		}
		goFields := jsonFields(reflect.TypeOf(c.v))
		props, required := schemaFields(t, doc, sv)
		if g, s := keys(goFields, nil), keys(props, nil); !slices.Equal(g, s) {
			t.Errorf("%s: properties %v, but %T encodes %v", c.schema, s, c.v, g)
		}
		for r := range required {
			if !props[r] {
				t.Errorf("%s: requires %s, which is not a property", c.schema, r)
			}
		}
		if c.response {
			always := keys(goFields, func(b bool) bool { return b })
			if req := keys(required, nil); !slices.Equal(always, req) {
				t.Errorf("%s: required %v, but %T always encodes %v", c.schema, req, c.v, always)
			}
		} else if s := oaDeref(t, doc, sv); s["additionalProperties"] != false {
			t.Errorf("%s: request bodies are decoded strictly; set additionalProperties: false", c.schema)
		}
	}
}

// checkEnums pins the document's enums to the domain's values.
func checkEnums(t *testing.T, doc map[string]any) {
	t.Helper()
	strs := func(vs ...any) []string {
		var out []string
		for _, v := range vs {
			out = append(out, fmt.Sprint(v))
		}
		sort.Strings(out)
		return out
	}
	anys := func(s any) []any {
		rv := reflect.ValueOf(s)
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out
	}
	cases := map[string][]string{
		"Type":          strs(anys(memory.Types)...),
		"Status":        strs(anys(memory.Statuses)...),
		"Access":        strs(anys(memory.AccessLevels)...),
		"SourceKind":    strs(anys(memory.SourceKinds)...),
		"Trust":         strs(anys(memory.TrustLevels)...),
		"PrincipalKind": strs(memory.KindOperator, memory.KindAgent, memory.KindUser, memory.KindSystem),
		"Decision": strs(memory.DecisionAccepted, memory.DecisionProvisional, memory.DecisionQueued,
			memory.DecisionQuarantined, memory.DecisionDuplicate),
		"Origin":         strs(memory.OriginExternal, memory.OriginConsolidation, memory.OriginMaintenance),
		"Path":           strs(memory.PathFast, memory.PathSlow),
		"ApprovalKind":   strs(memory.ApprovalPending, memory.ApprovalQuarantine, memory.ApprovalConflict),
		"ApprovalStatus": strs(memory.ApprovalOpen, memory.ApprovalApproved, memory.ApprovalRejected, memory.ApprovalExpired),
		"ActorKind":      strs(audit.ActorAgent, audit.ActorUser, audit.ActorOperator, audit.ActorSystem),
		"NodeStatus":     strs(anys(memory.NodeStatuses)...),
		"NodeProvenance": strs(anys(memory.Provenances)...),
		"Relation":       strs(anys(graph.RelationList())...),
		"ErrorCode": strs(fault.InvalidArgument, fault.Unauthenticated, fault.PermissionDenied, fault.NotFound,
			fault.MethodNotAllowed, fault.VersionConflict, fault.Conflict, fault.TooLarge, fault.GateRejected, fault.RateLimited,
			fault.Unavailable, fault.Internal),
	}
	for name, want := range cases {
		sv, ok := oaResolve(doc, "#/components/schemas/"+name)
		if !ok {
			t.Errorf("schema %s is missing", name)
			continue
		}
		enum, _ := sv.(map[string]any)["enum"].([]any)
		if got := strs(enum...); !slices.Equal(got, want) {
			t.Errorf("%s: enum %v, want %v", name, got, want)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	h := New(oaService(t), nil, nil, "test").Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi.json: status %d, want 200", rec.Code)
	}
	mt, _, err := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	if err != nil || mt != "application/json" {
		t.Errorf("Content-Type %q, want application/json", rec.Header().Get("Content-Type"))
	}
	if !json.Valid(rec.Body.Bytes()) {
		t.Error("served document is not valid JSON")
	}
	if rec.Body.String() != string(openapiJSON) {
		t.Error("served document differs from the embedded openapi.json")
	}
}
