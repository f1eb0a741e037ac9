// Package extract turns conversation turns into candidate facts (SPEC §7).
//
// It has three parts, none of which touches the database: the
// deterministic pattern gatekeeper (Patterns), an extractor and reconciler
// that ask any OpenAI-compatible chat-completions endpoint (LLM), and a
// rule-based reconciliation for when no model is configured or it fails
// (ReconcileRules). The caller stores the facts through the gate.
//
// # Pattern gatekeeper
//
// Patterns splits a turn into sentences and clauses ("I love Go but I
// hate Java" is two clauses) and retells each recognised clause as one
// atomic statement in the third person, with the sender as subject: "I
// prefer dark mode" by u1 becomes "u1 prefers dark mode"; "my" becomes
// "u1's", "we" becomes "u1's team", "you" becomes "the assistant", the
// verb is conjugated and intensifiers ("really", "just") are dropped. An
// adverbial before the subject moves behind it ("For backend work, I
// prefer Go" → "u1 prefers Go for backend work"). The pattern families,
// with the pattern names that the Fact and Evaluation carry:
//
//   - Preferences (type preference, user turns only): "I prefer", "I'd
//     rather", "I like", "I love", "I'm a fan of", "I use", "I'm using",
//     "I've been using", "I hate", "I can't stand", "I don't like", "I
//     don't use", "my favourite X is Y"; "I no longer use", "I stopped
//     using", "I don't use X anymore" (retold as "u1 no longer uses X", so
//     that reconciliation invalidates the old fact). A preference needs a
//     concrete object: "I like it" is skipped.
//   - Former preferences: "I used to like X" is a belief tagged "past"
//     with confidence 0.5: it says something true about the past and lets
//     reconciliation see the change, but is weaker than a present
//     preference.
//   - Rules (type belief, tag "rule", confidence 0.8, user turns only):
//     "Always ...", "Never ...", "Don't ever ...", "Do not ever ...", "I
//     always/never ...", "we always/never/must ...", "you must ...", and
//     rules with a noun subject ("All services must use TLS", "Pushing to
//     main is forbidden"). An instruction about how the assistant should
//     answer (answer, reply, format, bullet points, emojis, language,
//     tone, sources, ...) is a preference instead: "Always answer in
//     bullet points" → "u1 wants the assistant to always answer in bullet
//     points"; so are "Don't use emojis" and style instructions said "from
//     now on".
//   - Decisions (type decision, user and assistant turns): "we decided",
//     "I've decided", "decided to", "let's go with", "let's use", "we'll
//     use", "we are going with", "we're going to use", "we chose", "we
//     switched to", "we settled on", "the decision is". Retold as "u1
//     decided to ..." or "u1's team decided to ...".
//   - Technology statements (type belief, user turns only): a first-person
//     statement that mentions a known technology with a verb of use ("Our
//     backend is written in Go", "We run on Kubernetes").
//   - Temporal statements (type belief, user turns only): a first-person
//     clause, or one about an event (release, deadline, flight, meeting,
//     ...), with a date: "My flight to Berlin is next Tuesday".
//
// Any fact that mentions one of about 200 built-in technologies gets them
// as entities, under one canonical name (postgres, psql → postgresql; k8s
// → kubernetes), and the tag "technology". Capitalised names (people,
// places, projects) are entities too. Entities are lower-case, unique and
// sorted. Words that are also ordinary English ("Go", "Rust", "Slack")
// count as technologies only when capitalised and not the first word of a
// sentence.
//
// Skipped: questions (a "?" or a question word order without one),
// hypotheticals ("if", "maybe", "might", "could", "would" other than "I'd
// prefer"/"I'd rather", "I'm thinking about", "not sure"), reported speech
// ("my boss says we must ..."), greetings and small talk, and from
// assistant turns everything but decisions. Confidence is 0.7 unless said
// otherwise above.
//
// # Dates
//
// A fact whose clause has a date gets EventTime (midnight, in the
// location of the turn's SessionDate, or of Time when SessionDate is
// zero) and the tag "temporal"; relative dates in the content are
// rewritten as absolute ones ("on 2024-03-12", "in April 2024"). Absolute
// dates: "2024-03-03", "March 3, 2024", "March 3rd", "3 March 2024", "the
// 3rd of March", "March 2024"; a date without a year takes the year that
// puts it nearest the session date. Relative dates, against the session
// date: today, tonight, this morning, yesterday, tomorrow, the day
// after tomorrow, the day before yesterday; "next Tuesday" is the Tuesday
// of next week (weeks start on Monday); "last Friday" is the latest Friday
// before the session date; "this Friday", "on Friday" and a bare weekday
// are the next one after it, or the last one before it in a clause in the
// past tense; "next/last/this week" is that week's Monday, "next/last
// month" its first day, "next/last year" its 1 January; "in two weeks",
// "in 3 days", "in a couple of months", "two days ago". Without any
// reference date, relative expressions are left alone.
//
// # Model
//
// LLM speaks POST {BaseURL}/chat/completions with a json_schema
// response_format. Prompts are versioned by PromptVersion, which the
// caller stores on every record. Temporary failures (network errors,
// per-request timeouts, 408, 429, 5xx) are retried MaxRetries times with
// exponential backoff and jitter, honouring Retry-After, but never past
// the caller's deadline: a wait that would outlast it ends the retries at
// once. When they run out the error wraps ErrUnavailable. An answer that is not the JSON asked
// for wraps ErrMalformed. Other 4xx answers are an *APIError. No error
// contains the API key or the request body.
//
// # Reconciliation
//
// A candidate fact is compared with the most similar existing facts and
// becomes ADD, UPDATE (supersede), INVALIDATE (set invalidated_at on the
// old one) or NOOP. LLM.Reconcile asks the model; ReconcileRules decides
// by the rules documented on it.
package extract
