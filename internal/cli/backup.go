package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// memgate backup DEST and memgate restore SRC (docs/backup.md). Backup
// runs beside a serving server (SQLite's WAL lets both use the file);
// restore verifies the backup completely, on a copy, before it moves the
// data directory's database aside, and refuses while any process has the
// data directory open: every process that opens it holds a shared lock
// on memgate.lock (openApp), restore an exclusive one.

// dataDirLock is the lock file of a data directory.
func dataDirLock(cfg *config.Config) string { return filepath.Join(cfg.DataDir, "memgate.lock") }

// backupDir is where the REST endpoint's backups go.
func backupDir(cfg *config.Config) string { return filepath.Join(cfg.DataDir, "backups") }

func runBackup(env Env, args []string) error {
	fs, cfg := flags(env, "backup", false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print the manifest as JSON")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("backup takes one argument: the new directory to write the backup to")
	}
	if cfg.DatabaseURL != "" {
		return usagef("backup copies a SQLite data directory; back up PostgreSQL with pg_dump (docs/backup.md)")
	}
	dest, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return usagef("backup: %v", err)
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		p := newStageProgress(env.Stderr, "backup")
		m, err := a.svc.Backup(ctx, a.op, dest, p.report)
		p.finish()
		if err != nil {
			return err
		}
		return output(env, asJSON, m, func(w io.Writer) {
			fmt.Fprintf(w, "backup written to %s in %s: %s\n", dest, m.Took, describeManifest(m))
		})
	})
}

func describeManifest(m core.BackupManifest) string {
	var records, entries int64
	for _, w := range m.Workspaces {
		records += w.Records
		entries += w.AuditEntries
	}
	return fmt.Sprintf("schema %d, %d workspace(s), %d records, %d audit entries (chains verified), %d file(s)",
		m.Schema, len(m.Workspaces), records, entries, len(m.Files))
}

func runRestore(env Env, args []string) error {
	fs, cfg := flags(env, "restore", false)
	var asJSON bool
	fs.BoolVar(&asJSON, "json", false, "print the manifest as JSON")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("restore takes one argument: the backup directory")
	}
	if cfg.DatabaseURL != "" {
		return usagef("restore replaces a SQLite data directory; restore PostgreSQL with pg_restore (docs/backup.md)")
	}
	ctx := ctxOf(env)
	p := newStageProgress(env.Stderr, "restore")
	aside, m, err := restore(ctx, cfg, fs.Arg(0), p.report)
	p.finish()
	if err != nil {
		return err
	}
	return output(env, asJSON, m, func(w io.Writer) {
		fmt.Fprintf(w, "restored %s into %s: %s\n", fs.Arg(0), cfg.DataDir, describeManifest(m))
		if aside != "" {
			fmt.Fprintf(w, "the previous database is kept in %s; delete it when the restore is confirmed\n", aside)
		}
	})
}

