//go:build unix

package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestImageBuild builds the container image through scripts/image with
// buildah (vfs storage in a temporary directory, chroot isolation: no
// daemon, no base image download) and checks what can be checked without
// running a container: the config (entrypoint, command, non-root user,
// /data volume, healthcheck, port) and the files of its one layer (the
// binary, which runs and prints its version; the CA bundle; the user in
// /etc/passwd; /data owned by that user).
func TestImageBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image; skipped with -short")
	}
	buildah, err := exec.LookPath("buildah")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("buildah is not installed (.ci/run installs it)")
		}
		t.Skip("buildah is not installed")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image holds a linux binary")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	conf := filepath.Join(tmp, "storage.conf")
	storage := "[storage]\ndriver = \"vfs\"\ngraphroot = \"" + filepath.Join(tmp, "graph") + "\"\nrunroot = \"" + filepath.Join(tmp, "run") + "\"\n"
	if err := os.WriteFile(conf, []byte(storage), 0o600); err != nil {
		t.Fatal(err)
	}
	const image = "localhost/memgate-test:0.0.0-test"
	env := append(os.Environ(), "CONTAINERS_STORAGE_CONF="+conf, "BUILD_ARGS=--isolation chroot", "IMAGE="+image)
	bh := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(buildah, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("buildah %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "image"), "0.0.0-test", runtime.GOARCH)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") != "true" && strings.Contains(string(out), "permission denied") {
			t.Skipf("buildah cannot build here: %s", out)
		}
		t.Fatalf("scripts/image: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		c := exec.Command(buildah, "rmi", "-f", image)
		c.Env = env
		c.Run()
	})

	var info struct {
		Docker struct {
			Config struct {
				User         string
				Entrypoint   []string
				Cmd          []string
				Volumes      map[string]struct{}
				ExposedPorts map[string]struct{}
				Env          []string
				Healthcheck  *struct {
					Test    []string
					Retries int
				}
			} `json:"config"`
		}
	}
	if err := json.Unmarshal(bh("inspect", "--type", "image", image), &info); err != nil {
		t.Fatal(err)
	}
	c := info.Docker.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want the non-root 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/memgate"}) || !slices.Equal(c.Cmd, []string{"serve"}) {
		t.Errorf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("volumes %v, want /data", c.Volumes)
	}
	if _, ok := c.ExposedPorts["8420/tcp"]; !ok {
		t.Errorf("exposed ports %v", c.ExposedPorts)
	}
	if c.Healthcheck == nil || !slices.Equal(c.Healthcheck.Test, []string{"CMD", "/usr/local/bin/memgate", "healthcheck", "--ready"}) {
		t.Errorf("healthcheck %+v", c.Healthcheck)
	}
	for _, want := range []string{"MEMGATE_DATA_DIR=/data", "MEMGATE_ADDR=0.0.0.0:8420"} {
		if !slices.Contains(c.Env, want) {
			t.Errorf("env %v lacks %s", c.Env, want)
		}
	}

	// The filesystem: push to a directory, uncompressed, and read the
	// layers.
	out := filepath.Join(tmp, "out")
	bh("push", "--disable-compression", image, "dir:"+out)
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		t.Fatal(err)
	}
	type file struct {
		hdr  *tar.Header
		body []byte
	}
	files := map[string]file{}
	for _, l := range manifest.Layers {
		f, err := os.Open(filepath.Join(out, strings.TrimPrefix(l.Digest, "sha256:")))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(f)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(tr)
			files["/"+strings.TrimPrefix(strings.TrimSuffix(h.Name, "/"), "./")] = file{h, body}
		}
		f.Close()
	}
	bin, ok := files["/usr/local/bin/memgate"]
	if !ok || bin.hdr.Mode&0o111 == 0 {
		t.Fatalf("no executable /usr/local/bin/memgate in %d files", len(files))
	}
	if ca := files["/etc/ssl/certs/ca-certificates.crt"]; !strings.Contains(string(ca.body), "BEGIN CERTIFICATE") {
		t.Error("no CA bundle at /etc/ssl/certs/ca-certificates.crt")
	}
	if pw := string(files["/etc/passwd"].body); !strings.Contains(pw, "memgate:x:65532:65532:") {
		t.Errorf("/etc/passwd: %q", pw)
	}
	if d, ok := files["/data"]; !ok || d.hdr.Typeflag != tar.TypeDir || d.hdr.Uid != 65532 {
		t.Errorf("/data: %+v", d.hdr)
	}
	for name := range files {
		if strings.HasPrefix(name, "/bin") || strings.HasPrefix(name, "/usr/bin") {
			t.Errorf("the image holds %s: it should hold nothing but memgate", name)
		}
	}
	// The image's binary runs (static: no loader or libc in the image).
	exe := filepath.Join(tmp, "memgate")
	if err := os.WriteFile(exe, bin.body, 0o755); err != nil {
		t.Fatal(err)
	}
	v, err := exec.Command(exe, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "memgate 0.0.0-test (commit ") {
		t.Errorf("the image's memgate --version: %v %q", err, v)
	}
}
