package gate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/memory"
)

// Validate checks every value of the policy. All problems are reported,
// each as a *PolicyError naming the key by its dotted path in the file, in
// the order of the sections below.
func (p Policy) Validate() error {
	var errs policyErrs
	p.validateLimits(&errs)
	p.validateRateLimits(&errs)
	p.validateTrustRules(&errs)
	p.validatePII(&errs)
	p.validateDuplicatesConflicts(&errs)
	p.validateGraphMCP(&errs)
	p.validateMaintenance(&errs)
	p.validateApprovals(&errs)
	return joinPolicyErrors(errs)
}

// policyErrs gathers the problems Validate finds.
type policyErrs []*PolicyError

func (e *policyErrs) add(key, format string, args ...any) {
	*e = append(*e, keyErr(key, format, args...))
}

func (e *policyErrs) extend(more []*PolicyError) { *e = append(*e, more...) }

// validateLimits checks the limits: each within its range, and a request
// able to hold the largest content.
func (p Policy) validateLimits(errs *policyErrs) {
	l := p.Limits
	intRange := func(key string, v, lo, hi int64) {
		if v < lo || v > hi {
			errs.add(key, "must be between %d and %d, got %d", lo, hi, v)
		}
	}
	intRange("limits.max_content_bytes", int64(l.MaxContentBytes), 1, maxLimitBytes)
	intRange("limits.max_metadata_bytes", int64(l.MaxMetadataBytes), 1, maxLimitBytes)
	intRange("limits.max_entities", int64(l.MaxEntities), 0, maxListLimit)
	intRange("limits.max_evidence", int64(l.MaxEvidence), 0, maxListLimit)
	intRange("limits.max_scope_key_bytes", int64(l.MaxScopeKeyBytes), 1, maxScopeKeyLimit)
	intRange("limits.max_request_bytes", l.MaxRequestBytes, 1, maxRequestBytes)
	intRange("limits.max_import_bytes", l.MaxImportBytes, 1, maxImportBytes)
	intRange("limits.min_message_timestamp_ms", l.MinMessageTimestampMs, 1, MaxMessageTimestampMs)
	if l.MaxRequestBytes >= 1 && l.MaxRequestBytes < int64(l.MaxContentBytes) {
		errs.add("limits.max_request_bytes", "must be >= limits.max_content_bytes (%d), got %d", l.MaxContentBytes, l.MaxRequestBytes)
	}
}

// validateRateLimits checks the rate limit buckets.
func (p Policy) validateRateLimits(errs *policyErrs) {
	for _, b := range []struct {
		key string
		b   Bucket
	}{{"rate_limit.agent", p.RateLimit.Agent}, {"rate_limit.operator", p.RateLimit.Operator}, {"rate_limit.user", p.RateLimit.User}} {
		switch ps := b.b.PerSecond; {
		case math.IsNaN(ps) || math.IsInf(ps, 0):
			errs.add(b.key+".per_second", "must be a finite number")
		case ps < 0:
			errs.add(b.key+".per_second", "must be >= 0 (0 means unlimited), got %v", ps)
		}
		switch {
		case b.b.Burst < 0:
			errs.add(b.key+".burst", "must be >= 0, got %d", b.b.Burst)
		case b.b.Burst == 0 && b.b.PerSecond > 0:
			errs.add(b.key+".burst", "must be >= 1 when per_second is above 0 (a bucket of size 0 admits nothing)")
		}
	}
}

// validateTrustRules checks the trust rules of each trust level.
func (p Policy) validateTrustRules(errs *policyErrs) {
	for _, r := range []struct {
		key  string
		rule TrustRule
	}{{"trust.trusted", p.Trust.Trusted}, {"trust.standard", p.Trust.Standard}, {"trust.restricted", p.Trust.Restricted}} {
		errs.extend(validateTrustRule(r.key, r.rule))
	}
}

// validatePII checks the personal data screen, and what it does in the
// user's own conversation.
func (p Policy) validatePII(errs *policyErrs) {
	errs.extend(validateList("pii.kinds", p.PII.Kinds, PIIKinds, "kind"))
	if p.PII.Enabled && len(p.PII.Kinds) == 0 {
		errs.add("pii.kinds", "must list at least one kind while pii.enabled is true (allowed: %s)", strings.Join(PIIKinds, ", "))
	}
	if p.PII.Action != PIIQuarantine && p.PII.Action != PIIReject {
		errs.add("pii.action", "must be one of %s, %s, got %q", PIIQuarantine, PIIReject, p.PII.Action)
	}
	errs.extend(validateList("pii.own_conversation.kinds", p.PII.OwnConversation.Kinds, PIIKinds, "kind"))
	if slices.Contains(p.PII.OwnConversation.Kinds, PIISecret) {
		errs.add("pii.own_conversation.kinds", "must not list %s: a credential is quarantined wherever it is written", PIISecret)
	}
	if a := p.PII.OwnConversation.Action; a != PIIReadable && a != PIIQuarantine {
		errs.add("pii.own_conversation.action", "must be one of %s, %s, got %q", PIIReadable, PIIQuarantine, a)
	}
}

