// Package bench runs memgate's retrieval benchmarks (LoCoMo, LongMemEval):
// it ingests each conversation or haystack through the service's real
// write path into an isolated scope, asks every question through the real
// search path and scores turn-level recall.
//
// The package is pure logic over a Service (satisfied by *core.Service);
// the CLI opens the data directory, wires the service and prints.
package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Benchmark names.
const (
	LoCoMo      = "locomo"
	LongMemEval = "longmemeval"
)

// Dataset is a benchmark file in a common shape: conversations (LoCoMo
// samples or LongMemEval haystacks), each with its turns and questions.
type Dataset struct {
	Bench string
	Convs []Conv
	// Groups lists question groups (LoCoMo categories, LongMemEval
	// question types) in display order.
	Groups []string
}

// Conv is one isolated conversation: its turns are written into the scope
// project_id = ID and searched there.
type Conv struct {
	ID        string
	Turns     []Turn
	Questions []Question
	// BadDates counts session dates that could not be parsed (their turns
	// are written without valid_from).
	BadDates int
	// Ignored counts turns left out: sessions repeated in a haystack.
	Ignored int
}

// Turn is one utterance to ingest.
type Turn struct {
	// ID is the turn id evidence refers to: a LoCoMo dia_id ("D3:12") or
	// "<session_id>#<index>" for LongMemEval.
	ID string
	// Session is the scope session_id ("<conv>:<session>").
	Session string
	// Content is the episode text: "<speaker>: <text>".
	Content string
	// Speaker, Role and Text are the turn as a chat runtime sends it
	// through the Memory Gateway.
	Speaker   string
	Role      string
	Text      string
	ValidFrom *time.Time
	Metadata  json.RawMessage
}

// Question is one benchmark question.
type Question struct {
	ID    string
	Text  string
	Group string
	// Headline questions count towards the overall figures (LoCoMo
	// categories 1-4, LongMemEval non-abstention questions).
	Headline bool
	// Evidence holds the valid evidence turn ids, normalised and
	// deduplicated; empty means the question is skipped.
	Evidence    []string
	RawEvidence []string
	Answer      json.RawMessage
	// Date is when the question is asked (LongMemEval question_date);
	// nil when the file gives none.
	Date *time.Time
	// EvidenceSessions are the sessions holding evidence (LongMemEval
	// answer_session_ids that exist in the haystack, else the sessions of
	// the evidence turns), as TurnSession names them.
	EvidenceSessions []string
}

// TurnSession names the session a turn id belongs to: "D3" for the
// LoCoMo dia_id "D3:12", the haystack session id for the LongMemEval
// "<session_id>#<index>".
func TurnSession(turnID string) string {
	if i := strings.LastIndexByte(turnID, '#'); i >= 0 {
		return turnID[:i]
	}
	if i := strings.IndexByte(turnID, ':'); i >= 0 {
		return turnID[:i]
	}
	return turnID
}

// evidenceSessions lists the sessions of the evidence turns, in order.
func evidenceSessions(ev []string) []string {
	var out []string
	for _, e := range ev {
		if s := TurnSession(e); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// LoCoMo categories.
var locomoCategories = map[int]string{1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}

// LoCoMoCategory names a LoCoMo question category.
func LoCoMoCategory(c int) string {
	if n, ok := locomoCategories[c]; ok {
		return n
	}
	return "category_" + strconv.Itoa(c)
}

var diaRe = regexp.MustCompile(`D:?(\d+):(\d+)`)

// NormaliseEvidence extracts dia_ids from a possibly malformed evidence
// string ("D8:6; D9:17", "D:11:26", "D30:05") in canonical form "D<n>:<m>".
func NormaliseEvidence(s string) []string {
	var out []string
	for _, m := range diaRe.FindAllStringSubmatch(s, -1) {
		a, err1 := strconv.Atoi(m[1])
		b, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, fmt.Sprintf("D%d:%d", a, b))
	}
	return out
}

type locomoSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []struct {
		Question          string          `json:"question"`
		Answer            json.RawMessage `json:"answer"`
		AdversarialAnswer json.RawMessage `json:"adversarial_answer"`
		Evidence          json.RawMessage `json:"evidence"`
		Category          json.Number     `json:"category"`
	} `json:"qa"`
}

