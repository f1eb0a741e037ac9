package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var baseTS = time.Date(2026, 11, 21, 5, 0, 0, 123456789, time.UTC)

func TestFormatTS(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{baseTS, "2026-11-21T05:00:00.123456Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000000Z"},
		{time.Date(2026, 1, 2, 8, 4, 5, 1000, time.FixedZone("X", 5*3600)), "2026-01-02T03:04:05.000001Z"},
	}
	for _, tc := range tests {
		if got := FormatTS(tc.in); got != tc.want {
			t.Errorf("FormatTS(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestHashOfKnownAnswer pins the hashed byte layout independently of the
// canonicalizer, so a change to either shows up as a chain-format change.
func TestHashOfKnownAnswer(t *testing.T) {
	e := Entry{
		ID:        "0193a1b2-0000-7000-8000-000000000001",
		Seq:       1,
		TS:        baseTS,
		ActorKind: ActorAgent,
		ActorID:   "agent<1>",
		Event:     "memory.write",
		Payload:   json.RawMessage(` {"sha256":"ab", "count": 2.0, "decision":"accept"} `),
		PrevHash:  GenesisHash,
		Hash:      "ignored",
	}
	body := `{"actor_id":"agent<1>","actor_kind":"agent","event":"memory.write",` +
		`"id":"0193a1b2-0000-7000-8000-000000000001",` +
		`"payload":{"count":2,"decision":"accept","sha256":"ab"},` +
		`"prev_hash":"` + GenesisHash + `","seq":1,"ts":"2026-11-21T05:00:00.123456Z"}`
	sum := sha256.Sum256([]byte(GenesisHash + body))
	want := hex.EncodeToString(sum[:])
	got, err := HashOf(e)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("HashOf = %s, want %s", got, want)
	}
}

func TestHashOfEmptyPayload(t *testing.T) {
	e := Entry{ID: "x", Seq: 1, TS: baseTS, PrevHash: GenesisHash}
	want, err := HashOf(Entry{ID: "x", Seq: 1, TS: baseTS, PrevHash: GenesisHash, Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []json.RawMessage{nil, {}, json.RawMessage("null"), json.RawMessage(" { } ")} {
		e.Payload = p
		got, err := HashOf(e)
		if err != nil {
			t.Fatalf("payload %q: %v", p, err)
		}
		if got != want {
			t.Errorf("payload %q hashes to %s, want %s", p, got, want)
		}
	}
	for _, p := range []string{`[]`, `"s"`, `1`, `{"a":1,"a":1}`, `{`} {
		e.Payload = json.RawMessage(p)
		if _, err := HashOf(e); err == nil {
			t.Errorf("payload %s accepted", p)
		}
	}
	e.Payload = nil
	e.ActorID = "bad\xff"
	if _, err := HashOf(e); err == nil {
		t.Error("invalid UTF-8 actor_id accepted")
	}
}

func TestSeal(t *testing.T) {
	in := Entry{
		ID:        "e1",
		TS:        time.Date(2026, 11, 21, 7, 0, 0, 123456789, time.FixedZone("X", 2*3600)),
		ActorKind: ActorUser,
		ActorID:   "u1",
		Event:     "approval.decide",
		Payload:   json.RawMessage(`{ "b": 1, "a": "<x>" }`),
		Hash:      "stale",
	}
	e, err := Seal(in, 1, GenesisHash)
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 1 || e.PrevHash != GenesisHash {
		t.Errorf("chain fields = %d %s", e.Seq, e.PrevHash)
	}
	if !e.TS.Equal(time.Date(2026, 11, 21, 5, 0, 0, 123456000, time.UTC)) || e.TS.Location() != time.UTC {
		t.Errorf("TS = %v, want UTC truncated to microseconds", e.TS)
	}
	if string(e.Payload) != `{"a":"<x>","b":1}` {
		t.Errorf("Payload = %s", e.Payload)
	}
	if h, _ := HashOf(e); h != e.Hash || len(h) != 64 {
		t.Errorf("Hash = %s, HashOf = %s", e.Hash, h)
	}
	// Sealing must survive a JSON round trip, as a store would do.
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Entry
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	var v Verifier
	if err := v.Next(back); err != nil {
		t.Errorf("round-tripped entry fails: %v", err)
	}

	bad := []struct {
		name string
		e    Entry
		seq  int64
		prev string
	}{
		{"seq 0", in, 0, GenesisHash},
		{"short prev", in, 2, "abc"},
		{"uppercase prev", in, 2, strings.ToUpper(e.Hash)},
		{"seq 1 not genesis", in, 1, e.Hash},
		{"zero ts", Entry{ID: "z"}, 1, GenesisHash},
		{"array payload", Entry{ID: "z", TS: baseTS, Payload: json.RawMessage(`[1]`)}, 1, GenesisHash},
		{"invalid UTF-8 event", Entry{ID: "z", TS: baseTS, Event: "bad\xff"}, 1, GenesisHash},
	}
	for _, tc := range bad {
		if _, err := Seal(tc.e, tc.seq, tc.prev); err == nil {
			t.Errorf("%s: Seal succeeded", tc.name)
		}
	}
}

func buildChain(t *testing.T, n int) []Entry {
	t.Helper()
	chain := make([]Entry, 0, n)
	prev := GenesisHash
	for i := 1; i <= n; i++ {
		e, err := Seal(Entry{
			ID:        fmt.Sprintf("0193%04d", i),
			TS:        baseTS.Add(time.Duration(i) * time.Second),
			ActorKind: ActorAgent,
			ActorID:   "agent-1",
			Event:     "memory.write",
			Payload:   json.RawMessage(fmt.Sprintf(`{"memory_id":"m%d","count":%d}`, i, i)),
		}, int64(i), prev)
		if err != nil {
			t.Fatal(err)
		}
		chain = append(chain, e)
		prev = e.Hash
	}
	return chain
}

func TestVerifierGoodChain(t *testing.T) {
	chain := buildChain(t, 5)
	var v Verifier
	if v.Head() != GenesisHash || v.Count() != 0 {
		t.Fatalf("zero Verifier: head %s count %d", v.Head(), v.Count())
	}
	for _, e := range chain {
		if err := v.Next(e); err != nil {
			t.Fatalf("seq %d: %v", e.Seq, err)
		}
	}
	if v.Count() != 5 || v.Head() != chain[4].Hash || v.Err() != nil {
		t.Errorf("count %d head %s err %v", v.Count(), v.Head(), v.Err())
	}
}

func TestVerifierDetectsTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(chain []Entry) []Entry
		reason string
	}{
		{"payload", func(c []Entry) []Entry { c[2].Payload = json.RawMessage(`{"memory_id":"m3","count":4}`); return c }, "hash mismatch"},
		{"ts", func(c []Entry) []Entry { c[2].TS = c[2].TS.Add(time.Microsecond); return c }, "hash mismatch"},
		{"actor_id", func(c []Entry) []Entry { c[2].ActorID = "agent-2"; return c }, "hash mismatch"},
		{"actor_kind", func(c []Entry) []Entry { c[2].ActorKind = ActorOperator; return c }, "hash mismatch"},
		{"event", func(c []Entry) []Entry { c[2].Event = "memory.delete"; return c }, "hash mismatch"},
		{"id", func(c []Entry) []Entry { c[2].ID = "forged"; return c }, "hash mismatch"},
		{"hash", func(c []Entry) []Entry { c[2].Hash = c[3].Hash; return c }, "hash mismatch"},
		{"prev_hash", func(c []Entry) []Entry { c[2].PrevHash = c[0].Hash; return c }, "prev_hash mismatch"},
		{"seq", func(c []Entry) []Entry { c[2].Seq = 4; return c }, "seq mismatch"},
		{"bad payload", func(c []Entry) []Entry { c[2].Payload = json.RawMessage(`{"a":1,"a":2}`); return c }, "unhashable"},
		{"deleted", func(c []Entry) []Entry { return append(c[:2], c[3:]...) }, "seq mismatch"},
		{"swapped", func(c []Entry) []Entry { c[2], c[3] = c[3], c[2]; return c }, "seq mismatch"},
		{
			// Rewriting an entry and resealing it still breaks the link
			// to the next entry.
			"resealed", func(c []Entry) []Entry {
				e := c[2]
				e.Payload = json.RawMessage(`{"memory_id":"forged"}`)
				e, _ = Seal(e, 3, c[1].Hash)
				c[2] = e
				return c
			}, "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chain := tc.tamper(buildChain(t, 5))
			wantSeq := int64(3)
			if tc.name == "resealed" {
				wantSeq = 4
			}
			var v Verifier
			var err error
			for _, e := range chain {
				if err = v.Next(e); err != nil {
					break
				}
			}
			var be *BrokenError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want *BrokenError", err)
			}
			if be.Seq != wantSeq || be.ID != chain[wantSeq-1].ID {
				t.Errorf("broken at seq %d id %s, want seq %d id %s", be.Seq, be.ID, wantSeq, chain[wantSeq-1].ID)
			}
			if !strings.Contains(be.Reason, tc.reason) {
				t.Errorf("reason %q, want %q", be.Reason, tc.reason)
			}
			if want := fmt.Sprintf("audit chain broken at seq %d (id %s): ", wantSeq, chain[wantSeq-1].ID); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q, want prefix %q", err, want)
			}
			if v.Count() != wantSeq-1 || v.Head() != chain[wantSeq-2].Hash {
				t.Errorf("count %d head %s after break", v.Count(), v.Head())
			}
			// A break is sticky, even for an entry that would otherwise pass.
			if err2 := v.Next(chain[len(chain)-1]); err2 != err {
				t.Errorf("after break Next = %v, want %v", err2, err)
			}
			if v.Err() != err {
				t.Errorf("Err() = %v", v.Err())
			}
		})
	}
}

