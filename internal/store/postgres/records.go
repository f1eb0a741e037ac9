package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// recordCols are the columns of records and record_versions that hold a
// memory.Record, in the order recordArgs binds and scanRecord reads them.
var recordCols = []string{
	"id", "type", "category", "content", "content_sha256", "metadata", "entities",
	"version", "superseded_by", "supersedes", "status",
	"source_agent", "source_kind", "source_confidence", "source_evidence",
	"scope_user_id", "scope_agent_id", "scope_app_id", "scope_project_id", "scope_session_id",
	"valid_from", "valid_until", "ingested_at", "invalidated_at",
	"access", "classification", "gate_decision_id", "gate_decision", "gate_origin",
	"decay_score", "path", "last_retrieved_at", "retrieval_count", "created_at", "updated_at",
	"source_principal_id", "modified_by",
}

// numRecordArgs is the number of parameters recordArgs binds: the
// workspace ($1) and then recordCols ($2 ...).
var numRecordArgs = 1 + len(recordCols)

// recordSelect is the select list matching scanRecord.
var recordSelect = strings.Join(recordCols, ", ")

var (
	sqlInsertRecord  = `INSERT INTO records (workspace_id, ` + recordSelect + `) VALUES (` + params(1, numRecordArgs) + `)`
	sqlInsertVersion = `INSERT INTO record_versions (workspace_id, ` + recordSelect + `) VALUES (` + params(1, numRecordArgs) + `)`
	// $1 is the workspace, $2 the id, $(numRecordArgs+1) the expected version.
	sqlUpdateRecord = `UPDATE records SET ` + assignments(recordCols[1:], 3) +
		` WHERE workspace_id = $1 AND id = $2 AND version = $` + strconv.Itoa(numRecordArgs+1)
	sqlReplaceVersion = `UPDATE record_versions SET replaced_at = $1 WHERE workspace_id = $2 AND id = $3 AND version = $4`
	// Overwrites one version row in place (store.Purge); $(numRecordArgs+1)
	// is the version.
	sqlOverwriteVersion = `UPDATE record_versions SET ` + assignments(recordCols[1:], 3) +
		` WHERE workspace_id = $1 AND id = $2 AND version = $` + strconv.Itoa(numRecordArgs+1)
	sqlInsertEntities = `INSERT INTO record_entities (workspace_id, entity, record_id)
		SELECT $1, e, $2 FROM unnest($3::text[]) AS e ON CONFLICT DO NOTHING`
	sqlDeleteEntities = `DELETE FROM record_entities WHERE workspace_id = $1 AND record_id = $2 AND entity = ANY($3::text[])`
)

// params returns "$from, $from+1, ..., $to".
func params(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteString(", ")
		}
		b.WriteString("$")
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// assignments returns "col1 = $first, col2 = $first+1, ...".
func assignments(cols []string, first int) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c)
		b.WriteString(" = $")
		b.WriteString(strconv.Itoa(first + i))
	}
	return b.String()
}

// recordArgs binds r for the insert and update statements: ws, then the
// columns of recordCols in order, then extra.
func recordArgs(ws string, r *memory.Record, extra ...any) ([]any, error) {
	metadata, err := jsonObject("metadata", r.Metadata)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, numRecordArgs+len(extra))
	args = append(args,
		ws,
		r.ID, string(r.Type), r.Category, r.Content, r.ContentSHA256, metadata, list(r.Entities),
		r.Version, r.SupersededBy, r.Supersedes, string(r.Status),
		r.Source.Agent, string(r.Source.Kind), r.Source.Confidence, list(r.Source.Evidence),
		r.Scope.UserID, r.Scope.AgentID, r.Scope.AppID, r.Scope.ProjectID, r.Scope.SessionID,
		r.ValidFrom, r.ValidUntil, r.IngestedAt, r.InvalidatedAt,
		string(r.Access), r.Classification, r.Gate.DecisionID, r.Gate.Decision, r.Gate.Origin,
		r.DecayScore, r.Path, r.LastRetrievedAt, r.RetrievalCount, r.CreatedAt, r.UpdatedAt,
		r.Source.PrincipalID, r.ModifiedBy,
	)
	return append(args, extra...), nil
}

