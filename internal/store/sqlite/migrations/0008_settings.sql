-- Settings of the whole database (not of one workspace), such as the
-- embedder the data directory was created with: every later command reads
-- them instead of taking them from flags again.
CREATE TABLE settings (
    key        TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
