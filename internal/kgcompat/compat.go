// Package kgcompat is the knowledge-graph compatibility layer: the
// operations of the reference MCP memory server (npm
// @modelcontextprotocol/server-memory) — entities with observations, and
// relations between them — mapped onto memgate's graph and records, so
// that MCP clients written for it work unchanged and what they store is
// governed, versioned, audited and searchable like every other memory.
//
// The mapping:
//
//   - An entity is the graph node with label EntityLabel and a natural key
//     that encodes its name (NodeKey): names are unique per workspace, as
//     in the reference, and case-sensitive. The node's properties hold
//     "name" (which lets the search's graph signal recognise it in
//     queries) and "entity_type".
//   - An observation is a record of type entity, category ObservationCategory,
//     whose content is "<name>: <observation>" and whose entities name the
//     node. It is written through the gate like any record, so it can be
//     queued, quarantined or refused, and memory_query finds it.
//   - A relation is a live edge between two entity nodes. memgate's
//     relations are an enum (SPEC §8): relationType is normalised to one
//     (NormalizeRelation: "depends on" is DEPENDS_ON) or stored as
//     RELATED_TO, and the exact relationTypes the edge stands for are kept
//     in its properties ("relation_types"), so they read back as given.
//   - Deleting never erases: deleted observations are invalidated (kept as
//     history, hidden from default reads), deleted relations' edges are
//     invalidated, and a deleted entity's node is archived with its
//     observations and edges invalidated. Erasure is memory_forget or an
//     operator's forget_subject.
//
// Reads see nodes that are active or provisional, and observations that
// are active or provisional (a restricted agent's writes wait for review
// but are shown), never invalidated ones, and only records the principal
// may read.
//
// It is a capability over core, as internal/files and internal/knowledge
// are: it decides what the reference's operations write and read, and
// core keeps every rule of how — the gate, grants, access checks and
// audit — through core's seam for capability packages (core.GraphTx,
// core.InGraphTx, and the access API: core.NodeVisibleTo, core.ReadAccess,
// ...). Its reads are answered from its own in-memory index (index.go),
// fed by the store's change logs.
package kgcompat

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/memory"
)

// Service serves the reference memory server's operations over a core
// service. One per process: each keeps an index of the graph (the MCP
// server and the REST wiring share one; see mcp.Options.KG).
type Service struct {
	svc *core.Service
	st  indexStore
	kg  kgIndex
}

// New returns the compatibility layer over svc. Its index loads each
// workspace on first read.
func New(svc *core.Service) *Service {
	return &Service{svc: svc, st: svc.Store()}
}

// EntityLabel is the node label of compatibility entities.
const EntityLabel = "entity"

// ObservationCategory is the category of observation records.
const ObservationCategory = "observation"

// kgRelationTypes is the edge property holding the relationTypes an edge
// stands for.
const kgRelationTypes = "relation_types"

// MaxNames bounds open_nodes. read_graph and search_nodes answer every
// entity, as the reference server does, unless the caller passes a limit
// (memgate's own extension).
const MaxNames = 100000

// kgPlaceholder is the node property marking the node of a name that a
// relation names but no entity has yet: the reference server stores such
// relations, so memgate keeps their end as a node that reads do not list
// as an entity until create_entities creates it.
const kgPlaceholder = "kg_placeholder"

// kgSeq is the node property that orders entities as the reference server
// does: by when each was (last) created, so a re-created entity comes last.
const kgSeq = "kg_seq"

// kgRelationIDs is the edge property parallel to relation_types holding an
// ordering id per relationType, so relations read back in creation order.
const kgRelationIDs = "relation_ids"

// Entity is an entity of the reference memory server's graph.
type Entity struct {
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
	// Held lists the observations among Observations that the gate holds
	// for review (personal data): shown to their writer and operators
	// only, flagged by the transports outside the reference's shape.
	Held []string `json:"-"`
}

// Relation is a directed, typed relation between two entities, by name.
type Relation struct {
	From         string `json:"from"`
	To           string `json:"to"`
	RelationType string `json:"relationType"`
}

// Graph is a view of the graph: entities and the relations that touch
// them.
type Graph struct {
	Entities  []Entity   `json:"entities"`
	Relations []Relation `json:"relations"`
	// Omitted counts the entities a caller's limit left out (0 when
	// nothing was cut); the transports say so next to the result.
	Omitted int `json:"-"`
	// Next is the cursor of the page after this one (read_graph with a
	// limit), "" on the last.
	Next string `json:"-"`
	// Ranked counts the entities search_nodes found by ranking, when no
	// entity contains the query (all of Entities then).
	Ranked int `json:"-"`
}

// Observations adds or deletes observations of one entity.
type Observations struct {
	EntityName string
	Contents   []string
}

// Added reports the observations an add stored for one entity.
type Added struct {
	EntityName        string   `json:"entityName"`
	AddedObservations []string `json:"addedObservations"`
	// Held lists the added observations the gate holds for review.
	Held []string `json:"-"`
}

// NodeKey returns the natural key of the node of the entity named name:
// the name with spaces as '_', and '%', '_' and other whitespace or
// control characters percent-encoded, so that distinct names have
// distinct keys ("John Smith" is entity:John_Smith).
func NodeKey(name string) string {
	if name == "" {
		return "%" // a lone '%' is no encoding of any other name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == ' ':
			b.WriteByte('_')
		case c == '%' || c == '_' || c < ' ' || c == 0x7f:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// EntityName is the inverse of NodeKey.
func EntityName(key string) string {
	if key == "%" {
		return ""
	}
	var b []byte
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == '_':
			b = append(b, ' ')
		case c == '%' && i+2 < len(key):
			if v, err := strconv.ParseUint(key[i+1:i+3], 16, 8); err == nil {
				b = append(b, byte(v))
				i += 2
				continue
			}
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// kgEntityRef is the record entity ("label:key") naming an entity's node.
func kgEntityRef(name string) string { return EntityLabel + ":" + NodeKey(name) }

// checkKGName validates an entity name; field names it in errors. Any
// string the reference accepts is a name, the empty one included, up to
// the length a node key holds.
func checkKGName(name, field string) error {
	if !utf8.ValidString(name) {
		return fault.Field(field, "must be valid UTF-8")
	}
	if !gate.ValidEntityKey(kgEntityRef(name)) {
		return fault.Field(field, "is too long (at most about 240 bytes)")
	}
	return nil
}

// kgRelation maps a free-text relationType onto memgate's relation enum.
func kgRelation(relationType string) string {
	if r, ok := graph.NormalizeRelation(relationType); ok {
		return r
	}
	return "RELATED_TO"
}

// kgContent is the record content of an observation of an entity.
func kgContent(name, observation string) string { return name + ": " + observation }

// kgObservationText recovers the observation from a record's content.
func kgObservationText(name, content string) string {
	if s, ok := strings.CutPrefix(content, name+": "); ok {
		return s
	}
	return content
}

// kgModifier checks that p may change existing records: operators, and
// agents that may patch (standard and trusted).
func kgModifier(p memory.Principal) error {
	if p.Kind == memory.KindAgent && (p.Trust == memory.Restricted || p.Trust == memory.ReadOnly) {
		return fault.New(fault.PermissionDenied, "agents of trust "+string(p.Trust)+" may not delete; ask an operator, or write a correcting observation")
	}
	if p.Kind != memory.KindAgent && p.Kind != memory.KindOperator {
		return fault.New(fault.PermissionDenied, "this principal may not change the graph")
	}
	return nil
}
