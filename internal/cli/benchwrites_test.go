package cli_test

import (
	"path/filepath"
	"testing"
)

// TestBenchWrites: the write mix runs against a server of its own, every
// request acknowledged bar a rare version conflict, with patches among
// the writes, and prints the machine and the command in its JSON line.
func TestBenchWrites(t *testing.T) {
	r := run(t, filepath.Join(t.TempDir(), "unused"), nil, "bench", "writes", "--requests", "10", "--duration", "2m", "--clients", "4", "--json-only")
	var out struct {
		Bench, Command string
		Machine        struct{ Cores int }
		Result         struct {
			Writes, Patches, Failed int
			WritesPerS              float64 `json:"writes_per_s"`
			P95MS                   float64 `json:"p95_ms"`
		}
	}
	mustJSON(t, r, &out)
	if out.Bench != "writes" || out.Machine.Cores < 1 || out.Command == "" {
		t.Fatalf("summary %+v", out)
	}
	if res := out.Result; res.Writes < 30 || res.Patches < 4 || res.Failed > res.Writes/50 || res.WritesPerS <= 0 || res.P95MS <= 0 {
		t.Fatalf("result %+v: want acknowledged writes and patches", res)
	}
}
