package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/fault"
)

// The help machinery: group commands list their subcommands (`memgate
// agents -h`), leaf commands show a usage line with their positional
// arguments and only their own flags, `memgate help flags` lists the
// data-directory flags every command takes, `--version` prints the
// version, and `--json` turns errors into the one error shape.

// helpEntry is one subcommand of a group.
type helpEntry struct{ name, summary string }

// groups are the group commands and their subcommands. A test checks the
// list against what each group accepts.
var groups = map[string][]helpEntry{
	"agents": {{"create", "create an agent (prints its token once)"}, {"list", "list agents"}, {"revoke", "revoke an agent"},
		{"rotate", "give an agent a new token (prints it once); the old one stops working"},
		{"trust", "change an agent's trust level (--trust LEVEL); audited"}},
	"users": {{"create", "create a Memory Gateway user (prints its key once)"}, {"list", "list users"}, {"revoke", "revoke a user"},
		{"rotate-key", "give a user a new key (prints it once); the old one stops working"}},
	"approvals": {{"list", "list queued writes"}, {"approve", "approve a queued write, optionally edited"},
		{"reject", "reject a queued write"}, {"expire", "expire approvals past their TTL now"}},
	"audit": {{"verify", "verify the audit chain"}},
	"files": {{"ls", "list memory files"}, {"cat", "print a file"}, {"edit", "edit a file in $EDITOR (a new version)"},
		{"history", "every version of a file"}, {"import", "write a directory's files as memory files"},
		{"export", "write the memory files into a directory, byte for byte"}},
	"operators": {{"create", "create an operator token"}},
	"graph": {{"node", "upsert, get or archive a node"}, {"nodes", "list nodes"}, {"edge", "upsert or invalidate an edge"},
		{"neighbors", "nodes within some hops of a node"}, {"path", "shortest path between two nodes"}, {"health", "check the graph index"}},
	"graph node": {{"upsert", "create or update a node by label and key"}, {"get", "show a node"}, {"archive", "archive a node"}},
	"graph edge": {{"upsert", "create or update an edge"}, {"invalidate", "invalidate an edge"}},
}

