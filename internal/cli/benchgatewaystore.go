package cli

// `memgate bench gateway --data-dir D [--reuse]`: a prefilled store kept
// in D, and every timed run made on a fresh copy of it, so runs at a
// large store size (500,000 turns take many minutes to prefill) start
// from the same state and send the same timed turns.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/config"
)

// gatewayStoreFile describes the prefill a kept store holds.
const gatewayStoreFile = "bench-gateway.json"

// gatewayStore is what gatewayStoreFile records.
type gatewayStore struct {
	// Prefill turns were sent, a flush every TurnsPerFlush; their texts
	// start at TextOffset (after the timed run's: see
	// bench.GatewayBenchOptions), so a timed run of up to TextOffset turns
	// sends texts the prefill did not.
	Prefill       int    `json:"prefill"`
	TurnsPerFlush int    `json:"turns_per_flush"`
	TextOffset    int    `json:"text_offset"`
	Data          string `json:"data"`
}

func readGatewayStore(dir string) (*gatewayStore, error) {
	b, err := os.ReadFile(filepath.Join(dir, gatewayStoreFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usagef("bench gateway: --reuse: %s holds no store of an earlier `bench gateway --data-dir` run", dir)
		}
		return nil, err
	}
	var s gatewayStore
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("bench gateway: %s: %w", gatewayStoreFile, err)
	}
	return &s, nil
}

// buildGatewayStore prefills the new or empty data directory cfg.DataDir
// with s.Prefill turns through the gateway, extracts them, saves the
// search index snapshot (so a run on a copy restores the index instead of
// rebuilding it) and records s there.
func buildGatewayStore(ctx context.Context, env Env, cfg *config.Config, ds *bench.Dataset, s gatewayStore, progress io.Writer) error {
	if _, err := os.Stat(cfg.DBPath()); err == nil {
		return usagef("bench gateway: %s already holds a database; name a new or empty --data-dir, or add --reuse", cfg.DataDir)
	}
	a, gw, closeGW, err := openGatewayBench(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer closeGW()
	if err := prefillGateway(ctx, a, gw, ds, s.Prefill, s.TurnsPerFlush, s.TextOffset, progress); err != nil {
		return err
	}
	if err := saveSnapshotChecked(a.index, a.store, indexSnapshot(cfg)); err != nil {
		return fmt.Errorf("bench gateway: index snapshot: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.DataDir, gatewayStoreFile), append(b, '\n'), 0o600)
}

// openGatewayBench opens the service over cfg's data directory (users
// without a rate limit, as the bench sends faster than a person) and
// starts the gateway on loopback in front of it; closeGW stops both.
func openGatewayBench(ctx context.Context, env Env, cfg *config.Config) (a *app, gw *bench.Gateway, closeGW func(), err error) {
	if err := unlimitedUserPolicy(cfg); err != nil {
		return nil, nil, nil, err
	}
	openEnv := env
	openEnv.Stderr = io.Discard
	if a, err = openWith(ctx, openEnv, cfg, nil, nil, true); err != nil {
		return nil, nil, nil, err
	}
	gw, stopGW, err := bench.StartGateway(ctx, a.svc, cfg.Workspace, false)
	if err != nil {
		a.Close()
		return nil, nil, nil, err
	}
	return a, gw, func() { stopGW(); a.Close() }, nil
}

// prefillGateway sends n turns through gw untimed (their texts start
// at textOffset, past the timed turns'), extraction included.
func prefillGateway(ctx context.Context, a *app, gw *bench.Gateway, ds *bench.Dataset, n, perFlush, textOffset int, progress io.Writer) error {
	if n <= 0 {
		return nil
	}
	if _, err := bench.RunGatewayBench(ctx, ds, gw, bench.GatewayBenchOptions{Turns: n, TurnsPerSession: perFlush,
		Start: a.svc.RunJobs, Progress: progress, TextOffset: textOffset}); err != nil {
		return fmt.Errorf("bench gateway: prefill: %w", err)
	}
	return nil
}

// keptGatewayStore is the store kept in cfg's data directory: with
// reuse the one an earlier run built there, checked against the flags
// the user gave (given) — a different prefill or flush size, or more
// timed turns than the prefill left texts for, is a usage error —
// else a new one built as want says.
func keptGatewayStore(ctx context.Context, env Env, cfg *config.Config, ds *bench.Dataset, want gatewayStore, reuse bool, given map[string]bool, progress io.Writer) (*gatewayStore, error) {
	if !reuse {
		if err := buildGatewayStore(ctx, env, cfg, ds, want, progress); err != nil {
			return nil, err
		}
		return &want, nil
	}
	kept := cfg.DataDir
	s, err := readGatewayStore(kept)
	if err != nil {
		return nil, err
	}
	switch {
	case given["prefill"] && want.Prefill != s.Prefill:
		return nil, usagef("bench gateway: --reuse: %s holds a prefill of %d turns, not --prefill %d", kept, s.Prefill, want.Prefill)
	case given["turns-per-flush"] && want.TurnsPerFlush != s.TurnsPerFlush:
		return nil, usagef("bench gateway: --reuse: %s was prefilled with --turns-per-flush %d", kept, s.TurnsPerFlush)
	case want.TextOffset > s.TextOffset:
		return nil, usagef("bench gateway: --reuse: %s was prefilled for at most --turns %d", kept, s.TextOffset)
	}
	return s, nil
}

// loadGatewayData reads the LongMemEval file whose turns the gateway
// bench sends; a missing or malformed file is a usage error.
func loadGatewayData(path string) (*bench.Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("bench gateway: %v (pass --data FILE, a LongMemEval JSON file)", err)
	}
	defer f.Close()
	ds, err := bench.LoadLongMemEval(f)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return ds, nil
}
