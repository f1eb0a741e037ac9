package files_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// env is a files service over a real store, with an operator and one
// agent per trust level.
type env struct {
	svc   *core.Service
	files *files.Service
	st    store.Store
	who   map[string]memory.Principal
}

func backends(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, newEnv(t, st))
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, newEnv(t, st))
	})
}

func newEnv(t testing.TB, st store.Store) *env {
	t.Helper()
	return newEnvPolicy(t, st, gate.Default())
}

func newEnvPolicy(t testing.TB, st store.Store, pol gate.Policy) *env {
	t.Helper()
	ctx := context.Background()
	ix := svctest.Index(t, st)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	svc := core.New(core.Options{Store: st, Policy: pol, Now: clk.Now, Index: ix})
	tok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	op, err := svc.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{svc: svc, files: files.New(svc, files.Options{}), st: st, who: map[string]memory.Principal{"op": op}}
	for _, a := range []struct {
		name  string
		trust memory.Trust
	}{{"trusted", memory.Trusted}, {"std", memory.Standard}, {"std2", memory.Standard}, {"restricted", memory.Restricted}, {"ro", memory.ReadOnly}} {
		c, err := svc.CreateAgent(ctx, op, a.name, a.trust)
		if err != nil {
			t.Fatal(err)
		}
		p, err := svc.Authenticate(ctx, c.Token)
		if err != nil {
			t.Fatal(err)
		}
		e.who[a.name] = p
	}
	return e
}

func wantCode(t *testing.T, err error, code fault.Code) {
	t.Helper()
	if fault.CodeOf(err) != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
}

