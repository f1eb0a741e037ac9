package core

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
	"unicode/utf16"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Export and import (SPEC §9). An export is NDJSON, one object a line,
// every line in RFC 8785 canonical form, in this order:
//
//	{"kind":"memgate-export","version":1,"workspace":NAME}        header
//	{"kind":"workspace","workspace":NAME,"settings":{},"created_at":T}
//	{"kind":"principal","principal":{id,kind,name,trust,created_at,revoked_at}}  by id
//	{"kind":"node","node":{...}}                                   by id, every status
//	{"kind":"edge","edge":{...}}                                   by id, invalidated ones included
//	{"kind":"record","versions":[v1,...,vN]}                       by id, every status, full history
//	{"kind":"approval","approval":{...}}                           by id, every status
//	{"kind":"end","counts":{...}}                                  trailer
//
// The same workspace exported twice gives the same bytes, and so does an
// export of its import into a fresh data directory. Principals carry no
// token hashes or user keys; forgotten records are their tombstones, as
// stored. Vectors, the embedding cache, the audit log, conversation
// messages, jobs and the gatekeeper log are derived or operational and are
// not exported; neither are a head's retrieval counters
// (last_retrieved_at, retrieval_count), which change without a version:
// an imported head carries its last version's.

// ExportFormat and ExportVersion identify the format in the header line.
const (
	ExportFormat  = "memgate-export"
	ExportVersion = 1
)

// maxImportLine bounds one line of an import (a record with its whole
// history is one line).
const maxImportLine = 64 << 20

// ExportStats counts what an export wrote.
type ExportStats struct {
	Workspace string `json:"workspace"`
	ExportCounts
	Bytes int64 `json:"bytes"`
}

// ExportCounts are the trailer's counts.
type ExportCounts struct {
	Principals int `json:"principals"`
	Nodes      int `json:"nodes"`
	Edges      int `json:"edges"`
	Records    int `json:"records"`
	Versions   int `json:"versions"`
	Approvals  int `json:"approvals"`
}

// ImportStats counts what an import wrote. PrincipalsKept counts the
// file's principals that matched an existing one by id or name (the
// existing one is kept as it is).
type ImportStats struct {
	Workspace        string `json:"workspace"`
	WorkspaceCreated bool   `json:"workspace_created"`
	ExportCounts
	PrincipalsKept int `json:"principals_kept"`
}

// exportLine is every line kind; the fields a kind does not use are
// absent.
type exportLine struct {
	Kind      string           `json:"kind"`
	Version   int              `json:"version,omitempty"`
	Workspace string           `json:"workspace,omitempty"`
	Settings  json.RawMessage  `json:"settings,omitempty"`
	CreatedAt *time.Time       `json:"created_at,omitempty"`
	Principal *exportPrincipal `json:"principal,omitempty"`
	Node      *memory.Node     `json:"node,omitempty"`
	Edge      *memory.Edge     `json:"edge,omitempty"`
	Versions  []memory.Record  `json:"versions,omitempty"`
	Approval  *exportApproval  `json:"approval,omitempty"`
	Counts    *ExportCounts    `json:"counts,omitempty"`
}

// exportPrincipal is a principal without its workspace and, above all,
// without its token hash.
type exportPrincipal struct {
	ID        string               `json:"id"`
	Kind      memory.PrincipalKind `json:"kind"`
	Name      string               `json:"name"`
	Trust     memory.Trust         `json:"trust"`
	CreatedAt time.Time            `json:"created_at"`
	RevokedAt *time.Time           `json:"revoked_at"`
}

// exportApproval is an approval item without its workspace.
type exportApproval struct {
	ID        string                `json:"id"`
	RecordID  string                `json:"record_id"`
	Kind      memory.ApprovalKind   `json:"kind"`
	Reason    string                `json:"reason"`
	Status    memory.ApprovalStatus `json:"status"`
	CreatedAt time.Time             `json:"created_at"`
	ExpiresAt time.Time             `json:"expires_at"`
	DecidedAt *time.Time            `json:"decided_at"`
	DecidedBy string                `json:"decided_by"`
}

