-- Ownership follows principal ids, not names (docs/access.md): a record
-- carries its writer's principal id, and every version the id of the
-- principal that wrote that version. Existing rows take the id of the
-- principal whose name matches the stored writer name in the same
-- workspace; the CLI's old writer name "cli" was never a principal and
-- resolves to nothing (such records stay readable by operators only at
-- access "agent"). modified_by is known only for first versions.
ALTER TABLE records ADD COLUMN source_principal_id text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE records ADD COLUMN modified_by text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE record_versions ADD COLUMN source_principal_id text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE record_versions ADD COLUMN modified_by text COLLATE "C" NOT NULL DEFAULT '';

UPDATE records SET source_principal_id = COALESCE((SELECT p.id FROM principals p
    WHERE p.workspace_id = records.workspace_id AND p.name = records.source_agent AND p.name <> 'cli'), '')
WHERE source_agent <> '';
UPDATE record_versions SET source_principal_id = COALESCE((SELECT p.id FROM principals p
    WHERE p.workspace_id = record_versions.workspace_id AND p.name = record_versions.source_agent AND p.name <> 'cli'), '')
WHERE source_agent <> '';
UPDATE records SET modified_by = source_principal_id WHERE version = 1;
UPDATE record_versions SET modified_by = source_principal_id WHERE version = 1;
