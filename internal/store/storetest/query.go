package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func testListTypes(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	belief := NewRecord("b")
	decision := NewRecord("d", func(r *memory.Record) { r.Type = memory.Decision })
	skill := NewRecord("s", func(r *memory.Record) { r.Type = memory.Skill })
	mustInsert(t, s, "a", belief, decision, skill)

	assertIDs(t, "no type filter", list(t, s, "a", store.RecordQuery{Access: allAccess}), belief, decision, skill)
	assertIDs(t, "types belief,skill",
		list(t, s, "a", store.RecordQuery{Access: allAccess, Types: []memory.Type{memory.Belief, memory.Skill}}), belief, skill)
	assertIDs(t, "type decision",
		list(t, s, "a", store.RecordQuery{Access: allAccess, Types: []memory.Type{memory.Decision}}), decision)
	assertIDs(t, "type episode",
		list(t, s, "a", store.RecordQuery{Access: allAccess, Types: []memory.Type{memory.Episode}}))
}

func testListStatuses(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	byStatus := map[memory.Status]memory.Record{}
	for _, st := range memory.Statuses {
		r := NewRecord(string(st), func(r *memory.Record) { r.Status = st })
		byStatus[st] = r
		mustInsert(t, s, "a", r)
	}
	assertIDs(t, "default statuses", list(t, s, "a", store.RecordQuery{Access: allAccess}), byStatus[memory.Active])
	assertIDs(t, "provisional,superseded",
		list(t, s, "a", store.RecordQuery{Access: allAccess, Statuses: []memory.Status{memory.Provisional, memory.Superseded}}),
		byStatus[memory.Provisional], byStatus[memory.Superseded])
	var all []memory.Record
	for _, r := range byStatus {
		all = append(all, r)
	}
	assertIDs(t, "every status", list(t, s, "a", store.RecordQuery{Access: allAccess, Statuses: memory.Statuses}), all...)
}

func testListCategory(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	tech := NewRecord("t", func(r *memory.Record) { r.Category = "technology" })
	policy := NewRecord("p", func(r *memory.Record) { r.Category = "policy" })
	none := NewRecord("n", func(r *memory.Record) { r.Category = "" })
	mustInsert(t, s, "a", tech, policy, none)
	assertIDs(t, "category policy", list(t, s, "a", store.RecordQuery{Access: allAccess, Category: "policy"}), policy)
	assertIDs(t, "no category filter", list(t, s, "a", store.RecordQuery{Access: allAccess}), tech, policy, none)
}

func testListScope(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	scoped := func(sc memory.Scope) memory.Record {
		return NewRecord(fmt.Sprintf("%+v", sc), func(r *memory.Record) { r.Scope = sc })
	}
	unscoped := scoped(memory.Scope{})
	u1 := scoped(memory.Scope{UserID: "u1"})
	u2 := scoped(memory.Scope{UserID: "u2"})
	u1p1 := scoped(memory.Scope{UserID: "u1", ProjectID: "p1"})
	agent := scoped(memory.Scope{AgentID: "a1"})
	app := scoped(memory.Scope{AppID: "x1"})
	session := scoped(memory.Scope{SessionID: "s1", UserID: "u2"})
	mustInsert(t, s, "a", unscoped, u1, u2, u1p1, agent, app, session)

	for _, c := range []struct {
		scope memory.Scope
		want  []memory.Record
	}{
		{memory.Scope{}, []memory.Record{unscoped, u1, u2, u1p1, agent, app, session}},
		{memory.Scope{UserID: "u1"}, []memory.Record{u1, u1p1}},
		{memory.Scope{UserID: "u2"}, []memory.Record{u2, session}},
		{memory.Scope{ProjectID: "p1"}, []memory.Record{u1p1}},
		{memory.Scope{UserID: "u1", ProjectID: "p1"}, []memory.Record{u1p1}},
		{memory.Scope{UserID: "u2", ProjectID: "p1"}, nil},
		{memory.Scope{AgentID: "a1"}, []memory.Record{agent}},
		{memory.Scope{AppID: "x1"}, []memory.Record{app}},
		{memory.Scope{SessionID: "s1"}, []memory.Record{session}},
		{memory.Scope{SessionID: "s2"}, nil},
	} {
		assertIDs(t, fmt.Sprintf("scope %+v", c.scope), list(t, s, "a", store.RecordQuery{Access: allAccess, Scope: c.scope}), c.want...)
	}
}

