-- 0012_file_path_index: memory files (internal/files) keep their path in
-- the metadata field file_path; a create or rename looks the path up
-- inside its write transaction (FindByMeta), which this index answers
-- without reading every record of the workspace. Records without the
-- field index a NULL.
CREATE INDEX records_file_path ON records (workspace_id, category, json_extract(metadata, '$.file_path'));
