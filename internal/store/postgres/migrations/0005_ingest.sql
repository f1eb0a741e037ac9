-- 0005_ingest: conversation messages received through the Memory Gateway,
-- the durable job queue, and the extraction gatekeeper log.

-- A message's key (conversation, sender, timestamp, content hash) is
-- unique: re-sending an identical message is a no-op.
CREATE TABLE messages (
    workspace_id   text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id             text COLLATE "C" NOT NULL,
    user_id        text COLLATE "C" NOT NULL,
    app_id         text COLLATE "C" NOT NULL,
    project_id     text COLLATE "C" NOT NULL,
    session_id     text COLLATE "C" NOT NULL,
    sender_id      text COLLATE "C" NOT NULL,
    role           text        NOT NULL,
    ts             bigint      NOT NULL, -- Unix epoch milliseconds, as sent
    content        text        NOT NULL,
    content_sha256 text COLLATE "C" NOT NULL,
    record_id      text COLLATE "C" NOT NULL DEFAULT '',
    job_id         text COLLATE "C" NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (workspace_id, id),
    UNIQUE (workspace_id, user_id, app_id, project_id, session_id, sender_id, ts, content_sha256)
);

CREATE INDEX messages_job ON messages (workspace_id, job_id, ts, id);
CREATE INDEX messages_untaken ON messages (workspace_id, user_id, app_id, project_id, session_id) WHERE job_id = '';
CREATE INDEX messages_record ON messages (workspace_id, record_id) WHERE record_id <> '';

-- Jobs are claimed with SELECT ... FOR UPDATE SKIP LOCKED, so replicas
-- claiming at once take different jobs without waiting for each other.
CREATE TABLE jobs (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    kind         text COLLATE "C" NOT NULL,
    payload      json        NOT NULL DEFAULT '{}',
    status       text COLLATE "C" NOT NULL,
    attempts     integer     NOT NULL DEFAULT 0,
    max_attempts integer     NOT NULL,
    run_after    timestamptz NOT NULL,
    lease_owner  text        NOT NULL DEFAULT '',
    lease_until  timestamptz,
    last_error   text        NOT NULL DEFAULT '',
    result       json        NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- Claims look for queued jobs that are due and running jobs whose lease
-- ran out.
CREATE INDEX jobs_claim ON jobs (status, run_after, id) WHERE status IN ('queued', 'running');

CREATE TABLE gatekeeper_log (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    job_id       text COLLATE "C" NOT NULL,
    message_id   text COLLATE "C" NOT NULL,
    decision     text        NOT NULL,
    reason       text        NOT NULL,
    pattern      text        NOT NULL DEFAULT '',
    facts        integer     NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL
);

CREATE INDEX gatekeeper_job ON gatekeeper_log (workspace_id, job_id, created_at, id);
