package sqlite

import (
	"strconv"
	"strings"
)

// recordCols are the columns of records and record_versions that hold a
// memory.Record, in the order recordArgs binds and scanRecord reads them.
// Both tables name the record id "id".
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
// workspace (?1) and then recordCols (?2 ...).
var numRecordArgs = 1 + len(recordCols)

// recordSelect is the select list matching scanRecord.
var recordSelect = strings.Join(recordCols, ", ")

type stmtID int

// Prepared statements. Those before numReadStmts are reads and are
// prepared on both pools; the rest only on the writer.
const (
	stGetWorkspace stmtID = iota
	stListWorkspaces
	stGetPrincipal
	stGetPrincipalByName
	stFindPrincipal
	stListPrincipals
	stListPrincipalsKind
	stGetRecord
	stGetRecordVersion
	stGetRecordKnownAt
	stListVersions
	stFindDuplicate
	stGetApproval
	stListApprovals
	stListApprovalsStatus
	stListExpiredApprovals
	stListAudit
	stAuditHead
	stHeadState

	numReadStmts
)

const (
	stCreateWorkspace stmtID = numReadStmts + iota
	stInsertPrincipal
	stRevokePrincipal
	stSetCredential
	stInsertRecord
	stInsertVersion
	stUpdateRecord
	stReplaceVersion
	stOverwriteVersion
	stInsertEntity
	stDeleteEntity
	stInsertApproval
	stUpdateApproval
	stInsertAudit
	stUpsertAuditHead

	numStmts
)

const (
	principalCols = "id, workspace_id, kind, name, trust, token_hash, created_at, revoked_at"
	approvalCols  = "id, workspace_id, record_id, kind, reason, status, created_at, expires_at, decided_at, decided_by, decision_reason, reason_subjects"
	auditCols     = "id, seq, ts, actor_kind, actor_id, event, payload, prev_hash, hash"
)