// scanRecord reads the columns of recordSelect, after lead (extra leading
// columns, e.g. the workspace).
func scanRecord(row pgx.Row, lead ...any) (memory.Record, error) {
	var (
		r                         memory.Record
		typ, status, kind, access string
		metadata                  string
	)
	dest := append(lead,
		&r.ID, &typ, &r.Category, &r.Content, &r.ContentSHA256, &metadata, &r.Entities,
		&r.Version, &r.SupersededBy, &r.Supersedes, &status,
		&r.Source.Agent, &kind, &r.Source.Confidence, &r.Source.Evidence,
		&r.Scope.UserID, &r.Scope.AgentID, &r.Scope.AppID, &r.Scope.ProjectID, &r.Scope.SessionID,
		&r.ValidFrom, &r.ValidUntil, &r.IngestedAt, &r.InvalidatedAt,
		&access, &r.Classification, &r.Gate.DecisionID, &r.Gate.Decision, &r.Gate.Origin,
		&r.DecayScore, &r.Path, &r.LastRetrievedAt, &r.RetrievalCount, &r.CreatedAt, &r.UpdatedAt,
		&r.Source.PrincipalID, &r.ModifiedBy,
	)
	if err := row.Scan(dest...); err != nil {
		return memory.Record{}, err
	}
	r.Type = memory.Type(typ)
	r.Status = memory.Status(status)
	r.Source.Kind = memory.SourceKind(kind)
	r.Access = memory.Access(access)
	r.Metadata = []byte(metadata)
	r.Entities = list(r.Entities)
	r.Source.Evidence = list(r.Source.Evidence)
	r.ValidFrom = utcPtr(r.ValidFrom)
	r.ValidUntil = utcPtr(r.ValidUntil)
	r.InvalidatedAt = utcPtr(r.InvalidatedAt)
	r.LastRetrievedAt = utcPtr(r.LastRetrievedAt)
	r.IngestedAt = utc(r.IngestedAt)
	r.CreatedAt = utc(r.CreatedAt)
	r.UpdatedAt = utc(r.UpdatedAt)
	return r, nil
}

// scanRecords drains rows; the result is never nil.
func scanRecords(rows pgx.Rows, capHint int) ([]memory.Record, error) {
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
	r, err := scanRecord(c.q.QueryRow(ctx, `SELECT `+recordSelect+` FROM records WHERE workspace_id = $1 AND id = $2`, ws, id))
	if err != nil {
		return memory.Record{}, mapErr("postgres: get record "+id, err)
	}
	return r, nil
}

