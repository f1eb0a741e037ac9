package core

// Import (SPEC §9): parsing and validating an export line by line, and
// loading it into an empty workspace.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// importSet is a parsed, validated export.
type importSet struct {
	workspace  string // the exported workspace's name
	settings   json.RawMessage
	createdAt  time.Time
	principals []memory.Principal
	principalL []int // line of each principal
	nodes      []memory.Node
	edges      []memory.Edge
	records    [][]memory.Record
	approvals  []memory.Approval
	counts     ExportCounts
}

// lineErr is the error for a bad line: invalid_argument with the line
// number in details (and the field, when one is known).
func lineErr(line int, cause error, format string, args ...any) error {
	msg := fmt.Sprintf("import: line %d: ", line) + fmt.Sprintf(format, args...)
	e := &fault.Error{Code: fault.InvalidArgument, Message: msg, Details: map[string]any{"line": line}, Cause: cause}
	if fe := (*fault.Error)(nil); errors.As(cause, &fe) && fe.Details != nil {
		if f, ok := fe.Details["field"]; ok {
			e.Details["field"] = f
		}
	}
	return e
}

// parseImport reads and validates a whole export. Nothing is written.
func (s *Service) parseImport(ctx context.Context, r io.Reader) (*importSet, error) {
	set := &importSet{}
	br := bufio.NewReaderSize(r, 256<<10)
	p := importParse{rank: -1, nodeIDs: map[string]bool{}, nodeKeys: map[string]bool{}, liveEdges: map[string]bool{},
		recordIDs: map[string]bool{}, names: map[string]bool{}}
	line := 0
	var buf []byte
	for {
		if line%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, storeErr(err, "import")
			}
		}
		var eof bool
		var err error
		buf, eof, err = readImportLine(br, buf, line+1)
		if err != nil {
			return nil, err
		}
		if len(buf) == 0 && eof {
			break
		}
		line++
		if p.ended {
			return nil, lineErr(line, nil, "data after the end line")
		}
		l, err := decodeImportLine(bytes.TrimSuffix(buf, []byte("\n")), line)
		if err != nil {
			return nil, err
		}
		if err := p.order(l, line); err != nil {
			return nil, err
		}
		id, err := s.addImportLine(set, &p, l, line)
		if err != nil {
			return nil, err
		}
		if id != "" {
			if id <= p.lastID {
				return nil, lineErr(line, nil, "%s ids must be strictly ascending", l.Kind)
			}
			p.lastID = id
		}
		if eof {
			break
		}
	}
	if !p.ended {
		return nil, lineErr(line+1, nil, "missing the end line (file truncated?)")
	}
	return set, nil
}

// importParse is what parseImport remembers between lines: the kind
// order reached, the last id of that kind, and the keys that must be
// unique or must exist before a line refers to them.
type importParse struct {
	rank                         int
	lastID                       string
	nodeIDs, nodeKeys, liveEdges map[string]bool
	recordIDs, names             map[string]bool
	ended                        bool
}

// readImportLine reads line number n (1-based) into buf, at most
// maxImportLine bytes; eof reports the end of the input.
func readImportLine(br *bufio.Reader, buf []byte, n int) ([]byte, bool, error) {
	chunk, err := br.ReadSlice('\n')
	buf = append(buf[:0], chunk...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(buf) > maxImportLine {
			return nil, false, lineErr(n, nil, "longer than %d bytes", maxImportLine)
		}
		chunk, err = br.ReadSlice('\n')
		buf = append(buf, chunk...)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, fault.Wrap(fault.Unavailable, err, "import: cannot read line %d", n)
	}
	return buf, errors.Is(err, io.EOF), nil
}

