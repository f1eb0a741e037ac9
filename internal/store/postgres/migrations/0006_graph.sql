-- 0006_graph: the memory graph (SPEC §8). A node's natural key is unique
-- per (workspace, label); at most one live edge joins two nodes by one
-- relation, and invalidated edges stay as history.
CREATE TABLE nodes (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL,
    label        text COLLATE "C" NOT NULL,
    natural_key  text COLLATE "C" NOT NULL,
    properties   json        NOT NULL DEFAULT '{}',
    provenance   text        NOT NULL,
    status       text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    UNIQUE (workspace_id, label, natural_key)
);

CREATE INDEX nodes_label ON nodes (workspace_id, label, id);
CREATE INDEX nodes_by_id ON nodes (id);

CREATE TABLE edges (
    workspace_id   text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id             text COLLATE "C" NOT NULL,
    from_id        text COLLATE "C" NOT NULL,
    to_id          text COLLATE "C" NOT NULL,
    relation       text COLLATE "C" NOT NULL,
    weight         double precision NOT NULL DEFAULT 1,
    properties     json        NOT NULL DEFAULT '{}',
    observed_at    timestamptz NOT NULL,
    valid_from     timestamptz,
    valid_until    timestamptz,
    invalidated_at timestamptz,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, from_id) REFERENCES nodes (workspace_id, id),
    FOREIGN KEY (workspace_id, to_id) REFERENCES nodes (workspace_id, id)
);

CREATE INDEX edges_from ON edges (workspace_id, from_id, id);
CREATE INDEX edges_to ON edges (workspace_id, to_id, id);
CREATE INDEX edges_by_id ON edges (id);
CREATE UNIQUE INDEX edges_live ON edges (workspace_id, from_id, to_id, relation) WHERE invalidated_at IS NULL;
