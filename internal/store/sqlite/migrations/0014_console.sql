-- 0014_console: the operator console's state (internal/console,
-- docs/console.md).
--
-- A rejected item keeps the operator's reason readable. It is operator
-- free text that may quote the erased content, so it is erased with the
-- record and with any subject the record named: reason_subjects holds
-- the sha256 of each such subject ("label:key"), set only while a reason
-- is, so forget_subject finds the reason after the record itself is a
-- tombstone that names nothing.
ALTER TABLE approvals ADD COLUMN decision_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN reason_subjects TEXT NOT NULL DEFAULT '[]';

-- Console sessions live in the database, so they survive a restart and
-- every replica accepts them. id_hash is the sha256 of the cookie's
-- session id: the table holds nothing a cookie could be made from.
CREATE TABLE console_sessions (
    id_hash      TEXT    NOT NULL PRIMARY KEY,
    workspace_id TEXT    NOT NULL REFERENCES workspaces (id),
    principal_id TEXT    NOT NULL,
    csrf         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- The console's Health screen lists a workspace's jobs newest first,
-- filtered by status or kind; its Audit screen filters the chain by
-- actor and by action on the server.
CREATE INDEX jobs_by_workspace ON jobs (workspace_id, id);
CREATE INDEX audit_by_event ON audit_log (workspace_id, event, seq);
CREATE INDEX audit_by_actor ON audit_log (workspace_id, actor_id, seq);
