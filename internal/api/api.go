// Package api is memgate's REST v1 adapter and operational endpoints. The
// whole route table is in Routes; handlers decode, call the core service,
// and encode. Errors from every handler are mapped to statuses in one
// place, writeError.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/memgate/memgate/internal/console"
	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/kgcompat"
	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/mcp"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/metrics"
	"github.com/memgate/memgate/internal/tracing"
)

// Server serves REST v1 over a core service.
type Server struct {
	svc   *core.Service
	files *files.Service
	// knowledge ingests, cites and searches documents (SPEC §17).
	knowledge *knowledge.Service
	log       *slog.Logger
	metrics   *metrics.Metrics
	// MaxBodyBytes bounds request bodies; larger bodies get 413.
	maxBody int64
	// Version is reported by /healthz.
	version string
	// mcp serves MCP over Streamable HTTP at /mcp.
	mcp http.Handler
	// streamWindow is how long a stream (export, import) may go without
	// progress; its deadline moves on with each read or write.
	streamWindow time.Duration
	// exportProgress, when set (by tests), is called after each exported
	// record.
	exportProgress func(done int)
	// assembler builds context envelopes (POST /v1/context, the
	// gateway's search on request).
	assembler *contextpack.Assembler
	// console configures the operator console; nil while it is off
	// (EnableConsole).
	console *console.Options
}

// New returns a server. m may be nil.
func New(svc *core.Service, log *slog.Logger, m *metrics.Metrics, version string) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fs := files.New(svc, files.Options{})
	kn := knowledge.New(svc, knowledge.Options{})
	return &Server{svc: svc, files: fs, knowledge: kn, log: log, metrics: m, maxBody: svc.Policy().Limits.MaxRequestBytes, version: version,
		mcp: mcp.HTTPHandler(svc, mcp.Options{Logger: log, Version: version, Pinned: fs.ContextPinned(), Files: fs, Knowledge: kn, KG: kgcompat.New(svc)}), streamWindow: streamWindow,
		assembler: contextpack.New(svc, fs.ContextPinned())}
}

// auth says who may call a route.
type auth int

const (
	public   auth = iota // no token
	anyToken             // any valid token
	operator             // operator token
	userKey              // gateway user credentials in the body, checked by the handler
	mem0Key              // any valid token, sent as mem0 clients do ("Token <key>") or as a bearer token
)

// Route is one entry of the route table.
type Route struct {
	Method  string
	Path    string // ServeMux pattern path, with {wildcards}
	Auth    auth
	Summary string
	handle  func(w http.ResponseWriter, r *http.Request, p memory.Principal) error
}

// Routes is the whole route table, by capability. The OpenAPI document
// is checked against it by a test.
func (s *Server) Routes() []Route {
	return slices.Concat(s.serviceRoutes(), s.recordRoutes(), s.adminRoutes(), s.gatewayRoutes(), s.graphRoutes(),
		s.fileRoutes(), s.operationsRoutes(), s.mem0Routes(), s.laterRoutes())
}

// serviceRoutes are the service's own: liveness, readiness, the API
// document.
func (s *Server) serviceRoutes() []Route {
	return []Route{
		{"GET", "/healthz", public, "Liveness", s.healthz},
		{"GET", "/readyz", public, "Readiness: database reachable, writes not failing, and audit chains verified", s.readyz},
		{"GET", "/openapi.json", public, "This API's OpenAPI 3.1 document", s.openapi},
	}
}

