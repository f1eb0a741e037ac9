-- 0001_init: the initial memgate schema.
--
-- Conventions: times are INTEGER unix microseconds UTC (NULL when unset);
-- JSON values are TEXT; absent scope keys are '' (never NULL) so that scope
-- equality is plain column equality. Every row carries its workspace.

CREATE TABLE workspaces (
    id         TEXT    NOT NULL PRIMARY KEY,
    settings   TEXT    NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL
) STRICT;

-- Principal ids are unique across workspaces: a token names its principal
-- by id alone (FindPrincipal).
CREATE TABLE principals (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    id           TEXT    NOT NULL PRIMARY KEY,
    kind         TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    trust        TEXT    NOT NULL DEFAULT '',
    token_hash   BLOB,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    UNIQUE (workspace_id, name)
) STRICT;

-- records holds the head (current version) of every record.
CREATE TABLE records (
    workspace_id      TEXT    NOT NULL REFERENCES workspaces (id),
    id                TEXT    NOT NULL,
    type              TEXT    NOT NULL,
    category          TEXT    NOT NULL DEFAULT '',
    content           TEXT    NOT NULL,
    content_sha256    TEXT    NOT NULL,
    metadata          TEXT    NOT NULL DEFAULT '{}',
    entities          TEXT    NOT NULL DEFAULT '[]',
    version           INTEGER NOT NULL,
    superseded_by     TEXT,
    supersedes        TEXT,
    status            TEXT    NOT NULL,
    source_agent      TEXT    NOT NULL DEFAULT '',
    source_kind       TEXT    NOT NULL DEFAULT '',
    source_confidence REAL    NOT NULL DEFAULT 0,
    source_evidence   TEXT    NOT NULL DEFAULT '[]',
    scope_user_id     TEXT    NOT NULL DEFAULT '',
    scope_agent_id    TEXT    NOT NULL DEFAULT '',
    scope_app_id      TEXT    NOT NULL DEFAULT '',
    scope_project_id  TEXT    NOT NULL DEFAULT '',
    scope_session_id  TEXT    NOT NULL DEFAULT '',
    valid_from        INTEGER,
    valid_until       INTEGER,
    ingested_at       INTEGER NOT NULL,
    invalidated_at    INTEGER,
    access            TEXT    NOT NULL,
    classification    TEXT    NOT NULL DEFAULT '',
    gate_decision_id  TEXT    NOT NULL DEFAULT '',
    gate_decision     TEXT    NOT NULL DEFAULT '',
    gate_origin       TEXT    NOT NULL DEFAULT '',
    decay_score       REAL    NOT NULL DEFAULT 0,
    path              TEXT    NOT NULL DEFAULT '',
    last_retrieved_at INTEGER,
    retrieval_count   INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id)
) STRICT;

CREATE INDEX records_status ON records (workspace_id, status, id);
CREATE INDEX records_type ON records (workspace_id, type, id);
CREATE INDEX records_sha256 ON records (workspace_id, content_sha256, type, id);
-- Scope indexes are partial, so records without a key cost nothing to
-- index; queries repeat the "<> ''" term so that the planner can use them.
CREATE INDEX records_scope_user ON records (workspace_id, scope_user_id, id) WHERE scope_user_id <> '';
CREATE INDEX records_scope_agent ON records (workspace_id, scope_agent_id, id) WHERE scope_agent_id <> '';
CREATE INDEX records_scope_app ON records (workspace_id, scope_app_id, id) WHERE scope_app_id <> '';
CREATE INDEX records_scope_project ON records (workspace_id, scope_project_id, id) WHERE scope_project_id <> '';
CREATE INDEX records_scope_session ON records (workspace_id, scope_session_id, id) WHERE scope_session_id <> '';

