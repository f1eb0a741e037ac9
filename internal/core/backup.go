package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Online backups (docs/backup.md). A backup is a directory:
//
//	manifest.json    BackupManifest: schema version, counts, audit chain
//	                 heads, and the size and SHA-256 of every other file
//	memgate.db       the database, one moment's committed state
//	index.snapshot   the search index snapshot, if the data directory had
//	                 one; older than the database, never newer
//
// The snapshot is copied before the database, so the change log in the
// database copy covers everything the snapshot lacks; a restore catches
// the index up from it like any start does. The manifest is written last:
// a directory without one is an unfinished backup.

// Backup format identifiers and file names.
const (
	BackupFormat       = "memgate-backup"
	BackupVersion      = 1
	BackupManifestName = "manifest.json"
	BackupDatabaseName = "memgate.db"
	BackupSnapshotName = "index.snapshot"
)

// BackupManifest describes a backup; restore checks the backup against it.
type BackupManifest struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Memgate   string    `json:"memgate_version"`
	CreatedAt time.Time `json:"created_at"`
	Backend   string    `json:"backend"`
	// Schema is the database copy's schema version.
	Schema int `json:"schema_version"`
	// ChangeHead is the copy's last change-log position.
	ChangeHead int64             `json:"change_head"`
	Workspaces []BackupWorkspace `json:"workspaces"`
	Files      []BackupFile      `json:"files"`
	// Took is how long the backup took.
	Took string `json:"took"`
}

// BackupWorkspace is what the copy holds of one workspace.
type BackupWorkspace struct {
	ID string `json:"id"`
	// Records counts record heads, forgotten tombstones included.
	Records      int64  `json:"records"`
	AuditEntries int64  `json:"audit_entries"`
	AuditHead    string `json:"audit_head"`
}

// BackupFile is one file of a backup.
type BackupFile struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// BackupProgress reports a backup's or a restore's progress: Stage names
// the step, Done and Total count Unit ("bytes", "records", "entries");
// Total is 0 when unknown.
type BackupProgress struct {
	Stage string
	Done  int64
	Total int64
	Unit  string
}

// BackupOptions configure the service's backups.
type BackupOptions struct {
	// Dir is where BackupNamed writes (the REST endpoint's backups).
	Dir string
	// SnapshotPath is the search index snapshot to include ("" = none).
	SnapshotPath string
	// Version is the memgate version recorded in manifests.
	Version string
}

// BackupNamed backs up into a new directory name under the configured
// backup directory: the REST endpoint's form, which never writes outside
// it. An empty name is the time, as backup-20260301T120000Z.
func (s *Service) BackupNamed(ctx context.Context, by memory.Principal, name string) (BackupManifest, string, error) {
	if err := requireOperator(by); err != nil {
		return BackupManifest{}, "", err
	}
	if name == "" {
		name = "backup-" + s.now().UTC().Format("20060102T150405.000Z")
	}
	if !validName(name) || name == "." || name == ".." {
		return BackupManifest{}, "", fault.Field("name", "must be 1-64 letters, digits, '.', '_' or '-'")
	}
	if s.backups.Dir == "" {
		return BackupManifest{}, "", fault.New(fault.Unavailable, "this server has no backup directory")
	}
	if err := os.MkdirAll(s.backups.Dir, 0o700); err != nil {
		return BackupManifest{}, "", fault.Wrap(fault.Unavailable, err, "cannot create the backup directory")
	}
	dest := filepath.Join(s.backups.Dir, name)
	m, err := s.Backup(ctx, by, dest, nil)
	return m, dest, err
}