// recordRoutes are the memory itself: records, sessions, search and
// context.
func (s *Server) recordRoutes() []Route {
	return []Route{
		{"GET", "/v1/whoami", anyToken, "The authenticated principal", s.whoami},
		{"POST", "/v1/records", anyToken, "Write a record through the gate", s.createRecord},
		{"GET", "/v1/records", anyToken, "List records with filters and cursor pagination", s.listRecords},
		{"GET", "/v1/records/{id}", anyToken, "Get a record, a version, or its state known at a time", s.getRecord},
		{"PATCH", "/v1/records/{id}", anyToken, "Write a new version of a record (expected_version required)", s.patchRecord},
		{"DELETE", "/v1/records/{id}", anyToken, "Forget a record, keeping a tombstone", s.forgetRecord},
		{"POST", "/v1/records/{id}/outcome", anyToken, "Report how following a procedure (a skill record) went; updates its success rate", s.recordOutcome},
		{"POST", "/v1/records/{id}/restore", operator, "Restore an archived record (a new, active version)", s.restoreRecord},
		{"GET", "/v1/records/{id}/history", anyToken, "Every version of a record", s.recordHistory},
		{"POST", "/v1/sessions/{session_id}/events", anyToken, "Append an event to a session's log (append-only)", s.appendEvent},
		{"GET", "/v1/sessions/{session_id}/events", anyToken, "A session's events, newest first", s.listEvents},
		{"POST", "/v1/search", anyToken, "Hybrid search: lexical, dense and graph signals fused, filtered, explained, cited", s.search},
		{"POST", "/v1/context", anyToken, "Assemble one bounded, sectioned context for a task: constraints, procedures, knowledge, graph facts, recent activity", s.assembleContext},
		{"GET", "/v1/index", anyToken, "Search index sizes and embedding progress", s.indexStatus},
	}
}

// adminRoutes are the operator's: agents, the approval queue, gateway
// users and jobs.
func (s *Server) adminRoutes() []Route {
	return []Route{
		{"POST", "/v1/agents", operator, "Create an agent; its token is shown once", s.createAgent},
		{"GET", "/v1/agents", operator, "List agents", s.listAgents},
		{"DELETE", "/v1/agents/{id}", operator, "Revoke an agent's token", s.revokeAgent},
		{"POST", "/v1/agents/{id}/rotate", operator, "Give an agent a new token (shown once); the old one stops working, a revoked agent is reinstated", s.rotateAgent},

		{"GET", "/v1/approvals", operator, "List the approval queue", s.listApprovals},
		{"POST", "/v1/approvals/{id}/approve", operator, "Approve an item, optionally editing it first", s.approve},
		{"POST", "/v1/approvals/{id}/reject", operator, "Reject an item; its content is erased", s.reject},

		{"POST", "/users", operator, "Create a gateway user; its key is shown once", s.createUser},
		{"GET", "/users", operator, "List gateway users", s.listUsers},
		{"DELETE", "/users/{user_id}", operator, "Revoke a gateway user's key", s.revokeUser},
		{"POST", "/users/{user_id}/rotate-key", operator, "Give a gateway user a new key (shown once); the old one stops working, a revoked user is reinstated", s.rotateUserKey},
		{"GET", "/v1/jobs/{id}", operator, "A durable job's status", s.getJob},
	}
}

// gatewayRoutes are the Memory Gateway's.
func (s *Server) gatewayRoutes() []Route {
	return []Route{
		{"POST", "/memories/search", userKey, "Memory Gateway: recall memories for a model run", s.gatewaySearch},
		{"POST", "/memories/add", userKey, "Memory Gateway: store a finished turn's messages", s.gatewayAdd},
		{"POST", "/memories/flush", userKey, "Memory Gateway: queue extraction of the messages added since the last flush", s.gatewayFlush},
		{"POST", "/memories/jobs/get", userKey, "Memory Gateway: a flush job's status", s.gatewayJob},
		{"POST", "/memories/update", userKey, "Memory Gateway: override a memory's text (a new version)", s.gatewayUpdate},
		{"POST", "/memories/delete", userKey, "Memory Gateway: delete a memory (a tombstone remains)", s.gatewayDelete},
		{"POST", "/memories/resources", userKey, "Memory Gateway: upload a text or Markdown document as resource chunks", s.gatewayResource},
	}
}

