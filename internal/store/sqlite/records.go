package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// recordArgs binds r for the insert and update statements: ws, then the
// columns of recordCols in order, then extra.
func recordArgs(ws string, r *memory.Record, extra ...any) ([]any, error) {
	metadata, err := jsonObject("metadata", r.Metadata)
	if err != nil {
		return nil, err
	}
	entities, err := stringList(r.Entities)
	if err != nil {
		return nil, fmt.Errorf("entities: %w", err)
	}
	evidence, err := stringList(r.Source.Evidence)
	if err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	args := make([]any, 0, numRecordArgs+len(extra))
	args = append(args,
		ws,
		r.ID, string(r.Type), r.Category, r.Content, r.ContentSHA256, metadata, entities,
		r.Version, nullString(r.SupersededBy), nullString(r.Supersedes), string(r.Status),
		r.Source.Agent, string(r.Source.Kind), r.Source.Confidence, evidence,
		r.Scope.UserID, r.Scope.AgentID, r.Scope.AppID, r.Scope.ProjectID, r.Scope.SessionID,
		nullMicros(r.ValidFrom), nullMicros(r.ValidUntil), micros(r.IngestedAt), nullMicros(r.InvalidatedAt),
		string(r.Access), r.Classification, r.Gate.DecisionID, r.Gate.Decision, r.Gate.Origin,
		r.DecayScore, r.Path, nullMicros(r.LastRetrievedAt), r.RetrievalCount, micros(r.CreatedAt), micros(r.UpdatedAt),
		r.Source.PrincipalID, r.ModifiedBy,
	)
	return append(args, extra...), nil
}

// scanRecord reads the columns of recordSelect.
func scanRecord(sc scanner) (memory.Record, error) {
	var (
		r                                  memory.Record
		typ, status, kind, access          string
		metadata, entities, evidence       string
		supersededBy, supersedes           sql.NullString
		validFrom, validUntil, invalidated sql.NullInt64
		lastRetrieved                      sql.NullInt64
		ingested, created, updated         int64
	)
	err := sc.Scan(
		&r.ID, &typ, &r.Category, &r.Content, &r.ContentSHA256, &metadata, &entities,
		&r.Version, &supersededBy, &supersedes, &status,
		&r.Source.Agent, &kind, &r.Source.Confidence, &evidence,
		&r.Scope.UserID, &r.Scope.AgentID, &r.Scope.AppID, &r.Scope.ProjectID, &r.Scope.SessionID,
		&validFrom, &validUntil, &ingested, &invalidated,
		&access, &r.Classification, &r.Gate.DecisionID, &r.Gate.Decision, &r.Gate.Origin,
		&r.DecayScore, &r.Path, &lastRetrieved, &r.RetrievalCount, &created, &updated,
		&r.Source.PrincipalID, &r.ModifiedBy,
	)
	if err != nil {
		return memory.Record{}, err
	}
	r.Type = memory.Type(typ)
	r.Status = memory.Status(status)
	r.Source.Kind = memory.SourceKind(kind)
	r.Access = memory.Access(access)
	r.Metadata = []byte(metadata)
	if r.Entities, err = parseStringList("entities", entities); err != nil {
		return memory.Record{}, fmt.Errorf("record %s: %w", r.ID, err)
	}
	if r.Source.Evidence, err = parseStringList("evidence", evidence); err != nil {
		return memory.Record{}, fmt.Errorf("record %s: %w", r.ID, err)
	}
	r.SupersededBy = fromNullString(supersededBy)
	r.Supersedes = fromNullString(supersedes)
	r.ValidFrom = fromNullMicros(validFrom)
	r.ValidUntil = fromNullMicros(validUntil)
	r.InvalidatedAt = fromNullMicros(invalidated)
	r.LastRetrievedAt = fromNullMicros(lastRetrieved)
	r.IngestedAt = fromMicros(ingested)
	r.CreatedAt = fromMicros(created)
	r.UpdatedAt = fromMicros(updated)
	return r, nil
}

// scanRecords drains rows; the result is never nil.
func scanRecords(rows *sql.Rows, capHint int) ([]memory.Record, error) {
	defer rows.Close()
	out := make([]memory.Record, 0, capHint)
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *conn) GetRecord(ctx context.Context, ws, id string) (memory.Record, error) {
	ctx = c.detach(ctx)
	r, err := scanRecord(c.stmt(ctx, stGetRecord).QueryRowContext(ctx, ws, id))
	if err != nil {
		return memory.Record{}, mapErr("sqlite: get record "+id, err)
	}
	return r, nil
}

