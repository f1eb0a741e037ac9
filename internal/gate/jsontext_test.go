package gate

import (
	"testing"

	"github.com/memgate/memgate/internal/fault"
)

func TestCheckJSONText(t *testing.T) {
	for _, c := range []struct {
		raw, path, problem string
	}{
		{`{"n":1e400}`, "n", ProblemNumber},
		{`{"a":{"b":[1,2,-1e999]}}`, "a.b[2]", ProblemNumber},
		{`{"a":[{"x":1},{"y":"ok","z":1E+309}]}`, "a[1].z", ProblemNumber},
		{"{\"s\":\"bad \xff\"}", "s", ProblemUTF8},
		{`{"s":"lone \ud800 high"}`, "s", ProblemUTF8},
		{`{"s":"lone \udc00 low"}`, "s", ProblemUTF8},
		{"{\"ok\":\"x\",\"k\xfe\":1}", "", ProblemUTF8},
		{`[1,"a",["\udfff"]]`, "[2][0]", ProblemUTF8},
		// Fine: pairs, escaped backslashes, big but finite numbers.
		{`{"s":"pair \ud83d\ude00","t":"\\ud800 is text","n":1.7e308,"m":-0,"z":123456789012345678901234567890}`, "", ""},
		{`{"e":{},"a":[],"s":"\u00e9"}`, "", ""},
		// Not JSON: decoding reports it, not this check.
		{`{"n":`, "", ""},
	} {
		path, problem := CheckJSONText([]byte(c.raw))
		if path != c.path || problem != c.problem {
			t.Errorf("CheckJSONText(%q) = %q, %q; want %q, %q", c.raw, path, problem, c.path, c.problem)
		}
	}
	err := CheckJSON("metadata", []byte(`{"n":1e400}`))
	if fe := fault.As(err); fe.Code != fault.InvalidArgument || fe.Details["field"] != "metadata.n" {
		t.Fatalf("CheckJSON: %v", err)
	}
	// A path made of user text is not shown.
	err = CheckJSON("metadata", []byte(`{"Secret Key":1e400}`))
	if fe := fault.As(err); fe.Details["field"] != "metadata" {
		t.Fatalf("CheckJSON with a user key: %v", fe.Details)
	}
}