// graphRoutes are the memory graph's, then export and import of the
// workspace.
func (s *Server) graphRoutes() []Route {
	return []Route{
		{"POST", "/v1/graph/nodes", anyToken, "Create or update a node by label and natural key (upsert_node)", s.upsertNode},
		{"GET", "/v1/graph/nodes", anyToken, "Nodes with any of the given labels (query_by_labels)", s.listNodes},
		{"GET", "/v1/graph/nodes/{ref}", anyToken, "A node by id or label:key (get_node)", s.getNode},
		{"POST", "/v1/graph/nodes/{ref}/archive", anyToken, "Archive a node (mark_archived)", s.archiveNode},
		{"GET", "/v1/graph/nodes/{ref}/neighbors", anyToken, "Nodes within depth 1-3 of a node (neighbors)", s.neighbors},
		{"GET", "/v1/graph/path", anyToken, "A shortest path between two nodes (path)", s.graphPath},
		{"POST", "/v1/graph/edges", anyToken, "Create or update the live edge joining two nodes by a relation (upsert_edge)", s.upsertEdge},
		{"DELETE", "/v1/graph/edges/{id}", anyToken, "Invalidate an edge; it stays as history", s.invalidateEdge},
		{"GET", "/v1/graph/health", anyToken, "Graph healthcheck: store and in-memory index", s.graphHealth},
		{"POST", "/v1/graph/forget_subject", operator, "Forget a subject: every record that mentions it or is scoped to it, its messages, node properties and edges", s.forgetSubject},

		{"GET", "/v1/export", operator, "Export the workspace as canonical NDJSON (export_all); the same bytes as memgate export", s.exportWorkspace},
		{"POST", importPath, operator, "Import an export into this workspace, which must hold only operators (import_all); atomic", s.importWorkspace},
	}
}

// fileRoutes are memory files', the memory stores API's and the Claude
// memory tool's.
func (s *Server) fileRoutes() []Route {
	return []Route{
		{"POST", "/v1/files", anyToken, "Create a memory file through the gate", s.createFile},
		{"GET", "/v1/files", anyToken, "List memory files by path prefix (or one by exact path)", s.listFiles},
		{"GET", "/v1/files/{id}", anyToken, "A memory file, or one of its versions", s.getFile},
		{"PATCH", "/v1/files/{id}", anyToken, "Write a new version of a memory file: content, pinned or path, with an optional expected_content_sha256", s.patchFile},
		{"DELETE", "/v1/files/{id}", anyToken, "Delete a memory file; its versions stay", s.deleteFile},
		{"GET", "/v1/files/{id}/history", anyToken, "Every version of a memory file", s.fileHistory},
		{"POST", "/v1/files/{id}/versions/{version}/redact", anyToken, "Erase a past version's content for good; its hash stays", s.redactFileVersion},
		{"POST", "/v1/memory_stores", anyToken, "Memory stores API: create a store", s.createMemoryStore},
		{"GET", "/v1/memory_stores", anyToken, "Memory stores API: list stores", s.listMemoryStores},
		{"GET", "/v1/memory_stores/{store}", anyToken, "Memory stores API: a store", s.getMemoryStore},
		{"POST", "/v1/memory_stores/{store}", anyToken, "Memory stores API: update a store", s.updateMemoryStore},
		{"DELETE", "/v1/memory_stores/{store}", anyToken, "Memory stores API: delete a store and its memories (their versions stay)", s.deleteMemoryStore},
		{"POST", "/v1/memory_stores/{store}/archive", anyToken, "Memory stores API: archive a store (read-only)", s.archiveMemoryStore},
		{"POST", "/v1/memory_stores/{store}/memories", anyToken, "Memory stores API: create a memory through the gate", s.createStoreMemory},
		{"GET", "/v1/memory_stores/{store}/memories", anyToken, "Memory stores API: list memories by path_prefix and depth", s.listStoreMemories},
		{"GET", "/v1/memory_stores/{store}/memories/{memory}", anyToken, "Memory stores API: a memory", s.getStoreMemory},
		{"POST", "/v1/memory_stores/{store}/memories/{memory}", anyToken, "Memory stores API: update a memory (content, path, precondition)", s.updateStoreMemory},
		{"DELETE", "/v1/memory_stores/{store}/memories/{memory}", anyToken, "Memory stores API: delete a memory (expected_content_sha256)", s.deleteStoreMemory},
		{"GET", "/v1/memory_stores/{store}/memory_versions", anyToken, "Memory stores API: list versions, newest first", s.listMemoryVersions},
		{"GET", "/v1/memory_stores/{store}/memory_versions/{version}", anyToken, "Memory stores API: a version", s.getMemoryVersion},
		{"POST", "/v1/memory_stores/{store}/memory_versions/{version}/redact", anyToken, "Memory stores API: redact a version's content", s.redactMemoryVersion},
		{"POST", "/v1/memory-tool", anyToken, "Run a Claude memory tool call (memory_20250818) and return its tool_result", s.memoryTool},
	}
}