// validateDuplicatesConflicts checks duplicate and conflict detection.
func (p Policy) validateDuplicatesConflicts(errs *policyErrs) {
	if t := p.Duplicates.NearThreshold; math.IsNaN(t) || t <= 0 || t > 1 {
		errs.add("duplicates.near_threshold", "must be in (0, 1], got %v", t)
	}
	if p.Conflicts.Action != ConflictSupersede && p.Conflicts.Action != ConflictQueue {
		errs.add("conflicts.action", "must be one of %s, %s, got %q", ConflictSupersede, ConflictQueue, p.Conflicts.Action)
	}
	if t := p.Conflicts.MinSimilarity; math.IsNaN(t) || t <= 0 || t > 1 {
		errs.add("conflicts.min_similarity", "must be in (0, 1], got %v", t)
	}
	if p.Conflicts.MaxChangedTerms < 1 || p.Conflicts.MaxChangedTerms > 32 {
		errs.add("conflicts.max_changed_terms", "must be between 1 and 32, got %d", p.Conflicts.MaxChangedTerms)
	}
	errs.extend(validateList("conflicts.types", p.Conflicts.Types, memory.Types, "type"))
	errs.extend(validateList("duplicates.ignore_types", p.Duplicates.IgnoreTypes, memory.Types, "type"))
}

// validateGraphMCP checks the status of proposed and extracted graph
// nodes, and the trust of MCP clients.
func (p Policy) validateGraphMCP(errs *policyErrs) {
	for _, g := range []struct {
		key string
		v   memory.NodeStatus
	}{{"graph.proposed_status", p.Graph.ProposedStatus}, {"graph.extracted_status", p.Graph.ExtractedStatus}} {
		if g.v != memory.NodeProvisional && g.v != memory.NodeActive {
			errs.add(g.key, "must be one of %s, %s, got %q", memory.NodeProvisional, memory.NodeActive, g.v)
		}
	}

	if !slices.Contains(memory.TrustLevels, p.MCP.ClientTrust) {
		errs.add("mcp.client_trust", "must be one of %s, %s, %s, %s, got %q",
			memory.Trusted, memory.Standard, memory.Restricted, memory.ReadOnly, p.MCP.ClientTrust)
	}
}

// validateMaintenance checks decay, archiving and consolidation.
func (p Policy) validateMaintenance(errs *policyErrs) {
	for _, t := range memory.Types {
		if h := p.Maintenance.HalfLife.Of(t); h < 0 {
			errs.add("maintenance.half_life."+string(t), "must be >= 0 (0 means never decays), got %s", Duration(h))
		}
	}
	if t := p.Maintenance.ArchiveBelow; math.IsNaN(t) || t < 0 || t >= 1 {
		errs.add("maintenance.archive_below", "must be in [0, 1) (0 disables archiving), got %v", t)
	}
	if n := p.Maintenance.ConsolidateMin; n < 3 || n > 1000 {
		errs.add("maintenance.consolidate_min", "must be between 3 and 1000, got %d", n)
	}
}

// validateApprovals checks the approval queue's time to live.
func (p Policy) validateApprovals(errs *policyErrs) {
	switch ttl := p.Approvals.TTL.D(); {
	case ttl <= 0:
		errs.add("approvals.ttl", "must be positive, got %s", p.Approvals.TTL)
	case ttl > maxApprovalTTL:
		errs.add("approvals.ttl", "must be at most %s (365 days), got %s", Duration(maxApprovalTTL), p.Approvals.TTL)
	}
}

// writableAccess are the access levels a trust rule may grant; system is
// reserved for memgate itself.
var writableAccess = []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.Sensitive}

func validateTrustRule(key string, r TrustRule) []*PolicyError {
	var errs []*PolicyError
	errs = append(errs, validateList(key+".allow_types", r.AllowTypes, memory.Types, "type")...)
	errs = append(errs, validateList(key+".auto_accept_types", r.AutoAcceptTypes, memory.Types, "type")...)
	if len(r.AllowTypes) > 0 {
		for i, t := range r.AutoAcceptTypes {
			if slices.Contains(memory.Types, t) && !slices.Contains(r.AllowTypes, t) {
				errs = append(errs, keyErr(fmt.Sprintf("%s.auto_accept_types[%d]", key, i),
					"type %q is not in %s.allow_types, so it can never be written", t, key))
			}
		}
	}
	for i, a := range r.AllowAccess {
		if a == memory.System {
			errs = append(errs, keyErr(fmt.Sprintf("%s.allow_access[%d]", key, i),
				"access level %q is reserved for memgate itself (allowed: %s)", a, joinNames(writableAccess)))
		}
	}
	errs = append(errs, validateList(key+".allow_access", r.AllowAccess, memory.AccessLevels, "access level", memory.System)...)
	if len(r.AllowAccess) == 0 {
		errs = append(errs, keyErr(key+".allow_access",
			"must list at least one access level (allowed: %s); give agents trust read_only to stop them writing", joinNames(writableAccess)))
	}
	return errs
}

// validateList reports unknown and repeated values of a list key. Values
// in skip are neither reported nor listed as allowed (the caller reports
// them).
func validateList[T ~string](key string, vals, allowed []T, what string, skip ...T) []*PolicyError {
	var errs []*PolicyError
	shown := make([]T, 0, len(allowed))
	for _, a := range allowed {
		if !slices.Contains(skip, a) {
			shown = append(shown, a)
		}
	}
	for i, v := range vals {
		k := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case slices.Contains(skip, v):
		case !slices.Contains(allowed, v):
			errs = append(errs, keyErr(k, "unknown %s %q (allowed: %s)", what, string(v), joinNames(shown)))
		case slices.Index(vals, v) < i:
			errs = append(errs, keyErr(k, "%s %q is listed twice", what, string(v)))
		}
	}
	return errs
}

func joinNames[T ~string](vals []T) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
