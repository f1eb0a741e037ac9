package cli_test

import (
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

func TestDecisionsCommand(t *testing.T) {
	dir := t.TempDir()
	var w struct {
		Decision string
		Record   memory.Record
	}
	mustJSON(t, run(t, dir, nil, "write", "--type", "belief", "--content", "Ping me at dana@example.com", "--json"), &w)
	if w.Decision != "quarantined" {
		t.Fatalf("write %+v", w)
	}
	run(t, dir, nil, "write", "--type", "belief", "--content", "The build uses Go", "--json")

	var page core.DecisionPage
	mustJSON(t, run(t, dir, nil, "decisions", "--record", w.Record.ID, "--json"), &page)
	if len(page.Decisions) != 1 || page.Decisions[0].Decision != "quarantined" || page.Decisions[0].Reason == "" {
		t.Fatalf("decisions about %s: %+v", w.Record.ID, page)
	}
	r := run(t, dir, nil, "decisions", "--decision", "quarantined")
	if r.code != 0 || !strings.Contains(r.stdout, "quarantined") || !strings.Contains(r.stdout, w.Record.ID) ||
		strings.Contains(r.stdout, "dana@") {
		t.Fatalf("text listing: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, nil, "decisions", "--since", "yesterday"); r.code != 2 {
		t.Fatalf("bad --since: exit %d", r.code)
	}
	if r := run(t, dir, nil, "decisions", "--source", "llm"); r.code != 3 || !strings.Contains(r.stderr, "source") {
		t.Fatalf("bad --source: exit %d %q", r.code, r.stderr)
	}
}

func TestContextCommand(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, nil, "write", "--type", "belief", "--category", "rule", "--content", "Never push to main without review", "--scope", "project_id=p")
	run(t, dir, nil, "write", "--type", "decision", "--content", "Pushes to main go through the merge queue", "--scope", "project_id=p")
	r := run(t, dir, nil, "context", "how do I push to main", "--scope", "project_id=p", "--budget", "200")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "## Constraints\n- Never push to main without review (mem://") ||
		!strings.Contains(r.stdout, "## Knowledge\n- Pushes to main go through the merge queue") {
		t.Fatalf("context: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var env struct {
		Tokens       int `json:"tokens"`
		BudgetTokens int `json:"budget_tokens"`
		Sections     []struct{ Name string }
	}
	mustJSON(t, run(t, dir, nil, "context", "push to main", "--json", "--budget", "30"), &env)
	if len(env.Sections) != 5 || env.BudgetTokens != 30 || env.Tokens > 30 || env.Tokens == 0 {
		t.Fatalf("envelope %+v", env)
	}
	if r := run(t, dir, nil, "context", "x", "--budget", "-1"); r.code != 3 || !strings.Contains(r.stderr, "budget_tokens") {
		t.Fatalf("budget -1: exit %d %q", r.code, r.stderr)
	}
}
