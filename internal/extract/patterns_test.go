package extract

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// session is a Wednesday.
var session = time.Date(2024, 3, 6, 15, 4, 5, 0, time.UTC)

func day(y int, m time.Month, d int) *time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return &t
}

type wantFact struct {
	typ      string
	content  string
	entities []string
	event    *time.Time
	tags     []string // checked when not nil
}

func TestPatterns(t *testing.T) {
	pref := func(content string, entities ...string) wantFact {
		return wantFact{typ: TypePreference, content: content, entities: entities}
	}
	dec := func(content string, entities ...string) wantFact {
		return wantFact{typ: TypeDecision, content: content, entities: entities}
	}
	rule := func(content string, entities ...string) wantFact {
		return wantFact{typ: TypeBelief, content: content, entities: entities, tags: []string{TagRule}}
	}
	belief := func(content string, event *time.Time, entities ...string) wantFact {
		return wantFact{typ: TypeBelief, content: content, entities: entities, event: event}
	}
	cases := []struct {
		role, text string
		want       []wantFact
		reason     string // checked for skipped turns
	}{
		// Preferences.
		{"user", "I prefer PostgreSQL for backend work.", []wantFact{pref("u1 prefers PostgreSQL for backend work", "postgresql")}, ""},
		{"user", "For backend work, I prefer Postgres over MySQL.", []wantFact{pref("u1 prefers Postgres over MySQL for backend work", "mysql", "postgresql")}, ""},
		{"user", "I really like dark mode.", []wantFact{pref("u1 likes dark mode")}, ""},
		{"user", "I love Go but I hate Java.", []wantFact{pref("u1 loves Go", "go"), pref("u1 hates Java", "java")}, ""},
		{"user", "I prefer dark mode, and I like short answers.", []wantFact{pref("u1 prefers dark mode"), pref("u1 likes short answers")}, ""},
		{"user", "Honestly, I use Neovim for everything.", []wantFact{pref("u1 uses Neovim for everything", "neovim")}, ""},
		{"user", "I've been using k8s for years.", []wantFact{pref("u1 uses k8s for years", "kubernetes")}, ""},
		{"user", "I'm a big fan of Svelte.", []wantFact{pref("u1 likes Svelte", "svelte")}, ""},
		{"user", "I'm not a fan of Tailwind.", []wantFact{pref("u1 does not like Tailwind", "tailwind")}, ""},
		{"user", "I don't like YAML configs.", []wantFact{pref("u1 does not like YAML configs", "yaml")}, ""},
		{"user", "I can't stand tabs.", []wantFact{pref("u1 can't stand tabs")}, ""},
		{"user", "I'd rather use SQLite for tests.", []wantFact{pref("u1 prefers to use SQLite for tests", "sqlite")}, ""},
		{"user", "My favourite editor is Neovim.", []wantFact{pref("u1's favourite editor is Neovim", "neovim")}, ""},
		{"user", "I no longer use Redis.", []wantFact{pref("u1 no longer uses Redis", "redis")}, ""},
		{"user", "I don't use Vim anymore.", []wantFact{pref("u1 no longer uses Vim", "vim")}, ""},
		{"user", "I stopped using Docker Desktop.", []wantFact{pref("u1 no longer uses Docker Desktop", "desktop", "docker")}, ""},
		{"user", "I like to run in the morning.", []wantFact{pref("u1 likes to run in the morning")}, ""},
		// Past preferences are beliefs of lower confidence.
		{"user", "I used to like Java.", []wantFact{{typ: TypeBelief, content: "u1 used to like Java", entities: []string{"java"}, tags: []string{TagPast, TagTechnology}}}, ""},
		// Rules and instructions.
		{"user", "Always answer in bullet points.", []wantFact{pref("u1 wants the assistant to always answer in bullet points")}, ""},
		{"user", "You must always cite sources.", []wantFact{pref("u1 wants the assistant to always cite sources")}, ""},
		{"user", "Please respond in Spanish from now on.", []wantFact{pref("u1 wants the assistant to respond in Spanish", "spanish")}, ""},
		{"user", "Don't use emojis in your answers.", []wantFact{pref("u1 wants the assistant to not use emojis in the assistant's answers")}, ""},
		{"user", "Never deploy on Fridays!", []wantFact{rule("u1's rule: never deploy on Fridays")}, ""},
		{"user", "Don't ever push directly to main.", []wantFact{rule("u1's rule: never push directly to main")}, ""},
		{"user", "Do not ever share my home address.", []wantFact{rule("u1's rule: never share u1's home address")}, ""},
		{"user", "All services must use TLS.", []wantFact{rule("u1's rule: all services must use TLS", "tls")}, ""},
		{"user", "Passwords must be at least 12 characters.", []wantFact{rule("u1's rule: passwords must be at least 12 characters")}, ""},
		{"user", "We always write tests before merging.", []wantFact{rule("u1's team always writes tests before merging")}, ""},
		{"user", "I never commit secrets to git.", []wantFact{rule("u1 never commits secrets to git", "git")}, ""},
		// Decisions, from either role.
		{"user", "We decided to use Kafka for the event bus.", []wantFact{dec("u1's team decided to use Kafka for the event bus", "kafka")}, ""},
		{"user", "Let's go with Redis for caching.", []wantFact{dec("u1's team decided to go with Redis for caching", "redis")}, ""},
		{"user", "We'll use Terraform for infra.", []wantFact{dec("u1's team decided to use Terraform for infra", "terraform")}, ""},
		{"user", "We are going with AWS for hosting.", []wantFact{dec("u1's team decided to go with AWS for hosting", "aws")}, ""},
		{"user", "After a long debate we decided to drop MongoDB.", []wantFact{dec("u1's team decided to drop MongoDB after a long debate", "mongodb")}, ""},
		{"assistant", "Great, let's go with PostgreSQL then.", []wantFact{dec("u1's team decided to go with PostgreSQL", "postgresql")}, ""},
		{"user", "Decided to migrate to k8s in two weeks.", []wantFact{{typ: TypeDecision, content: "u1 decided to migrate to k8s on 2024-03-20", entities: []string{"kubernetes"}, event: day(2024, 3, 20), tags: []string{TagTechnology, TagTemporal}}}, ""},
		{"user", "We're migrating to GCP next month.", []wantFact{{typ: TypeDecision, content: "u1's team decided to migrate to GCP in April 2024", entities: []string{"gcp"}, event: day(2024, 4, 1)}}, ""},
		// Technology statements.
		{"user", "Our backend is written in Go and runs on Kubernetes.", []wantFact{belief("u1's backend is written in Go and runs on Kubernetes", nil, "go", "kubernetes")}, ""},
		// Temporal facts.
		{"user", "I'm flying to Berlin next Tuesday.", []wantFact{belief("u1 is flying to Berlin on 2024-03-12", day(2024, 3, 12), "berlin")}, ""},
		{"user", "The release is on March 3, 2024.", []wantFact{belief("The release is on March 3, 2024", day(2024, 3, 3))}, ""},
		{"user", "My dentist appointment is on 3 March.", []wantFact{belief("u1's dentist appointment is on 2024-03-03", day(2024, 3, 3))}, ""},
		{"user", "The deadline is 2024-04-01.", []wantFact{belief("The deadline is 2024-04-01", day(2024, 4, 1))}, ""},
		{"user", "We launched yesterday.", []wantFact{belief("u1's team launched on 2024-03-05", day(2024, 3, 5))}, ""},
		{"user", "Last Friday we deployed the new billing service.", []wantFact{belief("u1's team deployed the new billing service on 2024-03-01", day(2024, 3, 1))}, ""},
		// Negatives.
		{"user", "Do you like Python?", nil, reasonQuestion},
		{"user", "do you think we should use Redis", nil, reasonQuestion},
		{"user", "If we used Kafka, the cost would double.", nil, reasonHypothetical},
		{"user", "Maybe we could try Deno.", nil, reasonHypothetical},
		{"user", "I'm thinking about switching to Emacs.", nil, reasonHypothetical},
		{"user", "I like it.", nil, reasonNoMatch},
		{"user", "Thanks, see you tomorrow!", nil, reasonNoMatch},
		{"user", "hello there!", nil, reasonNoMatch},
		{"user", "That must be frustrating.", nil, reasonNoMatch},
		{"user", "I must say this is great.", nil, reasonNoMatch},
		{"user", "My boss says we must use Java.", nil, reasonReported},
		{"user", "", nil, reasonEmpty},
		{"assistant", "I love helping with Go questions!", nil, reasonRole},
		{"assistant", "You should always use prepared statements.", nil, reasonRole},
	}
	for _, c := range cases {
		ev := Patterns(Turn{MessageID: "m1", SessionID: "chat:c42", SenderID: "u1", Role: c.role, Time: session, SessionDate: session, Text: c.text})
		if len(c.want) == 0 {
			if ev.Decision != DecisionSkip || len(ev.Facts) != 0 || ev.Reason != c.reason {
				t.Errorf("%q: got %s %q with %d facts (%v), want skip %q", c.text, ev.Decision, ev.Reason, len(ev.Facts), contents(ev.Facts), c.reason)
			}
			continue
		}
		if ev.Decision != DecisionIngestPattern || ev.Pattern == "" || ev.Pattern != ev.Facts[0].Pattern {
			t.Errorf("%q: decision %q pattern %q", c.text, ev.Decision, ev.Pattern)
		}
		if len(ev.Facts) != len(c.want) {
			t.Errorf("%q: got facts %q, want %d", c.text, contents(ev.Facts), len(c.want))
			continue
		}
		for i, w := range c.want {
			f := ev.Facts[i]
			if f.Type != w.typ || f.Content != w.content {
				t.Errorf("%q: fact %d = %s %q, want %s %q", c.text, i, f.Type, f.Content, w.typ, w.content)
			}
			if !slices.Equal(f.Entities, w.entities) && !(len(f.Entities) == 0 && len(w.entities) == 0) {
				t.Errorf("%q: entities %q, want %q", c.text, f.Entities, w.entities)
			}
			if (f.EventTime == nil) != (w.event == nil) || f.EventTime != nil && !f.EventTime.Equal(*w.event) {
				t.Errorf("%q: event time %v, want %v", c.text, f.EventTime, w.event)
			}
			if f.EventTime != nil && !slices.Contains(f.Tags, TagTemporal) {
				t.Errorf("%q: tags %q lack %q", c.text, f.Tags, TagTemporal)
			}
			for _, tag := range w.tags {
				if !slices.Contains(f.Tags, tag) {
					t.Errorf("%q: tags %q lack %q", c.text, f.Tags, tag)
				}
			}
			if hasTech := slices.ContainsFunc(f.Entities, func(e string) bool { _, ok := techTable[e]; return ok }); hasTech != slices.Contains(f.Tags, TagTechnology) {
				t.Errorf("%q: tags %q do not match entities %q", c.text, f.Tags, f.Entities)
			}
			wantConf := ConfidencePattern
			switch {
			case slices.Contains(f.Tags, TagPast):
				wantConf = ConfidencePast
			case slices.Contains(f.Tags, TagRule):
				wantConf = ConfidenceRule
			}
			if f.Confidence != wantConf || f.Pattern == "" || !slices.Equal(f.Evidence, []string{"m1"}) {
				t.Errorf("%q: confidence %v pattern %q evidence %q", c.text, f.Confidence, f.Pattern, f.Evidence)
			}
			if !slices.IsSorted(f.Tags) || !slices.IsSorted(f.Entities) {
				t.Errorf("%q: tags %q or entities %q not sorted", c.text, f.Tags, f.Entities)
			}
		}
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
}

func contents(fs []Fact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Type+": "+f.Content)
	}
	return out
}

