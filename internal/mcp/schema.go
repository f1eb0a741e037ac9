package mcp

import (
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool schemas come from the Go types of each tool's input and output
// (descriptions from `jsonschema` struct tags), adjusted here:
//
//   - a Go slice is inferred as "array or null"; tools take and give
//     arrays, so the schema says "array";
//   - enumerations (record types, access levels, relations...) are added
//     to the properties that take them;
//   - strict input schemas refuse unknown arguments; the compatibility
//     tools' do not, since the reference server ignores them.

// schemaFor infers T's schema and applies the adjustments. enums maps a
// top-level property to its allowed values (for an array property, its
// items').
func schemaFor[T any](strict bool, enums map[string][]string) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(T), err))
	}
	tidy(s, strict)
	for prop, vals := range enums {
		p := s.Properties[prop]
		if p == nil {
			panic(fmt.Sprintf("mcp: schema of %T has no property %q", *new(T), prop))
		}
		if p.Type == "array" {
			p = p.Items
		}
		p.Enum = make([]any, len(vals))
		for i, v := range vals {
			p.Enum[i] = v
		}
	}
	return s
}

// tidy makes arrays plain "array" and, unless strict, lets objects take
// properties they do not name.
func tidy(s *jsonschema.Schema, strict bool) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && slices.Contains(s.Types, "null") && slices.Contains(s.Types, "array") {
		s.Type, s.Types = "array", nil
	}
	if !strict && (s.Type == "object" || slices.Contains(s.Types, "object")) && s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil {
		s.AdditionalProperties = nil
	}
	tidy(s.Items, strict)
	for _, p := range s.Properties {
		tidy(p, strict)
	}
}

// add registers a typed tool with its schemas: the input's strict unless
// given, the output's inferred from Out.
func add[In, Out any](srv *sdk.Server, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	if t.InputSchema == nil {
		t.InputSchema = schemaFor[In](true, nil)
	}
	t.OutputSchema = schemaFor[Out](true, nil)
	sdk.AddTool(srv, t, h)
}
