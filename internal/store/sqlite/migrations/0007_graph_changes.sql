-- The graph's change log: one row per node or edge insert, update or
-- delete, written in the same transaction, so every process sharing the
-- database (the CLI, other replicas) can keep its in-memory graph index
-- current without a restart. seq never repeats (AUTOINCREMENT).
CREATE TABLE graph_changes (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT    NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('node', 'edge')),
    item_id      TEXT    NOT NULL
);
