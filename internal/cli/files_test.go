package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/store/postgres/pgtest"
)

// readTree maps each regular file under dir to its bytes.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(raw)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, a, b map[string]string) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%d files, want %d", len(b), len(a))
	}
	for k, v := range a {
		if b[k] != v {
			t.Fatalf("%s differs: %q, want %q", k, b[k], v)
		}
	}
}

// TestFilesExportImportRoundTrip: files import → files export →
// files import into an empty workspace → files export gives the same
// bytes, on both backends.
func TestFilesExportImportRoundTrip(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			env := func() map[string]string {
				if backend == "postgres" {
					return map[string]string{"MEMGATE_DATABASE_URL": pgtest.URL(t)}
				}
				return nil
			}
			src := t.TempDir()
			tree := map[string]string{
				"MEMORY.md":             "# Memory\n\n- prefers tea\n- café ☕, tabs\tand trailing spaces   \n",
				"USER.md":               "no trailing newline",
				"projects/plan.md":      "line 1\r\nline 2 (CRLF)\r\n",
				"projects/deep/x/y.txt": "\n\nblank lines first\n",
			}
			for rel, content := range tree {
				p := filepath.Join(src, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			first, second := t.TempDir(), t.TempDir()
			e1 := env()
			if r := run(t, first, e1, "files", "import", src); r.code != 0 || !strings.Contains(r.stdout, "4 created") {
				t.Fatalf("import: %d %s %s", r.code, r.stdout, r.stderr)
			}
			out1 := t.TempDir()
			if r := run(t, first, e1, "files", "export", out1); r.code != 0 {
				t.Fatalf("export: %d %s", r.code, r.stderr)
			}
			sameTree(t, tree, readTree(t, out1))
			// A second import of the same files changes nothing.
			if r := run(t, first, e1, "files", "import", src); r.code != 0 || !strings.Contains(r.stdout, "4 unchanged") {
				t.Fatalf("re-import: %s %s", r.stdout, r.stderr)
			}
			e2 := env()
			if r := run(t, second, e2, "files", "import", out1); r.code != 0 {
				t.Fatalf("import into an empty workspace: %s", r.stderr)
			}
			out2 := t.TempDir()
			if r := run(t, second, e2, "files", "export", out2); r.code != 0 {
				t.Fatalf("export: %s", r.stderr)
			}
			sameTree(t, readTree(t, out1), readTree(t, out2))

			// cat prints the bytes; ls and history see the file.
			if r := run(t, second, e2, "files", "cat", "/memories/USER.md"); r.stdout != "no trailing newline" {
				t.Fatalf("cat: %q %s", r.stdout, r.stderr)
			}
			var ls struct {
				Files []struct {
					Path string `json:"path"`
				} `json:"files"`
			}
			mustJSON(t, run(t, second, e2, "files", "ls", "--prefix", "/memories/projects", "--json"), &ls)
			if len(ls.Files) != 2 {
				t.Fatalf("ls: %+v", ls)
			}
			var hist struct {
				Versions []json.RawMessage `json:"versions"`
			}
			mustJSON(t, run(t, second, e2, "files", "history", "/memories/MEMORY.md", "--json"), &hist)
			if len(hist.Versions) != 1 {
				t.Fatalf("history: %d", len(hist.Versions))
			}
		})
	}
}

// TestFilesEdit drives edit with a scripted $EDITOR.
func TestFilesEdit(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(t.TempDir(), "ed.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf 'edited\\n' >> \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"EDITOR": script}
	if r := run(t, dir, env, "files", "edit", "/memories/MEMORY.md"); r.code != 0 || !strings.Contains(r.stdout, "v1 accepted") {
		t.Fatalf("edit (new): %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, env, "files", "edit", "/memories/MEMORY.md"); r.code != 0 || !strings.Contains(r.stdout, "v2 accepted") {
		t.Fatalf("edit: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, nil, "files", "cat", "/memories/MEMORY.md"); r.stdout != "edited\nedited\n" {
		t.Fatalf("cat: %q", r.stdout)
	}
	if r := run(t, dir, nil, "files", "cat", "/memories/../x"); r.code == 0 {
		t.Fatal("a traversal path was accepted")
	}
}