func (c *conn) GetRecords(ctx context.Context, ws string, ids []string) (map[string]memory.Record, error) {
	out := make(map[string]memory.Record, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := c.q.Query(ctx, `SELECT `+recordSelect+` FROM records WHERE workspace_id = $1 AND id = ANY($2)`, ws, ids)
	if err != nil {
		return nil, mapErr("postgres: get records", err)
	}
	rs, err := scanRecords(rows, len(ids))
	if err != nil {
		return nil, mapErr("postgres: get records", err)
	}
	for _, r := range rs {
		out[r.ID] = r
	}
	return out, nil
}

func (c *conn) GetRecordVersion(ctx context.Context, ws, id string, version int) (memory.Record, error) {
	r, err := scanRecord(c.q.QueryRow(ctx, `SELECT `+recordSelect+` FROM record_versions
		WHERE workspace_id = $1 AND id = $2 AND version = $3`, ws, id, version))
	if err != nil {
		return memory.Record{}, mapErr(fmt.Sprintf("postgres: get record %s version %d", id, version), err)
	}
	return r, nil
}

func (c *conn) GetRecordKnownAt(ctx context.Context, ws, id string, t time.Time) (memory.Record, error) {
	r, err := scanRecord(c.q.QueryRow(ctx, `SELECT `+recordSelect+` FROM record_versions
		WHERE workspace_id = $1 AND id = $2 AND updated_at <= $3 ORDER BY version DESC LIMIT 1`, ws, id, t))
	if err != nil {
		return memory.Record{}, mapErr("postgres: get record "+id+" known at "+t.UTC().Format(time.RFC3339Nano), err)
	}
	return r, nil
}

func (c *conn) ListVersions(ctx context.Context, ws, id string) ([]memory.Record, error) {
	rows, err := c.q.Query(ctx, `SELECT `+recordSelect+` FROM record_versions
		WHERE workspace_id = $1 AND id = $2 ORDER BY version`, ws, id)
	if err != nil {
		return nil, mapErr("postgres: list versions of "+id, err)
	}
	out, err := scanRecords(rows, 4)
	if err != nil {
		return nil, mapErr("postgres: list versions of "+id, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("postgres: list versions of %s: %w", id, store.ErrNotFound)
	}
	return out, nil
}

func (c *conn) FindDuplicate(ctx context.Context, ws string, typ memory.Type, contentSHA256 string, sc memory.Scope) (memory.Record, error) {
	row := c.q.QueryRow(ctx, `SELECT `+recordSelect+` FROM records
		WHERE workspace_id = $1 AND content_sha256 = $2 AND type = $3 AND status IN ($4, $5) AND invalidated_at IS NULL
		AND scope_user_id = $6 AND scope_agent_id = $7 AND scope_app_id = $8
		AND scope_project_id = $9 AND scope_session_id = $10
		ORDER BY id LIMIT 1`, ws, contentSHA256, string(typ),
		string(memory.Active), string(memory.Provisional),
		sc.UserID, sc.AgentID, sc.AppID, sc.ProjectID, sc.SessionID)
	r, err := scanRecord(row)
	if err != nil {
		return memory.Record{}, mapErr("postgres: find duplicate", err)
	}
	return r, nil
}

// sqlArgs accumulates bound parameters and names their placeholders.
type sqlArgs []any

// add binds v and returns its placeholder.
func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// ListRecords builds one SELECT from q. Values are always bound as
// parameters; only fixed SQL fragments are concatenated.
func (c *conn) ListRecords(ctx context.Context, ws string, q store.RecordQuery) ([]memory.Record, error) {
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
	rows, err := c.q.Query(ctx, query, args...)
	if err != nil {
		return nil, mapErr("postgres: list records", err)
	}
	out, err := scanRecords(rows, min(limit, 64))
	if err != nil {
		return nil, mapErr("postgres: list records", err)
	}
	return out, nil
}

// listRecordsSQL is ListRecords' SELECT and its arguments.
func listRecordsSQL(ws string, q store.RecordQuery, limit int) (string, sqlArgs) {
	var b strings.Builder
	b.Grow(1024)
	args := make(sqlArgs, 0, 24)
	b.WriteString("SELECT ")
	b.WriteString(recordSelect)
	if q.KnownAt != nil {
		// The versions current at transaction time t: [updated_at, replaced_at).
		t := *q.KnownAt
		b.WriteString(" FROM record_versions WHERE workspace_id = " + args.add(ws))
		p := args.add(t)
		b.WriteString(" AND updated_at <= " + p + " AND (replaced_at IS NULL OR replaced_at > " + p + ")")
	} else {
		b.WriteString(" FROM records WHERE workspace_id = " + args.add(ws))
	}
	writeRecordFilters(&b, &args, ws, q)
	writeAccessFilter(&b, &args, q.Access)
	if q.AsOf != nil {
		p := args.add(*q.AsOf)
		b.WriteString(" AND (valid_from IS NULL OR valid_from <= " + p + ") AND (valid_until IS NULL OR valid_until > " + p + ")")
	}
	if !q.IncludeInvalidated {
		b.WriteString(" AND invalidated_at IS NULL")
	}
	if q.MinConfidence > 0 {
		b.WriteString(" AND source_confidence >= " + args.add(q.MinConfidence))
	}
	if q.Before != "" {
		b.WriteString(" AND id < " + args.add(q.Before))
	}
	b.WriteString(" ORDER BY id DESC LIMIT " + args.add(limit))
	return b.String(), args
}

// textArray binds vs as a text[] and returns its placeholder, cast.
func (a *sqlArgs) textArray(vs []string) string { return a.add(vs) + "::text[]" }

// writeRecordFilters writes q's conditions on what a record is: status,
// type, category, scope and entity.
func writeRecordFilters(b *strings.Builder, args *sqlArgs, ws string, q store.RecordQuery) {
	if len(q.Statuses) == 0 {
		b.WriteString(" AND status = " + args.add(string(memory.Active)))
	} else {
		ss := make([]string, len(q.Statuses))
		for i, s := range q.Statuses {
			ss[i] = string(s)
		}
		b.WriteString(" AND status = ANY(" + args.textArray(ss) + ")")
	}
	if len(q.Types) > 0 {
		ts := make([]string, len(q.Types))
		for i, t := range q.Types {
			ts[i] = string(t)
		}
		b.WriteString(" AND type = ANY(" + args.textArray(ts) + ")")
	}
	if q.Category != "" {
		b.WriteString(" AND category = " + args.add(q.Category))
	}
	for _, kv := range [...]struct{ col, val string }{
		{"scope_user_id", q.Scope.UserID},
		{"scope_agent_id", q.Scope.AgentID},
		{"scope_app_id", q.Scope.AppID},
		{"scope_project_id", q.Scope.ProjectID},
		{"scope_session_id", q.Scope.SessionID},
	} {
		if kv.val != "" {
			// "col <> ''" matches the partial index's WHERE clause.
			b.WriteString(" AND " + kv.col + " = " + args.add(kv.val) + " AND " + kv.col + " <> ''")
		}
	}
	if q.Entity != "" {
		if q.KnownAt != nil {
			// record_entities indexes heads only; a version carries its own list.
			b.WriteString(" AND " + args.add(q.Entity) + " = ANY(entities)")
		} else {
			b.WriteString(" AND id IN (SELECT record_id FROM record_entities WHERE workspace_id = " + args.add(ws) +
				" AND entity = " + args.add(q.Entity) + ")")
		}
	}
}

// writeAccessFilter writes the access condition of f: the access levels
// it admits, or the records of its own agent at the levels an agent
// reads of its own.
func writeAccessFilter(b *strings.Builder, args *sqlArgs, f store.AccessFilter) {
	b.WriteString(" AND (")
	if len(f.Levels) > 0 {
		ls := make([]string, len(f.Levels))
		for i, a := range f.Levels {
			ls[i] = string(a)
		}
		b.WriteString("access = ANY(" + args.textArray(ls) + ")")
		if f.OwnAgent != "" {
			b.WriteString(" OR ")
		}
	}
	if f.OwnAgent != "" {
		own := f.OwnLevels()
		ls := make([]string, len(own))
		for i, a := range own {
			ls[i] = string(a)
		}
		b.WriteString("(access = ANY(" + args.textArray(ls) + ") AND source_principal_id = " + args.add(f.OwnAgent) + ")")
	}
	b.WriteString(")")
}

func (t *tx) InsertRecord(ctx context.Context, ws string, r memory.Record) error {
	op := "postgres: insert record " + r.ID
	if r.Version != 1 {
		return fmt.Errorf("%s: version is %d, want 1", op, r.Version)
	}
	args, err := recordArgs(ws, &r)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	b := &pgx.Batch{}
	b.Queue(sqlInsertRecord, args...)
	b.Queue(sqlInsertVersion, args...)
	if len(r.Entities) > 0 {
		b.Queue(sqlInsertEntities, ws, r.ID, r.Entities)
	}
	if err := t.q.SendBatch(ctx, b).Close(); err != nil {
		return mapErr(op, err)
	}
	t.logChange(ws, r.ID)
	return nil
}

func (t *tx) UpdateRecord(ctx context.Context, ws string, r memory.Record, expectedVersion int) error {
	op := "postgres: update record " + r.ID
	if r.Version != expectedVersion+1 {
		return fmt.Errorf("%s: version is %d, want expected version %d + 1", op, r.Version, expectedVersion)
	}
	// The row lock makes concurrent updaters of one record queue here; the
	// ones that read the head after the winner committed see its version.
	var (
		current     int
		oldEntities []string
	)
	err := t.q.QueryRow(ctx, `SELECT version, entities FROM records WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
		ws, r.ID).Scan(&current, &oldEntities)
	if err != nil {
		return mapErr(op, err)
	}
	if current != expectedVersion {
		return fmt.Errorf("%s: head is at version %d, not %d: %w", op, current, expectedVersion, store.ErrVersionConflict)
	}
	return t.writeVersion(ctx, op, ws, &r, expectedVersion, oldEntities)
}

// writeVersion makes r, whose version follows prev, the head: it updates
// the head row (conditionally on prev), closes the transaction-time
// interval of version prev at r.UpdatedAt, inserts r's version row and
// moves the entity index from oldEntities to r.Entities. The caller holds
// the head's row lock.
func (t *tx) writeVersion(ctx context.Context, op, ws string, r *memory.Record, prev int, oldEntities []string) error {
	args, err := recordArgs(ws, r, prev)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	b := &pgx.Batch{}
	b.Queue(sqlUpdateRecord, args...)
	b.Queue(sqlReplaceVersion, r.UpdatedAt, ws, r.ID, prev)
	b.Queue(sqlInsertVersion, args[:numRecordArgs]...)
	if !slices.Equal(oldEntities, r.Entities) {
		if len(oldEntities) > 0 {
			b.Queue(sqlDeleteEntities, ws, r.ID, oldEntities)
		}
		if len(r.Entities) > 0 {
			b.Queue(sqlInsertEntities, ws, r.ID, r.Entities)
		}
	}
	br := t.q.SendBatch(ctx, b)
	tag, err := br.Exec()
	if err != nil {
		br.Close()
		return mapErr(op, err)
	}
	if err := br.Close(); err != nil {
		return mapErr(op, err)
	}
	// The head was checked and locked in this transaction, so the
	// conditional update cannot miss; check anyway.
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%s: head moved during the update (%d rows): %w", op, tag.RowsAffected(), store.ErrVersionConflict)
	}
	t.logChange(ws, r.ID)
	return nil
}

func (t *tx) PurgeRecord(ctx context.Context, ws, id string, at time.Time) error {
	return store.Purge(ctx, t, ws, id, at)
}

// The primitives of store.Purge.

func (t *tx) LockHead(ctx context.Context, ws, id string) (memory.Record, error) {
	head, err := scanRecord(t.q.QueryRow(ctx, `SELECT `+recordSelect+` FROM records WHERE workspace_id = $1 AND id = $2 FOR UPDATE`, ws, id))
	if err != nil {
		return memory.Record{}, mapErr("postgres: purge record "+id, err)
	}
	return head, nil
}

func (t *tx) OverwriteVersion(ctx context.Context, ws string, v *memory.Record) error {
	op := "postgres: purge record " + v.ID
	args, err := recordArgs(ws, v, v.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	tag, err := t.q.Exec(ctx, sqlOverwriteVersion, args...)
	if err != nil {
		return mapErr(op, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%s: version %d: %w", op, v.Version, store.ErrNotFound)
	}
	return nil
}

func (t *tx) AppendVersion(ctx context.Context, ws string, r *memory.Record, prev memory.Record) error {
	return t.writeVersion(ctx, "postgres: purge record "+r.ID, ws, r, prev.Version, prev.Entities)
}

func (t *tx) RedactVersion(ctx context.Context, ws, id string, version int) error {
	op := "postgres: redact version"
	head, err := scanRecord(t.q.QueryRow(ctx, `SELECT `+recordSelect+` FROM records WHERE workspace_id = $1 AND id = $2 FOR UPDATE`, ws, id))
	if err != nil {
		return mapErr(op, err)
	}
	if version == head.Version {
		return fmt.Errorf("%s: version %d is the head: %w", op, version, store.ErrVersionConflict)
	}
	var sha string
	err = t.q.QueryRow(ctx, `UPDATE record_versions SET content = '', status = $4 WHERE workspace_id = $1 AND id = $2 AND version = $3
		RETURNING content_sha256`, ws, id, version, string(memory.Forgotten)).Scan(&sha)
	if err != nil {
		return mapErr(op, err)
	}
	if sha != head.ContentSHA256 {
		if _, err := t.q.Exec(ctx, `DELETE FROM embedding_cache WHERE content_sha256 = $1`, sha); err != nil {
			return mapErr(op, err)
		}
		// A vector of the record computed while that version was the head
		// stays until the embedding job replaces it: it derives from the
		// redacted text too.
		if _, err := t.q.Exec(ctx, `DELETE FROM record_vectors WHERE workspace_id = $1 AND record_id = $2 AND content_sha256 = $3`,
			ws, id, sha); err != nil {
			return mapErr(op, err)
		}
	}
	return nil
}

func (t *tx) TouchRecords(ctx context.Context, ws string, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := t.q.Exec(ctx, `UPDATE records SET last_retrieved_at = $1, retrieval_count = retrieval_count + 1
		WHERE workspace_id = $2 AND id = ANY($3::text[])`, at, ws, ids)
	return mapErr("postgres: touch records", err)
}

func (t *tx) SetDecayScores(ctx context.Context, ws string, scores map[string]float64) error {
	if len(scores) == 0 {
		return nil
	}
	ids := make([]string, 0, len(scores))
	vals := make([]float64, 0, len(scores))
	for id, v := range scores {
		ids = append(ids, id)
		vals = append(vals, v)
	}
	_, err := t.q.Exec(ctx, `UPDATE records r SET decay_score = u.v
		FROM unnest($2::text[], $3::float8[]) AS u(id, v)
		WHERE r.workspace_id = $1 AND r.id = u.id`, ws, ids, vals)
	return mapErr("postgres: set decay scores", err)
}