// operationsRoutes are audit, decisions, backups, discovery, events and
// webhooks.
func (s *Server) operationsRoutes() []Route {
	return []Route{
		{"GET", "/v1/audit", operator, "Page through the audit log", s.listAudit},
		{"GET", "/v1/audit/verify", operator, "Verify the workspace's audit chain", s.verifyAudit},
		{"GET", "/v1/decisions", operator, "Gate and extraction decisions with their reasons, filtered and paged (why was this not remembered?)", s.listDecisions},
		// Online backups (backup.go)
		{"POST", "/v1/admin/backup", operator, "Take an online backup of the SQLite database and index snapshot into the server's backup directory; audited", s.backup},
		// A2A discovery (agentcard.go)
		{"GET", "/.well-known/agent-card.json", public, "The A2A agent card: memgate's skills, interfaces and authentication", s.agentCard},
		// Events and webhooks (docs/events.md).
		{"GET", "/v1/events", operator, "The workspace's event stream as Server-Sent Events; resume with Last-Event-ID", s.streamEvents},
		{"POST", "/v1/webhooks", operator, "Register a webhook endpoint; its signing secret is shown once", s.createWebhook},
		{"GET", "/v1/webhooks", operator, "List webhook endpoints (never their secrets)", s.listWebhooks},
		{"DELETE", "/v1/webhooks/{id}", operator, "Remove a webhook endpoint and its delivery log", s.deleteWebhook},
		{"GET", "/v1/webhooks/deliveries", operator, "The webhook delivery log, newest first", s.listDeliveries},
	}
}

// mem0Routes are the mem0-compatible API's (internal/mem0compat,
// docs/mem0.md).
func (s *Server) mem0Routes() []Route {
	return []Route{
		{"GET", "/v1/ping/", mem0Key, "mem0 API: check the key (a memgate token)", s.mem0Ping},
		{"POST", "/v3/memories/add/", mem0Key, "mem0 API: add memories from messages (infer queues extraction)", s.mem0Add},
		{"POST", "/v3/memories/search/", mem0Key, "mem0 API: search memories by meaning", s.mem0Search},
		{"POST", "/v3/memories/", mem0Key, "mem0 API: list memories by filters, paginated", s.mem0List},
		{"GET", "/v1/memories/{memory_id}/", mem0Key, "mem0 API: a memory", s.mem0Get},
		{"PUT", "/v1/memories/{memory_id}/", mem0Key, "mem0 API: update a memory's text or metadata (a new version)", s.mem0Update},
		{"DELETE", "/v1/memories/{memory_id}/", mem0Key, "mem0 API: delete a memory (a tombstone remains)", s.mem0Delete},
		{"DELETE", "/v1/memories/", mem0Key, "mem0 API: delete every memory of the given entity ids", s.mem0DeleteAll},
		{"GET", "/v1/memories/{memory_id}/history/", mem0Key, "mem0 API: a memory's changes", s.mem0History},
		{"GET", "/v1/event/{event_id}/", mem0Key, "mem0 API: an add's queued extraction", s.mem0Event},
	}
}

