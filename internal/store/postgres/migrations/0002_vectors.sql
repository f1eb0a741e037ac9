-- Dense vectors of record content, one per (record, model), and a cache of
-- embeddings by (model, content hash) so identical text is embedded once.
-- Vectors are little-endian float32 arrays in bytea, the bytes the SQLite
-- backend stores; search runs on the in-process index, not in SQL.
CREATE TABLE record_vectors (
    workspace_id   text COLLATE "C" NOT NULL,
    record_id      text COLLATE "C" NOT NULL,
    model          text COLLATE "C" NOT NULL,
    content_sha256 text COLLATE "C" NOT NULL,
    dim            integer NOT NULL,
    vec            bytea   NOT NULL,
    PRIMARY KEY (workspace_id, record_id, model),
    FOREIGN KEY (workspace_id, record_id) REFERENCES records (workspace_id, id)
);

CREATE INDEX record_vectors_model ON record_vectors (model, record_id);

CREATE TABLE embedding_cache (
    model          text COLLATE "C" NOT NULL,
    content_sha256 text COLLATE "C" NOT NULL,
    dim            integer NOT NULL,
    vec            bytea   NOT NULL,
    PRIMARY KEY (model, content_sha256)
);
