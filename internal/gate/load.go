package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// Bounds enforced by Validate.
const (
	maxPolicyFileBytes = 1 << 20
	maxLimitBytes      = 1 << 20 // content, metadata
	maxRequestBytes    = 1 << 30
	maxImportBytes     = 16 << 30
	maxListLimit       = 4096 // entities, evidence
	maxScopeKeyLimit   = 4096
	maxApprovalTTL     = 365 * 24 * time.Hour
	maxPolicyErrors    = 25 // reported at once; the rest are counted
)

// ErrInvalidPolicy is wrapped by every PolicyError, so errors.Is(err,
// ErrInvalidPolicy) tells a bad policy from an unreadable file, and
// fault.CodeOf reports invalid_argument for it.
var ErrInvalidPolicy = fault.New(fault.InvalidArgument, "invalid policy")

// PolicyError is one problem found in a policy. Load and Validate return a
// single PolicyError or several joined with errors.Join.
type PolicyError struct {
	// Key is the dotted path of the offending key in the file, such as
	// "rate_limit.agent.per_second" or "trust.restricted.auto_accept_types[1]";
	// "" when the problem concerns the file as a whole.
	Key string
	// Msg describes the problem and names the key.
	Msg string
	// File and Line locate the key when the policy came from a file; Line
	// is 1-based and 0 when unknown.
	File string
	Line int
}

func (e *PolicyError) Error() string {
	s := "policy: " + e.Msg
	switch {
	case e.File != "" && e.Line > 0:
		s += " (" + e.File + " line " + strconv.Itoa(e.Line) + ")"
	case e.File != "":
		s += " (" + e.File + ")"
	case e.Line > 0:
		s += " (line " + strconv.Itoa(e.Line) + ")"
	}
	return s
}

// Unwrap lets errors.Is match ErrInvalidPolicy and fault.As find its code.
func (e *PolicyError) Unwrap() error { return ErrInvalidPolicy }

// keyErr returns a PolicyError whose message starts with the key.
func keyErr(key, format string, args ...any) *PolicyError {
	msg := fmt.Sprintf(format, args...)
	if key != "" {
		msg = key + ": " + msg
	}
	return &PolicyError{Key: key, Msg: msg}
}

// joinPolicyErrors joins errs (nil when empty), keeping the first
// maxPolicyErrors.
func joinPolicyErrors(errs []*PolicyError) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	out := make([]error, 0, min(len(errs), maxPolicyErrors)+1)
	for i, e := range errs {
		if i == maxPolicyErrors {
			out = append(out, &PolicyError{Msg: fmt.Sprintf("%d more problems not shown", len(errs)-i)})
			break
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// Default returns the built-in policy: safe defaults used when no policy
// file is given and overlaid by the keys a file sets. Each call returns
// fresh slices.
func Default() Policy {
	return Policy{
		Limits: Limits{
			MaxContentBytes:  32 << 10,
			MaxMetadataBytes: 16 << 10,
			MaxEntities:      64,
			MaxEvidence:      64,
			MaxScopeKeyBytes: 256,
			MaxRequestBytes:  1 << 20,
			MaxImportBytes:   256 << 20,
			// 2000-01-01T00:00:00Z
			MinMessageTimestampMs: 946684800000,
		},
		RateLimit: RateLimits{
			Agent:    Bucket{PerSecond: 50, Burst: 100},
			Operator: Bucket{PerSecond: 0, Burst: 0},
			User:     Bucket{PerSecond: 20, Burst: 40},
		},
		Trust: TrustRules{
			Trusted: TrustRule{
				AllowTypes:      []memory.Type{},
				AutoAcceptTypes: []memory.Type{},
				AllowAccess:     []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.Sensitive},
			},
			Standard: TrustRule{
				AllowTypes:      []memory.Type{},
				AutoAcceptTypes: []memory.Type{},
				AllowAccess:     []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly},
			},
			Restricted: TrustRule{
				AllowTypes:      []memory.Type{},
				AutoAcceptTypes: []memory.Type{},
				AllowAccess:     []memory.Access{memory.Public, memory.AgentOnly},
			},
		},
		PII: PIIPolicy{
			Enabled: true,
			Kinds:   slices.Clone(PIIKinds),
			Action:  PIIQuarantine,
			// Contact details a user tells its own assistant stay the
			// user's; card numbers, ids and secrets are quarantined still.
			OwnConversation: OwnConversationPII{Action: PIIReadable, Kinds: []string{PIIEmail, PIIPhone}},
		},
		Approvals:  Approvals{TTL: Duration(24 * time.Hour)},
		Duplicates: Duplicates{Exact: true, Near: true, NearThreshold: 0.9, IgnoreTypes: []memory.Type{memory.Episode}},
		Conflicts: Conflicts{Detect: true, Action: ConflictSupersede, MinSimilarity: 0.5, MaxChangedTerms: 2,
			Types: []memory.Type{memory.Belief, memory.Preference, memory.Decision}},
		Graph: Graph{ProposedStatus: memory.NodeProvisional, ExtractedStatus: memory.NodeProvisional, ConversationNames: true},
		MCP:   MCP{ClientTrust: memory.Standard},
		Maintenance: Maintenance{
			HalfLife: HalfLives{
				Belief: Duration(180 * day), Decision: Duration(365 * day), Episode: Duration(30 * day),
				Skill: Duration(180 * day), Preference: Duration(365 * day), Reflection: Duration(90 * day),
			},
			ArchiveBelow:   0.05,
			ConsolidateMin: 3,
		},
	}
}