// laterRoutes are the routes of the capabilities added since; a new
// capability adds its block at the end.
func (s *Server) laterRoutes() []Route {
	return []Route{
		// Knowledge: documents, code and PDFs as cited resource chunks (docs/knowledge.md).
		{"POST", resourcesPath, anyToken, "Ingest a document (JSON text or base64, or a multipart upload) as resource chunks through the gate; a changed document gets new versions of its changed chunks only", s.ingestResource},
		{"GET", resourcesPath, anyToken, "Ingested documents the caller can read", s.listResources},
		{"POST", "/v1/resources/search", anyToken, "Search ingested documents: hybrid search over chunks, optional rerank, optionally one best chunk per document", s.searchResources},
		{"GET", "/v1/resources/{id}/source", anyToken, "The cited lines (?lines=a-b) of the indexed version of a document, access-checked", s.resourceSource},
		{"DELETE", "/v1/resources/{id}", anyToken, "Forget a document: every chunk, version, vector and index entry", s.forgetResource},

		// Operator console: what its screens need beyond the queue (docs/console.md).
		{"GET", "/v1/jobs", operator, "Durable jobs, newest first, filtered by state and kind", s.listJobs},
		{"PATCH", "/v1/agents/{id}", operator, "Change an agent's trust level; audited", s.patchAgent},
	}
}

// Handler returns the complete HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.Routes() {
		pattern := rt.Path
		if strings.HasSuffix(pattern, "/") && pattern != "/" {
			// mem0's paths end in a slash; match them exactly, not as
			// a subtree.
			pattern += "{$}"
		}
		mux.Handle(rt.Method+" "+pattern, s.wrap(rt))
	}
	// MCP over Streamable HTTP, behind the same bearer tokens as REST. It
	// is a protocol endpoint, not a REST operation, so it is not in Routes
	// (nor in the OpenAPI document).
	mux.Handle("/mcp", s.wrap(Route{Path: "/mcp", Auth: anyToken, handle: s.serveMCP}))
	if s.console != nil {
		s.mountConsole(mux)
	}
	if s.metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	}
	// The catch-all route matches every method, so ServeMux never answers
	// 405 itself: a path that exists under other methods is told so here.
	mux.Handle("/", s.wrap(Route{Path: "unmatched", handle: func(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
		if allow := s.allowedMethods(r.URL.Path); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			return (&fault.Error{Code: fault.MethodNotAllowed, Message: "method " + allowedToken(r.Method) + " is not allowed on this route",
				Details: map[string]any{"allow": allow}})
		}
		return fault.New(fault.NotFound, "no such route")
	}}))
	return mux
}

// allowedMethods lists the methods the route table serves at path, HEAD
// with every GET as ServeMux does; none when no route has that path.
func (s *Server) allowedMethods(path string) []string {
	var out []string
	add := func(m string) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	routes := s.Routes()
	if s.metrics != nil {
		routes = append(routes, Route{Method: "GET", Path: "/metrics"})
	}
	for _, rt := range routes {
		if pathMatches(rt.Path, path) {
			add(rt.Method)
			if rt.Method == http.MethodGet {
				add(http.MethodHead)
			}
		}
	}
	slices.Sort(out)
	return out
}

// pathMatches reports whether path matches a route pattern whose
// {wildcards} each stand for one non-empty segment.
func pathMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i, p := range ps {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			if xs[i] == "" {
				return false
			}
		} else if p != xs[i] {
			return false
		}
	}
	return true
}

// allowedToken is the request method as it may be shown: a method is a
// short token, anything else is not repeated back.
func allowedToken(m string) string {
	if len(m) > 16 || strings.ContainsFunc(m, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return "(this method)"
	}
	return m
}

