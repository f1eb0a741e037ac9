// Package graph is the in-memory index of one process's view of the memory
// graph (SPEC §8): adjacency, bounded traversal (Neighbors, Path), label
// listing, personalised PageRank as a retrieval signal, and recognition of
// node names in text.
//
// The index holds no authority: the service writes every node and edge to
// the store first and mirrors it here with PutNode/PutEdge, and rebuilds the
// index from the store at boot. Nothing here touches a database.
//
// # Identity and workspaces
//
// A node is identified by (workspace, id) and an edge by (workspace, id).
// Workspaces are separate graphs that share nothing but the relation names:
// the same id, key or name in two workspaces are two unrelated nodes, and no
// operation ever reads another workspace. An edge names its endpoints by id
// within its own workspace; an endpoint that is not a node of that workspace
// (missing, removed, or living in another workspace) makes the edge inert:
// it is kept, so that it comes alive if the node is put later (boot order
// does not matter), but it is never traversed.
//
// # Visibility
//
// Invalidated edges are kept but never traversed. Archived nodes are hidden
// from Neighbors (unless NeighborQuery.IncludeArchived), Path, PPR and
// Recognise, and are not traversed through; ByLabels lists them on request.
//
// # Determinism
//
// Neighbors, Path, ByLabels and Recognise give the same answer for the same
// graph whatever the order in which it was built: results are ordered by
// depth then node id, and when a node is reachable through several edges at
// the same depth the hop reports the parent with the smallest id and, among
// that parent's edges, the smallest edge id. PPR is deterministic for a
// given sequence of writes (its floating-point sums follow adjacency order).
//
// # Concurrency and cost
//
// An Index is safe for concurrent use: queries share a read lock, writes take
// the write lock. Nodes and edges are numbered by dense int32 ordinals inside
// each workspace; adjacency lists hold edge ordinals, never strings.
// Traversal cost is bounded by depth and limits, and PPR uses a local push
// algorithm whose cost scales with the seeds' neighbourhood, not the graph.
package graph
