-- 0005_ingest: conversation messages received through the Memory Gateway,
-- the durable job queue, and the extraction gatekeeper log.

-- A message's key (conversation, sender, timestamp, content hash) is
-- unique: re-sending an identical message is a no-op.
CREATE TABLE messages (
    workspace_id   TEXT    NOT NULL REFERENCES workspaces (id),
    id             TEXT    NOT NULL,
    user_id        TEXT    NOT NULL,
    app_id         TEXT    NOT NULL,
    project_id     TEXT    NOT NULL,
    session_id     TEXT    NOT NULL,
    sender_id      TEXT    NOT NULL,
    role           TEXT    NOT NULL,
    ts             INTEGER NOT NULL,
    content        TEXT    NOT NULL,
    content_sha256 TEXT    NOT NULL,
    record_id      TEXT    NOT NULL DEFAULT '',
    job_id         TEXT    NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id),
    UNIQUE (workspace_id, user_id, app_id, project_id, session_id, sender_id, ts, content_sha256)
) STRICT;

CREATE INDEX messages_job ON messages (workspace_id, job_id, ts, id);
CREATE INDEX messages_untaken ON messages (workspace_id, user_id, app_id, project_id, session_id) WHERE job_id = '';

CREATE TABLE jobs (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    id           TEXT    NOT NULL PRIMARY KEY,
    kind         TEXT    NOT NULL,
    payload      TEXT    NOT NULL DEFAULT '{}',
    status       TEXT    NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    run_after    INTEGER NOT NULL,
    lease_owner  TEXT    NOT NULL DEFAULT '',
    lease_until  INTEGER,
    last_error   TEXT    NOT NULL DEFAULT '',
    result       TEXT    NOT NULL DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
) STRICT;

-- Claims look for queued jobs that are due and running jobs whose lease
-- ran out.
CREATE INDEX jobs_claim ON jobs (status, run_after, id) WHERE status IN ('queued', 'running');

CREATE TABLE gatekeeper_log (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    id           TEXT    NOT NULL PRIMARY KEY,
    job_id       TEXT    NOT NULL,
    message_id   TEXT    NOT NULL,
    decision     TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    pattern      TEXT    NOT NULL DEFAULT '',
    facts        INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX gatekeeper_job ON gatekeeper_log (workspace_id, job_id, id);
