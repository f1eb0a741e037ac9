package core

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// TestWorkspaceIsolationProperty drives several workspaces through random
// writes, patches, graph operations, searches, lists, reads, subject
// forgetting and exports — with colliding entity keys, node keys and
// words — and checks after every step that nothing one workspace reads
// belongs to another. Every piece of content carries its workspace's
// marker, so a leak shows as a foreign marker.
func TestWorkspaceIsolationProperty(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ix := svctest.Index(t, st)
	pol := gate.Default()
	pol.RateLimit.Operator, pol.RateLimit.Agent = gate.Bucket{}, gate.Bucket{}
	s := New(Options{Store: st, Policy: pol, Index: ix})
	if _, _, err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	wss := []string{memory.DefaultWorkspace, "ws-b", "ws-c"}
	ops := map[string]memory.Principal{}
	for _, ws := range wss {
		if ws != memory.DefaultWorkspace {
			err := st.Tx(ctx, func(tx store.Tx) error {
				return tx.CreateWorkspace(ctx, memory.Workspace{ID: ws, Settings: json.RawMessage(`{}`), CreatedAt: time.Now()})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		ops[ws] = LocalOperator(ws)
	}
	marker := func(ws string) string { return "mark" + strings.ReplaceAll(ws, "-", "") }
	owner := map[string]string{} // record or node id -> workspace
	words := []string{"kafka", "postgres", "lighthouse", "harbour", "violin", "atlas", "orbit", "copper"}
	subjects := []string{"person:alice", "person:bob", "project:atlas"}

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	ids := map[string][]string{}

	check := func(step int, ws, what string, content string, id string) {
		t.Helper()
		if id != "" {
			if o, ok := owner[id]; ok && o != ws {
				t.Fatalf("step %d (seed %d): %s in %s returned %s of %s", step, seed, what, ws, id, o)
			}
		}
		for _, other := range wss {
			if other != ws && strings.Contains(content, marker(other)) {
				t.Fatalf("step %d (seed %d): %s in %s returned content of %s: %q", step, seed, what, ws, other, content)
			}
		}
	}

	// 400 steps under MEMGATE_TEST_LONG (CI); 150 in the default loop,
	// a fresh random walk each run.
	steps := 150
	if os.Getenv("MEMGATE_TEST_LONG") != "" {
		steps = 400
	}
	for step := range steps {
		ws := pick(wss)
		op := ops[ws]
		switch n := rng.IntN(10); {
		case n < 3: // write
			content := fmt.Sprintf("%s %s %s note %d", marker(ws), pick(words), pick(words), step)
			res, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: content,
				Entities: []string{pick(subjects)}, Scope: memory.Scope{UserID: pick([]string{"alice", "bob"})}})
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			if _, seen := owner[res.Record.ID]; !seen {
				owner[res.Record.ID] = ws
				ids[ws] = append(ids[ws], res.Record.ID)
			}
			check(step, ws, "write", res.Record.Content, res.Record.ID)
		case n < 4: // read someone's id: only one's own are found
			all := []string{}
			for _, w := range wss {
				all = append(all, ids[w]...)
			}
			if len(all) == 0 {
				continue
			}
			id := pick(all)
			r, err := s.Get(ctx, op, id, GetOptions{})
			if owner[id] != ws {
				if err == nil {
					t.Fatalf("step %d: %s read %s's record %s", step, ws, owner[id], id)
				}
				continue
			}
			if err == nil {
				check(step, ws, "get", r.Content, r.ID)
			}
		case n < 6: // search and list
			resp, err := s.Search(ctx, op, SearchRequest{Query: pick(words) + " " + pick(words), K: 20})
			if err != nil {
				t.Fatalf("search: %v", err)
			}
			for _, h := range resp.Results {
				check(step, ws, "search", h.Record.Content, h.Record.ID)
			}
			lr, err := s.List(ctx, op, ListRequest{Entity: pick(subjects), Limit: 100})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			for _, r := range lr.Records {
				check(step, ws, "list", r.Content, r.ID)
			}
		case n < 8: // graph writes and reads
			a, b := pick(subjects), pick(subjects)
			props, _ := json.Marshal(map[string]string{"name": marker(ws) + " " + a})
			la, ka, _ := strings.Cut(a, ":")
			res, err := s.UpsertNode(ctx, op, NodeInput{Label: la, NaturalKey: ka, Properties: props})
			if err != nil {
				t.Fatalf("upsert node: %v", err)
			}
			owner[res.Node.ID] = ws
			if a != b {
				lb, kb, _ := strings.Cut(b, ":")
				if _, err := s.UpsertNode(ctx, op, NodeInput{Label: lb, NaturalKey: kb, Properties: props}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.UpsertEdge(ctx, op, EdgeInput{From: a, To: b, Relation: "RELATED_TO"}); err != nil {
					t.Fatalf("upsert edge: %v", err)
				}
			}
			hops, err := s.Neighbors(ctx, op, NeighborRequest{Node: a, Depth: 3, IncludeArchived: true})
			if err != nil {
				t.Fatalf("neighbors: %v", err)
			}
			for _, h := range hops {
				check(step, ws, "neighbors", string(h.Node.Properties), h.Node.ID)
			}
			page, err := s.NodesByLabels(ctx, op, []string{"person", "project"}, true, "", 500)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range page.Nodes {
				if _, known := owner[n.ID]; !known {
					owner[n.ID] = ws // created by a write's entities
				}
				check(step, ws, "nodes", string(n.Properties), n.ID)
			}
		case n < 9: // forget a subject in one workspace: the others keep theirs
			subj := pick(subjects)
			before := map[string]int{}
			for _, w := range wss {
				if w == ws {
					continue
				}
				lr, _ := s.List(ctx, ops[w], ListRequest{Entity: subj, Limit: 500})
				before[w] = len(lr.Records)
			}
			if _, err := s.ForgetSubject(ctx, op, subj); err != nil {
				t.Fatalf("forget: %v", err)
			}
			for w, n := range before {
				lr, _ := s.List(ctx, ops[w], ListRequest{Entity: subj, Limit: 500})
				if len(lr.Records) != n {
					t.Fatalf("step %d: forgetting %s in %s changed %s (%d → %d records)", step, subj, ws, w, n, len(lr.Records))
				}
			}
		case n < 10 && rng.IntN(2) == 0: // export: one workspace's data only
			var buf strings.Builder
			if _, err := s.Export(ctx, op, &buf, nil); err != nil {
				t.Fatalf("export: %v", err)
			}
			check(step, ws, "export", buf.String(), "")
		default: // audit log of one's own workspace only
			page, err := s.ListAudit(ctx, op, 0, 500)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Entries {
				var payload map[string]any
				_ = json.Unmarshal(e.Payload, &payload)
				if id, _ := payload["record_id"].(string); id != "" {
					check(step, ws, "audit", string(e.Payload), id)
				}
			}
		}
	}
	for _, ws := range wss {
		if len(ids[ws]) == 0 {
			t.Fatalf("workspace %s saw no writes; the test exercised nothing there", ws)
		}
	}
}