// Backup takes an online backup into dest, a directory that must not
// exist or be empty, while the service goes on serving. It is audited in
// the operator's workspace: backup.started before the copy (so the
// backup holds it) and backup.completed after. On failure dest is
// removed.
func (s *Service) Backup(ctx context.Context, by memory.Principal, dest string, progress func(BackupProgress)) (BackupManifest, error) {
	if err := requireOperator(by); err != nil {
		return BackupManifest{}, err
	}
	bk, ok := s.watch.Store.(store.Backuper)
	if !ok {
		return BackupManifest{}, fault.New(fault.Conflict, "this backend is backed up with its own tools (PostgreSQL: pg_dump, see docs/backup.md)")
	}
	if progress == nil {
		progress = func(BackupProgress) {}
	}
	if err := makeEmptyDir(dest); err != nil {
		return BackupManifest{}, err
	}
	start := time.Now()
	m, err := s.backup(ctx, by, bk, dest, progress)
	if err != nil {
		os.RemoveAll(dest)
		s.log.Warn("backup failed", "err", err)
		return BackupManifest{}, err
	}
	m.Took = time.Since(start).Round(time.Millisecond).String()
	if err := writeManifest(dest, m); err != nil {
		os.RemoveAll(dest)
		return BackupManifest{}, err
	}
	var records int64
	for _, w := range m.Workspaces {
		records += w.Records
	}
	err = s.tx(ctx, "audit", func(tx store.Tx) error {
		_, err := appendAudit(ctx, tx, by.Workspace, by, "", "backup.completed", s.clock(),
			map[string]any{"name": filepath.Base(dest), "database_sha256": m.Files[0].SHA256, "records": records, "change_head": m.ChangeHead})
		return err
	})
	if err != nil {
		return m, err
	}
	s.log.Info("backup taken", "name", filepath.Base(dest), "records", records, "took", m.Took)
	return m, nil
}

func (s *Service) backup(ctx context.Context, by memory.Principal, bk store.Backuper, dest string, progress func(BackupProgress)) (BackupManifest, error) {
	err := s.tx(ctx, "audit", func(tx store.Tx) error {
		_, err := appendAudit(ctx, tx, by.Workspace, by, "", "backup.started", s.clock(), map[string]any{"name": filepath.Base(dest)})
		return err
	})
	if err != nil {
		return BackupManifest{}, err
	}
	m := BackupManifest{Format: BackupFormat, Version: BackupVersion, Memgate: s.backups.Version,
		CreatedAt: s.clock(), Backend: bk.Backend()}

	// The snapshot first: it must not be newer than the database copy.
	var snap *BackupFile
	if s.backups.SnapshotPath != "" {
		f, err := copyFile(s.backups.SnapshotPath, filepath.Join(dest, BackupSnapshotName), func(done, total int64) {
			progress(BackupProgress{Stage: "index snapshot", Done: done, Total: total, Unit: "bytes"})
		})
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// none yet, or deleted by an erasure: a restore rebuilds the index
		case err != nil:
			return m, fault.Wrap(fault.Unavailable, err, "cannot copy the search index snapshot")
		default:
			snap = &f
		}
	}

	dbPath := filepath.Join(dest, BackupDatabaseName)
	err = bk.BackupTo(ctx, dbPath, func(done, total int64) {
		progress(BackupProgress{Stage: "database", Done: done, Total: total, Unit: "bytes"})
	})
	if err != nil {
		return m, storeErr(err, "backup")
	}
	cp, err := bk.OpenCopy(ctx, dbPath)
	if err != nil {
		return m, fault.Wrap(fault.Unavailable, err, "cannot open the database copy")
	}
	schema, head, wss, err := InspectCopy(ctx, cp, progress)
	if cerr := cp.Close(); err == nil && cerr != nil {
		err = fault.Wrap(fault.Unavailable, cerr, "cannot close the database copy")
	}
	if err != nil {
		return m, err
	}
	m.Schema, m.ChangeHead, m.Workspaces = schema, head, wss
	db, err := hashFile(dbPath, func(done, total int64) {
		progress(BackupProgress{Stage: "checksum", Done: done, Total: total, Unit: "bytes"})
	})
	if err != nil {
		return m, fault.Wrap(fault.Unavailable, err, "cannot checksum the database copy")
	}
	m.Files = append(m.Files, db)
	if snap != nil {
		m.Files = append(m.Files, *snap)
	}
	return m, nil
}