var stmtSQL = [numStmts]string{
	stGetWorkspace:   `SELECT id, settings, created_at FROM workspaces WHERE id = ?`,
	stListWorkspaces: `SELECT id, settings, created_at FROM workspaces ORDER BY id`,

	stGetPrincipal:       `SELECT ` + principalCols + ` FROM principals WHERE workspace_id = ? AND id = ?`,
	stGetPrincipalByName: `SELECT ` + principalCols + ` FROM principals WHERE workspace_id = ? AND name = ?`,
	stFindPrincipal:      `SELECT ` + principalCols + ` FROM principals WHERE id = ?`,
	stListPrincipals:     `SELECT ` + principalCols + ` FROM principals WHERE workspace_id = ? ORDER BY created_at, id`,
	stListPrincipalsKind: `SELECT ` + principalCols + ` FROM principals WHERE workspace_id = ? AND kind = ? ORDER BY created_at, id`,

	stGetRecord: `SELECT ` + recordSelect + ` FROM records WHERE workspace_id = ? AND id = ?`,
	stGetRecordVersion: `SELECT ` + recordSelect + ` FROM record_versions
		WHERE workspace_id = ? AND id = ? AND version = ?`,
	stGetRecordKnownAt: `SELECT ` + recordSelect + ` FROM record_versions
		WHERE workspace_id = ? AND id = ? AND updated_at <= ? ORDER BY version DESC LIMIT 1`,
	stListVersions: `SELECT ` + recordSelect + ` FROM record_versions
		WHERE workspace_id = ? AND id = ? ORDER BY version`,
	stFindDuplicate: `SELECT ` + recordSelect + ` FROM records
		WHERE workspace_id = ? AND content_sha256 = ? AND type = ? AND status IN (?, ?) AND invalidated_at IS NULL
		AND scope_user_id = ? AND scope_agent_id = ? AND scope_app_id = ?
		AND scope_project_id = ? AND scope_session_id = ?
		ORDER BY id LIMIT 1`,

	stGetApproval: `SELECT ` + approvalCols + ` FROM approvals WHERE workspace_id = ? AND id = ?`,
	stListApprovals: `SELECT ` + approvalCols + ` FROM approvals
		WHERE workspace_id = ? AND id > ? ORDER BY id LIMIT ?`,
	stListApprovalsStatus: `SELECT ` + approvalCols + ` FROM approvals
		WHERE workspace_id = ? AND status = ? AND id > ? ORDER BY id LIMIT ?`,
	stListExpiredApprovals: `SELECT ` + approvalCols + ` FROM approvals
		WHERE status = ? AND expires_at <= ? ORDER BY expires_at, id LIMIT ?`,

	stListAudit: `SELECT ` + auditCols + ` FROM audit_log
		WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
	stAuditHead: `SELECT seq, hash FROM audit_heads WHERE workspace_id = ?`,
	stHeadState: `SELECT version, entities FROM records WHERE workspace_id = ? AND id = ?`,

	stCreateWorkspace: `INSERT INTO workspaces (id, settings, created_at) VALUES (?, ?, ?)`,
	stInsertPrincipal: `INSERT INTO principals (` + principalCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
	stRevokePrincipal: `UPDATE principals SET revoked_at = ? WHERE workspace_id = ? AND id = ?`,
	stSetCredential:   `UPDATE principals SET token_hash = ?, revoked_at = NULL WHERE workspace_id = ? AND id = ?`,

	stInsertRecord: `INSERT INTO records (workspace_id, ` + recordSelect + `) VALUES (` + params(1, numRecordArgs) + `)`,
	// The version row is a copy of the head row just written: SQLite
	// copies it, rather than binding the 38 values a second time.
	stInsertVersion: `INSERT INTO record_versions (workspace_id, ` + recordSelect + `) SELECT workspace_id, ` + recordSelect +
		` FROM records WHERE workspace_id = ? AND id = ?`,
	// ?1 is the workspace, ?2 the id, ?(numRecordArgs+1) the expected version.
	stUpdateRecord: `UPDATE records SET ` + assignments(recordCols[1:], 3) +
		` WHERE workspace_id = ?1 AND id = ?2 AND version = ?` + strconv.Itoa(numRecordArgs+1),
	stReplaceVersion: `UPDATE record_versions SET replaced_at = ?
		WHERE workspace_id = ? AND id = ? AND version = ?`,
	// Overwrites one version row in place (store.Purge); ?(numRecordArgs+1)
	// is the version.
	stOverwriteVersion: `UPDATE record_versions SET ` + assignments(recordCols[1:], 3) +
		` WHERE workspace_id = ?1 AND id = ?2 AND version = ?` + strconv.Itoa(numRecordArgs+1),
	stInsertEntity: `INSERT OR IGNORE INTO record_entities (workspace_id, entity, record_id) VALUES (?, ?, ?)`,
	stDeleteEntity: `DELETE FROM record_entities WHERE workspace_id = ? AND entity = ? AND record_id = ?`,

	stInsertApproval: `INSERT INTO approvals (` + approvalCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stUpdateApproval: `UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, decision_reason = ?, reason_subjects = ?
		WHERE workspace_id = ? AND id = ?`,

	stInsertAudit: `INSERT INTO audit_log (workspace_id, ` + auditCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	stUpsertAuditHead: `INSERT INTO audit_heads (workspace_id, seq, hash) VALUES (?, ?, ?)
		ON CONFLICT (workspace_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
}

// params returns "?from, ?from+1, ..., ?to".
func params(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		if i > from {
			b.WriteString(", ")
		}
		b.WriteString("?")
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// assignments returns "col1 = ?first, col2 = ?first+1, ...".
func assignments(cols []string, first int) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c)
		b.WriteString(" = ?")
		b.WriteString(strconv.Itoa(first + i))
	}
	return b.String()
}

// placeholders returns "?, ?, ..." with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}