func TestFileLifecycle(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		std := e.who["std"]
		res, err := e.files.Create(ctx, std, files.CreateRequest{Path: "/memories/MEMORY.md", Content: "# Notes\n- likes tea\n", Pinned: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != memory.DecisionAccepted || res.File.Version != 1 || !res.File.Pinned || res.File.Author != std.ID {
			t.Fatalf("create: %+v", res)
		}
		// The same path again is a conflict; identical text at another path is another file.
		_, err = e.files.Create(ctx, std, files.CreateRequest{Path: "/memories/MEMORY.md", Content: "x"})
		wantCode(t, err, fault.Conflict)
		other, err := e.files.Create(ctx, std, files.CreateRequest{Path: "/memories/copy.md", Content: "# Notes\n- likes tea\n"})
		if err != nil || other.File.ID == res.File.ID || other.Decision != memory.DecisionAccepted {
			t.Fatalf("copy: %+v %v", other, err)
		}
		// Update with a stale hash: 409, nothing written.
		next := "# Notes\n- likes coffee\n"
		_, err = e.files.Update(ctx, std, memory.Scope{}, "/memories/MEMORY.md", files.UpdateRequest{Content: &next, ExpectedSHA256: memory.SHA256Hex("stale")})
		wantCode(t, err, fault.Conflict)
		up, err := e.files.Update(ctx, std, memory.Scope{}, "/memories/MEMORY.md", files.UpdateRequest{Content: &next, ExpectedSHA256: res.File.ContentSHA256})
		if err != nil || up.File.Version != 2 || up.File.Content != next {
			t.Fatalf("update: %+v %v", up, err)
		}
		// Another standard agent may read but not change it.
		if _, err := e.files.Read(ctx, e.who["std2"], memory.Scope{}, "/memories/MEMORY.md"); err != nil {
			t.Fatal(err)
		}
		_, err = e.files.Update(ctx, e.who["std2"], memory.Scope{}, "/memories/MEMORY.md", files.UpdateRequest{Content: &next})
		wantCode(t, err, fault.PermissionDenied)
		// read_only cannot write at all.
		_, err = e.files.Create(ctx, e.who["ro"], files.CreateRequest{Path: "/memories/ro.md", Content: "hi"})
		wantCode(t, err, fault.PermissionDenied)
		// Rename, then history follows the file.
		if _, err := e.files.Rename(ctx, std, memory.Scope{}, "/memories/MEMORY.md", "/memories/notes/MEMORY.md"); err != nil {
			t.Fatal(err)
		}
		_, err = e.files.Read(ctx, std, memory.Scope{}, "/memories/MEMORY.md")
		wantCode(t, err, fault.NotFound)
		hist, err := e.files.History(ctx, std, memory.Scope{}, "/memories/notes/MEMORY.md")
		if err != nil || len(hist) != 3 || hist[0].Path != "/memories/MEMORY.md" || hist[2].Path != "/memories/notes/MEMORY.md" {
			t.Fatalf("history: %+v %v", hist, err)
		}
		pinned, err := e.files.Pinned(ctx, std, memory.Scope{})
		if err != nil || len(pinned) != 1 || pinned[0].Path != "/memories/notes/MEMORY.md" {
			t.Fatalf("pinned: %+v %v", pinned, err)
		}
		list, err := e.files.List(ctx, std, files.ListRequest{Prefix: "/memories/notes"})
		if err != nil || len(list) != 1 {
			t.Fatalf("list: %+v %v", list, err)
		}
		// Delete with a stale hash: 409; then delete, and the path is free again.
		_, err = e.files.Delete(ctx, std, memory.Scope{}, "/memories/notes/MEMORY.md", memory.SHA256Hex("stale"))
		wantCode(t, err, fault.Conflict)
		del, err := e.files.Delete(ctx, std, memory.Scope{}, "/memories/notes/MEMORY.md", memory.SHA256Hex(next))
		if err != nil || !del.File.Deleted || del.File.Version != 4 {
			t.Fatalf("delete: %+v %v", del, err)
		}
		_, err = e.files.Read(ctx, std, memory.Scope{}, "/memories/notes/MEMORY.md")
		wantCode(t, err, fault.NotFound)
		if _, err := e.files.Create(ctx, std, files.CreateRequest{Path: "/memories/notes/MEMORY.md", Content: "again"}); err != nil {
			t.Fatal(err)
		}
		// Every change is audited.
		entries, err := e.st.ListAudit(ctx, std.Workspace, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, en := range entries {
			if en.ActorID == std.ID && (en.Event == "record.write" || en.Event == "record.patch") {
				n++
			}
		}
		if n < 6 {
			t.Fatalf("audit entries by the writer: %d", n)
		}
	})
}

func TestFilePaths(t *testing.T) {
	for _, bad := range []string{"", "MEMORY.md", "/memories", "/memories/", "/memories//a", "/memories/./a", "/memories/../etc/passwd",
		"/memories/a/", "/other/a", "/memories/a\nb", "/memories/" + strings.Repeat("a", 1020)} {
		if _, err := files.CleanPath(bad); fault.CodeOf(err) != fault.InvalidArgument {
			t.Errorf("CleanPath(%q) = %v, want invalid_argument", bad, err)
		}
	}
	// NFC: a decomposed é is the same path as the composed one.
	got, err := files.CleanPath("/memories/caf\u0065\u0301.md")
	if err != nil || got != "/memories/caf\u00e9.md" {
		t.Fatalf("NFC: %q %v", got, err)
	}
	// Case-sensitive.
	a, _ := files.CleanPath("/memories/A.md")
	b, _ := files.CleanPath("/memories/a.md")
	if a == b {
		t.Fatal("paths must be case-sensitive")
	}
}

func TestFileGovernance(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, st)
	ctx := t.Context()
	// A restricted agent's file waits in the approval queue.
	res, err := e.files.Create(ctx, e.who["restricted"], files.CreateRequest{Path: "/memories/r.md", Content: "restricted note"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != memory.DecisionQueued || res.ApprovalID == "" {
		t.Fatalf("restricted: %+v", res)
	}
	page, err := e.svc.ListApprovals(ctx, e.who["op"], memory.ApprovalOpen, "", 10)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("approvals: %+v %v", page, err)
	}
	// A secret pasted into a file is quarantined, and hidden from agents.
	secret := "my key is AKIAIOSFODNN7EXAMPLE ok"
	res, err = e.files.Create(ctx, e.who["std"], files.CreateRequest{Path: "/memories/s.md", Content: secret})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != memory.DecisionQuarantined || res.File.Status != memory.Quarantined {
		t.Fatalf("secret: %+v", res)
	}
	_, err = e.files.Read(ctx, e.who["std2"], memory.Scope{}, "/memories/s.md")
	wantCode(t, err, fault.NotFound)
	// Too large.
	_, err = e.files.Create(ctx, e.who["std"], files.CreateRequest{Path: "/memories/big.md", Content: strings.Repeat("a", files.DefaultMaxBytes+1)})
	wantCode(t, err, fault.TooLarge)
}

// Two updates from the same version: one wins, the other is a conflict.
func TestFileConcurrentUpdates(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		ctx := t.Context()
		std := e.who["std"]
		res, err := e.files.Create(ctx, std, files.CreateRequest{Path: "/memories/c.md", Content: "v1"})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := []string{"left", "right"}[i]
				_, errs[i] = e.files.Update(ctx, std, memory.Scope{}, "/memories/c.md", files.UpdateRequest{Content: &c, ExpectedSHA256: res.File.ContentSHA256})
			}()
		}
		wg.Wait()
		ok, conflict := 0, 0
		for _, err := range errs {
			switch fault.CodeOf(err) {
			case "":
				ok++
			case fault.Conflict, fault.VersionConflict:
				conflict++
			default:
				t.Fatalf("unexpected: %v", err)
			}
		}
		if ok != 1 || conflict != 1 {
			t.Fatalf("ok %d conflict %d", ok, conflict)
		}
	})
}

// A file scoped to a user is forgotten with the user.
func TestFileForgetSubject(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, st)
	ctx := t.Context()
	sc := memory.Scope{UserID: "alice"}
	if _, err := e.files.Create(ctx, e.who["std"], files.CreateRequest{Path: "/memories/USER.md", Content: "Alice prefers window seats", Scope: sc}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ForgetSubject(ctx, e.who["op"], "user:alice"); err != nil {
		t.Fatal(err)
	}
	_, err = e.files.Read(ctx, e.who["std"], sc, "/memories/USER.md")
	wantCode(t, err, fault.NotFound)
}

