package api_test

import (
	"net/http"
	"slices"

	"github.com/memgate/memgate/internal/memory"
)

// accessRules is the executable copy of docs/access.md, which the
// access-matrix property test checks every path against. It is written
// from the document, not from internal/core: keep the two in step with
// the document, never with each other.
var accessRules = struct {
	// read is the "Reading a record" table: may p read a record (one
	// version of it) whose access and writer are these?
	read func(p memory.Principal, r memory.Record, includeSensitive bool) bool
	// readVersion is the rule for a past version: head and version both
	// readable.
	readVersion func(p memory.Principal, head, v memory.Record, includeSensitive bool) bool
	// patch and forget are the "Changing a record" table, as the HTTP
	// status the change must get (2xx as http.StatusOK).
	patch  func(p memory.Principal, head memory.Record) int
	forget func(p memory.Principal, head memory.Record) int
	// operatorOnly is the status of an operator-only action (approve,
	// reject, export, audit, principals).
	operatorOnly func(p memory.Principal) int
}{
	read: ruleRead,
	readVersion: func(p memory.Principal, head, v memory.Record, sens bool) bool {
		return ruleRead(p, head, sens) && ruleRead(p, v, sens)
	},
	patch: func(p memory.Principal, head memory.Record) int {
		if mayNotChangeAnything(p) {
			return http.StatusForbidden
		}
		if !ruleRead(p, head, true) {
			return http.StatusNotFound
		}
		event := head.Type == memory.Episode && head.Category == "event"
		if head.Status == memory.Superseded || head.Status == memory.Forgotten || event {
			return http.StatusConflict // session events are append-only
		}
		if !ruleOwns(p, head) {
			return http.StatusForbidden
		}
		return http.StatusOK
	},
	forget: func(p memory.Principal, head memory.Record) int {
		if mayNotChangeAnything(p) {
			return http.StatusForbidden
		}
		if !ruleRead(p, head, true) {
			return http.StatusNotFound
		}
		if head.Status == memory.Forgotten { // a no-op
			return http.StatusOK
		}
		if !ruleOwns(p, head) {
			return http.StatusForbidden
		}
		return http.StatusOK
	},
	operatorOnly: func(p memory.Principal) int {
		if p.Kind == memory.KindOperator {
			return http.StatusOK
		}
		return http.StatusForbidden
	},
}

// ruleRead is the "Reading a record" table.
func ruleRead(p memory.Principal, r memory.Record, sens bool) bool {
	wrote := p.ID != "" && r.Source.PrincipalID == p.ID
	switch p.Kind {
	case memory.KindOperator:
		return r.Access != memory.System
	case memory.KindAgent, memory.KindUser:
		switch r.Access {
		case memory.Public:
			return true
		case memory.AgentOnly:
			return wrote
		case memory.UserOnly:
			return p.Kind == memory.KindUser && wrote
		case memory.Sensitive:
			return sens && p.Kind == memory.KindAgent && p.Trust == memory.Trusted
		}
	}
	return false
}

// mayNotChangeAnything: restricted and read_only agents change nothing.
func mayNotChangeAnything(p memory.Principal) bool {
	return p.Kind == memory.KindAgent && !slices.Contains([]memory.Trust{memory.Trusted, memory.Standard}, p.Trust)
}

// ruleOwns: operators change anything they can read, others what they
// wrote (by principal id).
func ruleOwns(p memory.Principal, r memory.Record) bool {
	return p.Kind == memory.KindOperator || p.ID != "" && r.Source.PrincipalID == p.ID
}

// ruleGraphNode is docs/graph.md "Who sees what" for a node that no
// principal wrote directly, given the heads of the records that name it:
// approved records grant their access level and writer, a provisional
// record only what an agent-level record of its writer would,
// quarantined, invalidated and forgotten records nothing; a node nothing
// grants is seen by operators only. Graph reads never include sensitive
// records' grants for agents.
func ruleGraphNode(p memory.Principal, heads []memory.Record) bool {
	granted := false
	for _, h := range heads {
		if h.Status == memory.Forgotten || h.Status == memory.Quarantined || h.InvalidatedAt != nil {
			continue
		}
		granted = true
		g := h
		if h.Status == memory.Provisional && h.Access == memory.Public {
			g.Access = memory.AgentOnly
		}
		if g.Access == memory.UserOnly {
			// A "user" grant names no writer: a gateway user's own
			// flagged turn shows its nodes to operators only.
			g.Source.PrincipalID = ""
		}
		if ruleRead(p, g, false) {
			return true
		}
	}
	return !granted && p.Kind == memory.KindOperator
}