type locomoTurn struct {
	Speaker     string `json:"speaker"`
	DiaID       string `json:"dia_id"`
	Text        string `json:"text"`
	BlipCaption string `json:"blip_caption"`
}

var sessionKey = regexp.MustCompile(`^session_(\d+)$`)

// stringList decodes a JSON string or list of strings (others ignored).
func stringList(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var list []any
	if err := json.Unmarshal(raw, &list); err != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []string{s}
		}
		return nil
	}
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// LoadLoCoMo reads a LoCoMo file: a JSON list of samples.
func LoadLoCoMo(r io.Reader) (*Dataset, error) {
	var samples []locomoSample
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(&samples); err != nil {
		return nil, fmt.Errorf("bench: LoCoMo file: %w", err)
	}
	ds := &Dataset{Bench: LoCoMo}
	groups := map[int]bool{}
	seenConv := map[string]bool{}
	for si, s := range samples {
		id := s.SampleID
		if id == "" {
			id = fmt.Sprintf("sample-%d", si+1)
		}
		if seenConv[id] {
			return nil, fmt.Errorf("bench: LoCoMo sample_id %q appears twice", id)
		}
		seenConv[id] = true
		c := Conv{ID: id}
		var sessions []int
		for k := range s.Conversation {
			if m := sessionKey.FindStringSubmatch(k); m != nil {
				n, err := strconv.Atoi(m[1])
				if err == nil {
					sessions = append(sessions, n)
				}
			}
		}
		sort.Ints(sessions)
		exists := map[string]bool{}
		for _, n := range sessions {
			var turns []locomoTurn
			if err := json.Unmarshal(s.Conversation[fmt.Sprintf("session_%d", n)], &turns); err != nil || len(turns) == 0 {
				continue // a date without turns, or not a list
			}
			var when *time.Time
			var ds string
			_ = json.Unmarshal(s.Conversation[fmt.Sprintf("session_%d_date_time", n)], &ds)
			if t, err := ParseLoCoMoTime(ds); err == nil {
				when = &t
			} else {
				c.BadDates++
			}
			for _, t := range turns {
				tid := t.DiaID
				if ids := NormaliseEvidence(t.DiaID); len(ids) == 1 {
					tid = ids[0]
				}
				text := t.Text
				if t.BlipCaption != "" {
					text += " [shares " + t.BlipCaption + "]"
				}
				content := t.Speaker + ": " + text
				meta, _ := json.Marshal(map[string]any{"dia_id": t.DiaID, "speaker": t.Speaker, "session": n})
				c.Turns = append(c.Turns, Turn{ID: tid, Session: fmt.Sprintf("%s:%d", id, n), Content: content,
					Speaker: t.Speaker, Role: "user", Text: text, ValidFrom: when, Metadata: meta})
				exists[tid] = true
			}
		}
		for qi, q := range s.QA {
			cat64, _ := q.Category.Int64()
			cat := int(cat64)
			groups[cat] = true
			raw := stringList(q.Evidence)
			var ev []string
			for _, e := range raw {
				for _, id := range NormaliseEvidence(e) {
					if exists[id] && !slices.Contains(ev, id) {
						ev = append(ev, id)
					}
				}
			}
			ans := q.Answer
			if len(ans) == 0 {
				ans = q.AdversarialAnswer
			}
			c.Questions = append(c.Questions, Question{
				ID: fmt.Sprintf("%s#q%d", id, qi+1), Text: q.Question, Group: LoCoMoCategory(cat),
				Headline: cat >= 1 && cat <= 4, Evidence: ev, RawEvidence: raw, Answer: ans,
				EvidenceSessions: evidenceSessions(ev),
			})
		}
		ds.Convs = append(ds.Convs, c)
	}
	cats := make([]int, 0, len(groups))
	for c := range groups {
		cats = append(cats, c)
	}
	sort.Ints(cats)
	for _, c := range cats {
		ds.Groups = append(ds.Groups, LoCoMoCategory(c))
	}
	return ds, nil
}