// Redacting a past version erases its text from the data directory and
// keeps the audit chain verifiable.
func TestFileRedact(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st)
	ctx := t.Context()
	std := e.who["std"]
	marker := "zebracorn-4711-redactme"
	res, err := e.files.Create(ctx, std, files.CreateRequest{Path: "/memories/r.md", Content: "the door code is " + marker + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	next := "the door code was changed\n"
	if _, err := e.files.Update(ctx, std, memory.Scope{}, "/memories/r.md", files.UpdateRequest{Content: &next}); err != nil {
		t.Fatal(err)
	}
	if !holdsBytes(t, dir, marker) {
		t.Fatal("control: the text is not on disk before redaction")
	}
	// The head cannot be redacted; others may not redact.
	_, err = e.files.Redact(ctx, std, res.File.ID, 2)
	wantCode(t, err, fault.Conflict)
	_, err = e.files.Redact(ctx, e.who["std2"], res.File.ID, 1)
	wantCode(t, err, fault.PermissionDenied)
	f, err := e.files.Redact(ctx, std, res.File.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Redacted || f.Content != "" || f.ContentSHA256 != res.File.ContentSHA256 || f.Path != "/memories/r.md" {
		t.Fatalf("redacted: %+v", f)
	}
	hist, err := e.files.HistoryID(ctx, std, res.File.ID)
	if err != nil || len(hist) != 2 || !hist[0].Redacted || hist[1].Content != next {
		t.Fatalf("history: %+v %v", hist, err)
	}
	rep, err := e.svc.VerifyAudit(ctx, std.Workspace)
	if err != nil || !rep.OK {
		t.Fatalf("audit chain: %+v %v", rep, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoBytes(t, dir, marker)
}

// assertNoBytes fails if any file under dir holds needle.
func assertNoBytes(t *testing.T, dir, needle string) {
	t.Helper()
	if holdsBytes(t, dir, needle) {
		t.Error("the redacted text is still in the data directory")
	}
}

// holdsBytes reports whether any file under dir holds needle.
func holdsBytes(t *testing.T, dir, needle string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found = found || bytes.Contains(raw, []byte(needle))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// Files are records: a workspace export imported into an empty database
// gives the same files, versions and bytes, and export again is
// byte-identical.
func TestFilesSurviveExportImport(t *testing.T) {
	st1, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "a.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st1.Close()
	e1 := newEnv(t, st1)
	ctx := t.Context()
	std := e1.who["std"]
	if _, err := e1.files.Create(ctx, std, files.CreateRequest{Path: "/memories/MEMORY.md", Content: "# M\r\n\ttabs  \n", Pinned: true}); err != nil {
		t.Fatal(err)
	}
	next := "# M\nv2\n"
	if _, err := e1.files.Update(ctx, std, memory.Scope{}, "/memories/MEMORY.md", files.UpdateRequest{Content: &next}); err != nil {
		t.Fatal(err)
	}
	var exp1 bytes.Buffer
	if _, err := e1.svc.Export(ctx, e1.who["op"], &exp1, nil); err != nil {
		t.Fatal(err)
	}
	st2, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "b.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	ix := retrieve.New(retrieve.Options{})
	if _, err := ix.Load(ctx, st2); err != nil {
		t.Fatal(err)
	}
	svc2 := core.New(core.Options{Store: st2, Policy: gate.Default(), Index: ix})
	tok, _, err := svc2.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	op2, err := svc2.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc2.Import(ctx, op2, bytes.NewReader(exp1.Bytes()), nil); err != nil {
		t.Fatal(err)
	}
	f2 := files.New(svc2, files.Options{})
	hist, err := f2.History(ctx, op2, memory.Scope{}, "/memories/MEMORY.md")
	if err != nil || len(hist) != 2 || hist[0].Content != "# M\r\n\ttabs  \n" || hist[1].Content != next || !hist[1].Pinned {
		t.Fatalf("imported history: %+v %v", hist, err)
	}
	var exp2 bytes.Buffer
	if _, err := svc2.Export(ctx, op2, &exp2, nil); err != nil {
		t.Fatal(err)
	}
	// The principals differ (the second database has its own operator),
	// so compare the record lines.
	recs := func(b []byte) string {
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"kind":"record"`) {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if r1, r2 := recs(exp1.Bytes()), recs(exp2.Bytes()); r1 == "" || r1 != r2 {
		t.Fatalf("record lines differ after import:\n%s\n---\n%s", r1, r2)
	}
}

// Files are searchable like records: by their text, filtered to files by
// category.
func TestFilesSearchable(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, st)
	ctx := t.Context()
	res, err := e.files.Create(ctx, e.who["std"], files.CreateRequest{Path: "/memories/MEMORY.md", Content: "The deploy uses blue-green switching via quokkaswitch.\n"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.svc.Search(ctx, e.who["std2"], core.SearchRequest{Query: "quokkaswitch", Category: files.Category})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) == 0 || out.Results[0].Record.ID != res.File.ID {
		t.Fatalf("search: %+v", out.Results)
	}
}