const day = 24 * time.Hour

// Load reads the policy file at path, overlays it on Default and
// validates the result. An empty path returns Default.
//
// YAML and JSON files are accepted; a file whose name ends in ".json" must
// be strict JSON. Keys absent from the file keep their defaults; a key
// that is present replaces the default value, lists included (an empty or
// null list means an empty list, a null mapping keeps its defaults).
// Unknown keys, duplicate keys and values of the wrong type are errors.
// Every error is a *PolicyError, or several joined, naming the key by its
// dotted path and the line of the file.
func Load(path string) (Policy, error) {
	if path == "" {
		return Default(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicyFileBytes+1))
	if err != nil {
		return Policy{}, fmt.Errorf("policy: read %s: %w", path, err)
	}
	if len(data) > maxPolicyFileBytes {
		return Policy{}, &PolicyError{Msg: fmt.Sprintf("file is larger than %d bytes", maxPolicyFileBytes), File: path}
	}
	isJSON := strings.EqualFold(filepath.Ext(path), ".json")
	return parsePolicy(data, path, isJSON)
}

// parsePolicy decodes data over the defaults and validates the result;
// file names the source in errors.
func parsePolicy(data []byte, file string, isJSON bool) (Policy, error) {
	var root *yaml.Node
	var err *PolicyError
	if isJSON {
		if err = checkJSONSyntax(data); err == nil {
			root, err = parseJSONDocument(data)
		}
	} else {
		root, err = parseYAMLDocument(data)
	}
	if err != nil {
		err.File = file
		return Policy{}, err
	}
	p := Default()
	d := &policyDecoder{lines: map[string]int{}}
	if root != nil {
		d.decode(root, reflect.ValueOf(&p).Elem(), "")
	}
	if len(d.errs) == 0 {
		if err := p.Validate(); err != nil {
			d.errs = policyErrors(err)
		}
	}
	if len(d.errs) > 0 {
		for _, e := range d.errs {
			e.File = file
			if e.Line == 0 {
				e.Line = d.lineOf(e.Key)
			}
		}
		return Policy{}, joinPolicyErrors(d.errs)
	}
	return p, nil
}

// String formats the duration like time.Duration but without zero
// trailing units: "24h", "90m" → "1h30m", "1m30s".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// parseDurationString parses a Go duration string such as "24h" or "90m".
func parseDurationString(s string) (Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New(`expected a duration such as "24h" or "90m", got an empty string`)
	}
	v, err := time.ParseDuration(t)
	if err != nil {
		hint := ""
		if strings.HasSuffix(t, "d") || strings.HasSuffix(t, "w") {
			hint = ` (days and weeks are not units; write hours, e.g. "168h")`
		}
		return 0, fmt.Errorf("invalid duration %q: use a number with a unit (ns, us, ms, s, m, h) such as \"24h\" or \"90m\"%s", s, hint)
	}
	return Duration(v), nil
}

// UnmarshalYAML accepts a Go duration string ("24h", "90m"); numbers
// without a unit are rejected rather than guessed at.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return fmt.Errorf("expected a duration string such as \"24h\" or \"90m\", got %s", describeNode(n))
	}
	v, err := parseDurationString(n.Value)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration as a string such as "24h".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalJSON accepts a JSON string holding a Go duration ("24h"); as
// encoding/json expects, null leaves the value unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) == 0 || b[0] != '"' {
		v := string(b)
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Errorf("expected a duration string such as \"24h\" or \"90m\", got %s", v)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("invalid duration string: %w", err)
	}
	v, err := parseDurationString(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes the duration as a JSON string such as "24h".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }
