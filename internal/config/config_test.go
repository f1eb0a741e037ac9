package config

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parse(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	c := Default()
	c.DataDir = "/data" // as the CLI sets it, from UserDataDir
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Bind(fs, true)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := ApplyEnv(fs, func(k string) string { return env[k] }); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func TestDatabaseURL(t *testing.T) {
	const secret = "hunter2-Secret"
	u := "postgres://memgate:" + secret + "@db:5432/memgate?sslmode=require"
	file := filepath.Join(t.TempDir(), "url")
	if err := os.WriteFile(file, []byte(u+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default is SQLite", nil, nil, ""},
		{"flag", []string{"--database-url", u}, nil, u},
		{"env", nil, map[string]string{"MEMGATE_DATABASE_URL": u}, u},
		{"file", nil, map[string]string{"MEMGATE_DATABASE_URL_FILE": file}, u},
		{"env wins over file", nil, map[string]string{"MEMGATE_DATABASE_URL": "postgresql://x@y/z", "MEMGATE_DATABASE_URL_FILE": file}, "postgresql://x@y/z"},
		{"flag wins over env", []string{"--database-url", u}, map[string]string{"MEMGATE_DATABASE_URL": "postgres://other/db"}, u},
	} {
		cfg, err := parse(t, c.args, c.env)
		if err != nil || cfg.DatabaseURL != c.want {
			t.Fatalf("%s: DatabaseURL %q, err %v; want %q", c.name, cfg.DatabaseURL, err, c.want)
		}
		if cfg.DataDir != "/data" {
			t.Fatalf("%s: data dir %q changed", c.name, cfg.DataDir)
		}
	}
	cfg, _ := parse(t, []string{"--database-url", u}, nil)
	if d := cfg.Dump(); strings.Contains(d, secret) || !strings.Contains(d, "memgate:xxxxx@db") {
		t.Fatalf("Dump leaks or loses the URL: %s", d)
	}
	for _, bad := range []string{"mysql://memgate:" + secret + "@db/memgate", secret} {
		_, err := parse(t, []string{"--database-url", bad}, nil)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Fatalf("--database-url %q: err %v (want an error that does not echo it)", bad, err)
		}
	}
	if _, err := parse(t, nil, map[string]string{"MEMGATE_DATABASE_URL_FILE": filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("a missing MEMGATE_DATABASE_URL_FILE was accepted")
	}
	if got := RedactURL("postgresql://u@h/d?password=" + secret); strings.Contains(got, secret) {
		t.Fatalf("RedactURL = %q", got)
	}
}

func TestRerankSettings(t *testing.T) {
	cfg, err := parse(t, nil, nil)
	if err != nil || cfg.RerankURL != "" {
		t.Fatalf("default: rerank %q, err %v (want off)", cfg.RerankURL, err)
	}
	cfg, err = parse(t, []string{"--rerank-shape", "cohere", "--rerank-top-n", "30"}, map[string]string{
		"MEMGATE_RERANK_URL": "https://rr.example/v1/rerank", "MEMGATE_RERANK_MODEL": "rr-1", "MEMGATE_RERANK_TIMEOUT": "750ms"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RerankURL != "https://rr.example/v1/rerank" || cfg.RerankShape != "cohere" || cfg.RerankModel != "rr-1" ||
		cfg.RerankTimeout.Milliseconds() != 750 || cfg.RerankTopN != 30 {
		t.Fatalf("rerank settings %+v", cfg)
	}
	const secret = "s3cret-pass"
	cfg, err = parse(t, []string{"--rerank-url", "http://u:" + secret + "@tei:8080/rerank"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Dump(); strings.Contains(d, secret) || !strings.Contains(d, "tei:8080/rerank") {
		t.Fatalf("Dump leaks or loses the rerank URL: %s", d)
	}
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"--rerank-url", "ftp://x:" + secret + "@h/rerank"}, "rerank-url"},
		{[]string{"--rerank-url", "http://h/rerank", "--rerank-shape", "grpc"}, "rerank-shape"},
		{[]string{"--rerank-top-n", "5"}, "rerank-url"},
		{[]string{"--rerank-url", "http://h/rerank", "--rerank-top-n", "101"}, "rerank-top-n"},
		{[]string{"--rerank-url", "http://h/rerank", "--rerank-timeout", "-1s"}, "rerank-timeout"},
	} {
		_, err := parse(t, c.args, nil)
		if err == nil || !strings.HasPrefix(err.Error(), c.field+":") || strings.Contains(err.Error(), secret) {
			t.Fatalf("%v: err %v, want one naming %s that does not echo the value", c.args, err, c.field)
		}
	}
}
