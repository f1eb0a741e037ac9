package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// micros converts a time to its stored form, unix microseconds UTC.
func micros(t time.Time) int64 { return t.UnixMicro() }

// nullMicros converts an optional time; nil is stored as NULL.
func nullMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMicro()
}

// fromMicros converts a stored time back; the result is memory.Canon form.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func fromNullMicros(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

func nullString(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func fromNullString(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}

// jsonObject returns raw compacted for storage, "{}" when empty. field
// names the value in errors.
func jsonObject(field string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	if raw[0] != '{' {
		return "", fmt.Errorf("%s: not a JSON object", field)
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	if err := json.Compact(&b, raw); err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	return b.String(), nil
}

// stringList encodes a list of strings as a JSON array; nil is "[]".
func stringList(list []string) (string, error) {
	if len(list) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// parseStringList decodes a stored JSON array; the result is never nil.
func parseStringList(field, s string) ([]string, error) {
	if s == "" || s == "[]" {
		return []string{}, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}
