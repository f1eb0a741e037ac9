package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
)

// errorBody is SPEC §12's error envelope.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    fault.Code `json:"code"`
	Message string     `json:"message"`
	// Details is always present, {} when there is nothing to add, so a
	// client reads one shape whatever the error.
	Details map[string]any `json:"details"`
}

// writeError is the one place where errors become HTTP responses. Internal
// causes are logged, never sent.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	fe := fault.As(err)
	status := fault.HTTPStatus(fe.Code)
	msg := fe.Message
	details := fe.Details
	if status >= 500 {
		level := slog.LevelError
		if fe.Code == fault.Unavailable {
			level = slog.LevelWarn
		}
		s.log.Log(r.Context(), level, "request failed", "code", string(fe.Code), "err", err.Error())
		if fe.Code == fault.Internal {
			msg, details = "internal error", nil
		}
	}
	if fe.RetryAfter > 0 {
		secs := int(math.Ceil(fe.RetryAfter.Seconds()))
		if secs < 1 {
			secs = 1
		}
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	_ = writeJSON(w, status, errorOf(fe.Code, msg, details))
}

// errorOf is the one error envelope, with details never null.
func errorOf(code fault.Code, msg string, details map[string]any) errorBody {
	if details == nil {
		details = map[string]any{}
	}
	return errorBody{Error: errorDetail{Code: code, Message: msg, Details: details}}
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

var safeFieldName = regexp.MustCompile(`^[a-z][a-z0-9_.\[\]]{0,63}$`)

// Decode strictly decodes one JSON object from r's body into v. Its errors
// name the field and never echo the offending value, since values may be
// secrets. The Content-Type is not checked: the body must be JSON whatever
// it says, which keeps `curl -d` working.
func Decode(r *http.Request, v any) error {
	return DecodeReader(r.Body, v)
}

// DecodeReader is Decode over any reader; the fuzz target drives it.
func DecodeReader(body io.Reader, v any) error {
	raw, err := io.ReadAll(body)
	if err != nil {
		return decodeError(err, nil, nil, true)
	}
	return decodeBytes(raw, v, true)
}

// decodeBytes decodes one JSON object from raw into v; strict refuses
// unknown fields. Invalid text is refused before decoding, since
// encoding/json would silently store it as U+FFFD.
func decodeBytes(raw []byte, v any, strict bool) error {
	if err := checkText(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	} else {
		dec.UseNumber()
	}
	if err := dec.Decode(v); err != nil {
		return decodeError(err, raw, v, strict)
	}
	if dec.More() {
		return fault.New(fault.InvalidArgument, "request body must hold exactly one JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fault.New(fault.InvalidArgument, "request body must hold exactly one JSON object")
	}
	return nil
}

// checkText refuses a body whose strings hold invalid UTF-8 or unpaired
// surrogate escapes, naming the member when its path is plain.
func checkText(raw []byte) error {
	if !gate.NeedsTextCheck(raw) {
		return nil
	}
	path, problem := gate.CheckJSONText(raw)
	if problem != gate.ProblemUTF8 {
		if !utf8.Valid(raw) {
			// Not even JSON around the bad bytes: still not text.
			return fault.New(fault.InvalidArgument, "request body must be valid UTF-8")
		}
		return nil
	}
	if path == "" || !safeFieldName.MatchString(path) {
		return fault.New(fault.InvalidArgument, "request body: strings "+gate.ProblemUTF8)
	}
	return fault.Field(path, gate.ProblemUTF8)
}

// decodeOptional decodes a body that may be absent or blank; it reports
// whether one was present.
func decodeOptional(r *http.Request, v any) (bool, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return false, decodeError(err, nil, nil, true)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return false, nil
	}
	return true, DecodeReader(bytes.NewReader(body), v)
}

// decodeError maps a decoding error to a fault naming the field where it
// can. raw and v, when given, let it locate a member the error does not
// name (see locateBad).
func decodeError(err error, raw []byte, v any, strict bool) error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
		te  *time.ParseError
	)
	switch {
	case errors.As(err, &mbe):
		return fault.New(fault.TooLarge, "request body exceeds "+strconv.FormatInt(mbe.Limit, 10)+" bytes").With("limit", mbe.Limit)
	case errors.Is(err, io.EOF):
		return fault.New(fault.InvalidArgument, "request body is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fault.New(fault.InvalidArgument, "request body is truncated JSON")
	case errors.As(err, &se):
		return fault.New(fault.InvalidArgument, "malformed JSON at byte "+strconv.FormatInt(se.Offset, 10)).With("offset", se.Offset)
	}
	// From here the body is well-formed JSON; find the member at fault.
	field := ""
	if raw != nil && v != nil {
		if p, ok := locateBad(raw, reflect.TypeOf(v), strict); ok && safeFieldName.MatchString(p) {
			field = p
		}
	}
	msg := err.Error()
	_, unknown := strings.CutPrefix(msg, "json: unknown field ")
	switch {
	case unknown && field != "":
		return fault.Field(field, "is not a known field").With("reason", "unknown_field")
	case unknown:
		if name, _ := strings.CutPrefix(msg, "json: unknown field "); safeFieldName.MatchString(strings.Trim(name, `"`)) {
			return fault.Field(strings.Trim(name, `"`), "is not a known field").With("reason", "unknown_field")
		}
		return fault.New(fault.InvalidArgument, "request body has an unknown field")
	case errors.As(err, &te):
		if field != "" {
			return fault.Field(field, "must be an RFC 3339 time, e.g. 2026-03-01T12:00:00Z")
		}
		return fault.New(fault.InvalidArgument, "times must be RFC 3339, e.g. 2026-03-01T12:00:00Z")
	case errors.As(err, &ute):
		if field == "" && ute.Field != "" && safeFieldName.MatchString(ute.Field) {
			field = ute.Field
		}
		if field == "" {
			return fault.New(fault.InvalidArgument, "request body must be a JSON object of the documented shape")
		}
		return fault.Field(field, "must be of type "+jsonKind(ute.Type.Kind().String()))
	case field != "":
		return fault.Field(field, "is not valid here: see the API reference for its type")
	}
	return fault.New(fault.InvalidArgument, "request body is not valid for this endpoint")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	case "int", "int64", "int32", "uint", "uint64", "float64", "float32":
		return "number"
	}
	return k
}

// Query helpers: each returns a field-naming invalid_argument error.

func queryTime(r *http.Request, name string) (*time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, fault.Field(name, "must be an RFC 3339 time, e.g. 2026-03-01T12:00:00Z")
	}
	return &t, nil
}

func queryInt(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fault.Field(name, "must be a non-negative integer")
	}
	return n, nil
}

// queryPositive is queryInt for a count or a depth: absent means the
// default (0), and an explicit 0 is refused rather than read as "default".
func queryPositive(r *http.Request, name string) (int, error) {
	n, err := queryInt(r, name)
	if err == nil && n == 0 && r.URL.Query().Has(name) {
		return 0, fault.Field(name, "must be a positive integer")
	}
	if err != nil {
		return 0, fault.Field(name, "must be a positive integer")
	}
	return n, nil
}

func queryBool(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fault.Field(name, "must be true or false")
	}
	return b, nil
}

func queryFloat(r *http.Request, name string) (float64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) {
		return 0, fault.Field(name, "must be a number")
	}
	return f, nil
}

// queryList accepts repeated parameters and comma-separated values.
func queryList(r *http.Request, name string) []string {
	var out []string
	for _, v := range r.URL.Query()[name] {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
