-- 0013_events: the event outbox, webhook endpoints and their delivery log
-- (internal/events, docs/events.md). An event is appended by the
-- transaction whose change causes it and carries ids only, never content.
CREATE TABLE events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE,
    workspace_id TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    at           INTEGER NOT NULL,
    subject      TEXT    NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX events_by_workspace ON events (workspace_id, seq);

-- secret signs deliveries (HMAC needs it in the clear); the API never
-- returns it after creation and exports leave it out.
CREATE TABLE webhooks (
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    id           TEXT    NOT NULL PRIMARY KEY,
    url          TEXT    NOT NULL,
    secret       TEXT    NOT NULL,
    kinds        TEXT    NOT NULL DEFAULT '[]',
    created_at   INTEGER NOT NULL,
    created_by   TEXT    NOT NULL,
    cursor       INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at      INTEGER NOT NULL,
    lease_owner  TEXT    NOT NULL DEFAULT '',
    lease_until  INTEGER
) STRICT;

CREATE TABLE webhook_deliveries (
    workspace_id TEXT    NOT NULL,
    id           TEXT    NOT NULL PRIMARY KEY,
    webhook_id   TEXT    NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id     TEXT    NOT NULL,
    event_seq    INTEGER NOT NULL,
    event_kind   TEXT    NOT NULL,
    attempt      INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    outcome      TEXT    NOT NULL,
    status_code  INTEGER NOT NULL,
    error        TEXT    NOT NULL DEFAULT '',
    duration_us  INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_deliveries_by_workspace ON webhook_deliveries (workspace_id, id);
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id);
