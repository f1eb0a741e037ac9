package api_test

// The read paths of the memory-stores API (/v1/memory_stores) in the
// access-matrix property test. Stores are records (category
// memory_store) seeded at several access levels and statuses
// (seedStores); their memories are the seeded memory files scoped to a
// store (scope.app_id = memstore_<id>).

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/memory"
)

func init() {
	readProbes = append(readProbes, storeProbes...)
}

var storeProbes = []readProbe{
	perRecord("REST memory store get", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		return e.restFound(a, "/v1/memory_stores/"+files.StorePrefix+id)
	}, storeRule(noSensitive(headRule))),
	perRecord("REST memory store memory get", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		return e.restFound(a, "/v1/memory_stores/"+e.storeFor(id)+"/memories/"+files.MemoryPrefix+id)
	}, memoryRule(func(h memory.Record) bool { return h.InvalidatedAt == nil && !fileDeleted(h) })),
	perRecord("REST memory store version 1 get", tokenActor, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		return e.restFound(a, "/v1/memory_stores/"+e.storeFor(id)+"/memory_versions/"+files.VersionPrefix+id+"_1")
	}, func(e *matrixEnv, a *actor, id string, _ bool) bool {
		return memoryRule(func(memory.Record) bool { return true })(e, a, id, false) && versionRule(1)(e, a, id, false)
	}),
	{name: "REST memory stores list", applies: tokenActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
		shown := map[string]bool{}
		for _, id := range e.pages(a, "/v1/memory_stores", files.StorePrefix) {
			shown[id] = true
		}
		return shown, e.wantSet(a, func(h memory.Record) bool {
			return isStoreRecord(h) && h.Status == memory.Active && accessRules.read(a.p, h, false)
		})
	}},
	{name: "REST memory store memories and versions lists", applies: tokenActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
		shown, want := map[string]bool{}, map[string]bool{}
		for _, sid := range e.stores[a.p.Workspace] {
			store := files.StorePrefix + sid
			sh := e.head(sid)
			readable := isStoreRecord(sh) && accessRules.read(a.p, sh, false)
			code, raw := e.rest(a, "GET", "/v1/memory_stores/"+store+"/memories?depth=0", nil)
			if (code == http.StatusOK) != readable || code != http.StatusOK && code != http.StatusNotFound {
				e.t.Fatalf("seed %d: list memories of %s as %s: %d %s (store readable %t)", e.seed, store, a, code, raw, readable)
			}
			if !readable {
				continue
			}
			for _, id := range e.pages(a, "/v1/memory_stores/"+store+"/memories", files.MemoryPrefix) {
				shown["memories "+id] = true
			}
			for _, vid := range e.pages(a, "/v1/memory_stores/"+store+"/memory_versions", files.VersionPrefix) {
				shown["versions "+vid[:strings.LastIndexByte(vid, '_')]] = true
			}
			for id := range e.wantSet(a, func(h memory.Record) bool {
				return h.Scope.AppID == store && isFileRecord(h) && liveMemory(h) && accessRules.read(a.p, h, false)
			}) {
				want["memories "+id], want["versions "+id] = true, true
			}
		}
		return shown, want
	}},
}

// pages follows a memory-stores list through next_page and returns the
// ids of its items without prefix.
func (e *matrixEnv) pages(a *actor, path, prefix string) []string {
	e.t.Helper()
	var ids []string
	page := ""
	for {
		q := url.Values{"limit": {"7"}}
		if page != "" {
			q.Set("page", page)
		}
		var out struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			NextPage *string `json:"next_page"`
		}
		e.restJSON(a, path+"?"+q.Encode(), &out)
		for _, it := range out.Data {
			if !strings.HasPrefix(it.ID, prefix) {
				e.t.Fatalf("seed %d: %s as %s: item %q", e.seed, path, a, it.ID)
			}
			ids = append(ids, strings.TrimPrefix(it.ID, prefix))
		}
		if out.NextPage == nil || *out.NextPage == "" {
			return ids
		}
		page = *out.NextPage
	}
}

// storeFor is the store a probe asks about record id under: its own
// store when it is a store's memory, else the first store of its
// workspace (which must not show it).
func (e *matrixEnv) storeFor(id string) string {
	if h := e.head(id); isFileRecord(h) && strings.HasPrefix(h.Scope.AppID, files.StorePrefix) {
		return h.Scope.AppID
	}
	return files.StorePrefix + e.stores[e.wsOf[id]][0]
}

func isStoreRecord(h memory.Record) bool {
	var m struct {
		S *json.RawMessage `json:"memory_store"`
	}
	return h.Type == memory.Resource && h.Category == files.StoreCategory && h.InvalidatedAt == nil &&
		json.Unmarshal(h.Metadata, &m) == nil && m.S != nil
}

// storeRule is rule for a path that shows stores only.
func storeRule(rule recordRule) recordRule {
	return func(e *matrixEnv, a *actor, id string, sens bool) bool {
		return isStoreRecord(e.head(id)) && rule(e, a, id, sens)
	}
}

// memoryRule: a memory file of a store the actor may read, whose head the
// actor may read (never sensitive), and that cond holds for.
func memoryRule(cond func(h memory.Record) bool) recordRule {
	return func(e *matrixEnv, a *actor, id string, _ bool) bool {
		h := e.head(id)
		sid, ok := strings.CutPrefix(h.Scope.AppID, files.StorePrefix)
		if !isFileRecord(h) || !ok || !slices.Contains(e.stores[e.wsOf[id]], sid) {
			return false
		}
		st := e.head(sid)
		return isStoreRecord(st) && accessRules.read(a.p, st, false) && accessRules.read(a.p, h, false) && cond(h)
	}
}

// liveMemory: the file holds its path now.
func liveMemory(h memory.Record) bool {
	return h.InvalidatedAt == nil && slices.Contains([]memory.Status{memory.Active, memory.Provisional, memory.Quarantined}, h.Status)
}

// unscopedFile is rule for a path that addresses files of the empty
// scope (a store's memories are scoped to the store).
func unscopedFile(rule recordRule) recordRule {
	return func(e *matrixEnv, a *actor, id string, sens bool) bool {
		return e.head(id).Scope == memory.Scope{} && rule(e, a, id, sens)
	}
}

func fileDeleted(h memory.Record) bool {
	var m struct {
		Deleted bool `json:"deleted"`
	}
	return json.Unmarshal(h.Metadata, &m) == nil && m.Deleted
}
