package files_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// step is one memory tool call and the tool_result the reference
// implementation (anthropic-sdk-python BetaLocalFilesystemMemoryTool)
// gives for it; errors are its ToolError messages.
type step struct {
	Input   map[string]any `json:"input"`
	Content string         `json:"content"`
	IsError bool           `json:"is_error,omitempty"`
}

// TestMemoryToolGolden replays testdata/memory_tool.golden.json: every
// command and every error case, with the reference's strings written out
// by hand from its source.
func TestMemoryToolGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/memory_tool.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	if err := json.Unmarshal(raw, &steps); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, st)
	for i, s := range steps {
		in, _ := json.Marshal(s.Input)
		got, err := e.files.Tool(t.Context(), e.who["std"], memory.Scope{}, in)
		if err != nil {
			t.Fatalf("step %d %s: %v", i, in, err)
		}
		if got.Content != s.Content || got.IsError != s.IsError {
			t.Errorf("step %d %s:\n got (error %v):\n%s\nwant (error %v):\n%s", i, in, got.IsError, got.Content, s.IsError, s.Content)
		}
	}
	// The files are memgate's: versioned under the writer.
	hist, err := e.files.History(t.Context(), e.who["std"], memory.Scope{}, "/memories/projects/plan.md")
	if err != nil || len(hist) < 2 {
		t.Fatalf("history: %d %v", len(hist), err)
	}
}

// Governance refusals reach the model as error results, not failures.
func TestMemoryToolRefusals(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, st)
	got, err := e.files.Tool(t.Context(), e.who["ro"], memory.Scope{}, json.RawMessage(`{"command":"create","path":"/memories/a.md","file_text":"hi"}`))
	if err != nil || !got.IsError || !strings.HasPrefix(got.Content, "Error: ") {
		t.Fatalf("read_only create: %+v %v", got, err)
	}
	if _, err := e.files.Read(t.Context(), e.who["op"], memory.Scope{}, "/memories/a.md"); err == nil {
		t.Fatal("a refused create wrote a file")
	}
	if _, err := files.CleanPath("/memories/a.md"); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryToolNeverReportsUnreadableAsSaved: a write the gate
// quarantines is readable by operators only, so the tool must not answer
// the reference's success text to a writer that cannot read it back; a
// restricted agent's queued file stays readable by it and succeeds.
func TestMemoryToolNeverReportsUnreadableAsSaved(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, st)
	ctx := t.Context()
	secret := "AKIAIOSFODNN7EXAMPLE"
	got, err := e.files.Tool(ctx, e.who["std"], memory.Scope{}, json.RawMessage(`{"command":"create","path":"/memories/keys.md","file_text":"aws key `+secret+`"}`))
	if err != nil || !got.IsError || strings.Contains(got.Content, secret) || !strings.Contains(got.Content, "/memories/keys.md") {
		t.Fatalf("quarantined create: %+v %v", got, err)
	}
	if _, err := e.files.Read(ctx, e.who["std"], memory.Scope{}, "/memories/keys.md"); err == nil {
		t.Fatal("test is broken: the writer reads its quarantined file")
	}
	// An edit that pastes a secret into a readable file is reported too.
	if got, err := e.files.Tool(ctx, e.who["std"], memory.Scope{}, json.RawMessage(`{"command":"create","path":"/memories/n.md","file_text":"notes\n"}`)); err != nil || got.IsError {
		t.Fatalf("create: %+v %v", got, err)
	}
	got, err = e.files.Tool(ctx, e.who["std"], memory.Scope{}, json.RawMessage(`{"command":"str_replace","path":"/memories/n.md","old_str":"notes","new_str":"key `+secret+`"}`))
	if err != nil || !got.IsError || strings.Contains(got.Content, secret) {
		t.Fatalf("quarantined edit: %+v %v", got, err)
	}
	// A restricted agent's file waits for review but reads back: success.
	got, err = e.files.Tool(ctx, e.who["restricted"], memory.Scope{}, json.RawMessage(`{"command":"create","path":"/memories/r.md","file_text":"restricted note"}`))
	if err != nil || got.IsError {
		t.Fatalf("restricted create: %+v %v", got, err)
	}
	if f, err := e.files.Read(ctx, e.who["restricted"], memory.Scope{}, "/memories/r.md"); err != nil || f.Content != "restricted note" {
		t.Fatalf("restricted reads back: %+v %v", f, err)
	}
}
