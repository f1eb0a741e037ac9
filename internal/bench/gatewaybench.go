package bench

// The gateway benchmark (`memgate bench gateway`): what a chat runtime
// feels. It times POST /memories/add (one finished turn: the user's
// prompt and the answer) and POST /memories/flush over loopback HTTP with
// the job workers stopped, so the figures are the requests' own; then it
// starts the workers and times the extraction of everything queued.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/core"
)

// GatewayBenchOptions configure RunGatewayBench.
type GatewayBenchOptions struct {
	// Turns is how many finished turns (adds of two messages) to send
	// (default 2000); a flush follows every TurnsPerSession of them
	// (default 10).
	Turns           int
	TurnsPerSession int
	// Offset numbers the turns' sessions and timestamps from Offset
	// instead of 0, and TextOffset their texts, so a run after another (a
	// prefill) sends new sessions; a prefill takes texts after the timed
	// run's, which then sends the same texts whatever the prefill.
	Offset, TextOffset int
	// Start starts the job workers; RunGatewayBench calls it once the
	// timed requests are done. It returns when the workers have stopped.
	Start func(ctx context.Context)
	// Progress, when set, receives a progress bar.
	Progress io.Writer
}

// GatewayBenchResult is what RunGatewayBench measured.
type GatewayBenchResult struct {
	Turns, Sessions, Messages int
	Add, Flush                Percentiles
	// Extraction is the time from starting the workers until every
	// flush job had ended; Facts the facts it stored.
	Extraction time.Duration
	// Send is the time from the first add to the last flush's answer.
	Send  time.Duration
	Facts int
	Dead  int
	// Prefill is how many turns were stored before the timed ones.
	Prefill int
}

// TurnsPerSecond is the extraction throughput in conversation messages.
func (r *GatewayBenchResult) TurnsPerSecond() float64 {
	if r.Extraction <= 0 {
		return 0
	}
	return float64(r.Messages) / r.Extraction.Seconds()
}

// IngestTurnsPerSecond is the end-to-end rate: turns sent, flushed and
// extracted per second of the send and the extraction together.
func (r *GatewayBenchResult) IngestTurnsPerSecond() float64 {
	if d := r.Send + r.Extraction; d > 0 {
		return float64(r.Turns) / d.Seconds()
	}
	return 0
}

// RunGatewayBench sends o.Turns turns of ds's conversations through g.
func RunGatewayBench(ctx context.Context, ds *Dataset, g *Gateway, o GatewayBenchOptions) (*GatewayBenchResult, error) {
	if o.Turns <= 0 {
		o.Turns = 2000
	}
	if o.TurnsPerSession <= 0 {
		o.TurnsPerSession = 10
	}
	var texts []string
	for _, c := range ds.Convs {
		for _, t := range c.Turns {
			if s := strings.TrimSpace(t.Text); s != "" && len(s) <= maxTurnBytes {
				texts = append(texts, s)
			}
		}
	}
	if len(texts) < 2 {
		return nil, errors.New("bench: the benchmark file has too few turns")
	}
	res := &GatewayBenchResult{}
	var adds, flushes []time.Duration
	bar := startProgress(o.Progress, false, "gateway turns", o.Turns)
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + 1000*int64(o.Offset)
	var jobs []string
	session := ""
	sendStart := time.Now()
	for k := range o.Turns {
		i := o.Offset + k
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if i%o.TurnsPerSession == 0 {
			session = "chat:bench-" + strconv.Itoa(i/o.TurnsPerSession)
			res.Sessions++
		}
		// Turn i: a user prompt and an answer, two consecutive texts of
		// the corpus, varied by the turn number so none repeats.
		x := o.TextOffset + k
		u, a := texts[(2*x)%len(texts)], texts[(2*x+1)%len(texts)]
		if x >= len(texts)/2 {
			u += " (" + strconv.Itoa(x) + ")"
		}
		msgs := []core.GatewayMessage{
			{SenderID: g.UserID, Role: "user", Timestamp: ts, Content: u},
			{SenderID: "assistant", Role: "assistant", Timestamp: ts + 1, Content: a},
		}
		ts += 1000
		start := time.Now()
		ar, err := g.Add(ctx, "default", "bench", session, msgs)
		adds = append(adds, time.Since(start))
		if err != nil {
			return nil, err
		}
		if ar.Added != 2 {
			return nil, fmt.Errorf("bench: add stored %d of 2 messages", ar.Added)
		}
		res.Turns++
		res.Messages += 2
		if (i+1)%o.TurnsPerSession == 0 || k == o.Turns-1 {
			start = time.Now()
			fr, err := g.Flush(ctx, "default", "bench", session)
			flushes = append(flushes, time.Since(start))
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, fr.JobID)
		}
		bar.add(1)
	}
	bar.finish()
	res.Send = time.Since(sendStart)
	res.Add, res.Flush = summarise(adds), summarise(flushes)

	if err := waitExtraction(ctx, g, o, jobs, res); err != nil {
		return nil, err
	}
	return res, nil
}

