//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestComposeFile: deploy/compose.yaml runs two memgate replicas of the
// image on one PostgreSQL, each reading the database URL from a secret
// file, waiting for the database to be healthy, on its own data volume.
func TestComposeFile(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image       string
			Environment map[string]string
			Secrets     []string
			Volumes     []string
			Ports       []string
			DependsOn   map[string]struct{ Condition string } `yaml:"depends_on"`
			Healthcheck struct{ Test []string }
		}
		Secrets map[string]struct{ File string }
		Volumes map[string]any
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	var replicas []string
	for name, s := range c.Services {
		if !strings.HasPrefix(name, "memgate") {
			continue
		}
		replicas = append(replicas, name)
		if !strings.Contains(s.Image, "memgate") {
			t.Errorf("%s: image %q", name, s.Image)
		}
		if s.Environment["MEMGATE_DATABASE_URL_FILE"] != "/run/secrets/database_url" || !slices.Contains(s.Secrets, "database_url") {
			t.Errorf("%s: does not read the database URL from the secret: %v %v", name, s.Environment, s.Secrets)
		}
		if s.DependsOn["postgres"].Condition != "service_healthy" {
			t.Errorf("%s: does not wait for a healthy postgres: %v", name, s.DependsOn)
		}
		if len(s.Volumes) != 1 || !strings.HasSuffix(s.Volumes[0], ":/data") {
			t.Errorf("%s: volumes %v", name, s.Volumes)
		}
		if len(s.Ports) != 1 || !strings.HasPrefix(s.Ports[0], "127.0.0.1:") {
			t.Errorf("%s: ports %v (published on loopback, behind the proxy)", name, s.Ports)
		}
	}
	if len(replicas) != 2 {
		t.Errorf("replicas %v, want two", replicas)
	}
	if pg, ok := c.Services["postgres"]; !ok || len(pg.Healthcheck.Test) == 0 {
		t.Error("no postgres service with a healthcheck")
	}
	for _, s := range []string{"pg_password", "database_url"} {
		if c.Secrets[s].File == "" {
			t.Errorf("secret %s has no file", s)
		}
	}
}

// TestSystemdUnit: deploy/memgate.service passes systemd-analyze verify
// (with its ExecStart pointed at a built memgate) and runs `memgate
// serve` as an unprivileged user with a state directory.
func TestSystemdUnit(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/memgate.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(raw)
	for _, want := range []string{"ExecStart=/usr/local/bin/memgate serve", "DynamicUser=yes", "StateDirectory=memgate",
		"Environment=MEMGATE_DATA_DIR=/var/lib/memgate", "KillSignal=SIGTERM"} {
		if !strings.Contains(unit, "\n"+want+"\n") {
			t.Errorf("the unit lacks %q", want)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	bin := memgateBinary(t)
	path := filepath.Join(t.TempDir(), "memgate.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/local/bin/memgate", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
