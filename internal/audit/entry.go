// Package audit implements memgate's per-workspace, hash-chained audit log
// (SPEC §10): the entry format, RFC 8785 canonical JSON, hashing and chain
// verification. Storage of entries belongs to the store; this package is
// pure so every backend hashes identically.
package audit

import (
	"encoding/json"
	"time"
)

// Actor kinds.
const (
	ActorAgent    = "agent"
	ActorUser     = "user"
	ActorOperator = "operator"
	ActorSystem   = "system"
)

// GenesisHash is the prev_hash of a chain's first entry.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Entry is one audit log entry. Payload is a JSON object holding ids,
// decisions, counts and content hashes; never secrets or content.
type Entry struct {
	ID        string          `json:"id"`
	Seq       int64           `json:"seq"`
	TS        time.Time       `json:"ts"`
	ActorKind string          `json:"actor_kind"`
	ActorID   string          `json:"actor_id"`
	Event     string          `json:"event"`
	Payload   json.RawMessage `json:"payload"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}
