package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
)

// FuzzWriteRequest drives the write-request decoder and POST /v1/records
// with arbitrary bodies. Whatever the input, the decoder must answer with
// a 4xx fault that does not echo the input, and the handler must never
// answer 5xx or with a body that is not JSON.
func FuzzWriteRequest(f *testing.F) {
	seeds := []string{
		// A valid write, and one with every field.
		`{"type":"belief","content":"Alice prefers PostgreSQL for backend work","entities":["person:alice"],"scope":{"user_id":"alice"}}`,
		`{"type":"decision","category":"technology","content":"Use SKIP LOCKED for job claims","metadata":{"why":"throughput","n":[1,2.5,null]},` +
			`"entities":["system:jobs"],"source":{"kind":"told","confidence":0.8,"evidence":[]},` +
			`"scope":{"user_id":"u","agent_id":"a","app_id":"app","project_id":"p","session_id":"s"},` +
			`"valid_from":"2026-03-01T12:00:00Z","valid_until":"2026-04-01T00:00:00+02:00","access":"agent","classification":"internal",` +
			`"status":"provisional","path":"slow"}`,
		// Unknown fields, at the top and nested.
		`{"type":"belief","content":"x","password":"hunter2-secret-value"}`,
		`{"type":"belief","content":"x","scope":{"tenant":"sk_live_abcdefghijklmnop"}}`,
		// Wrong types.
		`{"type":7,"content":["a"],"entities":"person:alice","source":{"confidence":"high"},"scope":[]}`,
		// Deep nesting in metadata, and nesting past the decoder's limit.
		`{"type":"belief","content":"deep","metadata":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}`,
		`{"type":"belief","content":"deeper","metadata":` + strings.Repeat(`[`, 12000) + strings.Repeat(`]`, 12000) + `}`,
		// Huge numbers.
		`{"type":"belief","content":"n","source":{"confidence":1e400},"metadata":{"n":123456789012345678901234567890e300}}`,
		// Invalid UTF-8 and escaped control characters.
		"{\"type\":\"belief\",\"content\":\"bad \xff\xfe utf8\",\"scope\":{\"user_id\":\"\\u0000\\n\"}}",
		// Times in bad formats.
		`{"type":"belief","content":"t","valid_from":"01/03/2026 12:00","valid_until":1700000000}`,
		`{"type":"belief","content":"t","valid_from":"0000-01-01T00:00:00+01:00","valid_until":"9999-12-31T23:59:59-23:59"}`,
		// null everywhere.
		`{"type":null,"category":null,"content":null,"metadata":null,"entities":null,"source":null,"scope":null,` +
			`"valid_from":null,"valid_until":null,"access":null,"classification":null,"status":null,"supersedes":null,"path":null}`,
		`null`,
		// Arrays instead of objects, and other non-objects.
		`[{"type":"belief","content":"x"}]`,
		`{"type":"belief","content":"x","source":[],"metadata":[]}`,
		`"just a string"`,
		``,
		`{"type":"belief","content":"x"} {"type":"belief","content":"y"}`,
		`{"type":"belief","content":"x"`,
		// Fields that reference other records.
		`{"type":"belief","content":"s","supersedes":"01890000-0000-7000-8000-000000000000","source":{"evidence":["not-an-id"]}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}

	ctx := context.Background()
	svc := oaService(f)
	token, created, err := svc.Bootstrap(ctx)
	if err != nil || !created {
		f.Fatalf("bootstrap: created=%v err=%v", created, err)
	}
	h := New(svc, nil, nil, "test").Handler()

	f.Fuzz(func(t *testing.T, data []byte) {
		// (a) The decoder alone.
		err := DecodeReader(bytes.NewReader(data), &core.WriteRequest{})
		if err != nil {
			var fe *fault.Error
			if !errors.As(err, &fe) {
				t.Fatalf("DecodeReader returned %T (%v), want *fault.Error", err, err)
			}
			if st := fault.HTTPStatus(fe.Code); st < 400 || st > 499 {
				t.Fatalf("DecodeReader returned code %s (status %d), want a 4xx", fe.Code, st)
			}
			checkNoEcho(t, data, fe.Message, fe.Details)
		}

		// (b) The real handler.
		req := httptest.NewRequest(http.MethodPost, "/v1/records", bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST /v1/records answered %d: %s", rec.Code, rec.Body.Bytes())
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST /v1/records answered %d with a body that is not JSON: %q", rec.Code, rec.Body.Bytes())
		}
		if rec.Code < 300 {
			// A stored write must be answered with its result, not with
			// an error body under a success status.
			var res core.WriteResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res.Decision == "" || res.Record.ID == "" {
				t.Fatalf("POST /v1/records answered %d without a write result: %s", rec.Code, rec.Body.Bytes())
			}
		}
		checkAnswer(t, "POST /v1/records", rec, data)
	})
}

// checkNoEcho fails if an error's message or details contain the raw
// input, which may be a secret. Inputs of 8 bytes or fewer are too short
// to tell an echo from a coincidence.
func checkNoEcho(t *testing.T, input []byte, msg string, details map[string]any) {
	t.Helper()
	if len(input) <= 8 {
		return
	}
	if strings.Contains(msg, string(input)) {
		t.Fatalf("error message echoes the input: %q", msg)
	}
	if details == nil {
		return
	}
	dj, err := json.Marshal(details)
	if err != nil {
		t.Fatalf("error details do not encode: %v", err)
	}
	if bytes.Contains(dj, input) {
		t.Fatalf("error details echo the input: %s", dj)
	}
	// Details travel JSON-encoded, so compare the encoded input too.
	if ej, err := json.Marshal(string(input)); err == nil && len(ej) > 2 && bytes.Contains(dj, ej[1:len(ej)-1]) {
		t.Fatalf("error details echo the input: %s", dj)
	}
}
