-- 0010_graph_access: who may see a graph node or edge (docs/graph.md,
-- "Who sees what"). access/writer are the grant of a direct write (graph
-- upsert, the drop-in's entities, import); grants holds the grants of the
-- records that name a node, as JSON, NULL until memgate computes them
-- (on first use of the graph). Nodes that no record names were written
-- directly, and so were public in the workspace: they stay so. Nodes
-- that records name get their visibility from those records only.
ALTER TABLE nodes ADD COLUMN access TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN writer TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN grants TEXT;
ALTER TABLE edges ADD COLUMN access TEXT NOT NULL DEFAULT '';
ALTER TABLE edges ADD COLUMN writer TEXT NOT NULL DEFAULT '';

UPDATE nodes SET access = 'public'
WHERE label = 'entity' OR NOT EXISTS (SELECT 1 FROM record_entities re
    WHERE re.workspace_id = nodes.workspace_id AND re.entity = nodes.label || ':' || nodes.natural_key);
