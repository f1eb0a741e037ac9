package gate

import (
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// TestOwnConversationPII: a gateway user's own turn carrying its contact
// details stays active at access "user" and is flagged (default policy);
// anything else with the same content, or the same turn with a card
// number, is quarantined as before; the quarantine action restores the
// old behaviour.
func TestOwnConversationPII(t *testing.T) {
	user := memory.Principal{Kind: memory.KindUser, ID: "u1", Name: "user:alice", Trust: memory.Standard}
	turn := memory.Record{Type: memory.Episode, Access: memory.Public, Content: "alice: mail me at alice@example.com or call +1 415 555 0134"}
	decide := func(p Policy, in Input) Outcome {
		t.Helper()
		out, err := p.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := decide(Default(), Input{Principal: user, Record: turn, OwnConversation: true})
	if out.Decision != memory.DecisionFlagged || out.Status != memory.Active || out.Access != memory.UserOnly ||
		out.Reason != ReasonPIIOwn || out.ApprovalKind != "" || len(out.PIIKinds) != 2 {
		t.Errorf("own turn: %+v", out)
	}
	for name, in := range map[string]Input{
		"not the user's own conversation": {Principal: user, Record: turn},
		"a card number too": {Principal: user, OwnConversation: true,
			Record: memory.Record{Type: memory.Episode, Content: "alice: alice@example.com, card 4111 1111 1111 1111"}},
		"a secret": {Principal: user, OwnConversation: true,
			Record: memory.Record{Type: memory.Episode, Content: "alice: my key is AKIAIOSFODNN7EXAMPLE"}},
		"not an episode": {Principal: user, OwnConversation: true,
			Record: memory.Record{Type: memory.Belief, Content: turn.Content}},
	} {
		if out := decide(Default(), in); out.Decision != memory.DecisionQuarantined || out.Access != memory.Sensitive {
			t.Errorf("%s: %+v, want quarantined", name, out)
		}
	}
	p := Default()
	p.PII.OwnConversation.Action = PIIQuarantine
	if out := decide(p, Input{Principal: user, Record: turn, OwnConversation: true}); out.Decision != memory.DecisionQuarantined {
		t.Errorf("own_conversation.action quarantine: %+v", out)
	}
}
