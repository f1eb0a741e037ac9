package store

import (
	"context"

	"github.com/memgate/memgate/internal/memory"
)

// NodeQuery filters ListNodes. Empty lists mean no filter; nodes come in
// id order after the cursor After, at most Limit (DefaultLimit when 0).
type NodeQuery struct {
	Labels   []string
	Statuses []memory.NodeStatus
	After    string
	Limit    int
}

// EdgeQuery filters ListEdges: edges with Node at either end ("" for
// every edge of the workspace), live ones only unless IncludeInvalidated;
// in id order after After, at most Limit (as NodeQuery).
type EdgeQuery struct {
	Node               string
	IncludeInvalidated bool
	After              string
	Limit              int
}

// EntityNamer is implemented by readers that can tell with one indexed
// lookup whether any record head names an entity. A new graph node's
// grants come from the records that name it, and most new nodes have
// none; asking first spares those the full listing (issue 14).
type EntityNamer interface {
	NamesEntity(ctx context.Context, ws, entity string) (bool, error)
}
