-- 0013_events: the event outbox, webhook endpoints and their delivery log
-- (internal/events, docs/events.md). An event is appended by the
-- transaction whose change causes it and carries ids only, never content.
-- Like the change logs (0003), seq is drawn at commit under the change-log
-- advisory lock, so events become visible in seq order; CACHE 1 keeps the
-- sequence in order across sessions.
CREATE TABLE events (
    seq          bigint GENERATED ALWAYS AS IDENTITY (CACHE 1) PRIMARY KEY,
    id           text COLLATE "C" NOT NULL UNIQUE,
    workspace_id text COLLATE "C" NOT NULL,
    kind         text COLLATE "C" NOT NULL,
    at           timestamptz NOT NULL,
    subject      json        NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_workspace ON events (workspace_id, seq);

-- secret signs deliveries (HMAC needs it in the clear); the API never
-- returns it after creation and exports leave it out.
CREATE TABLE webhooks (
    workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id),
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    url          text        NOT NULL,
    secret       text        NOT NULL,
    kinds        text[]      NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    created_by   text COLLATE "C" NOT NULL,
    cursor       bigint      NOT NULL,
    attempts     integer     NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL,
    lease_owner  text        NOT NULL DEFAULT '',
    lease_until  timestamptz
);

CREATE TABLE webhook_deliveries (
    workspace_id text COLLATE "C" NOT NULL,
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    webhook_id   text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id     text COLLATE "C" NOT NULL,
    event_seq    bigint      NOT NULL,
    event_kind   text COLLATE "C" NOT NULL,
    attempt      integer     NOT NULL,
    at           timestamptz NOT NULL,
    outcome      text COLLATE "C" NOT NULL,
    status_code  integer     NOT NULL,
    error        text        NOT NULL DEFAULT '',
    duration_us  bigint      NOT NULL
);
CREATE INDEX webhook_deliveries_by_workspace ON webhook_deliveries (workspace_id, id);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);