// decodeImportLine decodes one line: one JSON object of a known kind with
// no unknown fields.
func decodeImportLine(text []byte, line int) (exportLine, error) {
	var l exportLine
	if len(bytes.TrimSpace(text)) == 0 {
		return l, lineErr(line, nil, "empty line")
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if derr := dec.Decode(&l); derr != nil {
		return l, lineErr(line, derr, "not a valid export line: %s", jsonProblem(derr))
	}
	if dec.More() {
		return l, lineErr(line, nil, "more than one JSON value")
	}
	return l, nil
}

// order checks a line's kind against the export's order (header,
// workspace, principals, nodes, edges, records, approvals, end) and its
// fields against its kind.
func (p *importParse) order(l exportLine, line int) error {
	want, known := lineRank[l.Kind]
	if !known {
		return lineErr(line, nil, "unknown kind %q", clip(l.Kind))
	}
	if line == 1 && l.Kind != ExportFormat {
		return lineErr(line, nil, "want the header line {\"kind\":%q,...}", ExportFormat)
	}
	if want < p.rank || (want == p.rank && want <= lineRank["workspace"]) {
		return lineErr(line, nil, "%s line out of order", l.Kind)
	}
	if want > p.rank {
		p.lastID = ""
	}
	if want > lineRank["workspace"] && p.rank < lineRank["workspace"] {
		return lineErr(line, nil, "missing the workspace line")
	}
	p.rank = want
	if err := checkLineFields(l); err != nil {
		return lineErr(line, nil, "%v", err)
	}
	return nil
}

// addImportLine validates one line of its kind and adds it to set; it
// returns the line's id ("" for kinds without one).
func (s *Service) addImportLine(set *importSet, p *importParse, l exportLine, line int) (string, error) {
	switch l.Kind {
	case ExportFormat:
		if l.Version != ExportVersion {
			return "", lineErr(line, nil, "format version %d is not supported (want %d)", l.Version, ExportVersion)
		}
		if l.Workspace == "" {
			return "", lineErr(line, nil, "header without a workspace")
		}
		set.workspace = l.Workspace
	case "workspace":
		if l.Workspace != set.workspace {
			return "", lineErr(line, nil, "workspace line names another workspace than the header")
		}
		if !isJSONObject(l.Settings) {
			return "", lineErr(line, nil, "settings must be a JSON object")
		}
		if l.CreatedAt == nil {
			return "", lineErr(line, nil, "workspace without created_at")
		}
		set.settings, set.createdAt = l.Settings, memory.Canon(*l.CreatedAt)
	case "principal":
		pr := l.Principal
		if err := validImportPrincipal(pr); err != nil {
			return "", lineErr(line, nil, "principal: %v", err)
		}
		if p.names[pr.Name] {
			return "", lineErr(line, nil, "principal name appears twice")
		}
		p.names[pr.Name] = true
		set.principals = append(set.principals, memory.Principal{ID: pr.ID, Kind: pr.Kind, Name: pr.Name, Trust: pr.Trust,
			CreatedAt: memory.Canon(pr.CreatedAt), RevokedAt: memory.CanonPtr(pr.RevokedAt)})
		set.principalL = append(set.principalL, line)
		return pr.ID, nil
	case "node":
		n := *l.Node
		if err := validImportNode(n); err != nil {
			return "", lineErr(line, nil, "node: %v", err)
		}
		key := n.Label + "\x00" + n.NaturalKey
		if p.nodeKeys[key] {
			return "", lineErr(line, nil, "node: label and natural_key appear twice")
		}
		p.nodeKeys[key], p.nodeIDs[n.ID] = true, true
		n.CreatedAt, n.UpdatedAt = memory.Canon(n.CreatedAt), memory.Canon(n.UpdatedAt)
		set.nodes = append(set.nodes, n)
		return n.ID, nil
	case "edge":
		e := *l.Edge
		if err := validImportEdge(e, p.nodeIDs); err != nil {
			return "", lineErr(line, nil, "edge: %v", err)
		}
		if e.InvalidatedAt == nil {
			key := e.From + "\x00" + e.To + "\x00" + e.Relation
			if p.liveEdges[key] {
				return "", lineErr(line, nil, "edge: two live edges join the same nodes by the same relation")
			}
			p.liveEdges[key] = true
		}
		e.ObservedAt, e.CreatedAt, e.UpdatedAt = memory.Canon(e.ObservedAt), memory.Canon(e.CreatedAt), memory.Canon(e.UpdatedAt)
		e.ValidFrom, e.ValidUntil, e.InvalidatedAt = memory.CanonPtr(e.ValidFrom), memory.CanonPtr(e.ValidUntil), memory.CanonPtr(e.InvalidatedAt)
		set.edges = append(set.edges, e)
		return e.ID, nil
	case "record":
		if len(l.Versions) == 0 {
			return "", lineErr(line, nil, "record without versions")
		}
		id := l.Versions[0].ID
		for i := range l.Versions {
			if err := s.validImportVersion(&l.Versions[i], id, i+1); err != nil {
				return "", lineErr(line, err, "record %s version %d: %s", clip(id), i+1, fault.As(err).Message)
			}
		}
		p.recordIDs[id] = true
		set.records = append(set.records, l.Versions)
		set.counts.Versions += len(l.Versions)
		return id, nil
	case "approval":
		a := l.Approval
		if err := validImportApproval(a, p.recordIDs); err != nil {
			return "", lineErr(line, nil, "approval: %v", err)
		}
		set.approvals = append(set.approvals, memory.Approval{ID: a.ID, RecordID: a.RecordID, Kind: a.Kind, Reason: a.Reason,
			Status: a.Status, CreatedAt: memory.Canon(a.CreatedAt), ExpiresAt: memory.Canon(a.ExpiresAt),
			DecidedAt: memory.CanonPtr(a.DecidedAt), DecidedBy: a.DecidedBy,
			DecisionReason: a.DecisionReason, ReasonSubjects: a.ReasonSubjects})
		return a.ID, nil
	case "end":
		got := ExportCounts{Principals: len(set.principals), Nodes: len(set.nodes), Edges: len(set.edges),
			Records: len(set.records), Versions: set.counts.Versions, Approvals: len(set.approvals)}
		if *l.Counts != got {
			return "", lineErr(line, nil, "the counts do not match the lines before (file truncated or edited?)")
		}
		set.counts = got
		p.ended = true
	}
	return "", nil
}

// checkLineFields requires exactly the fields of the line's kind.
func checkLineFields(l exportLine) error {
	has := map[string]bool{
		"version": l.Version != 0, "workspace": l.Workspace != "", "settings": l.Settings != nil, "created_at": l.CreatedAt != nil,
		"principal": l.Principal != nil, "node": l.Node != nil, "edge": l.Edge != nil, "versions": l.Versions != nil,
		"approval": l.Approval != nil, "counts": l.Counts != nil,
	}
	allowed := map[string][]string{
		ExportFormat: {"version", "workspace"},
		"workspace":  {"workspace", "settings", "created_at"},
		"principal":  {"principal"},
		"node":       {"node"},
		"edge":       {"edge"},
		"record":     {"versions"},
		"approval":   {"approval"},
		"end":        {"counts"},
	}[l.Kind]
	for f, ok := range has {
		if ok && !slices.Contains(allowed, f) {
			return fmt.Errorf("a %s line has no %q field", l.Kind, f)
		}
	}
	for _, f := range allowed {
		if !has[f] && f != "settings" {
			return fmt.Errorf("a %s line needs %q", l.Kind, f)
		}
	}
	return nil
}

func validImportPrincipal(p *exportPrincipal) error {
	if !memory.ValidID(p.ID) {
		return errors.New("id must be a UUID")
	}
	switch p.Kind {
	case memory.KindOperator, memory.KindAgent:
		if !validName(p.Name) {
			return errors.New("name must be 1-64 characters of letters, digits, '_', '-' or '.'")
		}
	case memory.KindUser:
		if u, ok := strings.CutPrefix(p.Name, userNamePrefix); !ok || !ValidUserID(u) {
			return errors.New("a gateway user's name must be user:<user id>")
		}
	default:
		return errors.New("kind must be operator, agent or user")
	}
	if p.Trust != "" && !slices.Contains(memory.TrustLevels, p.Trust) {
		return errors.New("trust must be trusted, standard, restricted, read_only or empty")
	}
	if p.Kind == memory.KindAgent && p.Trust == "" {
		return errors.New("an agent needs a trust level")
	}
	if p.CreatedAt.IsZero() {
		return errors.New("created_at is required")
	}
	return nil
}

func validImportNode(n memory.Node) error {
	switch {
	case !memory.ValidID(n.ID):
		return errors.New("id must be a UUID")
	case strings.TrimSpace(n.Label) == "":
		return errors.New("label must not be empty")
	case strings.TrimSpace(n.NaturalKey) == "":
		return errors.New("natural_key must not be empty")
	case !slices.Contains(memory.Provenances, n.Provenance):
		return errors.New("provenance must be operator, proposed, imported or extracted")
	case !slices.Contains(memory.NodeStatuses, n.Status):
		return errors.New("status must be provisional, active or archived")
	case !isJSONObject(n.Properties):
		return errors.New("properties must be a JSON object")
	case n.Access != "" && !slices.Contains(memory.AccessLevels, n.Access):
		return errors.New("access must be public, agent, user, system or sensitive")
	case n.CreatedAt.IsZero() || n.UpdatedAt.IsZero():
		return errors.New("created_at and updated_at are required")
	}
	return nil
}

func validImportEdge(e memory.Edge, nodes map[string]bool) error {
	switch {
	case !memory.ValidID(e.ID):
		return errors.New("id must be a UUID")
	case !nodes[e.From]:
		return errors.New("from is not a node of the file")
	case !nodes[e.To]:
		return errors.New("to is not a node of the file")
	case !graph.ValidRelation(e.Relation):
		return fmt.Errorf("relation %q is not one of SPEC §8", clip(e.Relation))
	case math.IsNaN(e.Weight) || math.IsInf(e.Weight, 0):
		return errors.New("weight must be a finite number")
	case !isJSONObject(e.Properties):
		return errors.New("properties must be a JSON object")
	case e.Access != "" && !slices.Contains(memory.AccessLevels, e.Access):
		return errors.New("access must be public, agent, user, system or sensitive")
	case e.ObservedAt.IsZero() || e.CreatedAt.IsZero() || e.UpdatedAt.IsZero():
		return errors.New("observed_at, created_at and updated_at are required")
	}
	return nil
}

func validImportApproval(a *exportApproval, records map[string]bool) error {
	switch {
	case !memory.ValidID(a.ID):
		return errors.New("id must be a UUID")
	case !records[a.RecordID]:
		return errors.New("record_id is not a record of the file")
	case !slices.Contains([]memory.ApprovalKind{memory.ApprovalPending, memory.ApprovalQuarantine, memory.ApprovalConflict}, a.Kind):
		return errors.New("kind must be pending_write, quarantine or conflict")
	case !slices.Contains([]memory.ApprovalStatus{memory.ApprovalOpen, memory.ApprovalApproved, memory.ApprovalRejected, memory.ApprovalExpired}, a.Status):
		return errors.New("status must be pending, approved, rejected or expired")
	case a.CreatedAt.IsZero() || a.ExpiresAt.IsZero():
		return errors.New("created_at and expires_at are required")
	case a.DecisionReason != "" && a.Status != memory.ApprovalRejected:
		return errors.New("decision_reason belongs to a rejected item")
	}
	for _, h := range a.ReasonSubjects {
		if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			return errors.New("reason_subjects must be sha256 hex digests")
		}
	}
	return nil
}

