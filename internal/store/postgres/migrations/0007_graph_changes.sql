-- The graph's change log: one row per node or edge insert, update or
-- delete, written in the same transaction, so every process sharing the
-- database (the CLI, other replicas) can keep its in-memory graph index
-- current without a restart. Like record_changes, seq is assigned at
-- commit under the change-log lock, so rows become visible in seq order.
CREATE TABLE graph_changes (
    seq          bigint GENERATED ALWAYS AS IDENTITY (CACHE 1) PRIMARY KEY,
    workspace_id text COLLATE "C" NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('node', 'edge')),
    item_id      text COLLATE "C" NOT NULL
);
