package cli_test

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBackupUnderWriteLoad: a backup taken through POST /v1/admin/backup
// while eight writers write through a real server restores into a fresh
// data directory that holds every write acknowledged before the backup
// began, nothing that was never written, audit chains that verify, and an
// export equal to the source's export restricted to the records the
// backup holds; restore refuses a data directory a server is using and a
// backup whose files do not match their checksums.
func TestBackupUnderWriteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("writes under load; skipped with -short")
	}
	env := map[string]string{"MEMGATE_EMBEDDER": "none"}
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("rate_limit:\n  agent:\n    per_second: 0\n    burst: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env["MEMGATE_POLICY"] = policy
	src := filepath.Join(t.TempDir(), "src")
	r := run(t, src, env, "agents", "create", "--name", "writer", "--trust", "trusted", "--json")
	var writer struct{ Token string }
	mustJSON(t, r, &writer)
	m := regexp.MustCompile(`operator token \(shown once, store it now\): (\S+)`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no operator token in %q", r.stderr)
	}
	op := m[1]
	srv := startServe(t, src, env)

	// Writers write until told to stop; each acknowledged id is recorded
	// with the moment its acknowledgement arrived.
	var (
		mu        sync.Mutex
		acked     = map[string]time.Time{}
		attempted atomic.Int64
		failures  atomic.Int64
		stop      = make(chan struct{})
		wg        sync.WaitGroup
	)
	const writers = 8
	client := &http.Client{Timeout: time.Minute}
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body, _ := json.Marshal(map[string]any{"type": "belief",
					"content": fmt.Sprintf("Writer %d noted item %d: shard %d keeps its cache on volume v%d-%d.", w, i, w*7+i%5, w, i)})
				attempted.Add(1)
				req, _ := http.NewRequest("POST", srv.url+"/v1/records", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+writer.Token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					failures.Add(1)
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var out struct {
					Record struct{ ID string } `json:"record"`
				}
				if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &out) != nil {
					failures.Add(1)
					t.Errorf("write: %d %s", resp.StatusCode, raw)
					continue
				}
				mu.Lock()
				acked[out.Record.ID] = time.Now()
				mu.Unlock()
			}
		})
	}
	// Let the load build up: wait (bounded) until 200 writes are acknowledged.
	waitFor(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200
	})

	mu.Lock()
	before := make(map[string]bool, len(acked))
	for id := range acked {
		before[id] = true
	}
	mu.Unlock()
	var backup struct {
		Path     string
		Manifest struct {
			Workspaces []struct {
				ID      string
				Records int64
			}
			Files []struct{ Name string }
		}
	}
	srv.do("POST", "/v1/admin/backup", writer.Token, map[string]any{"name": "nope"}, http.StatusForbidden, nil)
	srv.do("POST", "/v1/admin/backup", op, map[string]any{"name": "../escape"}, http.StatusBadRequest, nil)
	srv.do("POST", "/v1/admin/backup", op, map[string]any{"name": "under-load"}, http.StatusCreated, &backup)
	// More writes after the backup, then stop.
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	waitFor(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= n+50
	})
	close(stop)
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d of %d writes failed during the backup", failures.Load(), attempted.Load())
	}
	if backup.Path != filepath.Join(src, "backups", "under-load") {
		t.Fatalf("backup path %q", backup.Path)
	}

	// The audit log names the backup: started (inside the backup) and
	// completed.
	events := map[string]int{}
	for after := int64(0); ; {
		var page struct {
			Entries []struct {
				Event string `json:"event"`
			} `json:"entries"`
			Next int64 `json:"next_after"`
		}
		srv.do("GET", fmt.Sprintf("/v1/audit?limit=500&after=%d", after), op, nil, http.StatusOK, &page)
		for _, e := range page.Entries {
			events[e.Event]++
		}
		if page.Next == 0 {
			break
		}
		after = page.Next
	}
	if events["backup.started"] != 1 || events["backup.completed"] != 1 {
		t.Errorf("audit events %v: want one backup.started and one backup.completed", events)
	}

	// A server holds the source data directory: restore refuses it.
	if r := run(t, src, env, "restore", backup.Path); r.code == 0 || !strings.Contains(r.stderr, "stop it before restoring") {
		t.Fatalf("restore into a served data directory: exit %d %s", r.code, r.stderr)
	}
	srv.stop()

	mustJSON(t, run(t, src, env, "audit", "verify", "--json"), &map[string]any{})

	dst := filepath.Join(t.TempDir(), "dst")
	r = run(t, dst, env, "restore", "--json", backup.Path)
	var manifest struct {
		Workspaces []struct {
			ID      string
			Records int64
		}
	}
	mustJSON(t, r, &manifest)
	mustJSON(t, run(t, dst, env, "audit", "verify", "--json"), &map[string]any{})

	srcExport := exportLines(t, src, env)
	dstExport := exportLines(t, dst, env)
	restored := recordIDs(t, dstExport)
	for id := range before {
		if !restored[id] {
			t.Errorf("record %s was acknowledged before the backup began but is not in it", id)
		}
	}
	mu.Lock()
	for id := range restored {
		if _, ok := acked[id]; !ok {
			t.Errorf("the backup holds record %s, which no writer was told was written", id)
		}
	}
	total := len(acked)
	mu.Unlock()
	if len(restored) < len(before) || len(restored) >= total {
		t.Errorf("backup holds %d records: acknowledged %d before it, %d in all", len(restored), len(before), total)
	}
	if int64(len(restored)) != manifest.Workspaces[0].Records {
		t.Errorf("manifest counts %d records, the restored export %d", manifest.Workspaces[0].Records, len(restored))
	}
	// Every line but the records' equal; each restored record's history
	// is the source's history up to the backup: the same versions, byte
	// for byte, of which the source may have more (a later write can
	// supersede a record).
	want, wantRecs := restrict(t, srcExport, restored)
	got, gotRecs := restrict(t, dstExport, restored)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("restored export's other lines differ from the source's:\n%s\n---\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	later := 0
	for id, vs := range gotRecs {
		sv := wantRecs[id]
		if len(sv) < len(vs) {
			t.Fatalf("record %s: %d versions restored, the source has %d", id, len(vs), len(sv))
		}
		for i := range vs {
			if !bytes.Equal(vs[i], sv[i]) {
				t.Fatalf("record %s version %d differs:\nrestored: %s\nsource:   %s", id, i+1, vs[i], sv[i])
			}
		}
		if len(sv) > len(vs) {
			later++
		}
	}
	t.Logf("%d writes acknowledged before the backup, %d in it, %d in all; %d restored records changed later in the source",
		len(before), len(restored), total, later)

	// A backup whose database was altered is refused before anything is
	// replaced: the restored directory keeps its database.
	bad := filepath.Join(t.TempDir(), "bad")
	copyDir(t, backup.Path, bad)
	f, err := os.OpenFile(filepath.Join(bad, "memgate.db"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("x"), 5000); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r = run(t, dst, env, "restore", bad)
	if r.code == 0 || !strings.Contains(r.stderr, "checksum") {
		t.Fatalf("restore of an altered backup: exit %d %s", r.code, r.stderr)
	}
	if again := exportLines(t, dst, env); strings.Join(again, "\n") != strings.Join(dstExport, "\n") {
		t.Fatal("a refused restore changed the data directory")
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

func exportLines(t *testing.T, dir string, env map[string]string) []string {
	t.Helper()
	r := run(t, dir, env, "export")
	if r.code != 0 {
		t.Fatalf("export: %s", r.stderr)
	}
	return strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
}

// recordIDs are the ids of an export's record lines.
func recordIDs(t *testing.T, lines []string) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, l := range lines {
		var rec struct {
			Kind     string
			Versions []struct{ ID string }
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Kind == "record" {
			ids[rec.Versions[0].ID] = true
		}
	}
	return ids
}

// restrict returns an export's lines other than records and the trailer
// (whose counts depend on what is kept), approvals only of the given
// records, and the versions of each given record.
func restrict(t *testing.T, lines []string, ids map[string]bool) ([]string, map[string][]json.RawMessage) {
	t.Helper()
	var out []string
	recs := map[string][]json.RawMessage{}
	for _, l := range lines {
		var v struct {
			Kind     string
			Versions []json.RawMessage
			Approval struct {
				RecordID string `json:"record_id"`
			}
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		switch v.Kind {
		case "end":
			continue
		case "record":
			var head struct{ ID string }
			if err := json.Unmarshal(v.Versions[0], &head); err != nil {
				t.Fatal(err)
			}
			if ids[head.ID] {
				recs[head.ID] = v.Versions
			}
			continue
		case "approval":
			if !ids[v.Approval.RecordID] {
				continue
			}
		}
		out = append(out, l)
	}
	return out, recs
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		raw, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRestoreRefusesBrokenAuditChain: a backup whose checksums were
// recomputed after its audit log was altered (by someone with the files)
// passes the checksums but not the chain verification, and restore
// leaves the target data directory as it was.
func TestRestoreRefusesBrokenAuditChain(t *testing.T) {
	env := map[string]string{"MEMGATE_EMBEDDER": "none"}
	src := filepath.Join(t.TempDir(), "src")
	for _, c := range []string{"one", "two", "three"} {
		if r := run(t, src, env, "write", "--type", "belief", "--content", "fact "+c); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	bk := filepath.Join(t.TempDir(), "bk")
	if r := run(t, src, env, "backup", bk); r.code != 0 || !strings.Contains(r.stdout, "chains verified") {
		t.Fatalf("backup: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if r := run(t, dst, env, "restore", bk); r.code != 0 {
		t.Fatalf("restore of the untouched backup: exit %d %s", r.code, r.stderr)
	}
	before := exportLines(t, dst, env)

	dbPath := filepath.Join(bk, "memgate.db")
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit_log'`)
	if err != nil {
		t.Fatal(err)
	}
	var triggers []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		triggers = append(triggers, n)
	}
	rows.Close()
	for _, n := range triggers {
		if _, err := db.Exec(`DROP TRIGGER "` + n + `"`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`UPDATE audit_log SET payload = replace(payload, 'accepted', 'rejected') WHERE seq = 3`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA journal_mode = DELETE`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// New checksums in the manifest: only the chain can tell.
	raw, err := os.ReadFile(filepath.Join(bk, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	for _, f := range m["files"].([]any) {
		if f := f.(map[string]any); f["name"] == "memgate.db" {
			f["sha256"], f["bytes"] = hex.EncodeToString(sum[:]), len(body)
		}
	}
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(bk, "manifest.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}

	r := run(t, dst, env, "restore", bk)
	if r.code == 0 || !strings.Contains(r.stderr, "audit chain") {
		t.Fatalf("restore of a backup with a broken chain: exit %d %s", r.code, r.stderr)
	}
	if after := exportLines(t, dst, env); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatal("a refused restore changed the data directory")
	}
}