func testListEntity(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	both := NewRecord("alice and keycloak", func(r *memory.Record) {
		r.Entities = []string{"person:alice", "system:keycloak-prod"}
		r.UpdatedAt = T0
	})
	bob := NewRecord("bob", func(r *memory.Record) { r.Entities = []string{"person:bob"} })
	none := NewRecord("nobody")
	mustInsert(t, s, "a", both, bob, none)
	q := func(e string) store.RecordQuery { return store.RecordQuery{Access: allAccess, Entity: e} }
	assertIDs(t, "entity person:alice", list(t, s, "a", q("person:alice")), both)
	assertIDs(t, "entity system:keycloak-prod", list(t, s, "a", q("system:keycloak-prod")), both)
	assertIDs(t, "entity person:bob", list(t, s, "a", q("person:bob")), bob)
	assertIDs(t, "entity person:carol", list(t, s, "a", q("person:carol")))
	assertIDs(t, "entity prefix", list(t, s, "a", q("person:")))

	// An update replaces the entity list.
	next := NextVersion(both, T0.Add(time.Hour), func(r *memory.Record) { r.Entities = []string{"person:carol"} })
	mustUpdate(t, s, "a", next)
	assertIDs(t, "entity person:alice after update", list(t, s, "a", q("person:alice")))
	assertIDs(t, "entity person:carol after update", list(t, s, "a", q("person:carol")), both)
}

func testListAccess(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	rec := func(a memory.Access, agent string) memory.Record {
		return NewRecord(string(a)+" by "+agent, func(r *memory.Record) {
			r.Access = a
			// Ownership follows the principal id; the name is free text
			// another principal may share.
			r.Source.Agent = "name-" + agent
			r.Source.PrincipalID = agent
		})
	}
	public := rec(memory.Public, "A1")
	own := rec(memory.AgentOnly, "A1")
	foreign := rec(memory.AgentOnly, "A2")
	user := rec(memory.UserOnly, "A1")
	system := rec(memory.System, "A1")
	sensitive := rec(memory.Sensitive, "A1")
	mustInsert(t, s, "a", public, own, foreign, user, system, sensitive)

	for _, c := range []struct {
		name   string
		filter store.AccessFilter
		want   []memory.Record
	}{
		{"empty filter admits nothing", store.AccessFilter{}, nil},
		{"every level", allAccess, []memory.Record{public, own, foreign, user, system, sensitive}},
		{"public", store.AccessFilter{Levels: []memory.Access{memory.Public}}, []memory.Record{public}},
		{"public + own agent", store.AccessFilter{Levels: []memory.Access{memory.Public}, OwnAgent: "A1"}, []memory.Record{public, own}},
		{"own agent only", store.AccessFilter{OwnAgent: "A2"}, []memory.Record{foreign}},
		{"own agent without records", store.AccessFilter{OwnAgent: "A3"}, nil},
		{"a writer name is not an owner", store.AccessFilter{OwnAgent: "name-A1"}, nil},
		{"public + sensitive", store.AccessFilter{Levels: []memory.Access{memory.Public, memory.Sensitive}}, []memory.Record{public, sensitive}},
		{"agent level", store.AccessFilter{Levels: []memory.Access{memory.AgentOnly}, OwnAgent: "A1"}, []memory.Record{own, foreign}},
		// A gateway user reads its own "user" records (flagged turns).
		{"public + own agent and user", store.AccessFilter{Levels: []memory.Access{memory.Public}, OwnAgent: "A1", OwnUser: true}, []memory.Record{public, own, user}},
		{"own user of another writer", store.AccessFilter{OwnAgent: "A2", OwnUser: true}, []memory.Record{foreign}},
	} {
		assertIDs(t, c.name, list(t, s, "a", store.RecordQuery{Access: c.filter}), c.want...)
	}
}

func testListAsOf(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	day := 24 * time.Hour
	valid := func(name string, from, until *time.Time) memory.Record {
		return NewRecord(name, func(r *memory.Record) { r.ValidFrom, r.ValidUntil = from, until })
	}
	always := valid("always", nil, nil)
	past := valid("past", ptr(T0.Add(-10*day)), ptr(T0.Add(-5*day)))
	current := valid("current", ptr(T0.Add(-day)), ptr(T0.Add(day)))
	future := valid("future", ptr(T0.Add(5*day)), nil)
	endsAtT0 := valid("ends at T0", nil, ptr(T0))
	startsAtT0 := valid("starts at T0", ptr(T0), nil)
	mustInsert(t, s, "a", always, past, current, future, endsAtT0, startsAtT0)

	asOf := func(at time.Time) store.RecordQuery { return store.RecordQuery{Access: allAccess, AsOf: &at} }
	assertIDs(t, "no as_of", list(t, s, "a", store.RecordQuery{Access: allAccess}), always, past, current, future, endsAtT0, startsAtT0)
	assertIDs(t, "as_of T0", list(t, s, "a", asOf(T0)), always, current, startsAtT0)
	assertIDs(t, "as_of T0-1µs", list(t, s, "a", asOf(T0.Add(-time.Microsecond))), always, current, endsAtT0)
	assertIDs(t, "as_of T0-7d", list(t, s, "a", asOf(T0.Add(-7*day))), always, past, endsAtT0)
	assertIDs(t, "as_of T0+6d", list(t, s, "a", asOf(T0.Add(6*day))), always, future, startsAtT0)
}

