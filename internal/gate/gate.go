package gate

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Reason codes carried by rejections and decisions; they appear in audit
// payloads and error details, so they are stable identifiers.
const (
	ReasonSchema        = "schema"
	ReasonReadOnly      = "read_only"
	ReasonTypeDenied    = "type_not_allowed"
	ReasonAccessDenied  = "access_not_allowed"
	ReasonRateLimited   = "rate_limited"
	ReasonPII           = "pii"
	ReasonPIIEvidence   = "pii_evidence"
	ReasonPIIOwn        = "pii_own_conversation"
	ReasonDuplicate     = "exact_duplicate"
	ReasonRestricted    = "restricted_trust"
	ReasonRequested     = "provisional_requested"
	ReasonPolicyAccept  = "policy"
	ReasonNotAPrincipal = "not_a_writer"
)

// Input is one proposed record version and who proposes it.
type Input struct {
	Principal memory.Principal
	Record    memory.Record
	// WantProvisional is set when the writer asked for provisional status.
	WantProvisional bool
	// EvidenceFlagged is set when an evidence record was itself flagged by
	// the PII screen: derived records inherit the flag (SPEC §4 step 4).
	EvidenceFlagged bool
	// OwnConversation is set for a gateway user's own chat turn: an
	// episode the user writes into its own scope (pii.own_conversation).
	OwnConversation bool
}

// Outcome is the gate's verdict on an Input that passed schema and
// authorization. Duplicates are decided by the caller, which can see the
// store.
type Outcome struct {
	Decision     string
	Status       memory.Status
	Access       memory.Access
	Reason       string
	PIIKinds     []string
	ApprovalKind memory.ApprovalKind // "" when nothing waits for an operator
}

