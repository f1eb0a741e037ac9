package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestFormatNumber(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"-0.0e5", "0"},
		{"1", "1"},
		{"-1", "-1"},
		{"1.5", "1.5"},
		{"0.1", "0.1"},
		{"1e21", "1e+21"},
		{"1e-7", "1e-7"},
		{"1e-6", "0.000001"},
		{"1e20", "100000000000000000000"},
		{"123456789012345680000", "123456789012345680000"},
		{"123456789012345678901", "123456789012345680000"},
		{"5e-324", "5e-324"},
		{"-5e-324", "-5e-324"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
		{"333333333.3333333", "333333333.3333333"},
		{"333333333.33333329", "333333333.3333333"},
		{"4.5e15", "4500000000000000"},
		{"4.50", "4.5"},
		{"2e-3", "0.002"},
		{"1E30", "1e+30"},
		{"0.000000000000000000000000001", "1e-27"},
		{"9007199254740993", "9007199254740992"},
		{"1e-400", "0"}, // underflow rounds to zero like any IEEE parse
		{"12345678901234567890123", "1.2345678901234568e+22"},
	}
	for _, tc := range tests {
		got, err := Canonicalize([]byte(tc.in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonicalize(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestFormatFloatRFC8785 uses the IEEE 754 sample values of RFC 8785
// Appendix B, given there as bit patterns.
func TestFormatFloatRFC8785(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tc := range tests {
		f := math.Float64frombits(tc.bits)
		if got := formatFloat(f); got != tc.want {
			t.Errorf("formatFloat(%#016x) = %s, want %s", tc.bits, got, tc.want)
		}
		// The formatted text must also survive a trip through Canonicalize.
		if got, err := Canonicalize([]byte(tc.want)); err != nil || string(got) != tc.want {
			t.Errorf("Canonicalize(%s) = %s, %v", tc.want, got, err)
		}
	}
}

func TestCanonicalize(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{
			name: "rfc8785 3.2.2 example",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			name: "rfc8785 3.2.3 sorting by utf-16 units",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
				"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{
			// In UTF-8 or code point order U+FB33 would sort before
			// U+1F600; UTF-16 puts the surrogate 0xD83D first.
			name: "surrogate pair sorts before BMP above D800",
			in:   `{"\ufb33":1,"\ud83d\ude00":2,"\u20ac":3}`,
			want: "{\"€\":3,\"😀\":2,\"\ufb33\":1}",
		},
		{
			name: "control characters",
			in:   `"\u0000\u0001\b\t\n\u000b\f\r\u001f\u007f"`,
			want: "\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\u007f\"",
		},
		{
			name: "html and line separators stay literal",
			in:   `"<a href=\"x\">&amp;</a>\u2028\u2029"`,
			want: "\"<a href=\\\"x\\\">&amp;</a>\u2028\u2029\"",
		},
		{
			name: "nested structures and whitespace",
			in:   " [ { \"b\" : [ ] , \"a\" : { } } , 1 , \"x\" ] \n",
			want: `[{"a":{},"b":[]},1,"x"]`,
		},
		{name: "scalar true", in: "true", want: "true"},
		{name: "scalar null", in: "null", want: "null"},
		{name: "empty key", in: `{"":1,"a":2}`, want: `{"":1,"a":2}`},
		{name: "large integer", in: `{"n":18446744073709551615}`, want: `{"n":18446744073709552000}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("Canonicalize =\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	tests := []struct{ name, in, errHas string }{
		{"duplicate key", `{"a":1,"a":2}`, "duplicate key"},
		{"duplicate key via escape", `{"a":1,"\u0061":2}`, "duplicate key"},
		{"nested duplicate key", `[{"x":{"k":1,"k":1}}]`, "duplicate key"},
		{"overflow", `1e400`, "not a finite"},
		{"negative overflow", `[-1e309]`, "not a finite"},
		{"empty", ``, "invalid JSON"},
		{"trailing data", `{} {}`, "invalid JSON"},
		{"trailing comma", `[1,]`, "invalid JSON"},
		{"NaN literal", `NaN`, "invalid JSON"},
		{"single quotes", `{'a':1}`, "invalid JSON"},
		{"invalid utf-8", "\"\xff\"", "UTF-8"},
		{"lone high surrogate", `"\ud83d"`, "surrogate"},
		{"lone low surrogate", `"\ude00"`, "surrogate"},
		{"high then non-low", `"\ud83d\u0041"`, "surrogate"},
		{"high at end of string", `["\ud83d", "\ude00"]`, "surrogate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if err == nil {
				t.Fatalf("Canonicalize(%q) = %s, want error", tc.in, got)
			}
			if !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("error %q does not mention %q", err, tc.errHas)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	v := map[string]any{"z": "<&>", "a": []int{3, 1}, "m": 0.5}
	got, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":[3,1],"m":0.5,"z":"<&>"}`; string(got) != want {
		t.Errorf("Canonical = %s, want %s", got, want)
	}
	if _, err := Canonical(math.Inf(1)); err == nil {
		t.Error("Canonical(+Inf) succeeded")
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `-0`, `1e21`, `5e-324`, `"\u2028<>&"`,
		`{"b":1,"a":[true,false,null,{"c":"\u0000"}]}`,
		`{"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3}`,
		`[1.7976931348623157e308, 333333333.33333329, 0.000001, 1e-7]`,
		`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `[1,`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON: %q", out)
		}
		again, err := Canonicalize(out)
		if err != nil {
			t.Fatalf("canonical output %q rejected: %v", out, err)
		}
		if !bytes.Equal(out, again) {
			t.Fatalf("not idempotent:\n in    %q\n once  %q\n twice %q", in, out, again)
		}
	})
}
