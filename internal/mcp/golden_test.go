package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestToolsGolden snapshots every tool's name, title, description,
// annotations and input and output schemas, and the resources, in
// testdata/tools.golden.json. A change to what a model sees of a tool is
// an API change: review the diff, then refresh with
// go test ./internal/mcp -run TestToolsGolden -update.
func TestToolsGolden(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(tools.Tools, func(i, j int) bool { return tools.Tools[i].Name < tools.Tools[j].Name })
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string]any{"tools": tools.Tools, "resources": res.Resources}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(snap); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "tools.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("tool definitions drifted from %s; review the change, then run go test ./internal/mcp -run TestToolsGolden -update\n%s",
			path, firstDiff(string(want), b.String()))
	}
}

// firstDiff shows where two texts first differ, with a little context.
func firstDiff(want, got string) string {
	wl, gl := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + string(w) + "\n  got:  " + string(g)
		}
	}
	return ""
}