type lmeInstance struct {
	QuestionID         string          `json:"question_id"`
	QuestionType       string          `json:"question_type"`
	Question           string          `json:"question"`
	QuestionDate       string          `json:"question_date"`
	Answer             json.RawMessage `json:"answer"`
	HaystackSessionIDs []string        `json:"haystack_session_ids"`
	HaystackDates      []string        `json:"haystack_dates"`
	HaystackSessions   [][]lmeTurn     `json:"haystack_sessions"`
	AnswerSessionIDs   []string        `json:"answer_session_ids"`
}

type lmeTurn struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	HasAnswer bool   `json:"has_answer"`
}

// Abstention is the group of LongMemEval abstention questions.
const Abstention = "abstention"

var lmeTypeOrder = []string{"single-session-user", "single-session-assistant", "single-session-preference",
	"multi-session", "knowledge-update", "temporal-reasoning"}

// LoadLongMemEval reads a LongMemEval file: a JSON list of instances, each
// with its own haystack. Repeated session ids in a haystack keep the first.
func LoadLongMemEval(r io.Reader) (*Dataset, error) {
	var insts []lmeInstance
	if err := json.NewDecoder(r).Decode(&insts); err != nil {
		return nil, fmt.Errorf("bench: LongMemEval file: %w", err)
	}
	ds := &Dataset{Bench: LongMemEval}
	types := map[string]bool{}
	hasAbs := false
	seenConv := map[string]bool{}
	for ii, in := range insts {
		id := in.QuestionID
		if id == "" {
			id = fmt.Sprintf("question-%d", ii+1)
		}
		if seenConv[id] {
			return nil, fmt.Errorf("bench: LongMemEval question_id %q appears twice", id)
		}
		seenConv[id] = true
		c := Conv{ID: id}
		var ev []string
		seen := map[string]bool{}
		for si, sess := range in.HaystackSessions {
			sid := fmt.Sprintf("session-%d", si+1)
			if si < len(in.HaystackSessionIDs) && in.HaystackSessionIDs[si] != "" {
				sid = in.HaystackSessionIDs[si]
			}
			if seen[sid] {
				c.Ignored += len(sess)
				continue
			}
			seen[sid] = true
			var when *time.Time
			if si < len(in.HaystackDates) {
				if t, err := ParseLongMemEvalTime(in.HaystackDates[si]); err == nil {
					when = &t
				} else {
					c.BadDates++
				}
			} else {
				c.BadDates++
			}
			for ti, t := range sess {
				tid := sid + "#" + strconv.Itoa(ti)
				meta, _ := json.Marshal(map[string]any{"session_id": sid, "turn": ti, "has_answer": t.HasAnswer})
				c.Turns = append(c.Turns, Turn{ID: tid, Session: id + ":" + sid, Content: t.Role + ": " + t.Content,
					Speaker: t.Role, Role: t.Role, Text: t.Content, ValidFrom: when, Metadata: meta})
				if t.HasAnswer {
					ev = append(ev, tid)
				}
			}
		}
		abs := strings.HasSuffix(id, "_abs")
		group := in.QuestionType
		if group == "" {
			group = "unknown"
		}
		if abs {
			group, hasAbs = Abstention, true
		} else {
			types[group] = true
		}
		q := Question{ID: id, Text: in.Question, Group: group, Headline: !abs, Evidence: ev,
			RawEvidence: ev, Answer: in.Answer}
		if t, err := ParseLongMemEvalTime(in.QuestionDate); err == nil {
			q.Date = &t
		}
		for _, s := range in.AnswerSessionIDs {
			if seen[s] && !slices.Contains(q.EvidenceSessions, s) {
				q.EvidenceSessions = append(q.EvidenceSessions, s)
			}
		}
		if len(q.EvidenceSessions) == 0 {
			q.EvidenceSessions = evidenceSessions(ev)
		}
		c.Questions = []Question{q}
		ds.Convs = append(ds.Convs, c)
	}
	for _, t := range lmeTypeOrder {
		if types[t] {
			ds.Groups = append(ds.Groups, t)
			delete(types, t)
		}
	}
	var rest []string
	for t := range types {
		rest = append(rest, t)
	}
	sort.Strings(rest)
	ds.Groups = append(ds.Groups, rest...)
	if hasAbs {
		ds.Groups = append(ds.Groups, Abstention)
	}
	return ds, nil
}