// InspectCopy reads what a database copy holds: its schema version,
// change-log head, and per workspace the record count and the audit
// chain, verified entry by entry. A broken chain is an error naming the
// workspace.
func InspectCopy(ctx context.Context, st store.Store, progress func(BackupProgress)) (int, int64, []BackupWorkspace, error) {
	if progress == nil {
		progress = func(BackupProgress) {}
	}
	var schema int
	if sv, ok := st.(interface {
		SchemaVersion(context.Context) (int, error)
	}); ok {
		v, err := sv.SchemaVersion(ctx)
		if err != nil {
			return 0, 0, nil, storeErr(err, "schema version")
		}
		schema = v
	}
	head, err := st.ChangeHead(ctx)
	if err != nil {
		return 0, 0, nil, storeErr(err, "change log")
	}
	wsl, err := st.ListWorkspaces(ctx)
	if err != nil {
		return 0, 0, nil, storeErr(err, "workspaces")
	}
	counts, err := countRecords(ctx, st, progress)
	if err != nil {
		return 0, 0, nil, storeErr(err, "records")
	}
	out := make([]BackupWorkspace, 0, len(wsl))
	var entries int64
	for _, w := range wsl {
		var v audit.Verifier
		for after := int64(0); ; {
			es, err := st.ListAudit(ctx, w.ID, after, 1000)
			if err != nil {
				return 0, 0, nil, storeErr(err, "audit log")
			}
			for _, e := range es {
				if err := v.Next(e); err != nil {
					return 0, 0, nil, fault.Wrap(fault.Conflict, err, "the audit chain of workspace %s is broken at entry %d", w.ID, e.Seq)
				}
			}
			entries += int64(len(es))
			progress(BackupProgress{Stage: "audit chains", Done: entries, Unit: "entries"})
			if len(es) < 1000 {
				break
			}
			after = es[len(es)-1].Seq
		}
		out = append(out, BackupWorkspace{ID: w.ID, Records: counts[w.ID], AuditEntries: v.Count(), AuditHead: v.Head()})
	}
	slices.SortFunc(out, func(a, b BackupWorkspace) int { return strings.Compare(a.ID, b.ID) })
	return schema, head, out, nil
}

// countRecords counts each workspace's record heads, with a count query
// where the backend has one (reading every record would cost a large
// database's backup more CPU than copying it).
func countRecords(ctx context.Context, st store.Store, progress func(BackupProgress)) (map[string]int64, error) {
	if rc, ok := st.(interface {
		RecordCounts(context.Context) (map[string]int64, error)
	}); ok {
		return rc.RecordCounts(ctx)
	}
	counts := map[string]int64{}
	var n int64
	err := st.ScanRecords(ctx, func(ws string, _ memory.Record) error {
		counts[ws]++
		if n++; n%10000 == 0 {
			progress(BackupProgress{Stage: "records", Done: n, Unit: "records"})
		}
		return nil
	})
	return counts, err
}