// restore verifies the backup at src and makes it the data directory's
// database and index snapshot. It returns the directory the replaced
// files were moved to ("" if there were none).
func restore(ctx context.Context, cfg *config.Config, src string, progress func(core.BackupProgress)) (string, core.BackupManifest, error) {
	// 1. The backup as it is: manifest and checksums.
	m, err := core.ReadBackup(src, progress)
	if err != nil {
		return "", m, err
	}
	if m.Backend != "sqlite" {
		return "", m, fault.New(fault.InvalidArgument, "this is a "+m.Backend+" backup; restore needs a SQLite one")
	}
	if m.Schema > sqlite.LatestSchema() {
		return "", m, fault.New(fault.InvalidArgument, fmt.Sprintf("the backup's schema version %d is newer than this memgate's (%d); restore it with the memgate that took it", m.Schema, sqlite.LatestSchema()))
	}
	if v, err := sqlite.FileSchemaVersion(ctx, filepath.Join(src, core.BackupDatabaseName)); err != nil || v != m.Schema {
		return "", m, fault.New(fault.InvalidArgument, "the backup's database does not have the schema version its manifest names")
	}

	// 2. No process may have the data directory open from here on.
	if err := cfg.EnsureDataDir(); err != nil {
		return "", m, fault.Wrap(fault.Unavailable, err, "cannot create data directory %s", cfg.DataDir)
	}
	unlock, err := lockExclusive(dataDirLock(cfg))
	if errors.Is(err, errLocked) {
		return "", m, fault.New(fault.Conflict, "a memgate process (a server?) is using the data directory "+cfg.DataDir+"; stop it before restoring")
	}
	if err != nil {
		return "", m, fault.Wrap(fault.Unavailable, err, "cannot lock the data directory")
	}
	defer unlock()

	// 3. A copy in the data directory, checked again, opened (migrated
	// if older) and verified: audit chains and counts as the manifest
	// says. Nothing is replaced until all of this passed.
	tmpDB := filepath.Join(cfg.DataDir, ".memgate.db.restore.tmp")
	tmpSnap := filepath.Join(cfg.DataDir, ".index.snapshot.restore.tmp")
	cleanup := func() {
		for _, p := range []string{tmpDB, tmpDB + "-wal", tmpDB + "-shm", tmpSnap} {
			os.Remove(p)
		}
	}
	cleanup() // a crashed restore's leftovers
	defer cleanup()
	for _, f := range m.Files {
		dst := tmpDB
		if f.Name == core.BackupSnapshotName {
			dst = tmpSnap
		}
		got, err := core.CopyBackupFile(filepath.Join(src, f.Name), dst, func(done, total int64) {
			progress(core.BackupProgress{Stage: "copy " + f.Name, Done: done, Total: total, Unit: "bytes"})
		})
		if err != nil {
			return "", m, fault.Wrap(fault.Unavailable, err, "cannot copy %s into the data directory", f.Name)
		}
		if got.SHA256 != f.SHA256 || got.Bytes != f.Bytes {
			return "", m, fault.New(fault.InvalidArgument, "backup file "+f.Name+" changed while it was copied")
		}
	}
	st, err := sqlite.OpenCopy(ctx, tmpDB)
	if err != nil {
		return "", m, fault.Wrap(fault.InvalidArgument, err, "the backup's database cannot be opened")
	}
	err = core.CheckCopy(ctx, st, m, progress)
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fault.Wrap(fault.Unavailable, cerr, "cannot close the verified copy")
	}
	if err != nil {
		return "", m, err
	}

	// 4. The current files aside, the verified ones in.
	db, snap := cfg.DBPath(), indexSnapshot(cfg)
	var aside string
	for _, p := range []string{db, db + "-wal", db + "-shm", snap} {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if aside == "" {
			aside = filepath.Join(cfg.DataDir, "pre-restore-"+time.Now().UTC().Format("20060102T150405Z"))
			if err := os.Mkdir(aside, 0o700); err != nil {
				return "", m, fault.Wrap(fault.Unavailable, err, "cannot keep the current database aside")
			}
		}
		if err := os.Rename(p, filepath.Join(aside, filepath.Base(p))); err != nil {
			return aside, m, fault.Wrap(fault.Unavailable, err, "cannot move %s aside (the previous files are in %s)", filepath.Base(p), aside)
		}
	}
	if err := os.Rename(tmpDB, db); err != nil {
		return aside, m, fault.Wrap(fault.Unavailable, err, "cannot put the restored database in place (the previous files are in %s)", aside)
	}
	if _, err := os.Stat(tmpSnap); err == nil {
		if err := os.Rename(tmpSnap, snap); err != nil {
			// Derived data: the next start rebuilds the index.
			os.Remove(tmpSnap)
		}
	}
	if d, err := os.Open(cfg.DataDir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return aside, m, nil
}

// stageProgress shows a backup's or restore's progress on stderr: on a
// terminal one line redrawn in place, with the rate and the time left;
// elsewhere a line every few seconds.
type stageProgress struct {
	mu       sync.Mutex
	w        io.Writer
	cmd      string
	tty      bool
	stage    string
	start    time.Time
	last     time.Time
	drawn    bool
	interval time.Duration
}

func newStageProgress(w io.Writer, cmd string) *stageProgress {
	p := &stageProgress{w: w, cmd: cmd, tty: isTerminal(w), interval: 5 * time.Second}
	if p.tty {
		p.interval = 200 * time.Millisecond
	}
	return p
}

func (p *stageProgress) report(bp core.BackupProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if bp.Stage != p.stage {
		p.stage, p.start = bp.Stage, now
	}
	final := bp.Total > 0 && bp.Done >= bp.Total
	if now.Sub(p.last) < p.interval && !(final && p.tty) {
		return
	}
	if !p.tty && now.Sub(p.start) < p.interval {
		return // quiet for short steps
	}
	p.last = now
	line := formatProgress(p.cmd, bp, now.Sub(p.start))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.drawn = true
	} else {
		fmt.Fprintln(p.w, line)
	}
}

func (p *stageProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// formatProgress is one progress line: counts, rate and, when the total
// is known, the percentage and the time left.
func formatProgress(cmd string, bp core.BackupProgress, elapsed time.Duration) string {
	amount := func(n int64) string {
		if bp.Unit == "bytes" {
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		}
		return fmt.Sprintf("%d %s", n, bp.Unit)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "memgate: %s: %s: %s", cmd, bp.Stage, amount(bp.Done))
	if bp.Total > 0 {
		fmt.Fprintf(&b, " of %s (%d%%)", amount(bp.Total), bp.Done*100/bp.Total)
	}
	if s := elapsed.Seconds(); s > 0 && bp.Done > 0 {
		rate := float64(bp.Done) / s
		if bp.Unit == "bytes" {
			fmt.Fprintf(&b, ", %.1f MiB/s", rate/(1<<20))
		} else {
			fmt.Fprintf(&b, ", %.0f/s", rate)
		}
		if bp.Total > bp.Done {
			eta := time.Duration(float64(bp.Total-bp.Done) / rate * float64(time.Second))
			fmt.Fprintf(&b, ", eta %s", eta.Round(time.Second))
		}
	}
	return b.String()
}
