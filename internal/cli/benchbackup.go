package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// memgate bench backup: how long an online backup of N records takes and
// what it does to writers. The corpus is written straight through the
// store (a backup copies the database; how its rows got there does not
// matter); the measured writers are HTTP clients of a real server on
// loopback, each writing through the gate and the audit log. The
// writers' latencies are measured for a baseline period without a
// backup, then for the backup's duration (docs/backup.md, "Figures").

// backupBenchResult is the benchmark's JSON summary.
type backupBenchResult struct {
	Records        int           `json:"records"`
	Writers        int           `json:"writers"`
	DatabaseBytes  int64         `json:"database_bytes"`
	BackupTook     time.Duration `json:"backup_ns"`
	BackupBytes    int64         `json:"backup_bytes"`
	Baseline       writerStats   `json:"baseline"`
	DuringBackup   writerStats   `json:"during_backup"`
	P95Ratio       float64       `json:"p95_ratio"`
	FailedWrites   int64         `json:"failed_writes"`
	FillTook       time.Duration `json:"fill_ns"`
	RestoreChecked bool          `json:"restore_checked"`
}

type writerStats struct {
	Writes int           `json:"writes"`
	PerSec float64       `json:"per_second"`
	P50    time.Duration `json:"p50_ns"`
	P95    time.Duration `json:"p95_ns"`
	P99    time.Duration `json:"p99_ns"`
}

func runBenchBackup(env Env, args []string) error {
	fs, cfg := flags(env, "bench backup", false)
	var (
		records, writers int
		baseline         time.Duration
		dir              string
		jsonOnly         bool
	)
	fs.IntVar(&records, "records", 100_000, "records in the database before the backup (1 to 10,000,000)")
	fs.IntVar(&writers, "writers", 16, "concurrent HTTP clients writing throughout (1-64)")
	fs.DurationVar(&baseline, "baseline", 10*time.Second, "how long the writers are measured without a backup")
	fs.StringVar(&dir, "dir", "", "work directory (default: a temporary one, deleted after)")
	fs.BoolVar(&jsonOnly, "json-only", false, "print only the JSON summary line")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if records < 1 || records > 10_000_000 || writers < 1 || writers > 64 || baseline <= 0 {
		return usagef("bench backup: --records 1..10000000, --writers 1..64, --baseline > 0")
	}
	ctx, stop := env.runContext()
	defer stop()
	if dir == "" {
		d, err := os.MkdirTemp("", "memgate-bench-backup-")
		if err != nil {
			return fault.Wrap(fault.Unavailable, err, "cannot create a work directory")
		}
		defer os.RemoveAll(d)
		dir = d
	}
	say := func(format string, args ...any) {
		if !jsonOnly {
			fmt.Fprintf(env.Stderr, "memgate: bench backup: "+format+"\n", args...)
		}
	}
	res, err := benchBackup(ctx, dir, records, writers, baseline, say, env.Stderr)
	if err != nil {
		return err
	}
	cmd := strings.TrimSpace("memgate bench backup " + strings.Join(args, " "))
	raw, _ := json.Marshal(struct {
		Bench   string        `json:"bench"`
		Machine bench.Machine `json:"machine"`
		Command string        `json:"command"`
		backupBenchResult
	}{"backup", bench.ThisMachine(), cmd, res})
	if !jsonOnly {
		bench.PrintHeader(env.Stdout, cmd)
		fmt.Fprintf(env.Stdout, "records %d (database %.1f MiB), %d writers over HTTP\n", res.Records, float64(res.DatabaseBytes)/(1<<20), res.Writers)
		fmt.Fprintf(env.Stdout, "backup: %s, %.1f MiB, restore check %v\n", res.BackupTook.Round(time.Millisecond), float64(res.BackupBytes)/(1<<20), res.RestoreChecked)
		for _, r := range []struct {
			name string
			s    writerStats
		}{{"without backup", res.Baseline}, {"during backup", res.DuringBackup}} {
			fmt.Fprintf(env.Stdout, "writes %-15s %6d writes, %7.0f/s, p50 %s, p95 %s, p99 %s\n", r.name, r.s.Writes, r.s.PerSec,
				r.s.P50.Round(10*time.Microsecond), r.s.P95.Round(10*time.Microsecond), r.s.P99.Round(10*time.Microsecond))
		}
		fmt.Fprintf(env.Stdout, "p95 during / without: %.2fx; failed writes: %d\n", res.P95Ratio, res.FailedWrites)
	}
	_, err = fmt.Fprintf(env.Stdout, "%s\n", raw)
	return err
}

