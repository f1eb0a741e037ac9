package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/mcp"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// TestAccessMatrixProperty builds random workspaces holding every kind of
// principal and trust level and records at every access level and status,
// then checks every read path (readProbes) and the write paths (patch,
// forget, approve, operator-only actions) against accessRules, the
// executable copy of docs/access.md. A leak, a wrong denial or a change
// the rules do not allow fails the test with its seed.
func TestAccessMatrixProperty(t *testing.T) {
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			e := newMatrixEnv(t, b, seed)
			for _, ws := range e.workspaces {
				e.populate(ws, 12)
				e.linkGraph(ws)
			}
			e.checkCoverage()
			e.checkReads("after setup")
			e.checkWrites()
			e.checkReads("after the write probes")
		})
	}
}

// actor is one principal of the matrix with its ways in.
type actor struct {
	p     memory.Principal
	token string             // bearer token; "" for gateway users
	mcp   *sdk.ClientSession // nil for gateway users
}

func (a *actor) String() string {
	return fmt.Sprintf("%s %s/%s(%s)", a.p.Kind, a.p.Workspace, a.p.Name, a.p.Trust)
}

type matrixEnv struct {
	t          *testing.T
	ctx        context.Context
	seed       uint64
	rng        *rand.Rand
	st         store.Store
	svc        *core.Service
	srv        *httptest.Server
	workspaces []string
	actors     []*actor
	ids        map[string][]string // workspace -> record ids
	wsOf       map[string]string   // record id -> workspace
	stores     map[string][]string // workspace -> memory store record ids
}

func newMatrixEnv(t *testing.T, backend string, seed uint64) *matrixEnv {
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	switch backend {
	case "sqlite":
		st, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	default:
		st, err = postgres.Open(ctx, pgtest.URL(t), postgres.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pol := gate.Default()
	pol.RateLimit.Operator, pol.RateLimit.Agent, pol.RateLimit.User = gate.Bucket{}, gate.Bucket{}, gate.Bucket{}
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: pol, Index: ix})
	opTok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	t.Cleanup(srv.Close)
	e := &matrixEnv{t: t, ctx: ctx, seed: seed, rng: rand.New(rand.NewPCG(seed, 11)), st: st, svc: svc, srv: srv,
		workspaces: []string{memory.DefaultWorkspace, "ws-b"}, ids: map[string][]string{}, wsOf: map[string]string{},
		stores: map[string][]string{}}

	for _, ws := range e.workspaces {
		var op *actor
		if ws == memory.DefaultWorkspace {
			p, err := svc.Authenticate(ctx, opTok)
			if err != nil {
				t.Fatal(err)
			}
			op = &actor{p: p, token: opTok}
		} else {
			err := st.Tx(ctx, func(tx store.Tx) error {
				return tx.CreateWorkspace(ctx, memory.Workspace{ID: ws, Settings: json.RawMessage(`{}`), CreatedAt: time.Now()})
			})
			if err != nil {
				t.Fatal(err)
			}
			c, err := svc.CreateOperator(ctx, core.LocalOperator(ws), "op-"+ws)
			if err != nil {
				t.Fatal(err)
			}
			op = &actor{p: c.Principal, token: c.Token}
		}
		e.add(op)
		for _, trust := range memory.TrustLevels {
			c, err := svc.CreateAgent(ctx, op.p, fmt.Sprintf("%s-%d", trust, e.rng.IntN(1000)), trust)
			if err != nil {
				t.Fatal(err)
			}
			e.add(&actor{p: c.Principal, token: c.Token})
		}
		// Two gateway users: one's own flagged turns must stay hidden
		// from the other.
		for _, name := range []string{"u-" + ws, "u2-" + ws} {
			u, err := svc.CreateUser(ctx, op.p, name)
			if err != nil {
				t.Fatal(err)
			}
			up, err := svc.AuthenticateUser(ctx, "", u.UserID, u.UserKey)
			if err != nil {
				t.Fatalf("a gateway user of %s does not authenticate with its key: %v", ws, err)
			}
			e.add(&actor{p: up})
		}
	}
	return e
}