func TestPatternsSpeakerAndReference(t *testing.T) {
	// No SessionDate: relative dates resolve against the turn's time, in
	// its location.
	loc := time.FixedZone("CET", 3600)
	ev := Patterns(Turn{SenderID: "alice", Role: "User", Time: time.Date(2024, 12, 31, 23, 30, 0, 0, loc), Text: "My flight to Oslo is tomorrow."})
	if len(ev.Facts) != 1 {
		t.Fatalf("got %+v", ev)
	}
	f := ev.Facts[0]
	if want := time.Date(2025, 1, 1, 0, 0, 0, 0, loc); f.Content != "alice's flight to Oslo is on 2025-01-01" || f.EventTime == nil || !f.EventTime.Equal(want) || f.EventTime.Location() != loc {
		t.Errorf("got %q at %v", f.Content, f.EventTime)
	}
	if f.Evidence != nil {
		t.Errorf("evidence %q without a message id", f.Evidence)
	}
	// Without any reference date, relative dates are not resolved but
	// absolute ones are.
	ev = Patterns(Turn{SenderID: "bob", Role: "user", Text: "I prefer Vim. My birthday is tomorrow. The launch is on 2025-05-01."})
	if got := contents(ev.Facts); !slices.Equal(got, []string{"preference: bob prefers Vim", "belief: The launch is on 2025-05-01"}) {
		t.Errorf("got %q", got)
	}
}