func benchBackup(ctx context.Context, dir string, records, writers int, baseline time.Duration, say func(string, ...any), progressTo io.Writer) (backupBenchResult, error) {
	res := backupBenchResult{Records: records, Writers: writers}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "memgate.db"), sqlite.Options{})
	if err != nil {
		return res, err
	}
	defer st.Close()
	pol := gate.Default()
	pol.RateLimit.Agent = gate.Bucket{}
	svc := core.New(core.Options{Store: st, Policy: pol, Backups: core.BackupOptions{Version: version()}})
	defer svc.Close()
	if _, _, err := svc.Bootstrap(ctx); err != nil {
		return res, err
	}
	op, err := svc.CLIOperator(ctx, memory.DefaultWorkspace)
	if err != nil {
		return res, err
	}
	agent, err := svc.CreateAgent(ctx, op, "bench-writer", memory.Trusted)
	if err != nil {
		return res, err
	}

	start := time.Now()
	say("writing %d records", records)
	if err := fillBackupBench(ctx, st, records, say); err != nil {
		return res, err
	}
	res.FillTook = time.Since(start)
	if err := st.Checkpoint(ctx); err != nil {
		say("checkpoint: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "memgate.db")); err == nil {
		res.DatabaseBytes = fi.Size()
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{Handler: api.New(svc, nil, nil, version()).Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	ws := startBackupWriters(ctx, "http://"+ln.Addr().String()+"/v1/records", agent.Token, writers)
	defer ws.cancel()

	say("warming up the writers")
	if err := sleepCtx(ctx, 2*time.Second); err != nil {
		return res, err
	}
	ws.phase.Store(phaseBaseline)
	say("measuring %d writers without a backup for %s", writers, baseline)
	t0 := time.Now()
	if err := sleepCtx(ctx, baseline); err != nil {
		return res, err
	}
	baseWall := time.Since(t0)
	ws.phase.Store(phaseBackup)
	say("backing up while they write")
	p := newStageProgress(progressTo, "bench backup")
	t0 = time.Now()
	m, err := svc.Backup(ctx, op, filepath.Join(dir, "backup"), p.report)
	res.BackupTook = time.Since(t0)
	p.finish()
	ws.stop()
	if err != nil {
		return res, err
	}
	for _, f := range m.Files {
		res.BackupBytes += f.Bytes
	}
	res.FailedWrites = ws.failed.Load()
	res.Baseline = statsOf(ws.lat[phaseBaseline], baseWall)
	res.DuringBackup = statsOf(ws.lat[phaseBackup], res.BackupTook)
	if res.Baseline.P95 > 0 {
		res.P95Ratio = float64(res.DuringBackup.P95) / float64(res.Baseline.P95)
	}
	// The backup is whole: its manifest and checksums verify.
	if _, err := core.ReadBackup(filepath.Join(dir, "backup"), nil); err != nil {
		return res, err
	}
	res.RestoreChecked = true
	return res, nil
}

// The phases of the backup benchmark a write can start in.
const (
	phaseWarmUp int32 = iota
	phaseBaseline
	phaseBackup
	phaseDone
)

// backupWriters are the benchmark's HTTP writers. They run from their
// start to stop; each latency is tagged with the phase it started in.
type backupWriters struct {
	phase  atomic.Int32
	mu     sync.Mutex
	lat    map[int32][]time.Duration // by phase
	failed atomic.Int64
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// startBackupWriters starts writers posting records to url as the agent
// with token, in phase phaseWarmUp.
func startBackupWriters(ctx context.Context, url, token string, writers int) *backupWriters {
	ws := &backupWriters{lat: map[int32][]time.Duration{}}
	wctx, cancel := context.WithCancel(ctx)
	ws.cancel = cancel
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers}, Timeout: 2 * time.Minute}
	var seq atomic.Int64
	for w := range writers {
		ws.wg.Go(func() {
			for wctx.Err() == nil {
				n := seq.Add(1)
				body, _ := json.Marshal(map[string]any{"type": "belief", "content": fmt.Sprintf(
					"Client %d reports that deploy %d of the billing service %d finished on runner r%d after %d retries.", w, n, n%211, n%17, n%5)})
				p := ws.phase.Load()
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(wctx, "POST", url, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					if wctx.Err() == nil {
						ws.failed.Add(1)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				d := time.Since(t0)
				if resp.StatusCode >= 300 {
					ws.failed.Add(1)
					continue
				}
				ws.mu.Lock()
				ws.lat[p] = append(ws.lat[p], d)
				ws.mu.Unlock()
			}
		})
	}
	return ws
}

// stop ends the writers and waits for them.
func (ws *backupWriters) stop() {
	ws.phase.Store(phaseDone)
	ws.cancel()
	ws.wg.Wait()
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func statsOf(l []time.Duration, wall time.Duration) writerStats {
	if len(l) == 0 {
		return writerStats{}
	}
	s := slices.Clone(l)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return writerStats{Writes: len(s), PerSec: float64(len(s)) / wall.Seconds(), P50: at(0.50), P95: at(0.95), P99: at(0.99)}
}

// fillBackupBench writes n distinct, realistic records in transactions
// of 5000, straight through the store.
func fillBackupBench(ctx context.Context, st store.Store, n int, say func(string, ...any)) error {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start, last := time.Now(), time.Now()
	for from := 0; from < n; from += 5000 {
		err := st.Tx(ctx, func(tx store.Tx) error {
			for i := from; i < min(from+5000, n); i++ {
				at := t0.Add(time.Duration(i) * time.Millisecond)
				content := fmt.Sprintf("Record %d: the payments service %d retries failed webhooks with exponential backoff, "+
					"capped at five minutes, and alerts the on-call engineer after the fourth failure of customer %d.", i, i%97, i%1013)
				r := memory.Record{ID: memory.NewID(), Type: memory.Types[i%len(memory.Types)], Category: "technology",
					Content: content, ContentSHA256: memory.SHA256Hex(content), Metadata: json.RawMessage(`{}`),
					Entities: []string{fmt.Sprintf("system:payments-%d", i%97)}, Version: 1, Status: memory.Active,
					Source: memory.Source{Agent: "bench", Kind: memory.Observed, Confidence: 0.9, Evidence: []string{}},
					Scope:  memory.Scope{ProjectID: "payments"}, IngestedAt: at, Access: memory.Public,
					Gate:       memory.GateInfo{DecisionID: memory.NewID(), Decision: "accepted", Origin: "external"},
					DecayScore: 1, Path: memory.PathFast, CreatedAt: at, UpdatedAt: at}
				if err := tx.InsertRecord(ctx, memory.DefaultWorkspace, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			done := min(from+5000, n)
			rate := float64(done) / time.Since(start).Seconds()
			say("%d/%d records, %.0f/s, eta %s", done, n, rate, time.Duration(float64(n-done)/rate*float64(time.Second)).Round(time.Second))
		}
	}
	return nil
}