func testListKnownAt(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	h := func(n int) time.Time { return T0.Add(time.Duration(n) * time.Hour) }
	// r1 is created at 1h and superseded at 3h; r2 is created at 2h; r3
	// at 4h.
	r1 := NewRecord("r1 v1", func(r *memory.Record) {
		r.UpdatedAt, r.CreatedAt = h(1), h(1)
		r.Entities = []string{"topic:x"}
	})
	mustInsert(t, s, "a", r1)
	r2 := NewRecord("r2", func(r *memory.Record) { r.UpdatedAt, r.CreatedAt = h(2), h(2) })
	mustInsert(t, s, "a", r2)
	r1v2 := NextVersion(r1, h(3), func(r *memory.Record) {
		r.Content = "r1 v2"
		r.Status = memory.Superseded
		r.Entities = []string{"topic:y"}
	})
	mustUpdate(t, s, "a", r1v2)
	r3 := NewRecord("r3", func(r *memory.Record) { r.UpdatedAt, r.CreatedAt = h(4), h(4) })
	mustInsert(t, s, "a", r3)

	knownAt := func(at time.Time, mods ...func(*store.RecordQuery)) store.RecordQuery {
		q := store.RecordQuery{Access: allAccess, KnownAt: &at}
		for _, m := range mods {
			m(&q)
		}
		return q
	}
	anyStatus := func(q *store.RecordQuery) { q.Statuses = memory.Statuses }
	entity := func(e string) func(*store.RecordQuery) { return func(q *store.RecordQuery) { q.Entity = e } }

	assertIDs(t, "known at 0h", list(t, s, "a", knownAt(h(0))))
	got := list(t, s, "a", knownAt(h(1)))
	assertIDs(t, "known at 1h", got, r1)
	assertRecord(t, "known at 1h", got[0], r1)
	assertIDs(t, "known at 2h", list(t, s, "a", knownAt(h(2))), r1, r2)
	assertIDs(t, "known at 3h", list(t, s, "a", knownAt(h(3))), r2)
	got = list(t, s, "a", knownAt(h(3), anyStatus))
	assertIDs(t, "known at 3h, any status", got, r1, r2)
	for _, r := range got {
		if r.ID == r1.ID {
			assertRecord(t, "known at 3h", r, r1v2)
		}
	}
	assertIDs(t, "known at 5h", list(t, s, "a", knownAt(h(5))), r2, r3)
	assertIDs(t, "known at 5h, any status", list(t, s, "a", knownAt(h(5), anyStatus)), r1, r2, r3)

	// The entity filter applies to the version's own entities.
	assertIDs(t, "known at 2h, entity x", list(t, s, "a", knownAt(h(2), entity("topic:x"))), r1)
	assertIDs(t, "known at 2h, entity y", list(t, s, "a", knownAt(h(2), entity("topic:y"))))
	assertIDs(t, "known at 4h, entity x", list(t, s, "a", knownAt(h(4), entity("topic:x"), anyStatus)))
	assertIDs(t, "known at 4h, entity y", list(t, s, "a", knownAt(h(4), entity("topic:y"), anyStatus)), r1)
	assertIDs(t, "now, entity y", list(t, s, "a", store.RecordQuery{Access: allAccess, Entity: "topic:y", Statuses: memory.Statuses}), r1)

	// known_at combines with as_of and pagination.
	q := knownAt(h(5), anyStatus)
	q.Limit = 2
	page := list(t, s, "a", q)
	assertIDs(t, "known at 5h, page 1", page, r2, r3)
	q.Before = page[1].ID
	assertIDs(t, "known at 5h, page 2", list(t, s, "a", q), r1)
}

func testListInvalidated(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	ok := NewRecord("believed")
	invalid := NewRecord("no longer believed", func(r *memory.Record) { r.InvalidatedAt = ptr(T0) })
	mustInsert(t, s, "a", ok, invalid)
	assertIDs(t, "default", list(t, s, "a", store.RecordQuery{Access: allAccess}), ok)
	assertIDs(t, "include invalidated", list(t, s, "a", store.RecordQuery{Access: allAccess, IncludeInvalidated: true}), ok, invalid)
}