// getRecordsChunk bounds the ids of one statement (SQLite's variable
// limit is far above it; smaller statements are cached better).
const getRecordsChunk = 256

func (c *conn) GetRecords(ctx context.Context, ws string, ids []string) (map[string]memory.Record, error) {
	ctx = c.detach(ctx)
	out := make(map[string]memory.Record, len(ids))
	for len(ids) > 0 {
		part := ids[:min(len(ids), getRecordsChunk)]
		ids = ids[len(part):]
		args := make([]any, 0, len(part)+1)
		args = append(args, ws)
		for _, id := range part {
			args = append(args, id)
		}
		rows, err := c.db.QueryContext(ctx, `SELECT `+recordSelect+` FROM records WHERE workspace_id = ? AND id IN (`+placeholders(len(part))+`)`, args...)
		if err != nil {
			return nil, mapErr("sqlite: get records", err)
		}
		rs, err := scanRecords(rows, len(part))
		if err != nil {
			return nil, mapErr("sqlite: get records", err)
		}
		for _, r := range rs {
			out[r.ID] = r
		}
	}
	return out, nil
}

func (c *conn) GetRecordVersion(ctx context.Context, ws, id string, version int) (memory.Record, error) {
	ctx = c.detach(ctx)
	r, err := scanRecord(c.stmt(ctx, stGetRecordVersion).QueryRowContext(ctx, ws, id, version))
	if err != nil {
		return memory.Record{}, mapErr(fmt.Sprintf("sqlite: get record %s version %d", id, version), err)
	}
	return r, nil
}

func (c *conn) GetRecordKnownAt(ctx context.Context, ws, id string, t time.Time) (memory.Record, error) {
	ctx = c.detach(ctx)
	r, err := scanRecord(c.stmt(ctx, stGetRecordKnownAt).QueryRowContext(ctx, ws, id, micros(t)))
	if err != nil {
		return memory.Record{}, mapErr("sqlite: get record "+id+" known at "+t.UTC().Format(time.RFC3339Nano), err)
	}
	return r, nil
}

func (c *conn) ListVersions(ctx context.Context, ws, id string) ([]memory.Record, error) {
	ctx = c.detach(ctx)
	rows, err := c.stmt(ctx, stListVersions).QueryContext(ctx, ws, id)
	if err != nil {
		return nil, mapErr("sqlite: list versions of "+id, err)
	}
	out, err := scanRecords(rows, 4)
	if err != nil {
		return nil, mapErr("sqlite: list versions of "+id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlite: list versions of %s: %w", id, store.ErrNotFound)
	}
	return out, nil
}

func (c *conn) FindDuplicate(ctx context.Context, ws string, typ memory.Type, contentSHA256 string, sc memory.Scope) (memory.Record, error) {
	ctx = c.detach(ctx)
	row := c.stmt(ctx, stFindDuplicate).QueryRowContext(ctx, ws, contentSHA256, string(typ),
		string(memory.Active), string(memory.Provisional),
		sc.UserID, sc.AgentID, sc.AppID, sc.ProjectID, sc.SessionID)
	r, err := scanRecord(row)
	if err != nil {
		return memory.Record{}, mapErr("sqlite: find duplicate", err)
	}
	return r, nil
}

// ListRecords builds one SELECT from q. Values are always bound as
// parameters; only fixed SQL fragments are concatenated.
func (c *conn) ListRecords(ctx context.Context, ws string, q store.RecordQuery) ([]memory.Record, error) {
	ctx = c.detach(ctx)
	if len(q.Access.Levels) == 0 && q.Access.OwnAgent == "" {
		// An empty access filter admits nothing, never everything.
		return []memory.Record{}, nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultLimit
	}
	limit = min(limit, store.MaxLimit+1) // a full page and the one that says more follow

	query, args := listRecordsSQL(ws, q, limit)
	rows, err := c.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, mapErr("sqlite: list records", err)
	}
	// No room ahead: a record is over 500 bytes, so room for 64 was a
	// 35 KB zeroed allocation on every call, most of which find a few
	// records or none (the grants of a new graph node: issue 14).
	out, err := scanRecords(rows, 0)
	if err != nil {
		return nil, mapErr("sqlite: list records", err)
	}
	return out, nil
}

