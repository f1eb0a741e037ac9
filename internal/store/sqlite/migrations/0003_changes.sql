-- The ordered change log: one row per record insert, update or purge, so
-- every process sharing the database can keep its in-memory indexes
-- current. seq never repeats (AUTOINCREMENT).
CREATE TABLE record_changes (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    workspace_id TEXT    NOT NULL,
    record_id    TEXT    NOT NULL
);