// Line kinds, in file order (rank).
var lineRank = map[string]int{
	ExportFormat: 0, "workspace": 1, "principal": 2, "node": 3, "edge": 4, "record": 5, "approval": 6, "end": 7,
}

// lineWriter writes canonical lines and counts bytes.
type lineWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	n   int64
	err error
}

func (lw *lineWriter) put(l exportLine) {
	if lw.err != nil {
		return
	}
	raw, err := json.Marshal(l)
	lw.buf.Reset()
	if err == nil {
		err = canonicalLine(raw, &lw.buf)
	}
	if err != nil {
		lw.err = fault.Wrap(fault.Internal, err, "export: cannot encode a %s line", l.Kind)
		return
	}
	lw.buf.WriteByte('\n')
	n, err := lw.w.Write(lw.buf.Bytes())
	lw.n += int64(n)
	if err != nil {
		lw.err = fault.Wrap(fault.Unavailable, err, "export: write failed")
	}
}

// Export writes the operator's workspace to w as canonical NDJSON (see the
// format above). progress, if not nil, is called with the number of
// records written so far, after each record. The reads are not one
// snapshot: on a busy server each line is consistent, and edges and
// approvals whose nodes or record were created after those were read are
// left out (they belong to the next export).
func (s *Service) Export(ctx context.Context, by memory.Principal, w io.Writer, progress func(done int)) (ExportStats, error) {
	if err := requireOperator(by); err != nil {
		return ExportStats{}, err
	}
	ws := by.Workspace
	st := ExportStats{Workspace: ws}
	wsRow, err := s.store.GetWorkspace(ctx, ws)
	if err != nil {
		return st, storeErr(err, "workspace "+ws)
	}
	lw := &lineWriter{w: bufio.NewWriterSize(w, 256<<10)}
	lw.put(exportLine{Kind: ExportFormat, Version: ExportVersion, Workspace: ws})
	settings := wsRow.Settings
	if len(settings) == 0 {
		settings = json.RawMessage(`{}`)
	}
	created := wsRow.CreatedAt
	lw.put(exportLine{Kind: "workspace", Workspace: ws, Settings: settings, CreatedAt: &created})

	ps, err := s.store.ListPrincipals(ctx, ws, "")
	if err != nil {
		return st, storeErr(err, "principals")
	}
	slices.SortFunc(ps, func(a, b memory.Principal) int { return strings.Compare(a.ID, b.ID) })
	for _, p := range ps {
		if p.Kind == memory.KindSystem {
			continue
		}
		lw.put(exportLine{Kind: "principal", Principal: &exportPrincipal{
			ID: p.ID, Kind: p.Kind, Name: p.Name, Trust: p.Trust, CreatedAt: p.CreatedAt, RevokedAt: p.RevokedAt,
		}})
		st.Principals++
	}

	nodes := map[string]bool{}
	for after := ""; ; {
		page, err := s.store.ListNodes(ctx, ws, store.NodeQuery{After: after, Limit: store.MaxLimit})
		if err != nil {
			return st, storeErr(err, "nodes")
		}
		for i := range page {
			lw.put(exportLine{Kind: "node", Node: &page[i]})
			nodes[page[i].ID] = true
			st.Nodes++
		}
		if len(page) < store.MaxLimit {
			break
		}
		after = page[len(page)-1].ID
	}
	for after := ""; ; {
		page, err := s.store.ListEdges(ctx, ws, store.EdgeQuery{IncludeInvalidated: true, After: after, Limit: store.MaxLimit})
		if err != nil {
			return st, storeErr(err, "edges")
		}
		for i := range page {
			if e := &page[i]; nodes[e.From] && nodes[e.To] {
				lw.put(exportLine{Kind: "edge", Edge: e})
				st.Edges++
			}
		}
		if len(page) < store.MaxLimit {
			break
		}
		after = page[len(page)-1].ID
	}
	if lw.err != nil {
		return st, lw.err
	}

	// Record ids newest first, page by page, then ascending.
	var ids []string
	q := store.RecordQuery{Statuses: memory.Statuses, Access: store.AccessFilter{Levels: memory.AccessLevels},
		IncludeInvalidated: true, Limit: store.MaxLimit}
	for {
		page, err := s.store.ListRecords(ctx, ws, q)
		if err != nil {
			return st, storeErr(err, "records")
		}
		for _, r := range page {
			ids = append(ids, r.ID)
		}
		if len(page) < store.MaxLimit {
			break
		}
		q.Before = page[len(page)-1].ID
	}
	slices.Reverse(ids)
	records := make(map[string]bool, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return st, storeErr(err, "export")
		}
		vs, err := s.store.ListVersions(ctx, ws, id)
		if err != nil {
			return st, storeErr(err, "record "+id)
		}
		lw.put(exportLine{Kind: "record", Versions: vs})
		if lw.err != nil {
			return st, lw.err
		}
		records[id] = true
		st.Records++
		st.Versions += len(vs)
		if progress != nil {
			progress(st.Records)
		}
	}

	for after := ""; ; {
		page, err := s.store.ListApprovals(ctx, ws, "", after, store.MaxLimit)
		if err != nil {
			return st, storeErr(err, "approvals")
		}
		for _, a := range page {
			if !records[a.RecordID] {
				continue
			}
			lw.put(exportLine{Kind: "approval", Approval: &exportApproval{
				ID: a.ID, RecordID: a.RecordID, Kind: a.Kind, Reason: a.Reason, Status: a.Status,
				CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt, DecidedBy: a.DecidedBy,
			}})
			st.Approvals++
		}
		if len(page) < store.MaxLimit {
			break
		}
		after = page[len(page)-1].ID
	}
	counts := st.ExportCounts
	lw.put(exportLine{Kind: "end", Counts: &counts})
	if lw.err == nil {
		if err := lw.w.Flush(); err != nil {
			lw.err = fault.Wrap(fault.Unavailable, err, "export: write failed")
		}
	}
	st.Bytes = lw.n
	return st, lw.err
}

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
	var (
		line         int
		rank         = -1
		lastID       string
		nodeIDs      = map[string]bool{}
		nodeKeys     = map[string]bool{}
		liveEdges    = map[string]bool{}
		recordIDs    = map[string]bool{}
		principalIDs = map[string]bool{}
		names        = map[string]bool{}
		ended        bool
		buf          []byte
	)
	for {
		if line%1000 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, storeErr(err, "import")
			}
		}
		chunk, err := br.ReadSlice('\n')
		buf = append(buf[:0], chunk...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > maxImportLine {
				return nil, lineErr(line+1, nil, "longer than %d bytes", maxImportLine)
			}
			chunk, err = br.ReadSlice('\n')
			buf = append(buf, chunk...)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fault.Wrap(fault.Unavailable, err, "import: cannot read line %d", line+1)
		}
		if len(buf) == 0 && errors.Is(err, io.EOF) {
			break
		}
		line++
		text := bytes.TrimSuffix(buf, []byte("\n"))
		if ended {
			return nil, lineErr(line, nil, "data after the end line")
		}
		if len(bytes.TrimSpace(text)) == 0 {
			return nil, lineErr(line, nil, "empty line")
		}
		var l exportLine
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if derr := dec.Decode(&l); derr != nil {
			return nil, lineErr(line, derr, "not a valid export line: %s", jsonProblem(derr))
		}
		if dec.More() {
			return nil, lineErr(line, nil, "more than one JSON value")
		}
		want, known := lineRank[l.Kind]
		if !known {
			return nil, lineErr(line, nil, "unknown kind %q", clip(l.Kind))
		}
		if line == 1 && l.Kind != ExportFormat {
			return nil, lineErr(line, nil, "want the header line {\"kind\":%q,...}", ExportFormat)
		}
		if want < rank || (want == rank && want <= lineRank["workspace"]) {
			return nil, lineErr(line, nil, "%s line out of order", l.Kind)
		}
		if want > rank {
			lastID = ""
		}
		if want > lineRank["workspace"] && rank < lineRank["workspace"] {
			return nil, lineErr(line, nil, "missing the workspace line")
		}
		rank = want
		if err := checkLineFields(l); err != nil {
			return nil, lineErr(line, nil, "%v", err)
		}
		id := ""
		switch l.Kind {
		case ExportFormat:
			if l.Version != ExportVersion {
				return nil, lineErr(line, nil, "format version %d is not supported (want %d)", l.Version, ExportVersion)
			}
			if l.Workspace == "" {
				return nil, lineErr(line, nil, "header without a workspace")
			}
			set.workspace = l.Workspace
		case "workspace":
			if l.Workspace != set.workspace {
				return nil, lineErr(line, nil, "workspace line names another workspace than the header")
			}
			if !isJSONObject(l.Settings) {
				return nil, lineErr(line, nil, "settings must be a JSON object")
			}
			if l.CreatedAt == nil {
				return nil, lineErr(line, nil, "workspace without created_at")
			}
			set.settings, set.createdAt = l.Settings, memory.Canon(*l.CreatedAt)
		case "principal":
			p := l.Principal
			id = p.ID
			if err := validImportPrincipal(p); err != nil {
				return nil, lineErr(line, nil, "principal: %v", err)
			}
			if names[p.Name] {
				return nil, lineErr(line, nil, "principal name appears twice")
			}
			names[p.Name] = true
			principalIDs[p.ID] = true
			set.principals = append(set.principals, memory.Principal{ID: p.ID, Kind: p.Kind, Name: p.Name, Trust: p.Trust,
				CreatedAt: memory.Canon(p.CreatedAt), RevokedAt: memory.CanonPtr(p.RevokedAt)})
			set.principalL = append(set.principalL, line)
		case "node":
			n := *l.Node
			id = n.ID
			if err := validImportNode(n); err != nil {
				return nil, lineErr(line, nil, "node: %v", err)
			}
			key := n.Label + "\x00" + n.NaturalKey
			if nodeKeys[key] {
				return nil, lineErr(line, nil, "node: label and natural_key appear twice")
			}
			nodeKeys[key], nodeIDs[n.ID] = true, true
			n.CreatedAt, n.UpdatedAt = memory.Canon(n.CreatedAt), memory.Canon(n.UpdatedAt)
			set.nodes = append(set.nodes, n)
		case "edge":
			e := *l.Edge
			id = e.ID
			if err := validImportEdge(e, nodeIDs); err != nil {
				return nil, lineErr(line, nil, "edge: %v", err)
			}
			if e.InvalidatedAt == nil {
				key := e.From + "\x00" + e.To + "\x00" + e.Relation
				if liveEdges[key] {
					return nil, lineErr(line, nil, "edge: two live edges join the same nodes by the same relation")
				}
				liveEdges[key] = true
			}
			e.ObservedAt, e.CreatedAt, e.UpdatedAt = memory.Canon(e.ObservedAt), memory.Canon(e.CreatedAt), memory.Canon(e.UpdatedAt)
			e.ValidFrom, e.ValidUntil, e.InvalidatedAt = memory.CanonPtr(e.ValidFrom), memory.CanonPtr(e.ValidUntil), memory.CanonPtr(e.InvalidatedAt)
			set.edges = append(set.edges, e)
		case "record":
			if len(l.Versions) == 0 {
				return nil, lineErr(line, nil, "record without versions")
			}
			id = l.Versions[0].ID
			for i := range l.Versions {
				if err := s.validImportVersion(&l.Versions[i], id, i+1); err != nil {
					return nil, lineErr(line, err, "record %s version %d: %s", clip(id), i+1, fault.As(err).Message)
				}
			}
			recordIDs[id] = true
			set.records = append(set.records, l.Versions)
			set.counts.Versions += len(l.Versions)
		case "approval":
			a := l.Approval
			id = a.ID
			if err := validImportApproval(a, recordIDs); err != nil {
				return nil, lineErr(line, nil, "approval: %v", err)
			}
			set.approvals = append(set.approvals, memory.Approval{ID: a.ID, RecordID: a.RecordID, Kind: a.Kind, Reason: a.Reason,
				Status: a.Status, CreatedAt: memory.Canon(a.CreatedAt), ExpiresAt: memory.Canon(a.ExpiresAt),
				DecidedAt: memory.CanonPtr(a.DecidedAt), DecidedBy: a.DecidedBy})
		case "end":
			got := ExportCounts{Principals: len(set.principals), Nodes: len(set.nodes), Edges: len(set.edges),
				Records: len(set.records), Versions: set.counts.Versions, Approvals: len(set.approvals)}
			if *l.Counts != got {
				return nil, lineErr(line, nil, "the counts do not match the lines before (file truncated or edited?)")
			}
			set.counts = got
			ended = true
		}
		if id != "" {
			if id <= lastID {
				return nil, lineErr(line, nil, "%s ids must be strictly ascending", l.Kind)
			}
			lastID = id
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if !ended {
		return nil, lineErr(line+1, nil, "missing the end line (file truncated?)")
	}
	return set, nil
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
// (workspace.import, counts only), and the records are published to the
// search index.
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
	var heads []memory.Record
	err = s.tx(ctx, "workspace "+ws, func(tx store.Tx) error {
		st = ImportStats{Workspace: ws}
		heads = heads[:0]
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
		for i, p := range set.principals {
			if _, err := tx.GetPrincipal(ctx, ws, p.ID); err == nil {
				st.PrincipalsKept++
				continue
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if _, err := tx.GetPrincipalByName(ctx, ws, p.Name); err == nil {
				st.PrincipalsKept++
				continue
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if _, err := tx.FindPrincipal(ctx, p.ID); err == nil {
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
			heads = append(heads, vs[len(vs)-1])
			st.Records++
			st.Versions += len(vs)
			if progress != nil {
				progress(st.Records)
			}
		}
		for _, a := range set.approvals {
			a.Workspace = ws
			if err := tx.InsertApproval(ctx, a); err != nil {
				return err
			}
		}
		st.Approvals = len(set.approvals)
		_, err := appendAudit(ctx, tx, ws, by, "", "workspace.import", s.clock(), map[string]any{
			"workspace_created": st.WorkspaceCreated, "principals": st.Principals, "principals_kept": st.PrincipalsKept,
			"nodes": st.Nodes, "edges": st.Edges, "records": st.Records, "versions": st.Versions, "approvals": st.Approvals,
		})
		return err
	})
	if err != nil {
		return ImportStats{Workspace: ws}, err
	}
	s.publish(ws, heads...)
	s.publishGraph(ws, graphEffects{nodes: set.nodes, edges: set.edges})
	return st, nil
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

// canonicalLine returns the RFC 8785 canonical form of the JSON text raw,
// byte for byte what audit.Canonicalize returns (a test holds them
// equal), several times faster: it decodes once into Go values instead of
// token by token. Numbers other than short integers go through
// audit.Canonicalize, which owns ECMAScript number formatting.
func canonicalLine(raw []byte, out *bytes.Buffer) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return writeCanonical(out, v)
}

func writeCanonical(out *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		out.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				out.WriteByte(',')
			}
			audit.WriteString(out, k)
			out.WriteByte(':')
			if err := writeCanonical(out, t[k]); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	case []any:
		out.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := writeCanonical(out, e); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	case string:
		audit.WriteString(out, t)
	case json.Number:
		if shortInt(string(t)) {
			out.WriteString(string(t))
			return nil
		}
		c, err := audit.Canonicalize([]byte(t))
		if err != nil {
			// A number no double holds (1e400) cannot be written in
			// canonical form. The gate refuses such numbers now, but
			// older data may hold them, and an export must never fail
			// on stored data: keep the digits, as a string.
			audit.WriteString(out, string(t))
			return nil
		}
		out.Write(c)
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

// shortInt reports whether s is an integer that is already in canonical
// form: no sign but a minus, no leading zero, no "-0", at most 15 digits
// (exact in a double).
func shortInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	if d == "" || len(d) > 15 || (d[0] == '0' && (len(d) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// compareUTF16 orders object keys as RFC 8785 §3.2.3 does, by UTF-16 code
// units; byte order agrees unless a key holds a character above U+FFFF.
func compareUTF16(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < 0x80 && b[i] < 0x80 {
				return int(a[i]) - int(b[i])
			}
			for i > 0 && !utf8.RuneStart(a[i]) {
				i--
			}
			return slices.Compare(utf16.Encode([]rune(a[i:])), utf16.Encode([]rune(b[i:])))
		}
	}
	return len(a) - len(b)
}
