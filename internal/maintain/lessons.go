package maintain

import (
	"context"
	"encoding/json"
	"sort"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// The pattern extractor for lessons: every failure an agent reported in
// a session's event log (an outcome event with outcome failure) becomes
// a proposed lesson — a provisional reflection, category "lesson",
// linked by evidence to the failure and to the action and tool results
// that led to it (the events of the session since the previous outcome),
// waiting in the review queue (pending_write, reason "lesson"). Each
// failure is proposed once: a hash of it is marked in the database
// settings with the proposal.

// JobLessons is the lessons job's name.
const JobLessons = "lessons"

// CategoryLesson is the category of proposed lessons.
const CategoryLesson = "lesson"

// ReasonLesson is the approval reason of a proposed lesson.
const ReasonLesson = "lesson"

// maxLessonEvidence bounds the events a lesson cites.
const maxLessonEvidence = 16

// Lessons proposes a lesson for every reported failure not proposed yet.
func (m *Maintainer) Lessons(ctx context.Context) (Report, error) {
	rep := Report{Job: JobLessons, DryRun: m.o.DryRun}
	wss, err := m.svc.Store().ListWorkspaces(ctx)
	if err != nil {
		return rep, fault.Wrap(fault.Unavailable, err, "listing workspaces")
	}
	for _, w := range wss {
		sessions := map[string][]memory.Record{}
		err := m.scan(ctx, w.ID, []memory.Status{memory.Active}, func(r memory.Record) {
			rep.Scanned++
			if _, ok := core.EventOf(r); ok && r.Scope.SessionID != "" {
				sessions[r.Scope.SessionID] = append(sessions[r.Scope.SessionID], r)
			}
		})
		if err != nil {
			return rep, err
		}
		names := make([]string, 0, len(sessions))
		for s := range sessions {
			names = append(names, s)
		}
		sort.Strings(names)
		for _, s := range names {
			evs := sessions[s]
			sort.Slice(evs, func(i, j int) bool { return evs[i].ID < evs[j].ID }) // in order
			for i, ev := range evs {
				meta, _ := core.EventOf(ev)
				if meta.Event != core.EventOutcome || meta.Outcome != core.OutcomeFailure {
					continue
				}
				mark := "maintenance.lesson." + memory.SHA256Hex(w.ID+"\x1f"+ev.ID)
				if done, err := m.svc.MaintenanceCursor(ctx, mark); err != nil {
					return rep, err
				} else if done != "" {
					continue
				}
				if m.o.DryRun {
					rep.Inserted++
					rep.Reviews++
					continue
				}
				in := m.lesson(evs[:i], ev)
				b := core.MaintenanceBatch{Workspace: w.ID, Job: JobLessons, Origin: memory.OriginConsolidation,
					Inserts: []core.MaintenanceInsert{in}, Settings: map[string]string{mark: in.Record.ID}}
				if err := m.apply(ctx, b, &rep); err != nil {
					return rep, err
				}
			}
		}
	}
	return rep, nil
}

// lesson builds the proposal for failure, given the session's earlier
// events in order.
func (m *Maintainer) lesson(before []memory.Record, failure memory.Record) core.MaintenanceInsert {
	// The events since the previous outcome led to this one.
	var led []memory.Record
	for i := len(before) - 1; i >= 0 && len(led) < maxLessonEvidence-1; i-- {
		if meta, _ := core.EventOf(before[i]); meta.Event == core.EventOutcome {
			break
		}
		led = append(led, before[i])
	}
	var action string
	ev := []string{failure.ID}
	ents := append([]string{}, failure.Entities...)
	for _, r := range led { // newest first
		ev = append(ev, r.ID)
		if meta, _ := core.EventOf(r); meta.Event == core.EventAction && action == "" {
			action = r.Content
		}
		for _, x := range r.Entities {
			if !contains(ents, x) {
				ents = append(ents, x)
			}
		}
	}
	limit := m.svc.Policy().Limits.MaxContentBytes
	content := "Failed: " + clip(failure.Content, limit/2)
	if action != "" {
		content = "When doing: " + clip(action, limit/3) + "\n" + content
	}
	content = clip(content+"\nCheck this before trying the same again.", limit)
	r := memory.Record{
		ID: memory.NewID(), Type: memory.Reflection, Category: CategoryLesson, Content: content,
		Metadata: json.RawMessage(`{}`), Entities: ents,
		Status: memory.Provisional, Scope: failure.Scope, Access: failure.Access, Classification: failure.Classification,
		Source:     memory.Source{Agent: "memgate", PrincipalID: "system", Kind: memory.Inferred, Confidence: 0.6, Evidence: ev},
		DecayScore: 1, Path: memory.PathSlow,
	}
	if failure.Access == memory.AgentOnly {
		r.Source.PrincipalID = failure.Source.PrincipalID
	}
	return core.MaintenanceInsert{Record: r, ApprovalKind: memory.ApprovalPending, Reason: ReasonLesson,
		Event: "record.lesson", Payload: map[string]any{"failure": failure.ID, "evidence": ev}}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
