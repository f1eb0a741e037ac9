package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
		Graph: Graph{ProposedStatus: memory.NodeProvisional, ExtractedStatus: memory.NodeProvisional},
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

// policyErrors flattens err into its PolicyErrors.
func policyErrors(err error) []*PolicyError {
	var out []*PolicyError
	var walk func(error)
	walk = func(err error) {
		if pe, ok := err.(*PolicyError); ok {
			out = append(out, pe)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		out = append(out, &PolicyError{Msg: err.Error()})
	}
	walk(err)
	return out
}

// checkJSONSyntax reports JSON syntax errors with their line and column:
// the YAML parser would accept YAML-only syntax in a .json file.
func checkJSONSyntax(data []byte) *PolicyError {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, err2 := dec.Token(); err2 != io.EOF {
			line, col := lineCol(data, dec.InputOffset())
			return &PolicyError{Msg: fmt.Sprintf("invalid JSON at column %d: unexpected data after the top-level value", col), Line: line}
		}
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, se.Offset)
		return &PolicyError{Msg: fmt.Sprintf("invalid JSON at column %d: %s", col, se.Error()), Line: line}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		line, _ := lineCol(data, int64(len(data)))
		return &PolicyError{Msg: "invalid JSON: unexpected end of file", Line: line}
	}
	return &PolicyError{Msg: "invalid JSON: " + err.Error()}
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// parseJSONDocument converts syntactically valid JSON into the node tree
// the YAML parser would build, with line numbers, so that both formats
// share one decoder. (Parsing JSON as YAML mostly works but rejects some
// valid JSON, such as the escape \/.)
func parseJSONDocument(data []byte) (*yaml.Node, *PolicyError) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// lineAt returns the line of the next token: the decoder's offset is
	// the end of the previous one.
	lineAt := func() int {
		off := int(dec.InputOffset())
		for off < len(data) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		line, _ := lineCol(data, int64(off))
		return line
	}
	var value func() (*yaml.Node, error)
	value = func() (*yaml.Node, error) {
		line := lineAt()
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			kind, closer := yaml.MappingNode, json.Delim('}')
			if t == '[' {
				kind, closer = yaml.SequenceNode, ']'
			}
			n := &yaml.Node{Kind: kind, Line: line}
			for dec.More() {
				if kind == yaml.MappingNode {
					kline := lineAt()
					k, err := dec.Token()
					if err != nil {
						return nil, err
					}
					ks, _ := k.(string)
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ks, Line: kline})
				}
				v, err := value()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
			if end, err := dec.Token(); err != nil || end != closer {
				return nil, fmt.Errorf("unbalanced %c", t)
			}
			return n, nil
		case string:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Line: line}, nil
		case json.Number:
			tag := "!!int"
			if strings.ContainsAny(string(t), ".eE") {
				tag = "!!float"
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(t), Line: line}, nil
		case bool:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t), Line: line}, nil
		default:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line}, nil
		}
	}
	n, err := value()
	if err != nil {
		// checkJSONSyntax has accepted the document, so this is a bug.
		return nil, &PolicyError{Msg: "invalid JSON: " + err.Error()}
	}
	return n, nil
}

// parseYAMLDocument parses data as a single YAML document and returns its
// root node, nil for an empty document.
func parseYAMLDocument(data []byte) (*yaml.Node, *PolicyError) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, yamlSyntaxError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, yamlSyntaxError(err)
		}
		return nil, &PolicyError{Msg: "the file holds more than one YAML document", Line: extra.Line}
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, nil
		}
		return doc.Content[0], nil
	}
	return &doc, nil
}

// yamlSyntaxError turns "yaml: line 3: did not find expected key" into a
// PolicyError carrying the line.
func yamlSyntaxError(err error) *PolicyError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ": "); ok {
			if n, err := strconv.Atoi(num); err == nil {
				line, msg = n, tail
			}
		}
	}
	return &PolicyError{Msg: "invalid YAML: " + msg, Line: line}
}

// policyDecoder overlays a YAML node tree on a Policy value, driven by
// the yaml struct tags, collecting errors keyed by dotted path.
type policyDecoder struct {
	errs  []*PolicyError
	lines map[string]int // dotted path -> line of its value
}

func (d *policyDecoder) fail(n *yaml.Node, key, format string, args ...any) {
	e := keyErr(key, format, args...)
	e.Line = n.Line
	d.errs = append(d.errs, e)
}

