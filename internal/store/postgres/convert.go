package postgres

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Times are timestamptz, which keeps microseconds: pgx truncates a
// time.Time's nanoseconds on the way in (as memory.Canon does), and on the
// way out utc turns the driver's local times into memory.Canon form.

func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// jsonObject returns raw compacted for storage, "{}" when empty. field
// names the value in errors. Stored JSON is the compact text, byte for
// byte, as in the SQLite backend.
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

// list returns a string list for a text[] column: never nil, which pgx
// would store as NULL.
func list(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
