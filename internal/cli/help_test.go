package cli_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

var groupCommands = map[string][]string{
	"agents":     {"create", "list", "revoke", "rotate", "trust"},
	"users":      {"create", "list", "revoke", "rotate-key"},
	"approvals":  {"list", "approve", "reject", "expire"},
	"audit":      {"verify"},
	"operators":  {"create"},
	"graph":      {"node", "nodes", "edge", "neighbors", "path", "health"},
	"graph node": {"upsert", "get", "archive"},
	"graph edge": {"upsert", "invalidate"},
}

// TestGroupHelp: -h on every group command lists its subcommands and
// exits 0; a group without its subcommand prints the same and exits 2;
// every listed subcommand has help of its own.
func TestGroupHelp(t *testing.T) {
	for group, subs := range groupCommands {
		args := strings.Fields(group)
		for _, h := range []string{"-h", "--help", "help"} {
			r := run(t, "", nil, append(args, h)...)
			if r.code != 0 || !strings.Contains(r.stderr, "usage: memgate "+group+" <subcommand>") {
				t.Fatalf("%s %s: exit %d %q", group, h, r.code, r.stderr)
			}
			for _, s := range subs {
				if !regexp.MustCompile(`(?m)^  ` + s + ` `).MatchString(r.stderr) {
					t.Errorf("%s -h does not list %s: %s", group, s, r.stderr)
				}
			}
		}
		if r := run(t, "", nil, args...); r.code != 2 || !strings.Contains(r.stderr, "subcommands:") {
			t.Errorf("%s alone: exit %d %q", group, r.code, r.stderr)
		}
		// What the group accepts is what its help lists.
		r := run(t, "", nil, append(args, "nosuch")...)
		if r.code != 2 {
			t.Errorf("%s nosuch: exit %d", group, r.code)
		}
		for _, s := range subs {
			if !strings.Contains(r.stderr, s) {
				t.Errorf("%s accepts %s, its help does not list it: %s", group, s, r.stderr)
			}
		}
		if m := regexp.MustCompile(`\[([a-z -]+)\]`).FindStringSubmatch(r.stderr); m != nil && strings.Join(subs, " ") != m[1] {
			t.Errorf("%s accepts [%s], its help lists %v", group, m[1], subs)
		}
		for _, s := range subs {
			if _, nested := groupCommands[group+" "+s]; nested {
				continue
			}
			r := run(t, "", nil, append(args, s, "-h")...)
			if r.code != 0 || !strings.HasPrefix(r.stderr, "usage: memgate "+group+" "+s+" [flags]") {
				t.Errorf("%s %s -h: exit %d %q", group, s, r.code, r.stderr)
			}
		}
	}
}

// TestLeafHelp: a leaf's help has a usage line with its positional
// arguments and only its own flags; the flags every command takes are
// named once, and described by `memgate help flags`.
func TestLeafHelp(t *testing.T) {
	for _, c := range []struct {
		args      []string
		line      string
		has, lack []string
	}{
		{[]string{"get", "-h"}, "usage: memgate get [flags] <record id>", []string{"-known-at"}, []string{"-trust", "-content"}},
		{[]string{"agents", "create", "-h"}, "usage: memgate agents create [flags]\n", []string{"-name", "-trust", "-json"}, []string{"-status", "-known-at"}},
		{[]string{"approvals", "approve", "-h"}, "usage: memgate approvals approve [flags] <approval id>", []string{"-content"}, []string{"-status", "-reason"}},
		{[]string{"graph", "path", "-h"}, "usage: memgate graph path [flags] <from> <to>", []string{"-max-depth"}, []string{"-label"}},
		{[]string{"help", "query"}, "usage: memgate query [flags] <query text>", []string{"-explain"}, []string{"-trust"}},
	} {
		r := run(t, "", nil, c.args...)
		if r.code != 0 || !strings.HasPrefix(r.stderr, c.line) {
			t.Errorf("%v: exit %d %q", c.args, r.code, r.stderr)
			continue
		}
		own, common, _ := strings.Cut(r.stderr, "and the flags every command takes")
		for _, f := range c.has {
			if !strings.Contains(own, "  "+f+" ") && !strings.Contains(own, "  "+f+"\n") {
				t.Errorf("%v: no %s in %q", c.args, f, own)
			}
		}
		for _, f := range append(c.lack, "-data-dir", "-policy") {
			if strings.Contains(own, "  "+f) {
				t.Errorf("%v: %s listed as its own flag: %q", c.args, f, own)
			}
		}
		if !strings.Contains(common, "--data-dir") {
			t.Errorf("%v: common flags not named: %q", c.args, common)
		}
	}
	r := run(t, "", nil, "help", "flags")
	if r.code != 0 || !strings.Contains(r.stderr, "-data-dir") || !strings.Contains(r.stderr, "-policy") {
		t.Fatalf("help flags: exit %d %q", r.code, r.stderr)
	}
}

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		r := run(t, "", nil, args...)
		if r.code != 0 || !regexp.MustCompile(`^memgate \S+( \(commit [0-9a-f]+(-dirty)?(, \S+)?\))?\n$`).MatchString(r.stdout) {
			t.Errorf("%v: exit %d %q %q", args, r.code, r.stdout, r.stderr)
		}
	}
}

// TestJSONErrors: with --json, errors are the one error shape on stderr —
// usage mistakes, unknown flags and failures alike — and stdout is empty.
func TestJSONErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"get", "01a2103d-0000-7000-8000-000000000000", "--json"}, 6, "not_found"},
		{[]string{"get", "--json", "--bogus"}, 2, "invalid_argument"},
		{[]string{"agents", "nosuch", "--json"}, 2, "invalid_argument"},
		{[]string{"agents", "--json"}, 2, "invalid_argument"},
		{[]string{"agents", "create", "--json"}, 2, "invalid_argument"},
		{[]string{"agents", "create", "--name", "a b", "--json"}, 3, "invalid_argument"},
	} {
		r := run(t, dir, nil, c.args...)
		var e struct {
			Error struct {
				Code    string         `json:"code"`
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		// Creating the workspace prints its token first, once.
		last := r.stderr[strings.LastIndex(strings.TrimRight(r.stderr, "\n"), "\n")+1:]
		if err := json.Unmarshal([]byte(last), &e); err != nil || r.code != c.code || e.Error.Code != c.want || e.Error.Message == "" || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (%v)", c.args, r.code, r.stdout, r.stderr, err)
		}
	}
	// Without --json the same error is text.
	if r := run(t, dir, nil, "agents", "nosuch"); r.code != 2 || strings.HasPrefix(r.stderr, "{") {
		t.Errorf("text error: %d %q", r.code, r.stderr)
	}
}
