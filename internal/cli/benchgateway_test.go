package cli_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTinyLongMemEval writes a LongMemEval file of a few short
// conversations for the gateway bench.
func writeTinyLongMemEval(t *testing.T) string {
	t.Helper()
	return writeLongMemEval(t, 4,
		func(q, s, k int) string {
			return fmt.Sprintf("I moved to harbour town %d in spring and I prefer tea number %d.", q*100+s*10+k, q+s+k)
		},
		func(q int) string { return "Where did I move?" })
}

// writeLongMemEval writes a LongMemEval file of three questions, each
// over sessions haystack sessions of six turns (user and assistant in
// turn) whose texts content gives; the second session is the evidence.
func writeLongMemEval(t *testing.T, sessions int, content func(q, s, k int) string, question func(q int) string) string {
	t.Helper()
	dates := []string{"2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00", "2023/05/22 (Mon) 11:00", "2023/05/23 (Tue) 11:00"}
	var insts []map[string]any
	for q := range 3 {
		var hay [][]map[string]string
		var ids []string
		for s := range sessions {
			var turns []map[string]string
			for k := range 6 {
				role := map[int]string{0: "user", 1: "assistant"}[k%2]
				turns = append(turns, map[string]string{"role": role, "content": content(q, s, k)})
			}
			hay, ids = append(hay, turns), append(ids, fmt.Sprintf("q%d-s%d", q, s))
		}
		insts = append(insts, map[string]any{"question_id": fmt.Sprint("q", q), "question_type": "single-session-user",
			"question": question(q), "answer": "x", "question_date": "2023/06/01 (Thu) 10:00",
			"haystack_session_ids": ids, "haystack_dates": dates[:sessions],
			"haystack_sessions": hay, "answer_session_ids": ids[1:2]})
	}
	raw, err := json.Marshal(insts)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "lme.json")
	if err := os.WriteFile(data, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return data
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// `bench gateway --data-dir D` prefills a store kept in D and runs the
// timed turns on a copy; `--reuse` runs them again on a fresh copy of the
// same store, which stays as it was.
func TestBenchGatewayKeepsAndReusesStore(t *testing.T) {
	data := writeTinyLongMemEval(t)
	kept := filepath.Join(t.TempDir(), "kept")
	unused := filepath.Join(t.TempDir(), "unused")
	type out struct {
		Overall map[string]float64 `json:"overall"`
	}
	build := run(t, unused, nil, "bench", "gateway", "--data", data, "--turns", "5", "--turns-per-flush", "5", "--prefill", "40",
		"--data-dir", kept, "--embedder", "none", "--json-only")
	var first out
	mustJSON(t, build, &first)
	if first.Overall["prefill_turns"] != 40 || first.Overall["ingest_turns_per_s"] <= 0 {
		t.Fatalf("build run: %v", first.Overall)
	}
	for _, f := range []string{"memgate.db", "index.snapshot", "bench-gateway.json"} {
		if _, err := os.Stat(filepath.Join(kept, f)); err != nil {
			t.Fatalf("the kept store lacks %s: %v", f, err)
		}
	}
	db := fileHash(t, filepath.Join(kept, "memgate.db"))
	for range 2 {
		r := run(t, unused, nil, "bench", "gateway", "--data", data, "--turns", "5", "--data-dir", kept, "--reuse",
			"--embedder", "none", "--json-only")
		var again out
		mustJSON(t, r, &again)
		if again.Overall["prefill_turns"] != 40 || again.Overall["ingest_turns_per_s"] <= 0 {
			t.Fatalf("reuse run: %v", again.Overall)
		}
		if fileHash(t, filepath.Join(kept, "memgate.db")) != db {
			t.Fatal("a --reuse run changed the kept store")
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--reuse"}, "--reuse needs --data-dir"},
		{[]string{"--data-dir", kept}, "already holds a database"},
		{[]string{"--data-dir", kept, "--reuse", "--turns", "6"}, "at most --turns 5"},
		{[]string{"--data-dir", kept, "--reuse", "--prefill", "10"}, "not --prefill 10"},
		{[]string{"--data-dir", unused, "--reuse"}, "holds no store"},
	} {
		args := append([]string{"bench", "gateway", "--data", data, "--embedder", "none", "--json-only"}, c.args...)
		if r := run(t, unused, nil, args...); r.code == 0 || !strings.Contains(r.stderr+r.stdout, c.want) {
			t.Errorf("%v: exit %d, %q; want an error naming %q", c.args, r.code, r.stderr+r.stdout, c.want)
		}
	}
}
