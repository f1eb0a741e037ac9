package extract

import "testing"

func TestReconcileRules(t *testing.T) {
	existing := []Existing{
		{ID: "pg", Type: TypePreference, Content: "u1 prefers PostgreSQL for backend work"},
		{ID: "redis", Type: TypePreference, Content: "u1 uses Redis for caching"},
		{ID: "vim", Type: TypePreference, Content: "u1 uses Vim"},
		{ID: "dark", Type: TypePreference, Content: "u1 prefers dark mode"},
		{ID: "java", Type: TypePreference, Content: "u1 likes Java"},
		{ID: "kafka", Type: TypeDecision, Content: "u1's team decided to use Kafka for the event bus"},
		{ID: "fri", Type: TypeBelief, Content: "u1's rule: never deploy on Fridays"},
		{ID: "docker", Type: TypePreference, Content: "u1 no longer uses Docker"},
		{ID: "bob", Type: TypePreference, Content: "u2 prefers MySQL for backend work"},
	}
	cases := []struct {
		typ, content string
		action       Action
		target       string
	}{
		// Repeats.
		{TypePreference, "u1 prefers PostgreSQL for backend work", ActionNoop, "pg"},
		{TypePreference, "u1 prefers postgres for backend work.", ActionNoop, "pg"},
		{TypeBelief, "u1's rule: never deploy on Fridays!", ActionNoop, "fri"},
		{TypeDecision, "u1's team decided to use Kafka for the event bus, for sure", ActionNoop, "kafka"},
		{TypePreference, "u1 really prefers dark mode", ActionNoop, "dark"},
		// Changed preferences supersede.
		{TypePreference, "u1 prefers MySQL for backend work", ActionUpdate, "pg"},
		{TypePreference, "u1 prefers light mode", ActionUpdate, "dark"},
		{TypePreference, "u1 uses Emacs", ActionUpdate, "vim"},
		{TypePreference, "u1 hates Java", ActionUpdate, "java"},
		{TypePreference, "u1 uses Docker again", ActionUpdate, "docker"},
		{TypeDecision, "u1's team decided to use NATS for the event bus", ActionUpdate, "kafka"},
		// Negations invalidate.
		{TypePreference, "u1 no longer uses redis", ActionInvalidate, "redis"},
		{TypePreference, "u1 does not use Redis anymore", ActionInvalidate, "redis"},
		{TypePreference, "u1 stopped using Vim", ActionInvalidate, "vim"},
		{TypePreference, "u1 no longer likes Java", ActionInvalidate, "java"},
		// Unrelated facts are added.
		{TypePreference, "u1 likes hiking", ActionAdd, ""},
		{TypePreference, "u1 uses PostgreSQL", ActionAdd, ""},
		{TypePreference, "u3 prefers MySQL for frontend work", ActionAdd, ""},
		{TypeBelief, "u1's rule: never deploy without a rollback plan", ActionAdd, ""},
		{TypeBelief, "u1 is flying to Berlin on 2024-03-12", ActionAdd, ""},
		{TypePreference, "u1 no longer uses Kubernetes", ActionAdd, ""},
	}
	for _, c := range cases {
		got := ReconcileRules(Fact{Type: c.typ, Content: c.content}, existing)
		if got.Action != c.action || got.TargetID != c.target || got.Reason == "" {
			t.Errorf("%q: got %+v, want %s %q", c.content, got, c.action, c.target)
		}
	}
	// A near-repeat with one differing technology in a long sentence is
	// not a repeat.
	long := []Existing{{ID: "l", Type: TypeBelief, Content: "u1's backend is written in Go and runs on Kubernetes in the eu-west region behind a load balancer"}}
	if got := ReconcileRules(Fact{Type: TypeBelief, Content: "u1's backend is written in Rust and runs on Kubernetes in the eu-west region behind a load balancer"}, long); got.Action == ActionNoop {
		t.Errorf("long near-repeat: %+v", got)
	}
	if got := ReconcileRules(Fact{Type: TypeBelief, Content: "anything"}, nil); got.Action != ActionAdd {
		t.Errorf("no existing: %+v", got)
	}
}
