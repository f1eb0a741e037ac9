package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOpenAPIExamples: every operation shows an example of its JSON
// request body and of each 2xx answer, at the media type, where code
// generators and documentation tools look for them (redocly checks each
// against its schema, TestOpenAPIRedoclyLint).
func TestOpenAPIExamples(t *testing.T) {
	doc := oaLoad(t)
	paths := doc["paths"].(map[string]any)
	hasExample := func(media any) bool {
		m, _ := media.(map[string]any)
		_, a := m["example"]
		_, b := m["examples"]
		return a || b
	}
	var missing []string
	for path, pv := range paths {
		item := oaDeref(t, doc, pv)
		for _, method := range oaMethods {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			key := strings.ToUpper(method) + " " + path
			if rb, ok := op["requestBody"].(map[string]any); ok {
				for ct, media := range oaDeref(t, doc, rb)["content"].(map[string]any) {
					if !hasExample(media) {
						missing = append(missing, key+" request "+ct)
					}
				}
			}
			for code, rv := range op["responses"].(map[string]any) {
				r := oaDeref(t, doc, rv)
				content, _ := r["content"].(map[string]any)
				for ct, media := range content {
					if !hasExample(media) {
						missing = append(missing, fmt.Sprintf("%s %s %s", key, code, ct))
					}
				}
			}
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("operations without an example (docs/rest.md says how to add one):\n%s", strings.Join(missing, "\n"))
	}
}

// TestOpenAPIRedoclyLint lints openapi.json with Redocly CLI (pinned in
// testdata/redocly, installed by .ci/run): the recommended rules, which
// include checking every example against its schema. It skips without
// node, except under CI=true, where it fails.
func TestOpenAPIRedoclyLint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node; skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is required under CI=true; .ci/run installs it")
		}
		t.Skip("needs node on PATH to run Redocly CLI")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "redocly"))
	if err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(dir, "node_modules", "@redocly", "cli", "bin", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		npm, lerr := exec.LookPath("npm")
		if lerr != nil {
			t.Fatalf("Redocly CLI is not installed in %s and npm is missing", dir)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "lint", "--config", "redocly.yaml", "--format", "json", filepath.Join("..", "..", "openapi.json"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, _ := cmd.Output() // the exit status is judged from the report
	var report struct {
		Totals struct {
			Errors, Warnings int
		} `json:"totals"`
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("redocly lint printed no JSON report (%v):\n%s", err, out)
	}
	for _, p := range report.Problems {
		at := ""
		if len(p.Location) > 0 {
			at = p.Location[0].Pointer
		}
		t.Errorf("%s: %s (%s)", p.RuleID, p.Message, at)
	}
	if report.Totals.Errors+report.Totals.Warnings > 0 {
		t.Errorf("redocly: %d errors, %d warnings", report.Totals.Errors, report.Totals.Warnings)
	}
}