// waitExtraction runs the extraction jobs (o.Start, stopped on return)
// until every job of jobs has finished, counting the facts they stored
// and the jobs that died into res, and the time they took.
func waitExtraction(ctx context.Context, g *Gateway, o GatewayBenchOptions, jobs []string, res *GatewayBenchResult) error {
	start := time.Now()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Start(wctx)
	}()
	defer func() {
		stop()
		<-done
	}()
	ebar := startProgress(o.Progress, false, "extraction jobs", len(jobs))
	defer ebar.finish()
	for _, id := range jobs {
		j, err := g.Wait(ctx, id)
		if err != nil {
			return err
		}
		ebar.add(1)
		if j.Status != "done" {
			res.Dead++
			continue
		}
		var sum core.FlushSummary
		if err := json.Unmarshal(j.Result, &sum); err == nil {
			res.Facts += sum.Added + sum.Updated
		}
	}
	res.Extraction = time.Since(start)
	return nil
}

// GatewayBenchJSON is the last line of `memgate bench gateway`.
type GatewayBenchJSON struct {
	Bench   string             `json:"bench"`
	Machine Machine            `json:"machine"`
	WallS   float64            `json:"wall_s"`
	Overall map[string]float64 `json:"overall"`
}

// RenderGatewayBench prints the table and, last, one JSON line.
func RenderGatewayBench(w io.Writer, r *GatewayBenchResult, wall time.Duration, jsonOnly bool) error {
	ms := func(d time.Duration) float64 { return round4(float64(d) / float64(time.Millisecond)) }
	if !jsonOnly {
		fmt.Fprintf(w, "memgate bench gateway: %d turns (%d messages) in %d sessions\n\n", r.Turns, r.Messages, r.Sessions)
		fmt.Fprintf(w, "%-34s %9s %9s %9s %9s\n", "request (loopback HTTP)", "p50 ms", "p95 ms", "p99 ms", "n")
		fmt.Fprintf(w, "%-34s %9.2f %9.2f %9.2f %9d\n", "POST /memories/add (2 messages)", ms(r.Add.P50), ms(r.Add.P95), ms(r.Add.P99), r.Add.N)
		fmt.Fprintf(w, "%-34s %9.2f %9.2f %9.2f %9d\n", "POST /memories/flush (ack)", ms(r.Flush.P50), ms(r.Flush.P95), ms(r.Flush.P99), r.Flush.N)
		fmt.Fprintf(w, "\nextraction: %d messages in %.2f s = %.0f turns/s; %d facts stored; %d jobs dead\n",
			r.Messages, r.Extraction.Seconds(), r.TurnsPerSecond(), r.Facts, r.Dead)
		fmt.Fprintf(w, "end to end: %d turns sent in %.2f s and extracted in %.2f s = %.0f turns/s\n\n",
			r.Turns, r.Send.Seconds(), r.Extraction.Seconds(), r.IngestTurnsPerSecond())
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(GatewayBenchJSON{Bench: "gateway", Machine: ThisMachine(), WallS: round4(wall.Seconds()), Overall: map[string]float64{
		"add_p50_ms": ms(r.Add.P50), "add_p95_ms": ms(r.Add.P95), "add_p99_ms": ms(r.Add.P99),
		"flush_p50_ms": ms(r.Flush.P50), "flush_p95_ms": ms(r.Flush.P95), "flush_p99_ms": ms(r.Flush.P99),
		"extract_turns_per_s": round4(r.TurnsPerSecond()), "facts": float64(r.Facts), "prefill_turns": float64(r.Prefill),
		"send_s": round4(r.Send.Seconds()), "ingest_turns_per_s": round4(r.IngestTurnsPerSecond()),
	}})
}
