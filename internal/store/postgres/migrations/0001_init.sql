-- 0001_init: the initial memgate schema, PostgreSQL dialect. The numbered
-- migrations follow the SQLite backend's one for one, so both dialects
-- describe the same tables at the same version.
--
-- Conventions: times are timestamptz (microsecond precision, the same
-- instants the SQLite backend stores as unix microseconds); JSON objects
-- are json, which keeps the exact text it was given (jsonb would reorder
-- keys and drop duplicates, and the audit chain hashes payload bytes);
-- string lists are text[]; absent scope keys are '' (never NULL), so scope
-- equality is plain column equality. Identifiers and every column that is
-- ordered or compared by range use COLLATE "C": byte order, as in SQLite,
-- whatever the database's default collation. Every row carries its
-- workspace.

CREATE TABLE workspaces (
    id         text COLLATE "C" NOT NULL PRIMARY KEY,
    settings   json        NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL
);

-- Principal ids are unique across workspaces: a token names its principal
-- by id alone (FindPrincipal).
CREATE TABLE principals (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    kind         text        NOT NULL,
    name         text COLLATE "C" NOT NULL,
    trust        text        NOT NULL DEFAULT '',
    token_hash   bytea,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    UNIQUE (workspace_id, name)
);

-- records holds the head (current version) of every record.
CREATE TABLE records (
    workspace_id      text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id                text COLLATE "C" NOT NULL,
    type              text COLLATE "C" NOT NULL,
    category          text COLLATE "C" NOT NULL DEFAULT '',
    content           text             NOT NULL,
    content_sha256    text COLLATE "C" NOT NULL,
    metadata          json             NOT NULL DEFAULT '{}',
    entities          text[] COLLATE "C" NOT NULL DEFAULT '{}',
    version           integer          NOT NULL,
    superseded_by     text COLLATE "C",
    supersedes        text COLLATE "C",
    status            text COLLATE "C" NOT NULL,
    source_agent      text COLLATE "C" NOT NULL DEFAULT '',
    source_kind       text             NOT NULL DEFAULT '',
    source_confidence double precision NOT NULL DEFAULT 0,
    source_evidence   text[] COLLATE "C" NOT NULL DEFAULT '{}',
    scope_user_id     text COLLATE "C" NOT NULL DEFAULT '',
    scope_agent_id    text COLLATE "C" NOT NULL DEFAULT '',
    scope_app_id      text COLLATE "C" NOT NULL DEFAULT '',
    scope_project_id  text COLLATE "C" NOT NULL DEFAULT '',
    scope_session_id  text COLLATE "C" NOT NULL DEFAULT '',
    valid_from        timestamptz,
    valid_until       timestamptz,
    ingested_at       timestamptz      NOT NULL,
    invalidated_at    timestamptz,
    access            text COLLATE "C" NOT NULL,
    classification    text             NOT NULL DEFAULT '',
    gate_decision_id  text             NOT NULL DEFAULT '',
    gate_decision     text             NOT NULL DEFAULT '',
    gate_origin       text             NOT NULL DEFAULT '',
    decay_score       double precision NOT NULL DEFAULT 0,
    path              text             NOT NULL DEFAULT '',
    last_retrieved_at timestamptz,
    retrieval_count   bigint           NOT NULL DEFAULT 0,
    created_at        timestamptz      NOT NULL,
    updated_at        timestamptz      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);

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
    workspace_id      text COLLATE "C" NOT NULL,
    id                text COLLATE "C" NOT NULL,
    type              text COLLATE "C" NOT NULL,
    category          text COLLATE "C" NOT NULL DEFAULT '',
    content           text             NOT NULL,
    content_sha256    text COLLATE "C" NOT NULL,
    metadata          json             NOT NULL DEFAULT '{}',
    entities          text[] COLLATE "C" NOT NULL DEFAULT '{}',
    version           integer          NOT NULL,
    superseded_by     text COLLATE "C",
    supersedes        text COLLATE "C",
    status            text COLLATE "C" NOT NULL,
    source_agent      text COLLATE "C" NOT NULL DEFAULT '',
    source_kind       text             NOT NULL DEFAULT '',
    source_confidence double precision NOT NULL DEFAULT 0,
    source_evidence   text[] COLLATE "C" NOT NULL DEFAULT '{}',
    scope_user_id     text COLLATE "C" NOT NULL DEFAULT '',
    scope_agent_id    text COLLATE "C" NOT NULL DEFAULT '',
    scope_app_id      text COLLATE "C" NOT NULL DEFAULT '',
    scope_project_id  text COLLATE "C" NOT NULL DEFAULT '',
    scope_session_id  text COLLATE "C" NOT NULL DEFAULT '',
    valid_from        timestamptz,
    valid_until       timestamptz,
    ingested_at       timestamptz      NOT NULL,
    invalidated_at    timestamptz,
    access            text COLLATE "C" NOT NULL,
    classification    text             NOT NULL DEFAULT '',
    gate_decision_id  text             NOT NULL DEFAULT '',
    gate_decision     text             NOT NULL DEFAULT '',
    gate_origin       text             NOT NULL DEFAULT '',
    decay_score       double precision NOT NULL DEFAULT 0,
    path              text             NOT NULL DEFAULT '',
    last_retrieved_at timestamptz,
    retrieval_count   bigint           NOT NULL DEFAULT 0,
    created_at        timestamptz      NOT NULL,
    updated_at        timestamptz      NOT NULL,
    replaced_at       timestamptz,
    PRIMARY KEY (workspace_id, id, version),
    FOREIGN KEY (workspace_id, id) REFERENCES records (workspace_id, id)
);

-- record_entities indexes the head's entities for the entity filter.
CREATE TABLE record_entities (
    workspace_id text COLLATE "C" NOT NULL,
    entity       text COLLATE "C" NOT NULL,
    record_id    text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, entity, record_id),
    FOREIGN KEY (workspace_id, record_id) REFERENCES records (workspace_id, id)
);

-- The record reference is checked at commit, so an approval and its record
-- may be written in either order inside one transaction.
CREATE TABLE approvals (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL,
    record_id    text COLLATE "C" NOT NULL,
    kind         text        NOT NULL,
    reason       text        NOT NULL DEFAULT '',
    status       text COLLATE "C" NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    decided_at   timestamptz,
    decided_by   text        NOT NULL DEFAULT '',
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, record_id) REFERENCES records (workspace_id, id)
        DEFERRABLE INITIALLY DEFERRED
);

CREATE INDEX approvals_status ON approvals (workspace_id, status, id);
CREATE INDEX approvals_expiry ON approvals (status, expires_at, id);

-- audit_log is append-only; the triggers below refuse updates, deletes
-- and truncation.
CREATE TABLE audit_log (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    seq          bigint      NOT NULL,
    id           text COLLATE "C" NOT NULL,
    ts           timestamptz NOT NULL,
    actor_kind   text        NOT NULL,
    actor_id     text        NOT NULL,
    event        text        NOT NULL,
    payload      json        NOT NULL,
    prev_hash    text        NOT NULL,
    hash         text        NOT NULL,
    PRIMARY KEY (workspace_id, seq)
);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END;
$$;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

-- audit_heads holds each chain's last seq and hash; AppendAudit locks and
-- advances it in the appending transaction, which serialises appends per
-- workspace.
CREATE TABLE audit_heads (
    workspace_id text COLLATE "C" NOT NULL PRIMARY KEY REFERENCES workspaces (id),
    seq          bigint NOT NULL,
    hash         text   NOT NULL
);
