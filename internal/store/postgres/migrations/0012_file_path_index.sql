-- 0012_file_path_index: memory files (internal/files) keep their path in
-- the metadata field file_path; a create or rename looks the path up
-- inside its write transaction (FindByMeta), which this index answers
-- without reading every record of the workspace. As for the text columns
-- (0011), the planner keeps no statistics of the indexed paths: a
-- forgotten file's path must not live on in pg_statistic.
CREATE INDEX records_file_path ON records (workspace_id, category, (metadata->>'file_path'));
ALTER INDEX records_file_path ALTER COLUMN 3 SET STATISTICS 0;
