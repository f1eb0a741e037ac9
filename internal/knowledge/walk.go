package knowledge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// TreeOptions select and describe the files of an ingestion.
type TreeOptions struct {
	// Include, when set, keeps only files matching one of these globs;
	// Exclude drops files matching one. A glob matches the path relative
	// to the root (slash-separated, "**" spans directories) or, without a
	// '/', the base name.
	Include, Exclude []string
	Scope            memory.Scope
	Access           memory.Access
	// Sync retires the resources under a directory whose files are gone
	// (only after a complete walk, so an interrupted run retires nothing).
	Sync bool
	// Progress, when set, is called after each file (serially).
	Progress func(Progress)
	// Workers is how many files are ingested at once (0: DefaultWorkers).
	Workers int
}

// DefaultWorkers is how many files IngestPaths ingests at once: enough
// for commits to share fsyncs; the database has one writer anyway.
const DefaultWorkers = 8

// Progress is where an ingestion is.
type Progress struct {
	Done, Total int
	Written     int // chunks written (new, changed or retired)
	Elapsed     time.Duration
}

// Skipped is a file not ingested, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// TreeSummary is the outcome of ingesting files and directories.
type TreeSummary struct {
	Files     int       `json:"files"`
	Created   int       `json:"created"`
	Updated   int       `json:"updated"`
	Unchanged int       `json:"unchanged"`
	Retired   int       `json:"retired"`
	Chunks    int       `json:"chunks_written"`
	Quar      int       `json:"quarantined"`
	Pending   int       `json:"pending_approval"`
	Skipped   []Skipped `json:"skipped"`
	// Seconds is the wall time of the ingestion.
	Seconds float64 `json:"seconds"`
}

// FileURI is the source URI of a local file: file:// and its absolute,
// slash-separated path.
func FileURI(abs string) string { return "file://" + filepath.ToSlash(abs) }

// IngestPaths ingests files and directory trees (a git working tree is a
// directory: its .gitignore files are honoured, .git is skipped). A file
// that cannot be ingested is named in the summary with its reason and
// skipped; the others continue. An error stops the run (cancellation, a
// database failure, a refusal by the gate such as a read_only agent);
// what was ingested before stays, and running again resumes, since
// unchanged files write nothing.
func (s *Service) IngestPaths(ctx context.Context, p memory.Principal, roots []string, o TreeOptions) (TreeSummary, error) {
	start := time.Now()
	var sum TreeSummary
	type item struct{ abs, rel string }
	var items []item
	var dirs []string
	for _, root := range roots {
		abs, err := filepath.Abs(root)
		if err != nil {
			return sum, fault.Field("path", "cannot be resolved")
		}
		st, err := os.Stat(abs)
		if err != nil {
			sum.Skipped = append(sum.Skipped, Skipped{Path: root, Reason: "unreadable: " + errReason(err)})
			continue
		}
		if !st.IsDir() {
			items = append(items, item{abs, filepath.Base(abs)})
			continue
		}
		dirs = append(dirs, abs)
		files, skipped, err := walk(ctx, abs, o.Include, o.Exclude)
		if err != nil {
			return sum, err
		}
		sum.Skipped = append(sum.Skipped, skipped...)
		for _, f := range files {
			items = append(items, item{filepath.Join(abs, filepath.FromSlash(f)), f})
		}
	}
	seen := map[string]bool{}
	for _, it := range items {
		seen[FileURI(it.abs)] = true
	}
	// Workers read, chunk and ingest files concurrently (ingestEach).
	done := 0
	first := ingestEach(ctx, items, o.Workers, func(ctx context.Context, it item) (Result, error) {
		content, err := os.ReadFile(it.abs)
		if err != nil {
			return Result{}, &Malformed{"unreadable: " + errReason(err)}
		}
		return s.Ingest(ctx, p, Document{URI: FileURI(it.abs), Content: content, Scope: o.Scope, Access: o.Access})
	}, func(it item, res Result, err error) (stop error) {
		var bad *Malformed
		switch {
		case errors.As(err, &bad):
			sum.Skipped = append(sum.Skipped, Skipped{Path: it.abs, Reason: bad.Reason})
		case err != nil && isSkip(err):
			sum.Skipped = append(sum.Skipped, Skipped{Path: it.abs, Reason: skipReason(err)})
		case err != nil:
			stop = err
		default:
			switch res.Outcome {
			case Created:
				sum.Created++
			case Updated:
				sum.Updated++
			default:
				sum.Unchanged++
			}
			sum.Chunks += res.Added + res.Changed + res.RetiredN
			sum.Quar += res.Quarantined
			sum.Pending += res.Pending
		}
		if stop == nil {
			sum.Files++
		}
		done++
		if o.Progress != nil {
			o.Progress(Progress{Done: done, Total: len(items), Written: sum.Chunks, Elapsed: time.Since(start)})
		}
		return stop
	})
	if first == nil {
		first = ctx.Err()
	}
	if first != nil {
		sum.Seconds = time.Since(start).Seconds()
		return sum, first
	}
	if o.Sync {
		for _, d := range dirs {
			gone, err := s.RetireMissing(ctx, p, o.Scope, FileURI(d)+"/", seen)
			for _, g := range gone {
				sum.Retired++
				sum.Chunks += g.RetiredN
			}
			if err != nil {
				return sum, err
			}
		}
	}
	sort.Slice(sum.Skipped, func(i, j int) bool { return sum.Skipped[i].Path < sum.Skipped[j].Path })
	sum.Seconds = time.Since(start).Seconds()
	return sum, nil
}