func testListMinConfidence(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	conf := func(c float64) memory.Record {
		return NewRecord(fmt.Sprint(c), func(r *memory.Record) { r.Source.Confidence = c })
	}
	low, mid, high := conf(0.5), conf(0.75), conf(0.9)
	mustInsert(t, s, "a", low, mid, high)
	q := func(min float64) store.RecordQuery { return store.RecordQuery{Access: allAccess, MinConfidence: min} }
	assertIDs(t, "min 0", list(t, s, "a", q(0)), low, mid, high)
	assertIDs(t, "min 0.75", list(t, s, "a", q(0.75)), mid, high)
	assertIDs(t, "min 0.8", list(t, s, "a", q(0.8)), high)
	assertIDs(t, "min 0.95", list(t, s, "a", q(0.95)))
}

func testListPagination(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	var all []memory.Record
	for i := range 25 {
		all = append(all, NewRecord(fmt.Sprintf("record %d", i)))
	}
	mustInsert(t, s, "a", all...)
	// A record that matches no query below must not disturb the pages.
	mustInsert(t, s, "a", NewRecord("hidden", func(r *memory.Record) { r.Status = memory.Archived }))

	seen := map[string]bool{}
	var pages [][]memory.Record
	q := store.RecordQuery{Access: allAccess, Limit: 10}
	for {
		page := list(t, s, "a", q)
		if len(page) == 0 {
			break
		}
		if len(pages) > 5 {
			t.Fatal("pagination does not end")
		}
		pages = append(pages, page)
		for i, r := range page {
			if seen[r.ID] {
				t.Fatalf("page %d repeats %s", len(pages), r.ID)
			}
			seen[r.ID] = true
			if i > 0 && r.ID >= page[i-1].ID {
				t.Fatalf("page %d not in descending id order", len(pages))
			}
		}
		q.Before = page[len(page)-1].ID
	}
	if len(pages) != 3 || len(pages[0]) != 10 || len(pages[1]) != 10 || len(pages[2]) != 5 {
		t.Fatalf("page sizes: got %d pages, want 10, 10, 5", len(pages))
	}
	var flat []memory.Record
	for _, p := range pages {
		flat = append(flat, p...)
	}
	assertIDs(t, "all pages", flat, all...)
}

func testListLimits(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	var all []memory.Record
	for i := range store.MaxLimit + 10 {
		all = append(all, NewRecord(fmt.Sprintf("record %d", i)))
	}
	mustInsert(t, s, "a", all...)
	if got := list(t, s, "a", store.RecordQuery{Access: allAccess}); len(got) != store.DefaultLimit {
		t.Fatalf("default limit: got %d records, want %d", len(got), store.DefaultLimit)
	}
	if got := list(t, s, "a", store.RecordQuery{Access: allAccess, Limit: 3}); len(got) != 3 {
		t.Fatalf("limit 3: got %d records", len(got))
	}
	// A page of MaxLimit and the one record that tells a next page exists.
	if got := list(t, s, "a", store.RecordQuery{Access: allAccess, Limit: store.MaxLimit + 1}); len(got) != store.MaxLimit+1 {
		t.Fatalf("limit max+1: got %d records, want %d", len(got), store.MaxLimit+1)
	}
	if got := list(t, s, "a", store.RecordQuery{Access: allAccess, Limit: 10 * store.MaxLimit}); len(got) != store.MaxLimit+1 {
		t.Fatalf("limit above max: got %d records, want %d", len(got), store.MaxLimit+1)
	}
}

func testListRoundTrip(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	full := fullRecord("listed")
	full.Status = memory.Active
	full.InvalidatedAt = nil
	mustInsert(t, s, "a", full)
	got := list(t, s, "a", store.RecordQuery{Access: allAccess})
	if len(got) != 1 {
		t.Fatalf("got %d records, want 1", len(got))
	}
	assertRecord(t, "ListRecords", got[0], full)

	// ListRecords inside a transaction sees the transaction's writes.
	other := NewRecord("in tx")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.InsertRecord(ctx, "a", other); err != nil {
			return err
		}
		rs, err := tx.ListRecords(ctx, "a", store.RecordQuery{Access: allAccess})
		if err != nil {
			return err
		}
		if len(rs) != 2 || rs[0].ID != other.ID {
			return fmt.Errorf("in-tx ListRecords: got %d records, want the new one first of 2", len(rs))
		}
		return nil
	})
}
