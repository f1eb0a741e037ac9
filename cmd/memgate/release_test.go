//go:build unix

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseReproducible builds through scripts/release twice into two
// directories and holds the binaries byte-identical, SHA256SUMS true to
// them, and --version stamped with the version, the commit and the
// commit's date.
func TestReleaseReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds release binaries; skipped with -short")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("scripts/release needs bash")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	targets := "linux/amd64"
	if host != "linux/amd64" {
		targets += " " + host
	}
	const version = "1.2.3-test"
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "release"), version, d)
		cmd.Env = append(os.Environ(), "TARGETS="+targets)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/release: %v\n%s", err, out)
		}
	}
	name := func(goos, goarch string) string {
		n := "memgate-" + version + "-" + goos + "-" + goarch
		if goos == "windows" {
			n += ".exe"
		}
		return n
	}
	for _, tg := range strings.Fields(targets) {
		goos, goarch, _ := strings.Cut(tg, "/")
		n := name(goos, goarch)
		a, err := os.ReadFile(filepath.Join(dirs[0], n))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dirs[1], n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the two builds differ (%d and %d bytes)", n, len(a), len(b))
		}
		sum := sha256.Sum256(a)
		sums, err := os.ReadFile(filepath.Join(dirs[0], "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		if want := hex.EncodeToString(sum[:]) + "  " + n + "\n"; !strings.Contains(string(sums), want) {
			t.Errorf("SHA256SUMS lacks %q:\n%s", want, sums)
		}
		if bytes.Contains(a, []byte(root)) {
			t.Errorf("%s holds the build's source path %s (no -trimpath?)", n, root)
		}
	}

	commit, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git work tree: %v", err)
	}
	out, err := exec.Command(filepath.Join(dirs[0], name(runtime.GOOS, runtime.GOARCH)), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	re := regexp.MustCompile(`^memgate ` + regexp.QuoteMeta(version) + ` \(commit ` +
		strings.TrimSpace(string(commit)) + `(-dirty)?, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)\n$`)
	if !re.Match(out) {
		t.Errorf("--version printed %q", out)
	}
}