func TestVerifierDetectsTruncatedHead(t *testing.T) {
	chain := buildChain(t, 3)
	var v Verifier
	err := v.Next(chain[1])
	var be *BrokenError
	if !errors.As(err, &be) || be.Seq != 1 {
		t.Fatalf("err = %v, want break at seq 1", err)
	}
}

func TestCanonicalBodyMatchesGenericCanonicalization(t *testing.T) {
	for _, e := range []Entry{
		{ID: "id-1", Seq: 1, TS: time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC), ActorKind: "agent", ActorID: "a\u2028<b>&\"q\"", Event: "record.write", PrevHash: GenesisHash},
		{ID: "ü", Seq: 1 << 40, TS: time.Unix(0, 0), ActorKind: "system", ActorID: "\x01\x1f", Event: "e", PrevHash: GenesisHash},
	} {
		payload := []byte(`{"b":[1,2.5,"x"],"a":{"z":null,"y":true}}`)
		cp, err := canonicalPayload(payload)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Canonical(hashedEntry{ID: e.ID, Seq: e.Seq, TS: FormatTS(e.TS), ActorKind: e.ActorKind, ActorID: e.ActorID,
			Event: e.Event, Payload: cp, PrevHash: e.PrevHash})
		if err != nil {
			t.Fatal(err)
		}
		if got := canonicalBody(e, cp); string(got) != string(want) {
			t.Fatalf("canonicalBody:\n got %s\nwant %s", got, want)
		}
	}
}