// listRecordsSQL is ListRecords' SELECT and its arguments.
func listRecordsSQL(ws string, q store.RecordQuery, limit int) (string, []any) {
	var b strings.Builder
	b.Grow(1024)
	args := make([]any, 0, 24)
	b.WriteString("SELECT ")
	b.WriteString(recordSelect)
	if q.KnownAt != nil {
		// The versions current at transaction time t: [updated_at, replaced_at).
		t := micros(*q.KnownAt)
		b.WriteString(" FROM record_versions WHERE workspace_id = ? AND updated_at <= ? AND (replaced_at IS NULL OR replaced_at > ?)")
		args = append(args, ws, t, t)
	} else {
		b.WriteString(" FROM records WHERE workspace_id = ?")
		args = append(args, ws)
	}
	args = writeRecordFilters(&b, args, ws, q)
	args = writeAccessFilter(&b, args, q.Access)
	if q.AsOf != nil {
		t := micros(*q.AsOf)
		b.WriteString(" AND (valid_from IS NULL OR valid_from <= ?) AND (valid_until IS NULL OR valid_until > ?)")
		args = append(args, t, t)
	}
	if !q.IncludeInvalidated {
		b.WriteString(" AND invalidated_at IS NULL")
	}
	if q.MinConfidence > 0 {
		b.WriteString(" AND source_confidence >= ?")
		args = append(args, q.MinConfidence)
	}
	if q.Before != "" {
		b.WriteString(" AND id < ?")
		args = append(args, q.Before)
	}
	b.WriteString(" ORDER BY id DESC LIMIT ?")
	args = append(args, limit)
	return b.String(), args
}

// writeRecordFilters writes q's conditions on what a record is: status,
// type, category, scope and entity.
func writeRecordFilters(b *strings.Builder, args []any, ws string, q store.RecordQuery) []any {
	if len(q.Statuses) == 0 {
		b.WriteString(" AND status = ?")
		args = append(args, string(memory.Active))
	} else {
		b.WriteString(" AND status IN (")
		b.WriteString(placeholders(len(q.Statuses)))
		b.WriteString(")")
		for _, s := range q.Statuses {
			args = append(args, string(s))
		}
	}
	if len(q.Types) > 0 {
		b.WriteString(" AND type IN (")
		b.WriteString(placeholders(len(q.Types)))
		b.WriteString(")")
		for _, t := range q.Types {
			args = append(args, string(t))
		}
	}
	if q.Category != "" {
		b.WriteString(" AND category = ?")
		args = append(args, q.Category)
	}
	for _, kv := range [...]struct{ col, val string }{
		{"scope_user_id", q.Scope.UserID},
		{"scope_agent_id", q.Scope.AgentID},
		{"scope_app_id", q.Scope.AppID},
		{"scope_project_id", q.Scope.ProjectID},
		{"scope_session_id", q.Scope.SessionID},
	} {
		if kv.val != "" {
			b.WriteString(" AND ")
			// "col <> ''" matches the partial index's WHERE clause.
			b.WriteString(kv.col)
			b.WriteString(" = ? AND ")
			b.WriteString(kv.col)
			b.WriteString(" <> ''")
			args = append(args, kv.val)
		}
	}
	if q.Entity != "" {
		if q.KnownAt != nil {
			// record_entities indexes heads only; a version carries its own list.
			b.WriteString(" AND EXISTS (SELECT 1 FROM json_each(entities) WHERE value = ?)")
			args = append(args, q.Entity)
		} else {
			b.WriteString(" AND id IN (SELECT record_id FROM record_entities WHERE workspace_id = ? AND entity = ?)")
			args = append(args, ws, q.Entity)
		}
	}
	return args
}

// writeAccessFilter writes the access condition of f: the access levels
// it admits, or the records of its own agent at the levels an agent
// reads of its own.
func writeAccessFilter(b *strings.Builder, args []any, f store.AccessFilter) []any {
	b.WriteString(" AND (")
	if len(f.Levels) > 0 {
		b.WriteString("access IN (")
		b.WriteString(placeholders(len(f.Levels)))
		b.WriteString(")")
		for _, a := range f.Levels {
			args = append(args, string(a))
		}
		if f.OwnAgent != "" {
			b.WriteString(" OR ")
		}
	}
	if f.OwnAgent != "" {
		own := f.OwnLevels()
		b.WriteString("(access IN (" + placeholders(len(own)) + ") AND source_principal_id = ?)")
		for _, a := range own {
			args = append(args, string(a))
		}
		args = append(args, f.OwnAgent)
	}
	b.WriteString(")")
	return args
}