// lineOf returns the line of key, or of its nearest ancestor in the file.
func (d *policyDecoder) lineOf(key string) int {
	for key != "" {
		if l, ok := d.lines[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

var yamlUnmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func (d *policyDecoder) decode(n *yaml.Node, v reflect.Value, key string) {
	for depth := 0; n.Kind == yaml.AliasNode && n.Alias != nil && depth < 8; depth++ {
		n = n.Alias
	}
	if key != "" {
		d.lines[key] = n.Line
	}
	if v.CanAddr() && v.Addr().Type().Implements(yamlUnmarshalerType) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			d.fail(n, key, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, key)
	case reflect.Slice:
		if isYAMLNull(n) {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.fail(n, key, "expected a list, got %s", describeNode(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, e := range n.Content {
			d.decode(e, s.Index(i), key+"["+strconv.Itoa(i)+"]")
		}
		v.Set(s)
	case reflect.String:
		if !isScalarTag(n, "!!str") {
			d.fail(n, key, "expected a string, got %s", describeNode(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Int, reflect.Int64:
		if !isScalarTag(n, "!!int") {
			d.fail(n, key, "expected an integer, got %s", describeNode(n))
			return
		}
		var x int64
		if err := n.Decode(&x); err != nil || v.OverflowInt(x) {
			d.fail(n, key, "integer %s is out of range", n.Value)
			return
		}
		v.SetInt(x)
	case reflect.Float64:
		if !isScalarTag(n, "!!int") && !isScalarTag(n, "!!float") {
			d.fail(n, key, "expected a number, got %s", describeNode(n))
			return
		}
		var x float64
		if err := n.Decode(&x); err != nil {
			d.fail(n, key, "number %s is out of range", n.Value)
			return
		}
		v.SetFloat(x)
	case reflect.Bool:
		if !isScalarTag(n, "!!bool") {
			d.fail(n, key, "expected true or false, got %s", describeNode(n))
			return
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			d.fail(n, key, "expected true or false, got %s", describeNode(n))
			return
		}
		v.SetBool(b)
	default:
		// Unreachable for Policy; keeps a future field type from being
		// silently ignored.
		d.fail(n, key, "unsupported field type %s", v.Type())
	}
}

func (d *policyDecoder) decodeStruct(n *yaml.Node, v reflect.Value, key string) {
	if isYAMLNull(n) {
		return // an empty section keeps its defaults
	}
	if n.Kind != yaml.MappingNode {
		e := keyErr(key, "expected a mapping of keys, got %s", describeNode(n))
		if key == "" {
			e.Msg = "the top level must be a mapping of keys, got " + describeNode(n)
		}
		e.Line = n.Line
		d.errs = append(d.errs, e)
		return
	}
	t := v.Type()
	fields := make(map[string]int, t.NumField())
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = i
		names = append(names, name)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k, key, "keys must be plain names, got %s", describeNode(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			d.fail(k, key, "merge keys (<<) are not supported")
			continue
		}
		child := k.Value
		if key != "" {
			child = key + "." + k.Value
		}
		idx, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("unknown key %q", child)
			if s := closestName(k.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (known keys"
				if key != "" {
					msg += " under " + key
				}
				msg += ": " + strings.Join(names, ", ") + ")"
			}
			d.errs = append(d.errs, &PolicyError{Key: child, Msg: msg, Line: k.Line})
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(k, child, "duplicate key (first set on line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		d.decode(val, v.Field(idx), child)
	}
}

func isYAMLNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func isScalarTag(n *yaml.Node, tag string) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == tag
}

// describeNode names what a node holds, for "expected X, got Y" errors.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		switch n.ShortTag() {
		case "!!null":
			return "no value"
		case "!!str":
			return "string " + strconv.Quote(v)
		case "!!int", "!!float":
			return "number " + v
		case "!!bool":
			return "boolean " + v
		default:
			return n.ShortTag() + " " + strconv.Quote(v)
		}
	}
	return "an unexpected node"
}

// closestName returns the name within edit distance 2 of s, if any.
func closestName(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Validate checks every value of the policy. All problems are reported,
// each as a *PolicyError naming the key by its dotted path in the file.
func (p Policy) Validate() error {
	var errs []*PolicyError
	add := func(key, format string, args ...any) {
		errs = append(errs, keyErr(key, format, args...))
	}

	l := p.Limits
	intRange := func(key string, v, lo, hi int64) {
		if v < lo || v > hi {
			add(key, "must be between %d and %d, got %d", lo, hi, v)
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
		add("limits.max_request_bytes", "must be >= limits.max_content_bytes (%d), got %d", l.MaxContentBytes, l.MaxRequestBytes)
	}

	for _, b := range []struct {
		key string
		b   Bucket
	}{{"rate_limit.agent", p.RateLimit.Agent}, {"rate_limit.operator", p.RateLimit.Operator}, {"rate_limit.user", p.RateLimit.User}} {
		switch ps := b.b.PerSecond; {
		case math.IsNaN(ps) || math.IsInf(ps, 0):
			add(b.key+".per_second", "must be a finite number")
		case ps < 0:
			add(b.key+".per_second", "must be >= 0 (0 means unlimited), got %v", ps)
		}
		switch {
		case b.b.Burst < 0:
			add(b.key+".burst", "must be >= 0, got %d", b.b.Burst)
		case b.b.Burst == 0 && b.b.PerSecond > 0:
			add(b.key+".burst", "must be >= 1 when per_second is above 0 (a bucket of size 0 admits nothing)")
		}
	}

	for _, r := range []struct {
		key  string
		rule TrustRule
	}{{"trust.trusted", p.Trust.Trusted}, {"trust.standard", p.Trust.Standard}, {"trust.restricted", p.Trust.Restricted}} {
		errs = append(errs, validateTrustRule(r.key, r.rule)...)
	}

	errs = append(errs, validateList("pii.kinds", p.PII.Kinds, PIIKinds, "kind")...)
	if p.PII.Enabled && len(p.PII.Kinds) == 0 {
		add("pii.kinds", "must list at least one kind while pii.enabled is true (allowed: %s)", strings.Join(PIIKinds, ", "))
	}
	if p.PII.Action != PIIQuarantine && p.PII.Action != PIIReject {
		add("pii.action", "must be one of %s, %s, got %q", PIIQuarantine, PIIReject, p.PII.Action)
	}
	errs = append(errs, validateList("pii.own_conversation.kinds", p.PII.OwnConversation.Kinds, PIIKinds, "kind")...)
	if slices.Contains(p.PII.OwnConversation.Kinds, PIISecret) {
		add("pii.own_conversation.kinds", "must not list %s: a credential is quarantined wherever it is written", PIISecret)
	}
	if a := p.PII.OwnConversation.Action; a != PIIReadable && a != PIIQuarantine {
		add("pii.own_conversation.action", "must be one of %s, %s, got %q", PIIReadable, PIIQuarantine, a)
	}

	if t := p.Duplicates.NearThreshold; math.IsNaN(t) || t <= 0 || t > 1 {
		add("duplicates.near_threshold", "must be in (0, 1], got %v", t)
	}
	if p.Conflicts.Action != ConflictSupersede && p.Conflicts.Action != ConflictQueue {
		add("conflicts.action", "must be one of %s, %s, got %q", ConflictSupersede, ConflictQueue, p.Conflicts.Action)
	}
	if t := p.Conflicts.MinSimilarity; math.IsNaN(t) || t <= 0 || t > 1 {
		add("conflicts.min_similarity", "must be in (0, 1], got %v", t)
	}
	if p.Conflicts.MaxChangedTerms < 1 || p.Conflicts.MaxChangedTerms > 32 {
		add("conflicts.max_changed_terms", "must be between 1 and 32, got %d", p.Conflicts.MaxChangedTerms)
	}
	errs = append(errs, validateList("conflicts.types", p.Conflicts.Types, memory.Types, "type")...)
	errs = append(errs, validateList("duplicates.ignore_types", p.Duplicates.IgnoreTypes, memory.Types, "type")...)

	for _, g := range []struct {
		key string
		v   memory.NodeStatus
	}{{"graph.proposed_status", p.Graph.ProposedStatus}, {"graph.extracted_status", p.Graph.ExtractedStatus}} {
		if g.v != memory.NodeProvisional && g.v != memory.NodeActive {
			add(g.key, "must be one of %s, %s, got %q", memory.NodeProvisional, memory.NodeActive, g.v)
		}
	}

	if !slices.Contains(memory.TrustLevels, p.MCP.ClientTrust) {
		add("mcp.client_trust", "must be one of %s, %s, %s, %s, got %q",
			memory.Trusted, memory.Standard, memory.Restricted, memory.ReadOnly, p.MCP.ClientTrust)
	}

	for _, t := range memory.Types {
		if h := p.Maintenance.HalfLife.Of(t); h < 0 {
			add("maintenance.half_life."+string(t), "must be >= 0 (0 means never decays), got %s", Duration(h))
		}
	}
	if t := p.Maintenance.ArchiveBelow; math.IsNaN(t) || t < 0 || t >= 1 {
		add("maintenance.archive_below", "must be in [0, 1) (0 disables archiving), got %v", t)
	}
	if n := p.Maintenance.ConsolidateMin; n < 3 || n > 1000 {
		add("maintenance.consolidate_min", "must be between 3 and 1000, got %d", n)
	}

	switch ttl := p.Approvals.TTL.D(); {
	case ttl <= 0:
		add("approvals.ttl", "must be positive, got %s", p.Approvals.TTL)
	case ttl > maxApprovalTTL:
		add("approvals.ttl", "must be at most %s (365 days), got %s", Duration(maxApprovalTTL), p.Approvals.TTL)
	}
	return joinPolicyErrors(errs)
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
