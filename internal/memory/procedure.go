package memory

import (
	"encoding/json"
)

// Procedure is the typed part of a skill record: when it applies, what
// to do, and how well it has worked. The fields live at the top level of
// the record's metadata (trigger, steps, success_rate, use_count), so a
// skill written by any client carries them; the gate checks their types.
type Procedure struct {
	Trigger string   `json:"trigger,omitempty"`
	Steps   []string `json:"steps,omitempty"`
	// SuccessRate is the outcome average, each report weighing 0.3
	// (ReportOutcome); nil until the first report.
	SuccessRate *float64 `json:"success_rate,omitempty"`
	UseCount    int64    `json:"use_count"`
}

// ProcedureKeys are the metadata keys of a procedure.
var ProcedureKeys = []string{"trigger", "steps", "success_rate", "use_count"}

// ProcedureOf returns the procedure fields of a skill record; ok is false
// for other types and for skills that carry none of them. Fields of the
// wrong type (stored before the gate checked them) read as absent.
func ProcedureOf(r Record) (p Procedure, ok bool) {
	if r.Type != Skill || len(r.Metadata) == 0 {
		return p, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(r.Metadata, &m) != nil {
		return p, false
	}
	for _, k := range ProcedureKeys {
		if _, has := m[k]; has {
			ok = true
		}
	}
	_ = json.Unmarshal(m["trigger"], &p.Trigger)
	_ = json.Unmarshal(m["steps"], &p.Steps)
	var rate float64
	if json.Unmarshal(m["success_rate"], &rate) == nil && m["success_rate"] != nil {
		p.SuccessRate = &rate
	}
	_ = json.Unmarshal(m["use_count"], &p.UseCount)
	return p, ok
}

// OutcomeWeight is how much one reported outcome moves a procedure's
// success rate: rate = (1-w)*old + w*outcome.
const OutcomeWeight = 0.3

// PriorSuccessRate is the rate a procedure has before its first report.
const PriorSuccessRate = 0.5

// WithOutcome returns metadata with the procedure's rate and use count
// updated for one reported outcome in [0, 1]; other keys are kept.
func WithOutcome(meta json.RawMessage, p Procedure, outcome float64) (json.RawMessage, Procedure, error) {
	m := map[string]json.RawMessage{}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, p, err
		}
	}
	old := PriorSuccessRate
	if p.SuccessRate != nil {
		old = *p.SuccessRate
	}
	rate := (1-OutcomeWeight)*old + OutcomeWeight*outcome
	p.SuccessRate = &rate
	p.UseCount++
	m["success_rate"], _ = json.Marshal(rate)
	m["use_count"], _ = json.Marshal(p.UseCount)
	out, err := json.Marshal(m)
	return out, p, err
}
