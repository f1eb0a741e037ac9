package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
)

// TestBackupProgressLine: a progress line names the step and shows the
// amount done of the total, the percentage, the rate and the time left.
func TestBackupProgressLine(t *testing.T) {
	got := formatProgress("backup", core.BackupProgress{Stage: "database", Done: 64 << 20, Total: 256 << 20, Unit: "bytes"}, 2*time.Second)
	want := "memgate: backup: database: 64.0 MiB of 256.0 MiB (25%), 32.0 MiB/s, eta 6s"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	got = formatProgress("restore", core.BackupProgress{Stage: "audit chains", Done: 3000, Unit: "entries"}, time.Second)
	if got != "memgate: restore: audit chains: 3000 entries, 3000/s" {
		t.Errorf("without a total: %q", got)
	}
	// Not a terminal: quiet for a short step, no carriage returns.
	var buf bytes.Buffer
	p := newStageProgress(&buf, "backup")
	p.report(core.BackupProgress{Stage: "database", Done: 1, Total: 2, Unit: "bytes"})
	p.report(core.BackupProgress{Stage: "database", Done: 2, Total: 2, Unit: "bytes"})
	p.finish()
	if buf.Len() != 0 || strings.Contains(buf.String(), "\r") {
		t.Errorf("a short step off a terminal printed %q", buf.String())
	}
}
