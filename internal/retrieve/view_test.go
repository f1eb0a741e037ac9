package retrieve

import "github.com/memgate/memgate/internal/memory"

// docView is a document's state as plain values, for tests that check the
// packed representation against what was written.
type docView struct {
	ws, id      string
	typ         memory.Type
	status      memory.Status
	access      memory.Access
	agent       string
	category    string
	scope       memory.Scope
	validFrom   int64
	validUntil  int64
	invalidated int64
	confidence  float32
	eventTime   int64
	sha         string
	entities    []string
	version     int
	words       []uint32
	alive       bool
}

// view renders key's document; the caller holds e.mu.
func (e *Engine) view(key uint32) docView {
	d := &e.docs[key]
	v := docView{ws: e.wsOf(key), id: e.idOf(key)}
	if !d.alive() {
		return v
	}
	v.alive = true
	v.typ, v.status, v.access = e.enums(key)
	f := &e.fx.filt[key]
	v.agent, v.category, v.scope, v.confidence = e.fx.names[f.agent], e.fx.names[f.category], e.scopeOf(key), f.conf
	v.validFrom, v.validUntil, v.invalidated, v.eventTime = d.validFrom, d.validUntil, d.invalidated, d.eventTime
	v.sha, v.entities, v.version, v.words = e.shaOf(key), e.entitiesOf(key), int(d.version), e.wordsOf(key)
	return v
}

// keyNames returns every key by its name (workspace NUL id).
func (e *Engine) keyNames() map[string]uint32 {
	out := make(map[string]uint32, len(e.docs))
	for k := range e.docs {
		out[e.wsOf(uint32(k))+"\x00"+e.idOf(uint32(k))] = uint32(k)
	}
	return out
}