func TestRelativeDates(t *testing.T) {
	wed := time.Date(2024, 3, 6, 9, 0, 0, 0, time.UTC)  // Wednesday
	sun := time.Date(2024, 3, 10, 9, 0, 0, 0, time.UTC) // Sunday
	dec := time.Date(2023, 12, 30, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		ref  time.Time
		expr string
		want string // "" for no date
		text string // the rewritten form, when not ""
	}{
		{wed, "today", "2024-03-06", "on 2024-03-06"},
		{wed, "tonight", "2024-03-06", ""},
		{wed, "this morning", "2024-03-06", ""},
		{wed, "yesterday", "2024-03-05", ""},
		{wed, "tomorrow", "2024-03-07", ""},
		{wed, "the day after tomorrow", "2024-03-08", ""},
		{wed, "the day before yesterday", "2024-03-04", ""},
		{wed, "next Tuesday", "2024-03-12", "on 2024-03-12"},
		{wed, "next Friday", "2024-03-15", ""}, // the Friday of next week
		{sun, "next Tuesday", "2024-03-12", ""},
		{wed, "last Friday", "2024-03-01", ""},
		{wed, "last Wednesday", "2024-02-28", ""},
		{sun, "last Friday", "2024-03-08", ""},
		{wed, "this Friday", "2024-03-08", ""},
		{wed, "on Monday", "2024-03-11", "on 2024-03-11"},
		{wed, "in two weeks", "2024-03-20", ""},
		{wed, "in 3 days", "2024-03-09", ""},
		{wed, "in a month", "2024-04-06", ""},
		{wed, "in a couple of weeks", "2024-03-20", ""},
		{wed, "two days ago", "2024-03-04", ""},
		{wed, "a year ago", "2023-03-06", ""},
		{wed, "next week", "2024-03-11", "in the week of 2024-03-11"},
		{wed, "last week", "2024-02-26", ""},
		{wed, "this weekend", "2024-03-09", ""},
		{wed, "next month", "2024-04-01", "in April 2024"},
		{dec, "next month", "2024-01-01", "in January 2024"},
		{wed, "last month", "2024-02-01", ""},
		{wed, "last year", "2023-01-01", "in 2023"},
		{dec, "next year", "2024-01-01", ""},
		{wed, "March 3, 2024", "2024-03-03", ""},
		{wed, "March 3rd 2024", "2024-03-03", ""},
		{wed, "3 March 2024", "2024-03-03", ""},
		{wed, "the 3rd of March", "2024-03-03", "on 2024-03-03"},
		{wed, "3 March", "2024-03-03", ""},
		{dec, "January 5", "2024-01-05", ""}, // the nearest year
		{wed, "2024-03-03", "2024-03-03", ""},
		{wed, "March 2024", "2024-03-01", ""},
		{wed, "February 30, 2024", "", ""},
		{wed, "2024-13-01", "", ""},
		{wed, "someday", "", ""},
		{wed, "the Fridays", "", ""},
	}
	for _, c := range cases {
		toks := tokenize("it is " + c.expr)
		m, ok := findDate(toks, c.ref, true)
		got := ""
		if ok {
			got = m.t.Format("2006-01-02")
		}
		if got != c.want {
			t.Errorf("%q at %s: got %q, want %q", c.expr, c.ref.Format("Mon 2006-01-02"), got, c.want)
			continue
		}
		if ok && c.text != "" && m.text() != c.text {
			t.Errorf("%q: text %q, want %q", c.expr, m.text(), c.text)
		}
	}
	// A bare weekday refers to the past in a past-tense clause.
	m, ok := findDate(tokenize("we shipped it on Friday and it was fine"), wed, true)
	if !ok || m.t.Format("2006-01-02") != "2024-03-01" {
		t.Errorf("past Friday: %v %v", m.t, ok)
	}
}