// isSkip reports whether err is about the document (skip it) rather than
// the principal or the system (stop).
func isSkip(err error) bool {
	fe := fault.As(err)
	f, _ := fe.Details["field"].(string)
	return (fe.Code == fault.InvalidArgument || fe.Code == fault.TooLarge) && (f == "content" || f == "media_type")
}

func skipReason(err error) string {
	fe := fault.As(err)
	if r, ok := fe.Details["reason"].(string); ok {
		return r
	}
	return fe.Message
}

func errReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	}
	return "read error"
}

// walk lists the files under root (relative, slash-separated, sorted)
// that a chunker knows, honouring .gitignore files and the globs; other
// files it names as skipped.
func walk(ctx context.Context, root string, include, exclude []string) ([]string, []Skipped, error) {
	var files []string
	var skipped []Skipped
	ign := map[string][]ignoreRule{} // dir (relative) → its .gitignore rules
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if err != nil {
			skipped = append(skipped, Skipped{Path: p, Reason: "unreadable: " + errReason(err)})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if rel == "." {
			ign["."] = readIgnore(p)
			return nil
		}
		// Hidden files and directories (.git, .github, .gitignore, .env)
		// are tooling, not documents.
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if ignored(ign, rel, true) {
				return fs.SkipDir
			}
			ign[rel] = readIgnore(p)
			return nil
		}
		if !d.Type().IsRegular() || ignored(ign, rel, false) {
			return nil
		}
		if len(include) > 0 && !anyGlob(include, rel) {
			return nil
		}
		if anyGlob(exclude, rel) {
			return nil
		}
		if MediaTypeOf(rel) == "" {
			skipped = append(skipped, Skipped{Path: p, Reason: "no chunker for this file type"})
			return nil
		}
		files = append(files, rel)
		return nil
	})
	return files, skipped, err
}

// ignoreRule is one .gitignore line.
type ignoreRule struct {
	pattern  string
	negate   bool
	dirOnly  bool
	anchored bool // contains a '/' other than at the end: relative to its file's directory
}

func readIgnore(dir string) []ignoreRule {
	data, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		return nil
	}
	var out []ignoreRule
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), " \t\r")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(l, "!") {
			r.negate, l = true, l[1:]
		}
		l = strings.TrimPrefix(l, `\`)
		if strings.HasSuffix(l, "/") {
			r.dirOnly, l = true, strings.TrimSuffix(l, "/")
		}
		if strings.Contains(l, "/") {
			r.anchored, l = true, strings.TrimPrefix(l, "/")
		}
		r.pattern = l
		if l != "" {
			out = append(out, r)
		}
	}
	return out
}

// ignored applies the .gitignore files of rel's ancestors, outermost
// first; the last matching rule decides (git's order).
func ignored(ign map[string][]ignoreRule, rel string, isDir bool) bool {
	out := false
	dir := "."
	segs := strings.Split(rel, "/")
	for i := 0; i < len(segs); i++ {
		sub := strings.Join(segs[i:], "/")
		for _, r := range ign[dir] {
			if r.dirOnly && !isDir {
				continue
			}
			var m bool
			if r.anchored {
				m = globMatch(r.pattern, sub)
			} else {
				m = globMatch(r.pattern, segs[len(segs)-1])
			}
			if m {
				out = !r.negate
			}
		}
		if dir == "." {
			dir = segs[i]
		} else {
			dir += "/" + segs[i]
		}
	}
	return out
}

func anyGlob(globs []string, rel string) bool {
	for _, g := range globs {
		if !strings.Contains(g, "/") && globMatch(g, path.Base(rel)) {
			return true
		}
		if globMatch(g, rel) {
			return true
		}
	}
	return false
}

// globMatch matches a slash-separated path against a glob where "**"
// matches any number of segments and other segments use path.Match.
func globMatch(pattern, name string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegs(ps, ns []string) bool {
	for len(ps) > 0 {
		if ps[0] == "**" {
			for i := 0; i <= len(ns); i++ {
				if matchSegs(ps[1:], ns[i:]) {
					return true
				}
			}
			return false
		}
		if len(ns) == 0 {
			return false
		}
		if ok, _ := path.Match(ps[0], ns[0]); !ok {
			return false
		}
		ps, ns = ps[1:], ns[1:]
	}
	return len(ns) == 0
}