// CheckSchema validates a record against SPEC §4 step 1 and the policy's
// limits. Errors name the field and never echo its value.
func (p Policy) CheckSchema(r memory.Record) error {
	l := p.Limits
	if !slices.Contains(memory.Types, r.Type) {
		return fault.Field("type", "must be one of "+joinTypes(memory.Types)).With("reason", ReasonSchema)
	}
	if strings.TrimSpace(r.Content) == "" {
		return fault.Field("content", "must not be empty").With("reason", ReasonSchema)
	}
	if !utf8.ValidString(r.Content) {
		return fault.Field("content", "must be valid UTF-8").With("reason", ReasonSchema)
	}
	// PostgreSQL text cannot hold U+0000; refusing it on every backend
	// keeps export/import and migration between them lossless.
	if strings.IndexByte(r.Content, 0) >= 0 {
		return fault.Field("content", "must not contain NUL characters (U+0000)").With("reason", ReasonSchema)
	}
	if len(r.Content) > l.MaxContentBytes {
		return (&fault.Error{Code: fault.TooLarge, Message: "content: exceeds the limit of " + strconv.Itoa(l.MaxContentBytes) + " bytes",
			Details: map[string]any{"field": "content", "limit": l.MaxContentBytes, "reason": ReasonSchema}})
	}
	if len(r.Category) > 64 || !identLike(r.Category, true) {
		return fault.Field("category", "must be at most 64 characters of letters, digits, '_', '-' or '.'").With("reason", ReasonSchema)
	}
	if len(r.Classification) > 64 || !identLike(r.Classification, true) {
		return fault.Field("classification", "must be at most 64 characters of letters, digits, '_', '-' or '.'").With("reason", ReasonSchema)
	}
	if len(r.Metadata) > 0 {
		if len(r.Metadata) > l.MaxMetadataBytes {
			return (&fault.Error{Code: fault.TooLarge, Message: "metadata: exceeds the limit of " + strconv.Itoa(l.MaxMetadataBytes) + " bytes",
				Details: map[string]any{"field": "metadata", "limit": l.MaxMetadataBytes, "reason": ReasonSchema}})
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.Metadata, &obj); err != nil || obj == nil {
			return fault.Field("metadata", "must be a JSON object").With("reason", ReasonSchema)
		}
		if err := CheckJSON("metadata", r.Metadata); err != nil {
			return err
		}
		if r.Type == memory.Skill {
			if err := checkProcedure(obj); err != nil {
				return err
			}
		}
	}
	if len(r.Entities) > l.MaxEntities {
		return fault.Field("entities", "at most "+strconv.Itoa(l.MaxEntities)+" entities").With("reason", ReasonSchema)
	}
	for i, e := range r.Entities {
		if !ValidEntityKey(e) {
			return fault.Field("entities["+strconv.Itoa(i)+"]", "must be label:key, label of lowercase letters, digits or '_', key non-empty without whitespace, at most 256 bytes").With("reason", ReasonSchema)
		}
	}
	if !slices.Contains(memory.SourceKinds, r.Source.Kind) {
		return fault.Field("source.kind", "must be one of observed, told, inferred").With("reason", ReasonSchema)
	}
	if r.Source.Confidence < 0 || r.Source.Confidence > 1 || r.Source.Confidence != r.Source.Confidence {
		return fault.Field("source.confidence", "must be between 0 and 1").With("reason", ReasonSchema)
	}
	if len(r.Source.Evidence) > l.MaxEvidence {
		return fault.Field("source.evidence", "at most "+strconv.Itoa(l.MaxEvidence)+" ids").With("reason", ReasonSchema)
	}
	for i, id := range r.Source.Evidence {
		if !memory.ValidID(id) {
			return fault.Field("source.evidence["+strconv.Itoa(i)+"]", "must be a record id").With("reason", ReasonSchema)
		}
	}
	for _, sk := range []struct{ name, v string }{
		{"scope.user_id", r.Scope.UserID}, {"scope.agent_id", r.Scope.AgentID}, {"scope.app_id", r.Scope.AppID},
		{"scope.project_id", r.Scope.ProjectID}, {"scope.session_id", r.Scope.SessionID},
	} {
		if len(sk.v) > l.MaxScopeKeyBytes || !utf8.ValidString(sk.v) || strings.ContainsAny(sk.v, "\x00\n\r\t") {
			return fault.Field(sk.name, "must be at most "+strconv.Itoa(l.MaxScopeKeyBytes)+" bytes of printable text").With("reason", ReasonSchema)
		}
	}
	if !slices.Contains(memory.AccessLevels, r.Access) {
		return fault.Field("access", "must be one of public, agent, user, system, sensitive").With("reason", ReasonSchema)
	}
	// RFC 3339 offsets can carry a time just outside years 0000-9999 once
	// converted to UTC, which JSON (and RFC 3339) cannot encode.
	if r.ValidFrom != nil && (r.ValidFrom.UTC().Year() < 0 || r.ValidFrom.UTC().Year() > 9999) {
		return fault.Field("valid_from", "must lie within years 0000-9999 in UTC").With("reason", ReasonSchema)
	}
	if r.ValidUntil != nil && (r.ValidUntil.UTC().Year() < 0 || r.ValidUntil.UTC().Year() > 9999) {
		return fault.Field("valid_until", "must lie within years 0000-9999 in UTC").With("reason", ReasonSchema)
	}
	if r.ValidFrom != nil && r.ValidUntil != nil && !r.ValidUntil.After(*r.ValidFrom) {
		return fault.Field("valid_until", "must be after valid_from").With("reason", ReasonSchema)
	}
	if r.Path != memory.PathFast && r.Path != memory.PathSlow {
		return fault.Field("path", "must be fast or slow").With("reason", ReasonSchema)
	}
	return nil
}

// Authorize applies SPEC §4 step 2: may this principal write this type at
// this access level at all?
func (p Policy) Authorize(pr memory.Principal, r memory.Record) error {
	switch pr.Kind {
	case memory.KindOperator, memory.KindSystem:
		if r.Access == memory.System && pr.Kind != memory.KindSystem {
			return fault.New(fault.PermissionDenied, "access level system is reserved for memgate").With("reason", ReasonAccessDenied)
		}
		return nil
	case memory.KindAgent, memory.KindUser:
	default:
		return fault.New(fault.PermissionDenied, "this principal may not write records").With("reason", ReasonNotAPrincipal)
	}
	if pr.Trust == memory.ReadOnly {
		return fault.New(fault.PermissionDenied, "read_only agents cannot write").With("reason", ReasonReadOnly)
	}
	rule := p.ruleFor(pr.Trust)
	if len(rule.AllowTypes) > 0 && !slices.Contains(rule.AllowTypes, r.Type) {
		return fault.New(fault.PermissionDenied, "agents of trust "+string(pr.Trust)+" may not write type "+string(r.Type)).With("reason", ReasonTypeDenied)
	}
	return p.AuthorizeAccess(pr, r.Access)
}

