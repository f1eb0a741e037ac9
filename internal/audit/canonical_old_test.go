package audit

// The decoder-based canonicalizer Canonicalize replaced (issue 14), kept
// as the oracle of FuzzCanonicalizeSame.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

type oldMember struct {
	key   string
	units []uint16
	value []byte
}

func decoderCanonicalize(raw []byte) ([]byte, error) {
	// json.Valid catches trailing data and enforces encoding/json's nesting
	// limit, which also bounds the recursion in writeValue.
	if !json.Valid(raw) {
		return nil, errors.New("audit: canonicalize: invalid JSON")
	}
	// encoding/json silently turns bad UTF-8 and lone surrogates into
	// U+FFFD; two different inputs would then share one canonical form, so
	// refuse them up front.
	if !utf8.Valid(raw) {
		return nil, errors.New("audit: canonicalize: invalid UTF-8")
	}
	if err := checkSurrogates(raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("audit: canonicalize: %w", err)
	}
	if err := oldWriteValue(&out, dec, tok); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("audit: canonicalize: trailing data")
	}
	return out.Bytes(), nil
}

func oldWriteValue(out *bytes.Buffer, dec *json.Decoder, tok json.Token) error {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return oldWriteObject(out, dec)
		}
		return oldWriteArray(out, dec)
	case string:
		WriteString(out, t)
	case json.Number:
		s, err := formatNumber(string(t))
		if err != nil {
			return err
		}
		out.WriteString(s)
	case bool:
		out.WriteString(strconv.FormatBool(t))
	case nil:
		out.WriteString("null")
	default:
		return fmt.Errorf("audit: canonicalize: unexpected token %T", tok)
	}
	return nil
}

func oldWriteObject(out *bytes.Buffer, dec *json.Decoder) error {
	var members []oldMember
	seen := make(map[string]struct{})
	for {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("audit: canonicalize: %w", err)
		}
		if tok == json.Delim('}') {
			break
		}
		key := tok.(string) // the decoder only yields strings in key position
		if _, dup := seen[key]; dup {
			return fmt.Errorf("audit: canonicalize: duplicate key %q", key)
		}
		seen[key] = struct{}{}
		tok, err = dec.Token()
		if err != nil {
			return fmt.Errorf("audit: canonicalize: %w", err)
		}
		// Values are rendered separately because their position is only
		// known once every key has been read and sorted.
		var val bytes.Buffer
		if err := oldWriteValue(&val, dec, tok); err != nil {
			return err
		}
		members = append(members, oldMember{key: key, units: utf16.Encode([]rune(key)), value: val.Bytes()})
	}
	slices.SortFunc(members, func(a, b oldMember) int { return slices.Compare(a.units, b.units) })
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		WriteString(out, m.key)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.WriteByte('}')
	return nil
}

func oldWriteArray(out *bytes.Buffer, dec *json.Decoder) error {
	out.WriteByte('[')
	for i := 0; ; i++ {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("audit: canonicalize: %w", err)
		}
		if tok == json.Delim(']') {
			break
		}
		if i > 0 {
			out.WriteByte(',')
		}
		if err := oldWriteValue(out, dec, tok); err != nil {
			return err
		}
	}
	out.WriteByte(']')
	return nil
}

// FuzzCanonicalizeSame: the scanner renders every input exactly as the
// token decoder did, and refuses the same inputs.
func FuzzCanonicalizeSame(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `-0`, `1e21`, `5e-324`, `"\u2028<>&"`, ` { "b" : [ 1 , { } , [ ] ] , "a" : "x\ty" } `,
		`{"b":1,"a":[true,false,null,{"c":"\u0000"}]}`, `{"a\u0062":1,"ab":2}`,
		`{"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3}`, `{"a":{"a":{"a":[]}}}`,
		`[1.7976931348623157e308, 333333333.33333329, 0.000001, 1e-7]`,
		`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `[1,`, `1e999`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, werr := decoderCanonicalize(in)
		got, gerr := Canonicalize(in)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(want, got) {
			t.Fatalf("%q: got %q, %v; want %q, %v", in, got, gerr, want, werr)
		}
	})
}
