package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIngestAndCite: memgate ingest over a git working tree honours
// .gitignore and the globs, names skipped files with reasons, writes
// nothing on an unchanged re-run, and memgate cite prints exactly the
// cited lines; a read_only agent cannot ingest; export and import of the
// documents are byte-identical.
func TestIngestAndCite(t *testing.T) {
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")
	tree := filepath.Join(tmp, "repo")
	files := map[string]string{
		".git/HEAD":         "ref: refs/heads/main\n",
		".gitignore":        "build/\n*.log\n",
		"README.md":         "# Tool\n\nIntro.\n\n## Usage\n\nRun tool --fast to skip the slow checks.\n",
		"main.go":           "package main\n\n// fastPath skips the slow checks when --fast is given.\nfunc fastPath() bool {\n\treturn true\n}\n",
		"build/out.md":      "# generated\n",
		"debug.log":         "noise\n",
		"vendor/dep/dep.go": "package dep\n\nfunc Dep() {}\n",
		"bad.md":            "\xff\xfe broken\n",
	}
	for name, body := range files {
		p := filepath.Join(tree, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, run(t, data, nil, "agents", "create", "--name", "reader", "--trust", "read_only", "--json"))
	var sum struct {
		Files, Created, Unchanged int
		Chunks                    int `json:"chunks_written"`
		Skipped                   []struct{ Path, Reason string }
	}
	mustJSON(t, run(t, data, nil, "ingest", "--json", "--exclude", "vendor/**", tree), &sum)
	if sum.Files != 3 || sum.Created != 2 || len(sum.Skipped) != 1 || !strings.Contains(sum.Skipped[0].Reason, "UTF-8") {
		t.Fatalf("first ingest: %+v", sum)
	}
	mustJSON(t, run(t, data, nil, "ingest", "--json", "--exclude", "vendor/**", tree), &sum)
	if sum.Unchanged != 2 || sum.Chunks != 0 {
		t.Fatalf("unchanged re-ingest: %+v", sum)
	}
	r := mustRun(t, run(t, data, nil, "query", "--json", "skip the slow checks fast path"))
	var q struct {
		Results []struct{ Citation string } `json:"results"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &q); err != nil || len(q.Results) == 0 {
		t.Fatalf("query: %v %s", err, r.stdout)
	}
	var cited string
	for _, h := range q.Results {
		if strings.Contains(h.Citation, "#func fastPath#") {
			cited = h.Citation
		}
	}
	if !strings.HasSuffix(cited, "#L3-L6") {
		t.Fatalf("citations: %+v", q.Results)
	}
	c := mustRun(t, run(t, data, nil, "cite", cited))
	if want := "// fastPath skips the slow checks when --fast is given.\nfunc fastPath() bool {\n\treturn true\n}\n"; c.stdout != want {
		t.Fatalf("cite printed %q, want %q", c.stdout, want)
	}
	// A read_only agent cannot ingest: the gate refuses, nothing written.
	ro := run(t, data, nil, "ingest", "--agent", "reader", tree+"/README.md")
	if ro.code == 0 || !strings.Contains(ro.stderr, "read_only") {
		t.Fatalf("read_only ingest: %d %s", ro.code, ro.stderr)
	}
	// Export, import into a new data directory, export again: the same bytes.
	out1 := filepath.Join(tmp, "a.ndjson")
	mustRun(t, run(t, data, nil, "export", "--out", out1))
	data2 := filepath.Join(tmp, "data2")
	mustRun(t, run(t, data2, nil, "import", out1))
	out2 := filepath.Join(tmp, "b.ndjson")
	mustRun(t, run(t, data2, nil, "export", "--out", out2))
	a, _ := os.ReadFile(out1)
	b, _ := os.ReadFile(out2)
	if !strings.Contains(string(a), "fastPath") || string(a) != string(b) {
		t.Fatalf("export/import not byte-identical (%d vs %d bytes)", len(a), len(b))
	}
	// The imported documents cite the same lines.
	if c2 := mustRun(t, run(t, data2, nil, "cite", cited)); c2.stdout != c.stdout {
		t.Fatalf("cite after import: %q", c2.stdout)
	}
}