// statusWriter remembers the status for logs and metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// write deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// wrap adds authentication, body limits, panic recovery, logging and
// metrics around a route. Logs carry the route pattern, never the URL's
// query, headers or bodies, so secrets cannot reach them.
func (s *Server) wrap(rt Route) http.Handler {
	label := rt.Path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		var p memory.Principal
		// The request's span: a child of the caller's when it sent a W3C
		// traceparent. It names the route pattern, never the URL.
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := s.svc.TracerProvider().Tracer(tracing.Name).Start(ctx, r.Method+" "+label, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", label)))
		r = r.WithContext(ctx)
		defer span.End()
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v) // the response is already under way: cut it off
				}
				s.log.Error("panic in handler", "route", label, "panic", v)
				s.writeError(sw, r, fault.New(fault.Internal, "internal error"))
			}
			d := time.Since(start)
			span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
			if sw.status >= 500 {
				span.SetStatus(codes.Error, http.StatusText(sw.status))
			}
			if s.metrics != nil {
				s.metrics.HTTPRequests.WithLabelValues(label, r.Method, strconv.Itoa(sw.status)).Inc()
				s.metrics.HTTPDuration.WithLabelValues(label).Observe(d.Seconds())
			}
			lvl := slog.LevelInfo
			if rt.Auth == public {
				lvl = slog.LevelDebug
			}
			s.log.LogAttrs(r.Context(), lvl, "request", slog.String("method", r.Method), slog.String("route", label),
				slog.Int("status", sw.status), slog.Duration("duration", d), slog.String("principal", p.ID))
		}()
		if limit := s.bodyLimit(rt); r.Body != nil && limit > 0 {
			r.Body = http.MaxBytesReader(sw, r.Body, limit)
		}
		if rt.Auth != public && rt.Auth != userKey {
			var err error
			if rt.Auth == mem0Key {
				p, err = s.authenticateMem0(r)
			} else {
				p, err = s.authenticate(r)
			}
			if err == nil && rt.Auth == operator && p.Kind != memory.KindOperator {
				err = fault.New(fault.PermissionDenied, "operator access required")
			}
			if err != nil {
				s.writeError(sw, r, err)
				return
			}
		}
		if err := rt.handle(sw, r, p); err != nil {
			s.writeError(sw, r, err)
		}
	})
}

// serveMCP hands an authenticated request to the MCP server, which acts
// as the token's principal.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	ew := &mcpErrorWriter{ResponseWriter: w}
	s.mcp.ServeHTTP(ew, r.WithContext(mcp.WithPrincipal(r.Context(), p)))
	ew.finish(s.maxBody)
	return nil
}

// authenticate is the one place a request's principal is found: its
// bearer token, or else its console session cookie (with the CSRF token
// on a request that changes state, see sessionPrincipal).
// authenticateMem0 accepts the scheme mem0 clients send, "Token <key>",
// as well as a bearer token; the key is a memgate token.
func (s *Server) authenticateMem0(r *http.Request) (memory.Principal, error) {
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !(strings.EqualFold(f[0], "Token") || strings.EqualFold(f[0], "Bearer")) {
		return memory.Principal{}, fault.New(fault.Unauthenticated, "missing, invalid or revoked token")
	}
	return s.svc.Authenticate(r.Context(), f[1])
}

func (s *Server) authenticate(r *http.Request) (memory.Principal, error) {
	if r.Header.Get("Authorization") == "" {
		if p, _, present, err := s.sessionPrincipal(r); present {
			return p, err
		}
	}
	// The scheme is case-insensitive (RFC 9110 §11.1), as the MCP SDK's
	// own check is.
	f := strings.Fields(r.Header.Get("Authorization"))
	if len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
		return memory.Principal{}, fault.New(fault.Unauthenticated, "missing, invalid or revoked token")
	}
	return s.svc.Authenticate(r.Context(), f[1])
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	return writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.version})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	body := map[string]any{"status": "ready"}
	status := http.StatusOK
	if err := s.svc.Store().Ping(ctx); err != nil {
		body["status"], body["database"] = "unavailable", "unreachable"
		status = http.StatusServiceUnavailable
	} else {
		body["database"] = "ok"
	}
	// A database that answers may still refuse writes (a full disk).
	if err := s.svc.WriteReady(ctx); err != nil {
		body["writes"] = "failing"
		if status == http.StatusOK {
			body["status"] = "cannot_write"
		}
		status = http.StatusServiceUnavailable
	} else {
		body["writes"] = "ok"
	}
	st := s.svc.LastAuditStatus()
	body["audit"] = st
	if !st.OK {
		body["status"] = "audit_chain_broken"
		status = http.StatusServiceUnavailable
	}
	if status != http.StatusOK {
		w.Header().Set("Retry-After", "5")
	}
	return writeJSON(w, status, body)
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request, p memory.Principal) error {
	return writeJSON(w, http.StatusOK, p)
}
