package retrieve

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
)

func TestRoute(t *testing.T) {
	for q, want := range map[string]string{
		"":                                     RouteSkip,
		"thanks!":                              RouteSkip,
		"Good morning":                         RouteSkip,
		"ok":                                   RouteSkip,
		"what did we decide about the VPN?":    RouteSimple,
		"when did Caroline meet Melanie?":      RouteMultiHop,
		"tell me about the deploy pipeline":    RouteExploratory,
		"summarize what you know about Alice":  RouteExploratory,
		"is postgres faster than mysql for us": RouteSimple,
	} {
		if got := Route(q); got != want {
			t.Errorf("Route(%q) = %s, want %s", q, got, want)
		}
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func rec(id int, content string, mods ...func(*memory.Record)) memory.Record {
	r := memory.Record{
		ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", id), Type: memory.Episode, Content: content,
		ContentSHA256: memory.SHA256Hex(content), Status: memory.Active, Access: memory.Public, Version: 1,
		Source: memory.Source{Agent: "a", Kind: memory.Observed, Confidence: 0.9}, IngestedAt: t0,
		CreatedAt: t0, UpdatedAt: t0,
	}
	for _, m := range mods {
		m(&r)
	}
	return r
}

func session(s string) func(*memory.Record) {
	return func(r *memory.Record) { r.Scope.SessionID = s }
}

func ids(res Result) []string {
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.ID)
	}
	return out
}

var everyone = []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.Sensitive}

func TestRankingIsIndependentOfInsertionOrder(t *testing.T) {
	docs := []memory.Record{
		rec(1, "the deploy failed on friday"), rec(2, "the deploy failed on friday"),
		rec(3, "deploy notes"), rec(4, "friday lunch"), rec(5, "the deploy failed again"),
	}
	search := func(order []int) []string {
		e := New(Options{})
		for _, i := range order {
			e.Upsert("w", docs[i])
		}
		res, err := e.Search(context.Background(), Query{Text: "deploy failed friday", Filter: Filter{Workspace: "w", Access: everyone}, Context: -1})
		if err != nil {
			t.Fatal(err)
		}
		return ids(res)
	}
	a, b := search([]int{0, 1, 2, 3, 4}), search([]int{4, 3, 2, 1, 0})
	if !slices.Equal(a, b) || len(a) != 5 {
		t.Fatalf("rankings differ by insertion order:\n%v\n%v", a, b)
	}
	if a[0] != docs[0].ID || a[1] != docs[1].ID {
		t.Fatalf("ties not broken by id: %v", a)
	}
}

func TestContextLiftsTheReply(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "Alice: what pet do you have?", session("s1")))
	e.Upsert("w", rec(2, "Bob: a cat named Bailey", session("s1")))
	e.Upsert("w", rec(3, "Alice: nice weather today", session("s1")))
	e.Upsert("w", rec(4, "Carol: my pet project is a compiler", session("s2")))
	q := Query{Text: "what pet does Bob have", Filter: Filter{Workspace: "w", Access: everyone}, K: 3}
	without, _ := e.Search(context.Background(), q)
	q.Context = 0.5
	with, _ := e.Search(context.Background(), q)
	pos := func(r Result, id string) int { return slices.Index(ids(r), id) }
	reply := rec(2, "").ID
	if pos(with, reply) < 0 || (pos(without, reply) >= 0 && pos(with, reply) > pos(without, reply)) {
		t.Fatalf("reply not lifted: without %v, with %v", ids(without), ids(with))
	}
	if pos(with, rec(3, "").ID) >= 0 && pos(with, rec(3, "").ID) < pos(with, reply) {
		t.Fatalf("a turn unrelated to the matches outranks the reply: %v", ids(with))
	}
}

func TestFiltersAndScopedCounts(t *testing.T) {
	e := New(Options{})
	for i := range 10 {
		e.Upsert("w", rec(i+1, fmt.Sprintf("Tim says hello number %c", 'a'+i), func(r *memory.Record) { r.Scope.ProjectID = "p1" }))
	}
	e.Upsert("w", rec(20, "Tim went to North Carolina", func(r *memory.Record) { r.Scope.ProjectID = "p2" }))
	e.Upsert("other", rec(30, "Tim went to North Carolina"))
	if n := e.scopeDocs(Filter{Workspace: "w", Scope: memory.Scope{ProjectID: "p1"}}); n != 10 {
		t.Fatalf("scoped count %d", n)
	}
	if n := e.scopeDocs(Filter{Workspace: "w"}); n != 11 {
		t.Fatalf("workspace count %d", n)
	}
	res, _ := e.Search(context.Background(), Query{Text: "Tim North Carolina", Filter: Filter{Workspace: "w", Access: everyone}})
	for _, h := range res.Hits {
		if h.ID == rec(30, "").ID {
			t.Fatal("another workspace's record returned")
		}
	}
	if len(res.Hits) == 0 || res.Hits[0].ID != rec(20, "").ID {
		t.Fatalf("top hit %v", ids(res))
	}
	// Forgetting drops the record and its counts.
	f := rec(20, "")
	f.Status = memory.Forgotten
	e.Upsert("w", f)
	if n := e.scopeDocs(Filter{Workspace: "w", Scope: memory.Scope{ProjectID: "p2"}}); n != 0 {
		t.Fatalf("count after forget %d", n)
	}
	res, _ = e.Search(context.Background(), Query{Text: "North Carolina", Filter: Filter{Workspace: "w", Access: everyone}})
	if len(res.Hits) != 0 {
		t.Fatalf("forgotten record found: %v", ids(res))
	}
}