// leafArgs are the positional arguments of leaf commands, for their usage
// line; a command not listed takes none.
var leafArgs = map[string]string{
	"get":                   "<record id>",
	"history":               "<record id>",
	"forget":                "<record id> | --subject label:key",
	"query":                 "<query text>",
	"import":                "<export file, - for stdin> | --from-mcp-memory FILE",
	"agents revoke":         "<agent id or name>",
	"agents rotate":         "<agent id or name>",
	"users revoke":          "<user id>",
	"users rotate-key":      "<user id>",
	"approvals approve":     "<approval id>",
	"approvals reject":      "<approval id>",
	"graph node get":        "<node id or label:key>",
	"graph node archive":    "<node id or label:key>",
	"graph edge invalidate": "<edge id>",
	"graph neighbors":       "<node id or label:key>",
	"graph path":            "<from> <to>",
	"files cat":             "</memories/path>",
	"files edit":            "</memories/path>",
	"files history":         "</memories/path>",
	"files import":          "<directory>",
	"files export":          "<directory>",
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" || a == "help" }

// groupHelp prints a group's usage when args ask for it (nothing, or a
// help flag, after the group's name) and reports whether it did, with
// the exit status: 0 when help was asked for, 2 when the subcommand was
// missing.
func groupHelp(env Env, args []string) (int, bool) {
	path := args[0]
	rest := args[1:]
	if len(rest) > 0 {
		if _, ok := groups[path+" "+rest[0]]; ok {
			path, rest = path+" "+rest[0], rest[1:]
		}
	}
	subs, ok := groups[path]
	if !ok || len(rest) > 0 && !isHelp(rest[0]) {
		return 0, false
	}
	if len(rest) == 0 && env.jsonErrors {
		return exitStatus(env, usagef("%s: want a subcommand: %s", path, subNames(subs))), true
	}
	w := env.Stderr
	fmt.Fprintf(w, "usage: memgate %s <subcommand> [flags]\n\nsubcommands:\n", path)
	for _, s := range subs {
		fmt.Fprintf(w, "  %-11s %s\n", s.name, s.summary)
	}
	fmt.Fprintf(w, "\nRun 'memgate %s <subcommand> -h' for its arguments and flags.\n", path)
	if len(rest) == 0 {
		return fault.ExitUsage, true
	}
	return exitOK, true
}

func subNames(subs []helpEntry) string {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// commonFlags are the flags config.Bind gives every command (the data
// directory, database, policy, embedder, logging); a leaf's help lists
// them by name only.
func commonFlags() *flag.FlagSet {
	cfg := config.Default()
	fs := flag.NewFlagSet("memgate", flag.ContinueOnError)
	cfg.Bind(fs, false)
	return fs
}

// leafUsage is the usage of the command name: its usage line, its own
// flags (those not in common), and the names of the common ones.
func leafUsage(fs *flag.FlagSet, name string, common *flag.FlagSet) func() {
	return func() {
		w := fs.Output()
		line := "usage: memgate " + name + " [flags]"
		if a := leafArgs[name]; a != "" {
			line += " " + a
		}
		fmt.Fprintln(w, line)
		own := flag.NewFlagSet(name, flag.ContinueOnError)
		own.SetOutput(w)
		var shared []string
		fs.VisitAll(func(f *flag.Flag) {
			if common.Lookup(f.Name) != nil {
				shared = append(shared, "--"+f.Name)
				return
			}
			own.Var(f.Value, f.Name, f.Usage)
			own.Lookup(f.Name).DefValue = f.DefValue
		})
		n := 0
		own.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nflags:")
			own.PrintDefaults()
		}
		slices.Sort(shared)
		fmt.Fprintf(w, "\nand the flags every command takes (see 'memgate help flags'):\n  %s\n", wrap(strings.Join(shared, " "), 76, "  "))
	}
}

// wrap breaks s at spaces into lines of at most width, indenting the
// continuation lines.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(word) > width {
				b.WriteString("\n" + indent)
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// runHelp is `memgate help [command...]`: the command list, a command's
// help, or (`help flags`) the flags every command takes.
func runHelp(env Env, args []string) int {
	switch {
	case len(args) == 0:
		printUsage(env.Stderr)
		return exitOK
	case args[0] == "flags":
		fmt.Fprintln(env.Stderr, "Flags every command takes; each also reads the MEMGATE_* variable it names:")
		fs := commonFlags()
		fs.SetOutput(env.Stderr)
		fs.PrintDefaults()
		return exitOK
	}
	env.helpAsked = true
	return Main(append(slices.Clone(args), "-h"), env)
}

// versionLine is what --version prints: the version, and for a release
// build (scripts/release) the commit and the commit's time it was built
// from, so that two builds of one commit print, and are, the same.
func versionLine() string {
	line := "memgate " + version()
	if Commit != "" {
		line += " (commit " + Commit
		if Date != "" {
			line += ", " + Date
		}
		line += ")"
	}
	return line
}

// version is the build's version: the one set with -ldflags, else the
// module version, else the VCS revision Go stamped into the binary.
func version() string {
	if Version != "dev" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return Version
	}
	return Version + "+" + rev + dirty
}

// wantsJSON reports whether a command's arguments ask for JSON output,
// which makes its errors JSON too.
func wantsJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true":
			return true
		}
	}
	return false
}

// errorJSON is the one error shape, as REST and MCP return it.
type errorJSON struct {
	Error struct {
		Code    fault.Code     `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details,omitempty"`
	} `json:"error"`
}

func writeErrorJSON(w io.Writer, code fault.Code, msg string, details map[string]any) {
	var e errorJSON
	e.Error.Code, e.Error.Message, e.Error.Details = code, msg, details
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(e)
}
