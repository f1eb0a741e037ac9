-- 0006_graph: the memory graph (SPEC §8). A node's natural key is unique
-- per (workspace, label); at most one live edge joins two nodes by one
-- relation, and invalidated edges stay as history.
CREATE TABLE nodes (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    id           TEXT    NOT NULL,
    label        TEXT    NOT NULL,
    natural_key  TEXT    NOT NULL,
    properties   TEXT    NOT NULL DEFAULT '{}',
    provenance   TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id),
    UNIQUE (workspace_id, label, natural_key)
) STRICT;

CREATE INDEX nodes_label ON nodes (workspace_id, label, id);

CREATE TABLE edges (
    workspace_id   TEXT    NOT NULL REFERENCES workspaces (id),
    id             TEXT    NOT NULL,
    from_id        TEXT    NOT NULL,
    to_id          TEXT    NOT NULL,
    relation       TEXT    NOT NULL,
    weight         REAL    NOT NULL DEFAULT 1,
    properties     TEXT    NOT NULL DEFAULT '{}',
    observed_at    INTEGER NOT NULL,
    valid_from     INTEGER,
    valid_until    INTEGER,
    invalidated_at INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, from_id) REFERENCES nodes (workspace_id, id),
    FOREIGN KEY (workspace_id, to_id) REFERENCES nodes (workspace_id, id)
) STRICT;

CREATE INDEX edges_from ON edges (workspace_id, from_id, id);
CREATE INDEX edges_to ON edges (workspace_id, to_id, id);
CREATE UNIQUE INDEX edges_live ON edges (workspace_id, from_id, to_id, relation) WHERE invalidated_at IS NULL;