// add registers an actor, with an MCP session if it has a token.
func (e *matrixEnv) add(a *actor) {
	e.t.Helper()
	if a.token != "" {
		p := a.p
		who := func(context.Context, *sdk.RequestExtra) (memory.Principal, error) { return p, nil }
		ct, stt := sdk.NewInMemoryTransports()
		ss, err := mcp.NewServer(e.svc, who, mcp.Options{Version: "test"}).Connect(e.ctx, stt, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "matrix", Version: "1"}, nil).Connect(e.ctx, ct, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { cs.Close(); ss.Wait() })
		a.mcp = cs
	}
	e.actors = append(e.actors, a)
}

func (e *matrixEnv) actorsOf(ws string) []*actor {
	var out []*actor
	for _, a := range e.actors {
		if a.p.Workspace == ws {
			out = append(out, a)
		}
	}
	return out
}

// writableAccess is what the default policy lets p write.
func writableAccess(p memory.Principal) []memory.Access {
	switch {
	case p.Kind == memory.KindOperator || p.Trust == memory.Trusted:
		return []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.Sensitive}
	case p.Trust == memory.Standard:
		return []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly}
	case p.Trust == memory.Restricted:
		return []memory.Access{memory.Public, memory.AgentOnly}
	}
	return nil
}

// populate writes n records into ws from random writers at random access
// levels, some with PII (quarantined), some superseding others, then
// invalidates and forgets a few, so every status is present.
func (e *matrixEnv) populate(ws string, n int) {
	e.t.Helper()
	var writers []*actor
	var op *actor
	for _, a := range e.actorsOf(ws) {
		if len(writableAccess(a.p)) > 0 {
			writers = append(writers, a)
		}
		if a.p.Kind == memory.KindOperator {
			op = a
		}
	}
	types := []memory.Type{memory.Decision, memory.Episode, memory.Skill, memory.Reflection}
	e.seedStores(ws, op, writers)
	// Every writer first writes at every level it may, and once with PII
	// (quarantined), so that every access level, and every status below,
	// is present whatever the seed; then random writes.
	var plan []core.WriteRequest
	var by []*actor
	for _, w := range writers {
		for _, acc := range writableAccess(w.p) {
			plan = append(plan, core.WriteRequest{Access: acc})
			by = append(by, w)
		}
		plan = append(plan, core.WriteRequest{Access: memory.Public, Content: " reach me at dana.whitfield@example.com"})
		by = append(by, w)
	}
	for i := 0; i < n; i++ {
		w := writers[e.rng.IntN(len(writers))]
		acc := writableAccess(w.p)
		req := core.WriteRequest{Access: acc[e.rng.IntN(len(acc))]}
		if e.rng.IntN(6) == 0 {
			req.Content = " reach me at dana.whitfield@example.com"
		}
		if ids := e.ids[ws]; len(ids) > 0 && e.rng.IntN(4) == 0 {
			req.Supersedes = ids[e.rng.IntN(len(ids))]
		}
		plan = append(plan, req)
		by = append(by, w)
	}
	// The operator supersedes its own first record: one superseded at least.
	plan = append(plan, core.WriteRequest{Access: memory.Public, Supersedes: "first"})
	by = append(by, op)
	first := ""
	for i, req := range plan {
		w := by[i]
		req.Type = types[e.rng.IntN(len(types))]
		if i%3 == 0 { // a memory file (internal/files), for the file read probes
			req.Type, req.Category, req.Addressed = memory.Resource, "file", true
			req.Metadata = json.RawMessage(fmt.Sprintf(`{"file_path":"/memories/%s/%d.md"}`, ws, i))
			// Most files are memories of one of the workspace's stores.
			if k := (i / 3) % (len(e.stores[ws]) + 1); k < len(e.stores[ws]) {
				req.Scope.AppID = files.StorePrefix + e.stores[ws][k]
			}
		} else if i%5 == 1 && req.Supersedes == "" {
			// A knowledge chunk (internal/knowledge): a one-line document
			// of its own, for the resource source probes.
			req.Type, req.Category, req.Addressed = memory.Resource, core.ChunkCategory, true
			req.Metadata = json.RawMessage(fmt.Sprintf(`{"resource_id":"%s","source_uri":"matrix:%s/%d","media_type":"text/plain","chunk_key":"",`+
				`"line_start":1,"line_end":1,"span_start":1,"span_end":1,"doc_version":1,"doc_lines":1}`, matrixResourceID(ws, i), ws, i))
		} else if req.Type == memory.Episode && e.rng.IntN(2) == 0 && req.Supersedes == "" {
			// A session event: the session log is a read path of its own.
			req.Category, req.Scope.SessionID, req.Metadata = core.EventCategory, matrixSession, json.RawMessage(`{"event":"note"}`)
		}
		req.Content = fmt.Sprintf("matrixnote %s %s item %d", ws, marker(), i) + req.Content
		req.Entities = e.matrixEntities(req.Content)
		if req.Supersedes == "first" {
			req.Supersedes = first
		}
		res, err := e.svc.Write(e.ctx, w.p, req)
		if err != nil {
			if req.Supersedes != "" { // not readable or not active: refused, nothing written
				continue
			}
			e.t.Fatalf("seed %d: write as %s: %v", e.seed, w, err)
		}
		if res.Decision != memory.DecisionDuplicate {
			e.ids[ws] = append(e.ids[ws], res.Record.ID)
			e.wsOf[res.Record.ID] = ws
		}
		if first == "" && w == op {
			first = res.Record.ID
		}
	}
	// The operator approves one quarantined record after editing the PII
	// out and making it public: its first version stays sensitive.
	page, err := e.svc.ListApprovals(e.ctx, op.p, memory.ApprovalOpen, "", 100)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, it := range page.Items {
		if it.Kind == memory.ApprovalQuarantine {
			clean := "matrixnote cleaned " + recordMarker(it.Record.Content)
			pub := memory.Public
			if _, err := e.svc.Approve(e.ctx, op.p, it.ID, &core.ApprovalEdit{Content: &clean, Access: &pub}); err != nil {
				e.t.Fatalf("seed %d: approve with edit: %v", e.seed, err)
			}
			break
		}
	}
	// Invalidate and forget a few (the first two at least), as the operator.
	for i, id := range e.ids[ws] {
		head := e.head(id)
		k := e.rng.IntN(8)
		if i < 2 {
			k = i
		}
		switch k {
		case 0:
			if _, ev := core.EventOf(head); head.Status != memory.Superseded && !ev { // events are append-only
				v := head.Version
				if _, err := e.svc.Patch(e.ctx, op.p, id, core.PatchRequest{ExpectedVersion: &v, Invalidate: true}); err != nil {
					e.t.Fatalf("seed %d: invalidate %s: %v", e.seed, id, err)
				}
			}
		case 1:
			if _, err := e.svc.Forget(e.ctx, op.p, id); err != nil {
				e.t.Fatalf("seed %d: forget %s: %v", e.seed, id, err)
			}
		}
	}
	e.gatewayTurns(ws)
	// The stores are records the probes check too (left out of the
	// invalidations above, so their memories stay reachable).
	for _, id := range e.stores[ws] {
		e.ids[ws] = append(e.ids[ws], id)
		e.wsOf[id] = ws
	}
}