-- record_versions holds every version of every record, the head included.
-- A version was current in transaction time from updated_at (inclusive)
-- to replaced_at (exclusive; NULL while it is the head).
CREATE TABLE record_versions (
    workspace_id      TEXT    NOT NULL,
    id                TEXT    NOT NULL,
    type              TEXT    NOT NULL,
    category          TEXT    NOT NULL DEFAULT '',
    content           TEXT    NOT NULL,
    content_sha256    TEXT    NOT NULL,
    metadata          TEXT    NOT NULL DEFAULT '{}',
    entities          TEXT    NOT NULL DEFAULT '[]',
    version           INTEGER NOT NULL,
    superseded_by     TEXT,
    supersedes        TEXT,
    status            TEXT    NOT NULL,
    source_agent      TEXT    NOT NULL DEFAULT '',
    source_kind       TEXT    NOT NULL DEFAULT '',
    source_confidence REAL    NOT NULL DEFAULT 0,
    source_evidence   TEXT    NOT NULL DEFAULT '[]',
    scope_user_id     TEXT    NOT NULL DEFAULT '',
    scope_agent_id    TEXT    NOT NULL DEFAULT '',
    scope_app_id      TEXT    NOT NULL DEFAULT '',
    scope_project_id  TEXT    NOT NULL DEFAULT '',
    scope_session_id  TEXT    NOT NULL DEFAULT '',
    valid_from        INTEGER,
    valid_until       INTEGER,
    ingested_at       INTEGER NOT NULL,
    invalidated_at    INTEGER,
    access            TEXT    NOT NULL,
    classification    TEXT    NOT NULL DEFAULT '',
    gate_decision_id  TEXT    NOT NULL DEFAULT '',
    gate_decision     TEXT    NOT NULL DEFAULT '',
    gate_origin       TEXT    NOT NULL DEFAULT '',
    decay_score       REAL    NOT NULL DEFAULT 0,
    path              TEXT    NOT NULL DEFAULT '',
    last_retrieved_at INTEGER,
    retrieval_count   INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    replaced_at       INTEGER,
    PRIMARY KEY (workspace_id, id, version),
    FOREIGN KEY (workspace_id, id) REFERENCES records (workspace_id, id)
) STRICT;

-- record_entities indexes the head's entities for the entity filter. Rows
-- are removed by primary key using the entity list of the head they were
-- derived from, so no index on record_id is needed.
CREATE TABLE record_entities (
    workspace_id TEXT NOT NULL,
    entity       TEXT NOT NULL,
    record_id    TEXT NOT NULL,
    PRIMARY KEY (workspace_id, entity, record_id),
    FOREIGN KEY (workspace_id, record_id) REFERENCES records (workspace_id, id)
) STRICT, WITHOUT ROWID;

-- The record reference is checked at commit, so an approval and its record
-- may be written in either order inside one transaction.
CREATE TABLE approvals (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    id           TEXT    NOT NULL,
    record_id    TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    reason       TEXT    NOT NULL DEFAULT '',
    status       TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    decided_at   INTEGER,
    decided_by   TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, record_id) REFERENCES records (workspace_id, id)
        DEFERRABLE INITIALLY DEFERRED
) STRICT;

CREATE INDEX approvals_status ON approvals (workspace_id, status, id);
CREATE INDEX approvals_expiry ON approvals (status, expires_at, id);

-- audit_log is append-only; the triggers below refuse updates and deletes.
CREATE TABLE audit_log (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    seq          INTEGER NOT NULL,
    id           TEXT    NOT NULL,
    ts           INTEGER NOT NULL,
    actor_kind   TEXT    NOT NULL,
    actor_id     TEXT    NOT NULL,
    event        TEXT    NOT NULL,
    payload      TEXT    NOT NULL,
    prev_hash    TEXT    NOT NULL,
    hash         TEXT    NOT NULL,
    PRIMARY KEY (workspace_id, seq)
) STRICT;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;

-- audit_heads holds each chain's last seq and hash; AppendAudit reads and
-- advances it in the appending transaction.
CREATE TABLE audit_heads (
    workspace_id TEXT    NOT NULL PRIMARY KEY REFERENCES workspaces (id),
    seq          INTEGER NOT NULL,
    hash         TEXT    NOT NULL
) STRICT, WITHOUT ROWID;
