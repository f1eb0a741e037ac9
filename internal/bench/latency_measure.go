package bench

// The latency benchmark's progress display and its measurements of the
// process (memory, profiles) and of the data directory (file sizes).

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ---------------------------------------------------------------------
// Progress.

type progress struct {
	w     io.Writer
	lines bool
	what  string
	total int
	start time.Time
	done  atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startProgress(w io.Writer, lines bool, what string, total int) *progress {
	p := &progress{w: w, lines: lines, what: what, total: total, start: time.Now(), stop: make(chan struct{})}
	if w == nil {
		return p
	}
	every := 200 * time.Millisecond // at most 5 redraws a second
	if lines {
		every = 10 * time.Second
	}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw(false)
			}
		}
	})
	return p
}

func (p *progress) add(n int) { p.done.Add(int64(n)) }

func (p *progress) draw(final bool) {
	done := int(p.done.Load())
	el := time.Since(p.start)
	rate := 0.0
	if s := el.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	pct := 100.0
	if p.total > 0 {
		pct = min(100, 100*float64(done)/float64(p.total))
	}
	eta := "-"
	if final {
		eta = "done in " + el.Round(100*time.Millisecond).String()
	} else if rate > 0 && done < p.total {
		eta = "ETA " + time.Duration(float64(p.total-done)/rate*float64(time.Second)).Round(time.Second).String()
	}
	line := fmt.Sprintf("%-6s %d/%d %5.1f%% %7.0f/s %s", p.what, done, p.total, pct, rate, eta)
	if p.lines {
		fmt.Fprintf(p.w, "bench: %s\n", line)
		return
	}
	const width = 30
	fill := int(pct / 100 * width)
	bar := strings.Repeat("#", fill) + strings.Repeat(".", width-fill)
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r[%s] %s\x1b[K%s", bar, line, end)
}

func (p *progress) finish() {
	if p.w == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.draw(true)
}

// ---------------------------------------------------------------------
// Measurements.

// procStatusMiB reads a kB field (VmRSS, VmHWM) of /proc/self/status in
// MiB; 0 where there is none.
func procStatusMiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func heapInUseMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// dirFiles returns the sizes of the regular files in dir.
func dirFiles(dir string) (map[string]int64, int64) {
	out := map[string]int64{}
	var total int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out, 0
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			out[e.Name()] = fi.Size()
			total += fi.Size()
		}
	}
	return out, total
}

// profile starts a CPU profile into dir/name (nothing without dir); the
// returned func stops it.
func profile(dir, name string) (func() error, error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	return StartCPUProfile(filepath.Join(dir, name))
}

// StartCPUProfile writes a CPU profile to path until the returned func is
// called (nothing for an empty path): the one way every bench mode and
// command profiles.
func StartCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// heapProfile writes a heap profile to dir/name (nothing without dir).
func heapProfile(dir, name string) error {
	if dir == "" {
		return nil
	}
	return WriteHeapProfile(filepath.Join(dir, name))
}

// WriteHeapProfile collects garbage and writes a heap profile of what is
// live to path.
func WriteHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	return f.Close()
}
