-- Dense vectors of record content, one per (record, model), and a cache of
-- embeddings by (model, content hash) so identical text is embedded once.
CREATE TABLE record_vectors (
    workspace_id   TEXT    NOT NULL,
    record_id      TEXT    NOT NULL,
    model          TEXT    NOT NULL,
    content_sha256 TEXT    NOT NULL,
    dim            INTEGER NOT NULL,
    vec            BLOB    NOT NULL,
    PRIMARY KEY (workspace_id, record_id, model),
    FOREIGN KEY (workspace_id, record_id) REFERENCES records (workspace_id, id)
) WITHOUT ROWID;

CREATE INDEX record_vectors_model ON record_vectors (model, record_id);

CREATE TABLE embedding_cache (
    model          TEXT    NOT NULL,
    content_sha256 TEXT    NOT NULL,
    dim            INTEGER NOT NULL,
    vec            BLOB    NOT NULL,
    PRIMARY KEY (model, content_sha256)
) WITHOUT ROWID;
