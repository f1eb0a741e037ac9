-- Cross-workspace walks in id order (the embedding job's work list, index
-- loading) read records by id alone.
CREATE INDEX records_by_id ON records (id);
