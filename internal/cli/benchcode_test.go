package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchCodeFlags: the tuning flags of bench code refuse bad values
// with the flag named, before any work.
func TestBenchCodeFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--group", "a-z"}, "--group"},
		{[]string{"--dense-weights", "0.1,x"}, "--dense-weights"},
		{[]string{"--dense-weights", "11"}, "--dense-weights"},
	} {
		r := run(t, dir, nil, append([]string{"bench", "code"}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Fatalf("bench code %v: exit %d, %s", c.args, r.code, r.stderr)
		}
	}
}
