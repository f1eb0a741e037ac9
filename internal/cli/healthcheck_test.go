package cli_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealthcheck: `memgate healthcheck` exits 0 against a running
// server, for /healthz and /readyz, and non-zero when nothing listens.
func TestHealthcheck(t *testing.T) {
	env := map[string]string{"MEMGATE_EMBEDDER": "none"}
	dir := filepath.Join(t.TempDir(), "data")
	srv := startServe(t, dir, env)
	addr := strings.TrimPrefix(srv.url, "http://")
	for _, args := range [][]string{{"healthcheck", "--addr", addr}, {"healthcheck", "--ready", "--addr", addr}} {
		if r := run(t, dir, env, args...); r.code != 0 || !strings.Contains(r.stdout, ": ok") {
			t.Errorf("%v: exit %d %s %s", args, r.code, r.stdout, r.stderr)
		}
	}
	_, port, _ := net.SplitHostPort(addr)
	if r := run(t, dir, env, "healthcheck", "--addr", "0.0.0.0:"+port); r.code != 0 {
		t.Errorf("an unspecified address is not asked on loopback: exit %d %s", r.code, r.stderr)
	}
	srv.stop()
	if r := run(t, dir, env, "healthcheck", "--addr", addr, "--timeout", "2s"); r.code == 0 {
		t.Errorf("healthcheck of a stopped server: exit 0")
	}
}
