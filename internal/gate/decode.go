// The policy file's strict decoder: JSON and YAML documents parsed to
// YAML nodes, then decoded field by field into Policy so that unknown
// keys, duplicates and values of the wrong type are errors naming the
// line and the key (Load).

package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
