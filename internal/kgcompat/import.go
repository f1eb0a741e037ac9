package kgcompat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Migration from the reference MCP memory server: its memory file is JSON
// lines, {"type":"entity","name","entityType","observations"} and
// {"type":"relation","from","to","relationType"}.

// ImportStats counts what an import of a memory file did.
type ImportStats struct {
	Lines               int `json:"lines"`
	EntitiesCreated     int `json:"entities_created"`
	EntitiesExisting    int `json:"entities_existing"`
	ObservationsAdded   int `json:"observations_added"`
	RelationsCreated    int `json:"relations_created"`
	RelationsExisting   int `json:"relations_existing"`
	ObservationsSkipped int `json:"observations_skipped"`
}

// kgImportBatch is how many entities or relations one transaction takes.
const kgImportBatch = 100

// kgLine is one line of a memory file.
type kgLine struct {
	Type         string    `json:"type"`
	Name         *string   `json:"name"`
	EntityType   *string   `json:"entityType"`
	Observations *[]string `json:"observations"`
	From         *string   `json:"from"`
	To           *string   `json:"to"`
	RelationType *string   `json:"relationType"`
}

// ParseMemoryFile reads and validates a reference memory file. Any bad
// line fails the whole file, naming the line (never echoing its text).
// Blank lines are skipped, as the reference server does.
func ParseMemoryFile(r io.Reader) ([]Entity, []Relation, int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var ents []Entity
	var rels []Relation
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l kgLine
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&l); err != nil || dec.More() {
			return nil, nil, n, core.LineError(n, nil, "%s", "not a JSON object")
		}
		switch l.Type {
		case "entity":
			if l.Name == nil || l.EntityType == nil || l.Observations == nil {
				return nil, nil, n, core.LineError(n, nil, "%s", "an entity needs name, entityType and observations")
			}
			e := Entity{Name: *l.Name, EntityType: *l.EntityType, Observations: *l.Observations}
			if err := checkKGName(e.Name, "name"); err != nil {
				return nil, nil, n, core.LineError(n, nil, "%s", fault.As(err).Message)
			}
			if len(e.EntityType) > 256 {
				return nil, nil, n, core.LineError(n, nil, "%s", "entityType: at most 256 bytes")
			}
			if e.Observations == nil {
				e.Observations = []string{}
			}
			ents = append(ents, e)
		case "relation":
			if l.From == nil || l.To == nil || l.RelationType == nil {
				return nil, nil, n, core.LineError(n, nil, "%s", "a relation needs from, to and relationType")
			}
			rel := Relation{From: *l.From, To: *l.To, RelationType: *l.RelationType}
			if err := checkKGName(rel.From, "from"); err != nil {
				return nil, nil, n, core.LineError(n, nil, "%s", fault.As(err).Message)
			}
			if err := checkKGName(rel.To, "to"); err != nil {
				return nil, nil, n, core.LineError(n, nil, "%s", fault.As(err).Message)
			}
			if len(rel.RelationType) > 1024 {
				return nil, nil, n, core.LineError(n, nil, "%s", "relationType: at most 1024 bytes")
			}
			rels = append(rels, rel)
		default:
			return nil, nil, n, core.LineError(n, nil, "%s", `type must be "entity" or "relation"`)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, nil, n, core.LineError(n+1, nil, "%s", "longer than 64 MiB")
		}
		return nil, nil, n, fault.Wrap(fault.InvalidArgument, err, "cannot read the memory file")
	}
	return ents, rels, n, nil
}

// Import loads a reference memory file into the graph as p: it
// validates every line first (a bad line imports nothing), then creates
// the entities and relations through the knowledge-graph operations, so
// every observation passes the gate. Entities that exist already get the
// file's observations they lack; existing relations are kept. Importing
// the same file twice changes nothing the second time.
func (s *Service) Import(ctx context.Context, p memory.Principal, r io.Reader) (ImportStats, error) {
	ents, rels, lines, err := ParseMemoryFile(r)
	if err != nil {
		return ImportStats{}, err
	}
	st := ImportStats{Lines: lines}
	// An entity named on several lines is one entity with all their
	// observations (the first line's type).
	at := map[string]int{}
	merged := ents[:0:0]
	for _, e := range ents {
		if i, ok := at[e.Name]; ok {
			for _, o := range e.Observations {
				if !slices.Contains(merged[i].Observations, o) {
					merged[i].Observations = append(merged[i].Observations, o)
				}
			}
			continue
		}
		at[e.Name] = len(merged)
		merged = append(merged, e)
	}
	ents = merged
	// A relation may name an entity that is neither in the file nor in the
	// graph: the reference keeps such relations, and so does
	// CreateRelations.
	for len(ents) > 0 {
		batch := ents[:min(kgImportBatch, len(ents))]
		ents = ents[len(batch):]
		created, err := s.CreateEntities(ctx, p, batch)
		if err != nil {
			return st, err
		}
		isNew := map[string]bool{}
		for _, e := range created {
			isNew[e.Name] = true
			st.EntitiesCreated++
			st.ObservationsAdded += len(e.Observations)
		}
		var more []Observations
		for _, e := range batch {
			if isNew[e.Name] {
				st.ObservationsSkipped += len(e.Observations) - countOf(created, e.Name)
				continue
			}
			st.EntitiesExisting++
			if len(e.Observations) > 0 {
				more = append(more, Observations{EntityName: e.Name, Contents: e.Observations})
			}
		}
		if len(more) > 0 {
			added, err := s.AddObservations(ctx, p, more)
			if err != nil {
				return st, err
			}
			for i, a := range added {
				st.ObservationsAdded += len(a.AddedObservations)
				st.ObservationsSkipped += len(more[i].Contents) - len(a.AddedObservations)
			}
		}
	}
	for len(rels) > 0 {
		batch := rels[:min(kgImportBatch, len(rels))]
		rels = rels[len(batch):]
		created, err := s.CreateRelations(ctx, p, batch)
		if err != nil {
			return st, err
		}
		st.RelationsCreated += len(created)
		st.RelationsExisting += len(batch) - len(created)
	}
	return st, nil
}

// countOf is how many observations the created entity named name got.
func countOf(created []Entity, name string) int {
	for _, e := range created {
		if e.Name == name {
			return len(e.Observations)
		}
	}
	return 0
}
