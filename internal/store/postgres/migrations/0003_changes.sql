-- The ordered change log: one row per record insert, update or purge, so
-- every process sharing the database can keep its in-memory indexes
-- current. seq comes from an identity sequence (never reused) and is
-- assigned at commit under a transaction-scoped advisory lock, so rows
-- become visible in seq order (see changes.go). The sequence must keep
-- CACHE 1: a per-session cache would hand out seqs out of order.
CREATE TABLE record_changes (
    seq          bigint GENERATED ALWAYS AS IDENTITY (CACHE 1) PRIMARY KEY,
    workspace_id text COLLATE "C" NOT NULL,
    record_id    text COLLATE "C" NOT NULL
);
