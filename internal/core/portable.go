package core

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/fault"
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
	// DecisionReason is a reject's readable reason, and ReasonSubjects
	// the hashes of the subjects its record named, which forget_subject
	// erases it by once the record is a tombstone: both travel, or a
	// migration would lose the reason or keep it from being forgotten.
	// Empty ones are left out, so files without reasons are unchanged.
	DecisionReason string   `json:"decision_reason,omitempty"`
	ReasonSubjects []string `json:"reason_subjects,omitempty"`
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

	// The sections in the format's order; each stops at a write error.
	if err := s.exportPrincipals(ctx, ws, lw, &st); err != nil {
		return st, err
	}
	if err := s.exportGraph(ctx, ws, lw, &st); err != nil {
		return st, err
	}
	if lw.err != nil {
		return st, lw.err
	}
	records, err := s.exportRecords(ctx, ws, lw, &st, progress)
	if err != nil {
		return st, err
	}
	if err := s.exportApprovals(ctx, ws, lw, &st, records); err != nil {
		return st, err
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

// exportPrincipals writes the workspace's principals by id, memgate's
// own system principals left out.
func (s *Service) exportPrincipals(ctx context.Context, ws string, lw *lineWriter, st *ExportStats) error {
	ps, err := s.store.ListPrincipals(ctx, ws, "")
	if err != nil {
		return storeErr(err, "principals")
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
	return nil
}

// exportGraph writes every node, then every edge (invalidated ones
// included) whose two nodes were written.
func (s *Service) exportGraph(ctx context.Context, ws string, lw *lineWriter, st *ExportStats) error {
	nodes := map[string]bool{}
	for after := ""; ; {
		page, err := s.store.ListNodes(ctx, ws, store.NodeQuery{After: after, Limit: store.MaxLimit})
		if err != nil {
			return storeErr(err, "nodes")
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
			return storeErr(err, "edges")
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
	return nil
}

// exportRecords writes every record with its whole history, ascending by
// id, and returns the ids written.
func (s *Service) exportRecords(ctx context.Context, ws string, lw *lineWriter, st *ExportStats, progress func(done int)) (map[string]bool, error) {
	// Record ids newest first, page by page, then ascending.
	var ids []string
	q := store.RecordQuery{Statuses: memory.Statuses, Access: store.AccessFilter{Levels: memory.AccessLevels},
		IncludeInvalidated: true, Limit: store.MaxLimit}
	for {
		page, err := s.store.ListRecords(ctx, ws, q)
		if err != nil {
			return nil, storeErr(err, "records")
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
			return nil, storeErr(err, "export")
		}
		vs, err := s.store.ListVersions(ctx, ws, id)
		if err != nil {
			return nil, storeErr(err, "record "+id)
		}
		lw.put(exportLine{Kind: "record", Versions: vs})
		if lw.err != nil {
			return nil, lw.err
		}
		records[id] = true
		st.Records++
		st.Versions += len(vs)
		if progress != nil {
			progress(st.Records)
		}
	}
	return records, nil
}

// exportApprovals writes the approval items of the records written.
func (s *Service) exportApprovals(ctx context.Context, ws string, lw *lineWriter, st *ExportStats, records map[string]bool) error {
	for after := ""; ; {
		page, err := s.store.ListApprovals(ctx, ws, "", after, store.MaxLimit)
		if err != nil {
			return storeErr(err, "approvals")
		}
		for _, a := range page {
			if !records[a.RecordID] {
				continue
			}
			lw.put(exportLine{Kind: "approval", Approval: &exportApproval{
				ID: a.ID, RecordID: a.RecordID, Kind: a.Kind, Reason: a.Reason, Status: a.Status,
				CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt, DecidedBy: a.DecidedBy,
				DecisionReason: a.DecisionReason, ReasonSubjects: a.ReasonSubjects,
			}})
			st.Approvals++
		}
		if len(page) < store.MaxLimit {
			break
		}
		after = page[len(page)-1].ID
	}
	return nil
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
