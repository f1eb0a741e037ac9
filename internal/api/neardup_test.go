package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/extract"
)

// nearPair is a row of the near-duplicate table shared by every write
// path's test (internal/core/testdata/near_duplicates.json).
type nearPair struct {
	Name           string   `json:"name"`
	First          string   `json:"first"`
	Second         string   `json:"second"`
	FirstEntities  []string `json:"first_entities"`
	SecondEntities []string `json:"second_entities"`
	Want           string   `json:"want"` // duplicate, conflict or new
}

func nearPairs(t *testing.T) []nearPair {
	t.Helper()
	b, err := os.ReadFile("../core/testdata/near_duplicates.json")
	if err != nil {
		t.Fatal(err)
	}
	var ps []nearPair
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

func checkNearWrite(t *testing.T, p nearPair, first writeResult, second writeResult) {
	t.Helper()
	switch p.Want {
	case "duplicate":
		if second.Decision != "duplicate" || second.Record.ID != first.Record.ID {
			t.Errorf("%s: want a duplicate, got %s/%s", p.Name, second.Decision, second.Reason)
		}
	case "conflict":
		if second.Decision != "accepted" || second.Reason != "conflict" || second.Record.Supersedes == nil || *second.Record.Supersedes != first.Record.ID {
			t.Errorf("%s: want a conflict superseding the first, got %s/%s", p.Name, second.Decision, second.Reason)
		}
	case "new":
		if second.Decision != "accepted" || second.Record.ID == first.Record.ID || second.Record.Supersedes != nil {
			t.Errorf("%s: want a new record, got %s/%s", p.Name, second.Decision, second.Reason)
		}
	}
}

func TestNearDuplicateTableREST(t *testing.T) {
	h := newHarness(t, nil)
	for i, p := range nearPairs(t) {
		scope := map[string]any{"user_id": fmt.Sprintf("u%d", i)}
		first := h.write("std", map[string]any{"type": "belief", "content": p.First, "entities": p.FirstEntities, "scope": scope}, 201)
		var second writeResult
		code, _, raw := h.do("POST", "/v1/records", "std", map[string]any{"type": "belief", "content": p.Second, "entities": p.SecondEntities, "scope": scope})
		if err := json.Unmarshal(raw, &second); err != nil || (code != http.StatusOK && code != http.StatusCreated) {
			t.Fatalf("%s: status %d: %s", p.Name, code, raw)
		}
		checkNearWrite(t, p, first, second)
	}
}

func TestNearDuplicateTableMCP(t *testing.T) {
	h := newHarness(t, nil)
	cs, err := h.mcpClient("std")
	if err != nil {
		t.Fatal(err)
	}
	write := func(content string, entities []string, user string) writeResult {
		t.Helper()
		args := map[string]any{"type": "belief", "content": content, "scope": map[string]any{"user_id": user}}
		if len(entities) > 0 {
			args["entities"] = entities
		}
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "memory_write", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("memory_write: %v %+v", err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var w writeResult
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	for i, p := range nearPairs(t) {
		user := fmt.Sprintf("u%d", i)
		first := write(p.First, p.FirstEntities, user)
		checkNearWrite(t, p, first, write(p.Second, p.SecondEntities, user))
	}
}

// TestNearDuplicateTableGateway sends each sentence as a user's turn to
// the Memory Gateway, whose model states it as a fact verbatim. Then
// either the reconciliation model is down, so the deterministic rules and
// the gate decide, or it calls every fact a repeat of the first similar
// one. A pair that differs in meaning is never a no-op.
func TestNearDuplicateTableGateway(t *testing.T) {
	t.Run("rules", func(t *testing.T) { nearDuplicateTableGateway(t, false) })
	t.Run("model says no-op", func(t *testing.T) { nearDuplicateTableGateway(t, true) })
}

func nearDuplicateTableGateway(t *testing.T, modelNoop bool) {
	pairs := nearPairs(t)
	entities := map[string][]string{}
	for _, p := range pairs {
		entities[p.First], entities[p.Second] = p.FirstEntities, p.SecondEntities
	}
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages       []struct{ Content string } `json:"messages"`
			ResponseFormat struct {
				JSONSchema struct{ Name string } `json:"json_schema"`
			} `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 ||
			(req.ResponseFormat.JSONSchema.Name == "reconciliation" && !modelNoop) {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		user := req.Messages[len(req.Messages)-1].Content
		var answer any
		if req.ResponseFormat.JSONSchema.Name == "reconciliation" {
			var in struct {
				Existing []struct{ ID string }
			}
			_ = json.Unmarshal([]byte(user), &in)
			answer = map[string]any{"action": "ADD", "target_id": nil, "reason": "new"}
			if len(in.Existing) > 0 {
				answer = map[string]any{"action": "NOOP", "target_id": in.Existing[0].ID, "reason": "repeat"}
			}
		} else {
			var said string
			for s := range entities {
				if strings.Contains(user, s) && len(s) > len(said) {
					said = s
				}
			}
			fs := []map[string]any{}
			if said != "" {
				fs = append(fs, map[string]any{"type": "belief", "content": said, "entities": entities[said], "event_time": nil})
			}
			answer = map[string]any{"facts": fs}
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{
			{"message": map[string]any{"role": "assistant", "content": string(content)}}}})
	}))
	t.Cleanup(model.Close)
	llm, err := extract.NewLLM(extract.LLMConfig{BaseURL: model.URL + "/v1", Model: "test-model", APIKey: "k", MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessOpts(t, harnessOptions{jobs: true, extraction: core.ExtractionOptions{LLM: llm}})
	ts := time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC).UnixMilli()
	for i, p := range pairs {
		user := fmt.Sprintf("u%d", i)
		id := gatewayUser(h, user)
		var sums []core.FlushSummary
		for k, text := range []string{p.First, p.Second} {
			session := fmt.Sprintf("chat:%d", k)
			ts += 1000
			h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": session, "messages": []map[string]any{
				{"sender_id": user, "role": "user", "timestamp": ts, "content": text}}}), http.StatusOK, nil)
			j := flushAndWait(t, h, id(map[string]any{"session_id": session}))
			var sum core.FlushSummary
			if err := json.Unmarshal(j.Result, &sum); err != nil || j.Status != "done" {
				t.Fatalf("%s: job %+v", p.Name, j)
			}
			sums = append(sums, sum)
		}
		live := factTexts(facts(t, h, user))
		if p.Want == "duplicate" {
			if !slices.Equal(live, []string{p.First}) {
				t.Errorf("%s: live facts %q, want the first only", p.Name, live)
			}
			continue
		}
		// Never merged: the second fact is not a no-op, and it is live
		// unless the rules read it as "the first is no longer true" and
		// invalidated the first instead. Whether the first stays depends
		// on the conflict rule (the model's facts carry their entities).
		if sums[1].Noop != 0 {
			t.Errorf("%s: the second fact was a no-op: %+v", p.Name, sums[1])
		}
		if !slices.Contains(live, p.Second) && sums[1].Invalidated != 1 {
			t.Errorf("%s: live facts %q lack the second (%+v)", p.Name, live, sums[1])
		}
		if p.Want == "new" && !slices.Contains(live, p.First) {
			t.Errorf("%s: live facts %q lack the first", p.Name, live)
		}
	}
}
