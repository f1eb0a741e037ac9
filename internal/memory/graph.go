package memory

import (
	"encoding/json"
	"time"
)

// NodeProvenance says where a graph node came from (SPEC §8).
type NodeProvenance string

const (
	ProvOperator  NodeProvenance = "operator"
	ProvProposed  NodeProvenance = "proposed"
	ProvImported  NodeProvenance = "imported"
	ProvExtracted NodeProvenance = "extracted"
)

// Provenances lists every node provenance.
var Provenances = []NodeProvenance{ProvOperator, ProvProposed, ProvImported, ProvExtracted}

// NodeStatus is a graph node's state.
type NodeStatus string

const (
	NodeProvisional NodeStatus = "provisional"
	NodeActive      NodeStatus = "active"
	NodeArchived    NodeStatus = "archived"
)

// NodeStatuses lists every node status.
var NodeStatuses = []NodeStatus{NodeProvisional, NodeActive, NodeArchived}

// Node is a person, project, system, ... that memories are about. Its
// natural key is unique per (workspace, label); a record's entity
// "label:key" names it.
type Node struct {
	ID         string          `json:"id"`
	Label      string          `json:"label"`
	NaturalKey string          `json:"natural_key"`
	Properties json.RawMessage `json:"properties"`
	Provenance NodeProvenance  `json:"provenance"`
	Status     NodeStatus      `json:"status"`
	// Access and Writer are the node's own grant, set when a principal
	// writes the node directly (graph upsert, the drop-in's
	// create_entities, import): who may see it, as for a record of that
	// access level written by Writer (a principal id). Access is "" for a node that exists
	// only because records name it.
	Access Access `json:"access,omitempty"`
	Writer string `json:"writer,omitempty"`
	// Grants are the grants of the live records that name the node (one
	// per distinct access level and writer; nil when not computed yet).
	// They are derived data: kept on the row so that visibility is one
	// lookup, never exported.
	Grants    []Grant   `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Grant is one reason a principal may see a graph node or edge: it is
// visible to whoever may read a record of access level Access written by
// the principal whose id is Writer (docs/graph.md, "Who sees what").
type Grant struct {
	Access Access `json:"access"`
	Writer string `json:"writer,omitempty"`
}

// EntityKey is the record entity that names the node.
func (n Node) EntityKey() string { return n.Label + ":" + n.NaturalKey }

// Edge is a typed relation between two nodes of one workspace. An
// invalidated edge is history: kept, never traversed.
type Edge struct {
	ID            string          `json:"id"`
	From          string          `json:"from"`
	To            string          `json:"to"`
	Relation      string          `json:"relation"`
	Weight        float64         `json:"weight"`
	Properties    json.RawMessage `json:"properties"`
	ObservedAt    time.Time       `json:"observed_at"`
	ValidFrom     *time.Time      `json:"valid_from"`
	ValidUntil    *time.Time      `json:"valid_until"`
	InvalidatedAt *time.Time      `json:"invalidated_at"`
	// Access and Writer are the edge's own grant, as a node's; "" for an
	// edge visible to whoever sees both of its ends.
	Access    Access    `json:"access,omitempty"`
	Writer    string    `json:"writer,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}