// AuthorizeAccess is the access-level half of Authorize, for writes that
// are not records (graph nodes and edges): may this principal give this
// access level?
func (p Policy) AuthorizeAccess(pr memory.Principal, a memory.Access) error {
	switch pr.Kind {
	case memory.KindOperator, memory.KindSystem:
		if a == memory.System && pr.Kind != memory.KindSystem {
			return fault.New(fault.PermissionDenied, "access level system is reserved for memgate").With("reason", ReasonAccessDenied)
		}
		return nil
	case memory.KindAgent, memory.KindUser:
	default:
		return fault.New(fault.PermissionDenied, "this principal may not write").With("reason", ReasonNotAPrincipal)
	}
	if pr.Trust == memory.ReadOnly {
		return fault.New(fault.PermissionDenied, "read_only agents cannot write").With("reason", ReasonReadOnly)
	}
	if !slices.Contains(p.ruleFor(pr.Trust).AllowAccess, a) {
		return fault.New(fault.PermissionDenied, "agents of trust "+string(pr.Trust)+" may not write access level "+string(a)).With("reason", ReasonAccessDenied)
	}
	return nil
}

// ScreenGraph runs the PII screen the policy sets over free text a graph
// write stores (node and edge properties) and returns the kinds found, in PIIKinds order. The graph has no quarantine,
// so such a write is refused (GraphRefusal); personal data belongs in
// records, which the gate quarantines for review.
func (p Policy) ScreenGraph(texts ...string) []string {
	if !p.PII.Enabled {
		return nil
	}
	seen := map[string]bool{}
	for _, t := range texts {
		for _, f := range Screen(t, p.PII.Kinds) {
			seen[f.Kind] = true
		}
	}
	var kinds []string
	for _, k := range PIIKinds {
		if seen[k] {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// ScreenKey screens graph node keys (record entities included) for
// credentials only: a key is an identifier, and may be one that looks
// like personal data (a user id that is an email address).
func (p Policy) ScreenKey(keys ...string) []string {
	if !p.PII.Enabled || !slices.Contains(p.PII.Kinds, PIISecret) {
		return nil
	}
	for _, k := range keys {
		if len(Screen(k, []string{PIISecret})) > 0 {
			return []string{PIISecret}
		}
	}
	return nil
}

// GraphRefusal is the error refusing a graph write whose field holds what
// the PII screen flags: 422, naming the field and the kinds, never the
// value.
func GraphRefusal(field string, kinds []string) error {
	what := "personal data"
	if slices.Contains(kinds, PIISecret) {
		what = "a secret or credential"
	}
	return fault.New(fault.GateRejected, field+": looks like it contains "+what+"; the graph stores neither (keep personal data in records, which the gate screens and quarantines for review)").
		With("field", field).With("reason", ReasonPII).With("pii_kinds", kinds)
}

func (p Policy) ruleFor(t memory.Trust) TrustRule {
	switch t {
	case memory.Trusted:
		return p.Trust.Trusted
	case memory.Standard:
		return p.Trust.Standard
	default:
		return p.Trust.Restricted
	}
}

// Decide applies the PII screen and the trust rules (SPEC §4 steps 4 and
// 6) to an authorized, schema-valid input. A PII hit under the reject
// action is returned as a gate_rejected error.
func (p Policy) Decide(in Input) (Outcome, error) {
	r := in.Record
	out := Outcome{Decision: memory.DecisionAccepted, Status: memory.Active, Access: r.Access, Reason: ReasonPolicyAccept}

	var kinds []string
	if p.PII.Enabled {
		seen := map[string]bool{}
		for _, f := range Screen(r.Content, p.PII.Kinds) {
			seen[f.Kind] = true
		}
		if len(r.Metadata) > 0 {
			for _, f := range Screen(string(r.Metadata), p.PII.Kinds) {
				seen[f.Kind] = true
			}
		}
		// Entities become graph node keys, which every reader of the
		// node sees: a key is an identifier (a user id may look like an
		// email address) but never a credential.
		for _, k := range p.ScreenKey(r.Entities...) {
			seen[k] = true
		}
		for _, k := range PIIKinds {
			if seen[k] {
				kinds = append(kinds, k)
			}
		}
	}
	if len(kinds) > 0 || in.EvidenceFlagged {
		reason := ReasonPII
		if len(kinds) == 0 {
			reason = ReasonPIIEvidence
		}
		if in.OwnConversation && r.Type == memory.Episode && p.PII.OwnTurnReadable(kinds) {
			// The user's own words to its own memory: still the user's to
			// recall, never an agent's to read, and an operator reviews it.
			return Outcome{Decision: memory.DecisionFlagged, Status: memory.Active, Access: memory.UserOnly,
				Reason: ReasonPIIOwn, PIIKinds: kinds}, nil
		}
		if p.PII.Action == PIIReject {
			return Outcome{}, fault.New(fault.GateRejected, "content looks like it contains personal data or a secret").
				With("reason", reason).With("pii_kinds", kinds)
		}
		return Outcome{Decision: memory.DecisionQuarantined, Status: memory.Quarantined, Access: memory.Sensitive,
			Reason: reason, PIIKinds: kinds, ApprovalKind: memory.ApprovalQuarantine}, nil
	}

	if in.Principal.Kind == memory.KindAgent && in.Principal.Trust == memory.Restricted &&
		!slices.Contains(p.Trust.Restricted.AutoAcceptTypes, r.Type) {
		out.Decision, out.Status, out.Reason, out.ApprovalKind = memory.DecisionQueued, memory.Provisional, ReasonRestricted, memory.ApprovalPending
		return out, nil
	}
	if in.WantProvisional {
		out.Decision, out.Status, out.Reason, out.ApprovalKind = memory.DecisionProvisional, memory.Provisional, ReasonRequested, memory.ApprovalPending
	}
	return out, nil
}

// ValidEntityKey reports whether s is a graph natural key "label:key".
func ValidEntityKey(s string) bool {
	if len(s) > 256 || !utf8.ValidString(s) {
		return false
	}
	label, key, ok := strings.Cut(s, ":")
	if !ok || label == "" || key == "" || len(label) > 64 {
		return false
	}
	for _, c := range label {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return !strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

func identLike(s string, allowEmpty bool) bool {
	if s == "" {
		return allowEmpty
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func joinTypes(ts []memory.Type) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// checkProcedure checks the typed procedure fields of a skill's metadata
// (memory.Procedure).
func checkProcedure(m map[string]json.RawMessage) error {
	bad := func(key, want string) error {
		return fault.Field("metadata."+key, want).With("reason", ReasonSchema)
	}
	if raw, ok := m["trigger"]; ok {
		var s string
		if json.Unmarshal(raw, &s) != nil || len(s) > 1024 {
			return bad("trigger", "must be a string of at most 1024 bytes")
		}
	}
	if raw, ok := m["steps"]; ok {
		var steps []string
		if json.Unmarshal(raw, &steps) != nil || len(steps) > 64 {
			return bad("steps", "must be an array of at most 64 strings")
		}
	}
	if raw, ok := m["success_rate"]; ok {
		var f float64
		if json.Unmarshal(raw, &f) != nil || f < 0 || f > 1 {
			return bad("success_rate", "must be a number between 0 and 1")
		}
	}
	if raw, ok := m["use_count"]; ok {
		var n int64
		if json.Unmarshal(raw, &n) != nil || n < 0 {
			return bad("use_count", "must be a non-negative integer")
		}
	}
	return nil
}