func (t *tx) InsertRecord(ctx context.Context, ws string, r memory.Record) error {
	ctx = t.detach(ctx)
	op := "sqlite: insert record " + r.ID
	if r.Version != 1 {
		return fmt.Errorf("%s: version is %d, want 1", op, r.Version)
	}
	args, err := recordArgs(ws, &r)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := t.stmt(ctx, stInsertRecord).ExecContext(ctx, args...); err != nil {
		return mapErr(op, err)
	}
	if _, err := t.stmt(ctx, stInsertVersion).ExecContext(ctx, ws, r.ID); err != nil {
		return mapErr(op, err)
	}
	if err := t.logChange(ctx, ws, r.ID); err != nil {
		return err
	}
	if err := t.insertEntities(ctx, ws, r.ID, r.Entities); err != nil {
		return mapErr(op, err)
	}
	t.lastWrite, t.lastWritten = readBack(r, args), true
	return nil
}

// readBack is r, just bound as args by recordArgs, as scanRecord reads
// it back: JSON columns as stored, times to the microsecond in UTC, lists
// never nil.
func readBack(r memory.Record, args []any) memory.Record {
	// Lists of its own, as a read's are: the caller keeps the record it
	// wrote, and the index keeps this one.
	r.Metadata = []byte(args[6].(string))
	r.Entities = append([]string{}, r.Entities...)
	r.Source.Evidence = append([]string{}, r.Source.Evidence...)
	at := func(t time.Time) time.Time { return fromMicros(micros(t)) }
	ptr := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		v := at(*t)
		return &v
	}
	r.ValidFrom, r.ValidUntil, r.InvalidatedAt, r.LastRetrievedAt = ptr(r.ValidFrom), ptr(r.ValidUntil), ptr(r.InvalidatedAt), ptr(r.LastRetrievedAt)
	r.IngestedAt, r.CreatedAt, r.UpdatedAt = at(r.IngestedAt), at(r.CreatedAt), at(r.UpdatedAt)
	return r
}

func (t *tx) insertEntities(ctx context.Context, ws, id string, entities []string) error {
	if len(entities) == 0 {
		return nil
	}
	if len(entities) == 1 {
		_, err := t.stmt(ctx, stInsertEntity).ExecContext(ctx, ws, entities[0], id)
		return err
	}
	// One statement for all of them (a record names a few: its text is
	// prepared once per count).
	var q strings.Builder
	q.WriteString(`INSERT OR IGNORE INTO record_entities (workspace_id, entity, record_id) VALUES `)
	args := make([]any, 0, 3*len(entities))
	for i, e := range entities {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?)")
		args = append(args, ws, e, id)
	}
	_, err := t.db.ExecContext(ctx, q.String(), args...)
	return err
}

func (t *tx) UpdateRecord(ctx context.Context, ws string, r memory.Record, expectedVersion int) error {
	ctx = t.detach(ctx)
	op := "sqlite: update record " + r.ID
	if r.Version != expectedVersion+1 {
		return fmt.Errorf("%s: version is %d, want expected version %d + 1", op, r.Version, expectedVersion)
	}
	var (
		current     int
		oldEntities string
	)
	err := t.stmt(ctx, stHeadState).QueryRowContext(ctx, ws, r.ID).Scan(&current, &oldEntities)
	if err != nil {
		return mapErr(op, err)
	}
	if current != expectedVersion {
		return fmt.Errorf("%s: head is at version %d, not %d: %w", op, current, expectedVersion, store.ErrVersionConflict)
	}
	old, err := parseStringList("entities", oldEntities)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return t.writeVersion(ctx, op, ws, &r, expectedVersion, old)
}

// writeVersion makes r, whose version follows prev, the head: it updates
// the head row (conditionally on prev), closes the transaction-time
// interval of version prev at r.UpdatedAt, inserts r's version row and
// moves the entity index from oldEntities to r.Entities.
func (t *tx) writeVersion(ctx context.Context, op, ws string, r *memory.Record, prev int, oldEntities []string) error {
	if err := t.logChange(ctx, ws, r.ID); err != nil {
		return err
	}
	args, err := recordArgs(ws, r, prev)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	res, err := t.stmt(ctx, stUpdateRecord).ExecContext(ctx, args...)
	if err != nil {
		return mapErr(op, err)
	}
	// The head was checked in this transaction, which holds the write
	// lock, so the conditional update cannot miss; check anyway.
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%s: head moved during the update (%d rows, %v): %w", op, n, err, store.ErrVersionConflict)
	}
	if _, err := t.stmt(ctx, stReplaceVersion).ExecContext(ctx, micros(r.UpdatedAt), ws, r.ID, prev); err != nil {
		return mapErr(op, err)
	}
	if _, err := t.stmt(ctx, stInsertVersion).ExecContext(ctx, ws, r.ID); err != nil {
		return mapErr(op, err)
	}
	if slices.Equal(oldEntities, r.Entities) {
		return nil
	}
	if len(oldEntities) > 0 {
		del := t.stmt(ctx, stDeleteEntity)
		for _, e := range oldEntities {
			if _, err := del.ExecContext(ctx, ws, e, r.ID); err != nil {
				return mapErr(op, err)
			}
		}
	}
	return mapErr(op, t.insertEntities(ctx, ws, r.ID, r.Entities))
}

