-- Cross-workspace walks in id order (the embedding job's work list, index
-- loading) read records by id alone; without this index SQLite scans and
-- sorts every remaining record for each batch, so a full embed pass was
-- quadratic in the number of records.
CREATE INDEX records_by_id ON records (id);