// ReadBackup reads a backup's manifest and checks every file it lists
// against its size and SHA-256; it changes nothing.
func ReadBackup(dir string, progress func(BackupProgress)) (BackupManifest, error) {
	if progress == nil {
		progress = func(BackupProgress) {}
	}
	var m BackupManifest
	raw, err := os.ReadFile(filepath.Join(dir, BackupManifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, fault.New(fault.InvalidArgument, "not a memgate backup, or an unfinished one: "+BackupManifestName+" is missing")
	}
	if err != nil {
		return m, fault.Wrap(fault.Unavailable, err, "cannot read the backup manifest")
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.Format != BackupFormat {
		return m, fault.New(fault.InvalidArgument, "the backup manifest is not a memgate backup manifest")
	}
	if m.Version != BackupVersion {
		return m, fault.New(fault.InvalidArgument, fmt.Sprintf("backup format version %d is not supported (want %d)", m.Version, BackupVersion))
	}
	if len(m.Files) == 0 || m.Files[0].Name != BackupDatabaseName {
		return m, fault.New(fault.InvalidArgument, "the backup manifest lists no database")
	}
	for _, f := range m.Files {
		if f.Name != BackupDatabaseName && f.Name != BackupSnapshotName {
			return m, fault.New(fault.InvalidArgument, "the backup manifest lists an unknown file")
		}
		got, err := hashFile(filepath.Join(dir, f.Name), func(done, total int64) {
			progress(BackupProgress{Stage: "checksum " + f.Name, Done: done, Total: total, Unit: "bytes"})
		})
		if err != nil {
			return m, fault.Wrap(fault.InvalidArgument, err, "backup file %s cannot be read", f.Name)
		}
		if got.Bytes != f.Bytes || got.SHA256 != f.SHA256 {
			return m, fault.New(fault.InvalidArgument, "backup file "+f.Name+" does not match its checksum in the manifest")
		}
	}
	return m, nil
}

// CheckCopy verifies a database copy being restored against its
// manifest: every workspace's audit chain verifies and ends at the head
// the manifest recorded, with the same entry and record counts.
func CheckCopy(ctx context.Context, st store.Store, m BackupManifest, progress func(BackupProgress)) error {
	_, head, wss, err := InspectCopy(ctx, st, progress)
	if err != nil {
		return err
	}
	if head != m.ChangeHead {
		return fault.New(fault.Conflict, fmt.Sprintf("the database's change log ends at %d, the manifest says %d", head, m.ChangeHead))
	}
	if len(wss) != len(m.Workspaces) {
		return fault.New(fault.Conflict, fmt.Sprintf("the database holds %d workspaces, the manifest %d", len(wss), len(m.Workspaces)))
	}
	for i, w := range wss {
		if w != m.Workspaces[i] {
			return fault.New(fault.Conflict, "workspace "+w.ID+" does not match the manifest (records, audit entries or audit chain head)")
		}
	}
	return nil
}

func makeEmptyDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrExist) {
		return fault.Wrap(fault.InvalidArgument, err, "cannot create the backup directory")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fault.Wrap(fault.InvalidArgument, err, "the backup destination is not a directory")
	}
	if len(ents) > 0 {
		return fault.New(fault.Conflict, "the backup destination exists and is not empty")
	}
	return nil
}

func writeManifest(dir string, m BackupManifest) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fault.Wrap(fault.Internal, err, "cannot encode the manifest")
	}
	tmp := filepath.Join(dir, "."+BackupManifestName+".tmp")
	if err := writeFileSync(tmp, append(raw, '\n')); err != nil {
		return fault.Wrap(fault.Unavailable, err, "cannot write the manifest")
	}
	if err := os.Rename(tmp, filepath.Join(dir, BackupManifestName)); err != nil {
		return fault.Wrap(fault.Unavailable, err, "cannot write the manifest")
	}
	return syncDir(dir)
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	_ = d.Sync() // not every platform syncs directories
	return nil
}

// CopyBackupFile copies src to dst (a new file, synced), returning the
// copy's size and SHA-256.
func CopyBackupFile(src, dst string, progress func(done, total int64)) (BackupFile, error) {
	return copyFile(src, dst, progress)
}

func copyFile(src, dst string, progress func(done, total int64)) (BackupFile, error) {
	in, err := os.Open(src)
	if err != nil {
		return BackupFile{}, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return BackupFile{}, err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return BackupFile{}, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), &progressReader{r: in, total: fi.Size(), fn: progress})
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return BackupFile{}, err
	}
	return BackupFile{Name: filepath.Base(dst), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func hashFile(path string, progress func(done, total int64)) (BackupFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return BackupFile{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return BackupFile{}, err
	}
	h := sha256.New()
	n, err := io.Copy(h, &progressReader{r: f, total: fi.Size(), fn: progress})
	if err != nil {
		return BackupFile{}, err
	}
	return BackupFile{Name: filepath.Base(path), Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// progressReader reports bytes read every 4 MiB and at the end.
type progressReader struct {
	r         io.Reader
	done, at  int64
	total     int64
	fn        func(done, total int64)
	finalSent bool
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.done += int64(n)
	if p.fn != nil && (p.done-p.at >= 4<<20 || err == io.EOF && !p.finalSent) {
		p.at = p.done
		p.finalSent = err == io.EOF
		p.fn(p.done, max(p.total, p.done))
	}
	return n, err
}