func (t *tx) PurgeRecord(ctx context.Context, ws, id string, at time.Time) error {
	return store.Purge(t.detach(ctx), t, ws, id, at)
}

// The primitives of store.Purge. The transaction holds SQLite's write
// lock, so the head needs no row lock.

func (t *tx) LockHead(ctx context.Context, ws, id string) (memory.Record, error) {
	return t.GetRecord(ctx, ws, id)
}

func (t *tx) OverwriteVersion(ctx context.Context, ws string, v *memory.Record) error {
	op := "sqlite: purge record " + v.ID
	args, err := recordArgs(ws, v, v.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	res, err := t.stmt(ctx, stOverwriteVersion).ExecContext(ctx, args...)
	if err != nil {
		return mapErr(op, err)
	}
	return requireOne(op, res)
}

func (t *tx) AppendVersion(ctx context.Context, ws string, r *memory.Record, prev memory.Record) error {
	return t.writeVersion(ctx, "sqlite: purge record "+r.ID, ws, r, prev.Version, prev.Entities)
}

func (t *tx) RedactVersion(ctx context.Context, ws, id string, version int) error {
	ctx = t.detach(ctx)
	op := "sqlite: redact version"
	head, err := t.GetRecord(ctx, ws, id)
	if err != nil {
		return err
	}
	if version == head.Version {
		return fmt.Errorf("%s: version %d is the head: %w", op, version, store.ErrVersionConflict)
	}
	v, err := t.GetRecordVersion(ctx, ws, id, version)
	if err != nil {
		return err
	}
	if _, err := t.db.ExecContext(ctx, `UPDATE record_versions SET content = '', status = ? WHERE workspace_id = ? AND id = ? AND version = ?`,
		string(memory.Forgotten), ws, id, version); err != nil {
		return mapErr(op, err)
	}
	if head.ContentSHA256 != v.ContentSHA256 {
		if _, err := t.db.ExecContext(ctx, `DELETE FROM embedding_cache WHERE content_sha256 = ?`, v.ContentSHA256); err != nil {
			return mapErr(op, err)
		}
		// A vector of the record computed while that version was the head
		// stays until the embedding job replaces it: it derives from the
		// redacted text too.
		if _, err := t.db.ExecContext(ctx, `DELETE FROM record_vectors WHERE workspace_id = ? AND record_id = ? AND content_sha256 = ?`,
			ws, id, v.ContentSHA256); err != nil {
			return mapErr(op, err)
		}
	}
	return nil
}

// touchChunk bounds the ids bound in one TouchRecords statement.
const touchChunk = 500

func (t *tx) TouchRecords(ctx context.Context, ws string, ids []string, at time.Time) error {
	ctx = t.detach(ctx)
	for len(ids) > 0 {
		n := min(len(ids), touchChunk)
		args := make([]any, 0, n+2)
		args = append(args, micros(at), ws)
		for _, id := range ids[:n] {
			args = append(args, id)
		}
		q := "UPDATE records SET last_retrieved_at = ?, retrieval_count = retrieval_count + 1 WHERE workspace_id = ? AND id IN (" + placeholders(n) + ")"
		if _, err := t.db.ExecContext(ctx, q, args...); err != nil {
			return mapErr("sqlite: touch records", err)
		}
		ids = ids[n:]
	}
	return nil
}

func (t *tx) SetDecayScores(ctx context.Context, ws string, scores map[string]float64) error {
	ctx = t.detach(ctx)
	for id, v := range scores {
		if _, err := t.db.ExecContext(ctx, "UPDATE records SET decay_score = ? WHERE workspace_id = ? AND id = ?", v, ws, id); err != nil {
			return mapErr("sqlite: set decay scores", err)
		}
	}
	return nil
}
