package api

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// encoding/json's errors often do not say where the problem is: a time
// that does not parse, a string where a json.Number is wanted, an unknown
// field inside a nested object ("tenant" rather than "scope.tenant"), an
// array element of the wrong type ("messages.content" without its
// index). locateBad finds the path by decoding the body member by member
// against the target type; it runs only after decoding has failed.

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// locateBad returns the path (a.b[3].c) of the first member of raw that
// does not decode into t, or that t does not know when strict is set.
func locateBad(raw json.RawMessage, t reflect.Type, strict bool) (string, bool) {
	return locateIn(raw, t, "", strict, 0)
}

func locateIn(raw json.RawMessage, t reflect.Type, path string, strict bool, depth int) (string, bool) {
	if depth > 64 {
		return "", false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if string(raw) == "null" {
		return "", false
	}
	custom := t == rawMessageType || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshaler)
	switch {
	case custom || t.Kind() == reflect.Interface:
		// Leaf: decodes as a whole or not at all.
	case t.Kind() == reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return path, path != ""
		}
		fields := memberTypes(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, ok := fieldType(fields, k)
			if !ok {
				if strict {
					return join(path, k), true
				}
				continue
			}
			if p, ok := locateIn(obj[k], ft, join(path, k), strict, depth+1); ok {
				return p, true
			}
		}
		return "", false
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8, t.Kind() == reflect.Array:
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return path, path != ""
		}
		for i, e := range arr {
			if p, ok := locateIn(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", strict, depth+1); ok {
				return p, true
			}
		}
		return "", false
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return path, path != ""
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p, ok := locateIn(obj[k], t.Elem(), join(path, k), strict, depth+1); ok {
				return p, true
			}
		}
		return "", false
	}
	if json.Unmarshal(raw, reflect.New(t).Interface()) != nil {
		return path, path != ""
	}
	return "", false
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// memberTypes maps the JSON names of a struct's fields, promoted fields of
// embedded structs included, to their types.
func memberTypes(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range memberTypes(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// fieldType finds a key's field as encoding/json does: an exact name
// first, else a case-insensitive match.
func fieldType(fields map[string]reflect.Type, k string) (reflect.Type, bool) {
	if t, ok := fields[k]; ok {
		return t, true
	}
	for name, t := range fields {
		if strings.EqualFold(name, k) {
			return t, true
		}
	}
	return nil, false
}