// validImportVersion checks version n of record id: live versions pass the
// gate's schema check and carry the hash of their content; tombstones
// carry no content. Times are brought to the storage precision.
func (s *Service) validImportVersion(r *memory.Record, id string, n int) error {
	switch {
	case !memory.ValidID(r.ID):
		return fault.Field("id", "must be a UUID")
	case r.ID != id:
		return fault.Field("id", "every version of a line must have the same id")
	case r.Version != n:
		return fault.Field("version", fmt.Sprintf("versions must run 1..n; want %d", n))
	case !slices.Contains(memory.Statuses, r.Status):
		return fault.Field("status", "must be one of provisional, active, quarantined, archived, superseded, forgotten")
	case len(r.ContentSHA256) != 64 || !isLowerHex(r.ContentSHA256):
		return fault.Field("content_sha256", "must be 64 lowercase hex digits")
	case r.CreatedAt.IsZero() || r.UpdatedAt.IsZero() || r.IngestedAt.IsZero():
		return fault.Field("created_at", "created_at, updated_at and ingested_at are required")
	case r.Supersedes != nil && !memory.ValidID(*r.Supersedes):
		return fault.Field("supersedes", "must be a record id")
	case r.SupersededBy != nil && !memory.ValidID(*r.SupersededBy):
		return fault.Field("superseded_by", "must be a record id")
	}
	if r.Status == memory.Forgotten {
		if !slices.Contains(memory.Types, r.Type) {
			return fault.Field("type", "unknown type")
		}
		if r.Content != "" {
			return fault.Field("content", "a forgotten record's tombstone carries no content")
		}
	} else {
		if err := s.policy.CheckSchema(*r); err != nil {
			return err
		}
		if r.ContentSHA256 != memory.SHA256Hex(r.Content) {
			return fault.Field("content_sha256", "is not the sha256 of the content")
		}
		seen := make(map[string]bool, len(r.Entities))
		for _, e := range r.Entities {
			if seen[e] {
				return fault.Field("entities", "an entity appears twice")
			}
			seen[e] = true
		}
	}
	if r.Metadata == nil {
		r.Metadata = json.RawMessage(`{}`)
	}
	if r.Entities == nil {
		r.Entities = []string{}
	}
	if r.Source.Evidence == nil {
		r.Source.Evidence = []string{}
	}
	r.CreatedAt, r.UpdatedAt, r.IngestedAt = memory.Canon(r.CreatedAt), memory.Canon(r.UpdatedAt), memory.Canon(r.IngestedAt)
	r.ValidFrom, r.ValidUntil = memory.CanonPtr(r.ValidFrom), memory.CanonPtr(r.ValidUntil)
	r.InvalidatedAt, r.LastRetrievedAt = memory.CanonPtr(r.InvalidatedAt), memory.CanonPtr(r.LastRetrievedAt)
	return nil
}

