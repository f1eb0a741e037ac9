package cli_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/cli"
)

// TestDefaultDataDirIsTheUsers: without --data-dir or MEMGATE_DATA_DIR
// every command uses $XDG_DATA_HOME/memgate, else ~/.local/share/memgate,
// whatever the working directory; with neither variable it asks for
// --data-dir. (HOME and XDG_DATA_HOME are temp dirs here: tests never
// touch the real home.)
func TestDefaultDataDirIsTheUsers(t *testing.T) {
	xdg, home := t.TempDir(), t.TempDir()
	mustRun(t, run(t, "", map[string]string{"XDG_DATA_HOME": xdg, "HOME": home}, "write", "--type", "belief", "--content", "in the XDG dir"))
	if _, err := os.Stat(filepath.Join(xdg, "memgate", "memgate.db")); err != nil {
		t.Fatalf("no database under XDG_DATA_HOME: %v", err)
	}
	mustRun(t, run(t, "", map[string]string{"HOME": home}, "write", "--type", "belief", "--content", "in the home dir"))
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "memgate", "memgate.db")); err != nil {
		t.Fatalf("no database under HOME: %v", err)
	}
	r := mustRun(t, run(t, "", map[string]string{"HOME": home}, "list", "--json"))
	if !strings.Contains(r.stdout, "in the home dir") || strings.Contains(r.stdout, "in the XDG dir") {
		t.Fatalf("list: %s", r.stdout)
	}
	r = run(t, "", nil, "list")
	if r.code != 2 || !strings.Contains(r.stderr, "--data-dir") {
		t.Fatalf("no HOME: exit %d %s", r.code, r.stderr)
	}
}

// TestServePrintsWhereDataLives: serve's first lines say where it listens
// and where its data is.
func TestServePrintsWhereDataLives(t *testing.T) {
	home := t.TempDir()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // ends a serve that never prints
	defer cancel()
	done := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		getenv := func(k string) string {
			if k == "HOME" {
				return home
			}
			return ""
		}
		done <- cli.Main([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "error"},
			cli.Env{Stdin: strings.NewReader(""), Stdout: pw, Stderr: &stderr, Getenv: getenv, Ctx: ctx})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	want := "memgate data: " + filepath.Join(home, ".local", "share", "memgate", "memgate.db")
	found := false
	for sc.Scan() {
		if sc.Text() == want {
			found = true
			cancel()
		}
	}
	if code := <-done; code != 0 || !found {
		t.Fatalf("serve exited %d, printed %q: %s", code, want, stderr.String())
	}
}
