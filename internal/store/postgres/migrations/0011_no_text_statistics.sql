-- Planner statistics must not keep samples of erasable text. ANALYZE
-- (autovacuum's, or the scrub's) stores most-common values and histogram
-- bounds of every column in pg_statistic, a system catalog that only a
-- superuser could rewrite: a forgotten record's words would live on there.
-- No query of memgate's filters on these columns by value, so nothing is
-- lost by collecting no statistics for them.
DO $$
DECLARE c record;
BEGIN
    FOR c IN
        SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = current_schema()
          AND table_name IN ('records', 'record_versions', 'record_entities', 'messages', 'nodes', 'edges', 'embedding_cache')
          AND data_type IN ('text', 'json', 'jsonb', 'ARRAY', 'bytea', 'character varying')
          AND column_name NOT IN ('id', 'workspace', 'record_id', 'type', 'status', 'access')
    LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STATISTICS 0', c.table_name, c.column_name);
    END LOOP;
END
$$;