// Import reads an export (see Export) into the operator's workspace. The
// whole file is read and validated first: a bad line imports nothing and
// the error, invalid_argument, names the line in its details. Then
// everything is written in one transaction, with one audit entry
// (workspace.import, counts only), and the indexes read the records from
// the change log.
//
// The workspace must be empty: no records, graph, approvals or
// principals other than operators. If it does not exist it is created
// with the file's settings and creation time. The file's principals are
// imported without tokens (give them new ones: memgate agents rotate,
// users rotate-key); one whose id or name already exists in the workspace — the
// bootstrap operator, typically — is kept as it is. A principal id that
// exists in another workspace of the database is a conflict.
//
// Import restores history rather than writing anew: every version passes
// the gate's schema check, but the gate's decisions, statuses and
// timestamps are kept as recorded.
func (s *Service) Import(ctx context.Context, by memory.Principal, r io.Reader, progress func(done int)) (ImportStats, error) {
	if err := requireOperator(by); err != nil {
		return ImportStats{}, err
	}
	ws := by.Workspace
	set, err := s.parseImport(ctx, r)
	if err != nil {
		return ImportStats{Workspace: ws}, err
	}
	var st ImportStats
	err = s.tx(ctx, "workspace "+ws, func(tx store.Tx) error {
		st = ImportStats{Workspace: ws}
		if _, err := tx.GetWorkspace(ctx, ws); errors.Is(err, store.ErrNotFound) {
			if err := tx.CreateWorkspace(ctx, memory.Workspace{ID: ws, Settings: set.settings, CreatedAt: set.createdAt}); err != nil {
				return err
			}
			st.WorkspaceCreated = true
		} else if err != nil {
			return err
		} else if err := ensureEmpty(ctx, tx, ws); err != nil {
			return err
		}
		if err := importPrincipals(ctx, tx, ws, set, &st); err != nil {
			return err
		}
		for _, n := range set.nodes {
			if err := tx.InsertNode(ctx, ws, n); err != nil {
				return err
			}
		}
		for _, e := range set.edges {
			if err := tx.InsertEdge(ctx, ws, e); err != nil {
				return err
			}
		}
		st.Nodes, st.Edges = len(set.nodes), len(set.edges)
		if err := importRecords(ctx, tx, ws, set, &st, progress); err != nil {
			return err
		}
		for _, a := range set.approvals {
			a.Workspace = ws
			if err := tx.InsertApproval(ctx, a); err != nil {
				return err
			}
		}
		st.Approvals = len(set.approvals)
		// Nodes are seen through the imported records that name them
		// (grants are derived, never exported).
		ents := make([]string, len(set.nodes))
		for i, n := range set.nodes {
			ents[i] = n.EntityKey()
		}
		if _, err := regrantEntities(ctx, tx, ws, ents); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, ws, by, "", "workspace.import", s.clock(), map[string]any{
			"workspace_created": st.WorkspaceCreated, "principals": st.Principals, "principals_kept": st.PrincipalsKept,
			"nodes": st.Nodes, "edges": st.Edges, "records": st.Records, "versions": st.Versions, "approvals": st.Approvals,
		})
		return err
	})
	if err != nil {
		return ImportStats{Workspace: ws}, err
	}
	s.logMoved(ctx)
	return st, nil
}