// seedStores creates the memory stores of ws (internal/files): one the
// operator creates through the stores service (public), one a
// restricted agent creates (queued for approval, provisional), and one
// written agent_only by another writer.
func (e *matrixEnv) seedStores(ws string, op *actor, writers []*actor) {
	e.t.Helper()
	fs := files.New(e.svc, files.Options{})
	name := "matrix store " + ws
	st, err := fs.CreateStore(e.ctx, op.p, files.StoreRequest{Name: &name})
	if err != nil {
		e.t.Fatalf("seed %d: create store: %v", e.seed, err)
	}
	e.stores[ws] = append(e.stores[ws], strings.TrimPrefix(st.ID, files.StorePrefix))
	for _, w := range writers {
		switch {
		case w.p.Trust == memory.Restricted:
			st, err := fs.CreateStore(e.ctx, w.p, files.StoreRequest{Name: &name})
			if err != nil {
				e.t.Fatalf("seed %d: create store as %s: %v", e.seed, w, err)
			}
			e.stores[ws] = append(e.stores[ws], strings.TrimPrefix(st.ID, files.StorePrefix))
		case w.p.Trust == memory.Standard:
			res, err := e.svc.Write(e.ctx, w.p, core.WriteRequest{Type: memory.Resource, Category: files.StoreCategory, Content: name,
				Access: memory.AgentOnly, Addressed: true, Metadata: json.RawMessage(`{"memory_store":{"name":"agent only","description":""}}`)})
			if err != nil {
				e.t.Fatalf("seed %d: write store as %s: %v", e.seed, w, err)
			}
			e.stores[ws] = append(e.stores[ws], res.Record.ID)
		}
	}
}

var markerSeq atomic.Int64