func TestThirdPerson(t *testing.T) {
	for in, want := range map[string]string{
		"prefer": "prefers", "try": "tries", "watch": "watches", "go": "goes", "have": "has",
		"am": "is", "deploy": "deploys", "fix": "fixes", "must": "must", "deployed": "deployed",
	} {
		if got := thirdPerson(in); got != want {
			t.Errorf("thirdPerson(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzPatterns(f *testing.F) {
	for _, s := range []string{"I prefer Go.", "Always answer in English!", "We decided to use Kafka next Tuesday.", "It's 2024-03-03; c++ vs c# vs .net?", "I’m not a fan of Node.js…"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ev := Patterns(Turn{MessageID: "m", SenderID: "u1", Role: "user", SessionDate: session, Text: s})
		if (ev.Decision == DecisionIngestPattern) != (len(ev.Facts) > 0) || ev.Reason == "" {
			t.Fatalf("inconsistent evaluation %+v", ev)
		}
		for _, f := range ev.Facts {
			if !validType(f.Type) || f.Content == "" || len(f.Content) > maxContent || f.Pattern == "" {
				t.Fatalf("bad fact %+v", f)
			}
		}
	})
}

// corpus generates a realistic mix of chat turns: small talk, questions,
// preferences, rules, decisions and dated statements, about 1 in 3 with a
// fact.
func corpus(n int) []Turn {
	r := rand.New(rand.NewPCG(1, 2))
	techs := []string{"PostgreSQL", "Redis", "Kafka", "Kubernetes", "Go", "Python", "React", "AWS", "SQLite", "Terraform", "Neovim", "Docker"}
	uses := []string{"backend work", "caching", "the event bus", "side projects", "our data pipeline", "local development"}
	templates := []string{
		"I prefer %[1]s for %[2]s.",
		"Honestly, I really like %[1]s, but I hate writing YAML.",
		"We decided to use %[1]s for %[2]s after the outage last week.",
		"Let's go with %[1]s then.",
		"Always answer in bullet points and keep it short.",
		"Never deploy on Fridays!",
		"Can you explain how %[1]s handles %[2]s?",
		"What do you think about %[1]s vs %[3]s for %[2]s?",
		"Thanks, that was really helpful!",
		"ok cool",
		"Hmm, I'm not sure yet, maybe %[1]s could work if the team agrees.",
		"My flight to Berlin is next Tuesday, so I'll be offline.",
		"Our backend is written in %[1]s and runs on %[3]s.",
		"Here is the stack trace: panic: runtime error: invalid memory address or nil pointer dereference [signal SIGSEGV]",
		"The migration to %[1]s is scheduled for March 3, 2024.",
		"I no longer use %[3]s for %[2]s.",
		"Sure! To configure %[1]s for %[2]s, set the pool size to 20 and enable TLS. Then restart the service and check the logs.",
		"lol yeah that makes sense",
	}
	turns := make([]Turn, n)
	for i := range turns {
		tpl := templates[r.IntN(len(templates))]
		role := "user"
		if strings.HasPrefix(tpl, "Sure!") || strings.HasPrefix(tpl, "Here") {
			role = "assistant"
		}
		turns[i] = Turn{
			MessageID: fmt.Sprintf("m%d", i), SessionID: "chat:c42", SenderID: "u1", Role: role,
			Time: session, SessionDate: session,
			Text: fmt.Sprintf(tpl, techs[r.IntN(len(techs))], uses[r.IntN(len(uses))], techs[r.IntN(len(techs))]),
		}
	}
	return turns
}

func BenchmarkPatterns(b *testing.B) {
	turns := corpus(1000)
	facts := 0
	for _, t := range turns {
		facts += len(Patterns(t).Facts)
	}
	if facts == 0 {
		b.Fatal("the corpus yields no facts")
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		Patterns(turns[n%len(turns)])
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "turns/s")
}

func TestPatternsLongInput(t *testing.T) {
	// A huge turn must be handled in linear time: a run-on "sentence" of
	// 200,000 words, and many short sentences.
	long := strings.Repeat("I like Go very much ", 50000)
	many := strings.Repeat("I prefer Go. ", 20000)
	start := time.Now()
	if ev := Patterns(Turn{SenderID: "u1", Role: "user", Text: long}); len(ev.Facts) != 0 {
		t.Errorf("run-on sentence gave %d facts", len(ev.Facts))
	}
	if ev := Patterns(Turn{SenderID: "u1", Role: "user", Text: many}); len(ev.Facts) != 1 {
		t.Errorf("repeated sentence gave %d facts, want 1 (deduplicated)", len(ev.Facts))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}