// importPrincipals inserts the file's principals without tokens,
// keeping one whose id or name the workspace already has; an id that
// belongs to another workspace of the database is a conflict.
func importPrincipals(ctx context.Context, tx store.Tx, ws string, set *importSet, st *ImportStats) error {
	for i, p := range set.principals {
		if _, err := tx.GetPrincipal(ctx, store.PrincipalFind{Workspace: ws, ID: p.ID}); err == nil {
			st.PrincipalsKept++
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := tx.GetPrincipal(ctx, store.PrincipalFind{Workspace: ws, Name: p.Name}); err == nil {
			st.PrincipalsKept++
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := tx.GetPrincipal(ctx, store.PrincipalFind{ID: p.ID}); err == nil {
			l := set.principalL[i]
			return &fault.Error{Code: fault.Conflict, Details: map[string]any{"line": l},
				Message: fmt.Sprintf("import: line %d: the principal's id belongs to another workspace of this database", l)}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		p.Workspace = ws
		if err := tx.InsertPrincipal(ctx, p); err != nil {
			return err
		}
		st.Principals++
	}
	return nil
}

// importRecords inserts each record's first version and replays the
// later ones over it, reporting progress after each record.
func importRecords(ctx context.Context, tx store.Tx, ws string, set *importSet, st *ImportStats, progress func(done int)) error {
	for i, vs := range set.records {
		if i%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := tx.InsertRecord(ctx, ws, vs[0]); err != nil {
			return err
		}
		for k := 1; k < len(vs); k++ {
			if err := tx.UpdateRecord(ctx, ws, vs[k], k); err != nil {
				return err
			}
		}
		st.Records++
		st.Versions += len(vs)
		if progress != nil {
			progress(st.Records)
		}
	}
	return nil
}

// ensureEmpty refuses a workspace that holds anything but operators.
func ensureEmpty(ctx context.Context, tx store.Tx, ws string) error {
	notEmpty := func(what string) error {
		return fault.New(fault.Conflict, fmt.Sprintf("workspace %q is not empty (it has %s); import needs an empty workspace", ws, what))
	}
	recs, err := tx.ListRecords(ctx, ws, store.RecordQuery{Statuses: memory.Statuses,
		Access: store.AccessFilter{Levels: memory.AccessLevels}, IncludeInvalidated: true, Limit: 1})
	if err != nil {
		return err
	}
	if len(recs) > 0 {
		return notEmpty("records")
	}
	nodes, err := tx.ListNodes(ctx, ws, store.NodeQuery{Limit: 1})
	if err != nil {
		return err
	}
	if len(nodes) > 0 {
		return notEmpty("graph nodes")
	}
	aps, err := tx.ListApprovals(ctx, ws, "", "", 1)
	if err != nil {
		return err
	}
	if len(aps) > 0 {
		return notEmpty("approval items")
	}
	ps, err := tx.ListPrincipals(ctx, ws, "")
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Kind != memory.KindOperator {
			return notEmpty(string(p.Kind) + "s")
		}
	}
	return nil
}

func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

func isLowerHex(s string) bool {
	if _, err := hex.DecodeString(s); err != nil {
		return false
	}
	return strings.ToLower(s) == s
}

// jsonProblem describes a decoding error without echoing the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %s has the wrong type", te.Field)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return clip(strings.TrimPrefix(err.Error(), "json: "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated JSON"
	}
	return "invalid JSON"
}

// clip bounds a value quoted in an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
