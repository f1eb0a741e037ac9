package knowledge_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/memory"
)

const readme = `# Widget service

The widget service stores widgets.

## Deployment

Deploy with the blue-green procedure: start the green fleet, shift traffic, drain blue.

## Troubleshooting

If widgets vanish, check the reaper's schedule.
`

const goSrc = `// Package server serves widgets.
package server

import "net/http"

// Handler serves the widget API.
type Handler struct {
	mux *http.ServeMux
}

// ParseRetryAfter parses the Retry-After header of an overloaded upstream
// into a number of seconds to wait before the next attempt.
func ParseRetryAfter(h http.Header) int {
	return 0
}

// ServeHTTP dispatches a request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}
`

const pySrc = `"""Helpers for invoices."""
import math


def round_cents(x):
    """Round an amount to whole cents."""
    return math.floor(x * 100 + 0.5) / 100


class Ledger:
    """A ledger of entries."""

    def add(self, entry):
        self.entries.append(entry)
`

const tsSrc = `import { fetch } from "./net";

/** Fetches a widget by its id from the catalogue. */
export async function fetchWidget(id: string): Promise<Widget> {
  return fetch("/widgets/" + id);
}

export interface Widget {
  id: string;
  name: string;
}
`

// manualPDF writes a three-page PDF; page 2 holds the calibration rule.
func manualPDF(t *testing.T) []byte {
	t.Helper()
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetFont("Helvetica", "", 12)
	pages := [][]string{
		{"Boiler manual", "Chapter one introduces the boiler and its parts."},
		{"Calibration", "The boiler pressure must stay below 2.5 bar during calibration.", "Open the relief valve slowly."},
		{"Maintenance", "Replace the gasket every spring."},
	}
	for _, lines := range pages {
		pdf.AddPage()
		for _, l := range lines {
			pdf.Cell(0, 10, l)
			pdf.Ln(12)
		}
	}
	var b bytes.Buffer
	if err := pdf.Output(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// top searches as p and returns the first hit.
func top(t *testing.T, e *env, p memory.Principal, q string) knowledge.Hit {
	t.Helper()
	res, err := e.kn.Search(t.Context(), p, knowledge.SearchRequest{Query: q, K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 {
		t.Fatalf("no hit for %q", q)
	}
	return res.Results[0]
}

// cite fetches the cited lines of a hit's citation.
func cite(t *testing.T, e *env, p memory.Principal, citation string) string {
	t.Helper()
	rid, a, b, err := knowledge.ParseCitation(citation)
	if err != nil {
		t.Fatal(err)
	}
	src, err := e.kn.Source(t.Context(), p, rid, a, b)
	if err != nil {
		t.Fatal(err)
	}
	return src.Text
}

func TestIngestTreeCiteChangeDelete(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		p := e.who["std"]
		dir := t.TempDir()
		writeTree(t, dir, map[string][]byte{
			"README.md": []byte(readme), "server/server.go": []byte(goSrc), "py/util.py": []byte(pySrc),
			"web/client.ts": []byte(tsSrc), "docs/manual.pdf": manualPDF(t),
			"bin/blob.md": {0x00, 0x01, 0x02}, "bad.txt": {0xff, 0xfe, 'a'}, "trunc.pdf": manualPDF(t)[:300],
			"ignored/skip.md": []byte("# Ignored\n\nnever ingested\n"), ".gitignore": []byte("ignored/\n"),
		})
		sum, err := e.kn.IngestPaths(ctx, p, []string{dir}, knowledge.TreeOptions{Sync: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Created != 5 || sum.Unchanged != 0 {
			t.Fatalf("summary: %+v", sum)
		}
		reasons := map[string]string{}
		for _, s := range sum.Skipped {
			reasons[filepath.Base(s.Path)] = s.Reason
		}
		if !strings.Contains(reasons["blob.md"], "binary") || !strings.Contains(reasons["bad.txt"], "UTF-8") ||
			!strings.Contains(reasons["trunc.pdf"], "PDF") || reasons["skip.md"] != "" {
			t.Fatalf("skipped: %+v", sum.Skipped)
		}

		// A question one Go function answers: that chunk first, cited by
		// its lines, and the source call returns exactly them.
		h := top(t, e, p, "how many seconds to wait before the next attempt when the upstream is overloaded")
		if h.Heading != "func ParseRetryAfter" || !strings.HasPrefix(h.Citation, "res://"+h.ResourceID+"#func ParseRetryAfter#L") {
			t.Fatalf("top hit %q cites %s", h.Heading, h.Citation)
		}
		got := cite(t, e, p, h.Citation)
		lines := strings.Split(goSrc, "\n")
		if want := strings.Join(lines[h.LineStart-1:h.LineEnd], "\n"); got != want || !strings.HasPrefix(got, "// ParseRetryAfter") || !strings.HasSuffix(got, "}") {
			t.Fatalf("cited lines:\n%s\nwant:\n%s", got, want)
		}
		// A question one PDF page answers: that page, cited with its page.
		h = top(t, e, p, "maximum boiler pressure during calibration")
		if h.Page != 2 || !strings.Contains(h.Citation, "#p2#L") || !strings.Contains(cite(t, e, p, h.Citation), "below 2.5 bar") {
			t.Fatalf("pdf hit: page %d %s", h.Page, h.Citation)
		}
		// Python and TypeScript declarations are their own chunks.
		if h = top(t, e, p, "round an amount to whole cents"); h.Heading != "def round_cents" {
			t.Fatalf("python hit %q", h.Heading)
		}
		if h = top(t, e, p, "fetch a widget by its id from the catalogue"); h.Heading != "function fetchWidget" {
			t.Fatalf("ts hit %q", h.Heading)
		}
		if h = top(t, e, p, "blue-green deploy traffic"); h.Heading != "Widget service > Deployment" {
			t.Fatalf("md hit %q", h.Heading)
		}

		// Unchanged re-ingest writes nothing.
		head, _ := e.st.ChangeHead(ctx)
		sum, err = e.kn.IngestPaths(ctx, p, []string{dir}, knowledge.TreeOptions{Sync: true})
		if err != nil || sum.Unchanged != 5 || sum.Chunks != 0 {
			t.Fatalf("re-ingest: %+v %v", sum, err)
		}
		if after, _ := e.st.ChangeHead(ctx); after != head {
			t.Fatalf("unchanged re-ingest wrote %d changes", after-head)
		}

		// Change one function's body: only its chunk gets a new version.
		goPath := filepath.Join(dir, "server", "server.go")
		before := chunkVersions(t, e, p, knowledge.FileURI(goPath))
		changed := strings.Replace(goSrc, "return 0", "return 30", 1)
		if err := os.WriteFile(goPath, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		sum, err = e.kn.IngestPaths(ctx, p, []string{dir}, knowledge.TreeOptions{Sync: true})
		if err != nil || sum.Updated != 1 || sum.Unchanged != 4 || sum.Chunks != 1 {
			t.Fatalf("changed re-ingest: %+v %v", sum, err)
		}
		afterV := chunkVersions(t, e, p, knowledge.FileURI(goPath))
		for key, v := range afterV {
			want := before[key]
			if key == "func ParseRetryAfter" {
				want++
			}
			if v != want {
				t.Fatalf("chunk %q version %d, want %d (before %v after %v)", key, v, want, before, afterV)
			}
		}
		h = top(t, e, p, "how many seconds to wait before the next attempt when the upstream is overloaded")
		if !strings.Contains(cite(t, e, p, h.Citation), "return 30") {
			t.Fatal("source is not the re-indexed version")
		}

		// Delete the file: its chunks leave search.
		if err := os.Remove(goPath); err != nil {
			t.Fatal(err)
		}
		sum, err = e.kn.IngestPaths(ctx, p, []string{dir}, knowledge.TreeOptions{Sync: true})
		if err != nil || sum.Retired != 1 {
			t.Fatalf("sync after delete: %+v %v", sum, err)
		}
		res, err := e.kn.Search(ctx, p, knowledge.SearchRequest{Query: "ParseRetryAfter Retry-After header seconds", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Results {
			if strings.HasSuffix(h.SourceURI, "server.go") {
				t.Fatalf("deleted file still found: %s", h.Citation)
			}
		}
		if _, err := e.kn.Source(ctx, p, knowledge.ResourceID(memory.Scope{}, knowledge.FileURI(goPath)), 0, 0); fault.CodeOf(err) != fault.NotFound {
			t.Fatalf("source of a deleted file: %v", err)
		}
	})
}

// chunkVersions maps the live chunk keys of a resource to their record versions.
func chunkVersions(t *testing.T, e *env, p memory.Principal, uri string) map[string]int {
	t.Helper()
	list, err := e.svc.List(t.Context(), p, core.ListRequest{Types: []memory.Type{memory.Resource}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range list.Records {
		var m struct {
			URI string `json:"source_uri"`
			Key string `json:"chunk_key"`
		}
		if jsonUnmarshal(r.Metadata, &m) == nil && m.URI == uri && r.InvalidatedAt == nil {
			out[m.Key] = r.Version
		}
	}
	if len(out) == 0 {
		t.Fatalf("no chunks of %s", uri)
	}
	return out
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