// marker is a word no other record holds, so a search for it finds one
// record. Atomic, so that matrices may run side by side.
func marker() string {
	return fmt.Sprintf("mk%04dzq", markerSeq.Add(1))
}

// head is the stored head of a record: the ground truth the rules apply to.
func (e *matrixEnv) head(id string) memory.Record {
	e.t.Helper()
	r, err := e.st.GetRecord(e.ctx, e.wsOf[id], id)
	if err != nil {
		e.t.Fatalf("record %s: %v", id, err)
	}
	return r
}

func (e *matrixEnv) version(id string, n int) memory.Record {
	e.t.Helper()
	h := e.head(id)
	v, err := e.st.GetRecordVersion(e.ctx, e.wsOf[h.ID], id, n)
	if err != nil {
		e.t.Fatalf("version %d of %s: %v", n, id, err)
	}
	return v
}

// gatewayTurns has every gateway user of ws tell its assistant, through
// the gateway, one plain turn and one carrying its own contact details:
// the default policy (pii.own_conversation) keeps the latter active at
// access "user", readable by that user and operators only, and flagged.
// The user's gateway recall must find it; the read probes check that
// agents and the other user cannot read it.
func (e *matrixEnv) gatewayTurns(ws string) {
	e.t.Helper()
	for _, a := range e.actorsOf(ws) {
		if a.p.Kind != memory.KindUser {
			continue
		}
		cv := core.UserConversation(a.p, "matrixapp", "matrixproj", "chat:matrix")
		mk := marker()
		msgs := []core.GatewayMessage{
			// Each turn mentions a name of its own, which becomes a name
			// node seen through that turn only (policy
			// graph.conversation_names): the flagged turn's by its user
			// and operators alone.
			{SenderID: a.p.Name, Role: "user", Timestamp: 1700000000000, Content: fmt.Sprintf("matrixnote %s %s gateway turn with Nm%s", ws, marker(), marker())},
			{SenderID: a.p.Name, Role: "user", Timestamp: 1700000000001, Content: fmt.Sprintf("matrixnote %s %s call me on +1 415 555 0134 or dana.whitfield@example.com, says Nm%s", ws, mk, marker())},
		}
		res, err := e.svc.GatewayAdd(e.ctx, a.p, cv, msgs)
		if err != nil {
			e.t.Fatalf("seed %d: gateway add as %s: %v", e.seed, a, err)
		}
		if res.Decisions[memory.DecisionFlagged] != 1 || res.Decisions[memory.DecisionAccepted] != 1 || res.Decisions[memory.DecisionQuarantined] != 0 {
			e.t.Fatalf("seed %d: gateway add as %s decided %v, want one accepted and one flagged", e.seed, a, res.Decisions)
		}
		for _, id := range res.MemoryIDs {
			e.ids[ws] = append(e.ids[ws], id)
			e.wsOf[id] = ws
		}
		flagged := res.MemoryIDs[1]
		h := e.head(flagged)
		if h.Access != memory.UserOnly || h.Status != memory.Active || h.Source.PrincipalID != a.p.ID {
			e.t.Fatalf("seed %d: flagged turn stored as access %s status %s by %s", e.seed, h.Access, h.Status, h.Source.PrincipalID)
		}
		if len(h.Entities) != 1 || !strings.HasPrefix(h.Entities[0], core.NameLabel+":"+h.Scope.UserID+"/Nm") {
			e.t.Fatalf("seed %d: flagged turn names %q, want its one name node", e.seed, h.Entities)
		}
		// The user's own gateway recall finds it.
		hits, err := e.svc.GatewaySearch(e.ctx, a.p, core.GatewaySearchRequest{Query: mk, AppID: "matrixapp", ProjectID: "matrixproj",
			Scopes: []string{core.ScopeAllUserMemory}, TopK: new(5)})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].ID != flagged {
			e.t.Errorf("seed %d: %s's gateway recall of its own flagged turn found %d hits", e.seed, a, len(hits))
		}
		// An operator reviews it: the decision log lists it as flagged.
		var op *actor
		for _, o := range e.actorsOf(ws) {
			if o.p.Kind == memory.KindOperator {
				op = o
			}
		}
		page, err := e.svc.ListDecisions(e.ctx, op.p, core.DecisionQuery{RecordID: flagged})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(page.Decisions) != 1 || page.Decisions[0].Decision != memory.DecisionFlagged {
			e.t.Errorf("seed %d: decisions of the flagged turn: %+v", e.seed, page.Decisions)
		}
	}
}
