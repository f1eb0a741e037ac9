package gate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

func writePolicy(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaultIsValid(t *testing.T) {
	p := Default()
	if err := p.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if p.Limits != (Limits{32768, 16384, 64, 64, 256, 1048576, 256 << 20, 946684800000}) {
		t.Errorf("limits = %+v", p.Limits)
	}
	if p.RateLimit != (RateLimits{Agent: Bucket{50, 100}, Operator: Bucket{0, 0}, User: Bucket{20, 40}}) {
		t.Errorf("rate_limit = %+v", p.RateLimit)
	}
	if want := []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.Sensitive}; !slices.Equal(p.Trust.Trusted.AllowAccess, want) {
		t.Errorf("trusted access = %v", p.Trust.Trusted.AllowAccess)
	}
	if want := []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly}; !slices.Equal(p.Trust.Standard.AllowAccess, want) {
		t.Errorf("standard access = %v", p.Trust.Standard.AllowAccess)
	}
	if want := []memory.Access{memory.Public, memory.AgentOnly}; !slices.Equal(p.Trust.Restricted.AllowAccess, want) {
		t.Errorf("restricted access = %v", p.Trust.Restricted.AllowAccess)
	}
	for _, r := range []TrustRule{p.Trust.Trusted, p.Trust.Standard, p.Trust.Restricted} {
		if len(r.AllowTypes) != 0 || len(r.AutoAcceptTypes) != 0 {
			t.Errorf("types should default empty: %+v", r)
		}
	}
	if !p.PII.Enabled || !slices.Equal(p.PII.Kinds, PIIKinds) || p.PII.Action != PIIQuarantine {
		t.Errorf("pii = %+v", p.PII)
	}
	if p.Approvals.TTL.D() != 24*time.Hour || !p.Duplicates.Exact {
		t.Errorf("approvals/duplicates = %+v %+v", p.Approvals, p.Duplicates)
	}

	// Each call returns fresh slices.
	p.PII.Kinds[0] = "mutated"
	p.Trust.Trusted.AllowAccess[0] = "mutated"
	if q := Default(); q.PII.Kinds[0] != PIIEmail || q.Trust.Trusted.AllowAccess[0] != memory.Public || PIIKinds[0] != PIIEmail {
		t.Error("Default shares slices between calls")
	}
}

func TestLoadEmptyPathIsDefault(t *testing.T) {
	p, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, Default()) {
		t.Errorf("Load(\"\") = %+v", p)
	}
}

func TestLoadYAMLOverlay(t *testing.T) {
	path := writePolicy(t, "policy.yaml", `
# Partial policy: everything not named keeps its default.
limits:
  max_content_bytes: 65536
rate_limit:
  agent:
    per_second: 5.5     # burst keeps its default
trust:
  restricted:
    auto_accept_types: [preference, episode]
  standard:
    allow_types: []
pii:
  kinds: [email, secret]
  action: reject
approvals:
  ttl: 90m
`)
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Limits.MaxContentBytes = 65536
	want.RateLimit.Agent.PerSecond = 5.5
	want.Trust.Restricted.AutoAcceptTypes = []memory.Type{memory.Preference, memory.Episode}
	want.PII.Kinds = []string{PIIEmail, PIISecret}
	want.PII.Action = PIIReject
	want.Approvals.TTL = Duration(90 * time.Minute)
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
}

func TestLoadJSONOverlay(t *testing.T) {
	path := writePolicy(t, "policy.json", `{
	"rate_limit": {"user": {"per_second": 1, "burst": 2}},
	"trust": {"trusted": {"allow_access": ["public", "sensitive"]}},
	"pii": {"enabled": false, "kinds": []},
	"duplicates": {"exact": false},
	"approvals": {"ttl": "168h"},
	"limits": {"max_request_bytes": 2097152}
}`)
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.RateLimit.User = Bucket{PerSecond: 1, Burst: 2}
	want.Trust.Trusted.AllowAccess = []memory.Access{memory.Public, memory.Sensitive}
	want.PII.Enabled = false
	want.PII.Kinds = []string{}
	want.Duplicates.Exact = false
	want.Approvals.TTL = Duration(168 * time.Hour)
	want.Limits.MaxRequestBytes = 2 << 20
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
}

func TestLoadEmptyAndNullSections(t *testing.T) {
	for _, content := range []string{"", "# only a comment\n", "pii:\nlimits: {}\n"} {
		p, err := Load(writePolicy(t, "p.yaml", content))
		if err != nil {
			t.Fatalf("%q: %v", content, err)
		}
		if !reflect.DeepEqual(p, Default()) {
			t.Errorf("%q: got %+v", content, p)
		}
	}
	// A null list is an empty list.
	p, err := Load(writePolicy(t, "p.yaml", "trust:\n  trusted:\n    auto_accept_types:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Trust.Trusted.AutoAcceptTypes == nil || len(p.Trust.Trusted.AutoAcceptTypes) != 0 {
		t.Errorf("auto_accept_types = %#v", p.Trust.Trusted.AutoAcceptTypes)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, file, content string
		want                []string // substrings of the error
	}{
		{"negative half-life", "p.yaml", "maintenance:\n  half_life:\n    episode: -1h\n",
			[]string{"policy: maintenance.half_life.episode: must be >= 0", "line 3"}},
		{"archive threshold", "p.yaml", "maintenance:\n  archive_below: 1.5\n",
			[]string{"policy: maintenance.archive_below: must be in [0, 1)", "line 2"}},
		{"consolidate min", "p.yaml", "maintenance:\n  consolidate_min: 2\n",
			[]string{"policy: maintenance.consolidate_min: must be between 3 and 1000, got 2"}},
		{"unknown half-life type", "p.yaml", "maintenance:\n  half_life:\n    blog: 1h\n",
			[]string{"maintenance.half_life"}},
		{"graph status", "p.yaml", "graph:\n  extracted_status: archived\n",
			[]string{"policy: graph.extracted_status: must be one of provisional, active", "line 2"}},
		{"mcp client trust", "p.yaml", "mcp:\n  client_trust: operator\n",
			[]string{"policy: mcp.client_trust: must be one of trusted, standard, restricted, read_only, got \"operator\"", "line 2"}},
		{"negative rate", "p.yaml", "rate_limit:\n  agent:\n    per_second: -1\n",
			[]string{"policy: rate_limit.agent.per_second: must be >= 0", "line 3"}},
		{"negative burst", "p.yaml", "rate_limit:\n  user: {burst: -5}\n",
			[]string{"policy: rate_limit.user.burst: must be >= 0"}},
		{"zero burst with rate", "p.yaml", "rate_limit:\n  operator: {per_second: 10}\n",
			[]string{"rate_limit.operator.burst: must be >= 1 when per_second is above 0"}},
		{"infinite rate", "p.yaml", "rate_limit:\n  agent: {per_second: .inf}\n",
			[]string{"rate_limit.agent.per_second: must be a finite number"}},
		{"unknown type", "p.yaml", "trust:\n  restricted:\n    auto_accept_types: [belief, blog]\n",
			[]string{`policy: trust.restricted.auto_accept_types[1]: unknown type "blog" (allowed: belief, decision, episode`}},
		{"unknown allow type", "p.yaml", "trust:\n  standard:\n    allow_types: [Belief]\n",
			[]string{`trust.standard.allow_types[0]: unknown type "Belief"`}},
		{"auto accept not allowed", "p.yaml", "trust:\n  restricted:\n    allow_types: [belief]\n    auto_accept_types: [skill]\n",
			[]string{`trust.restricted.auto_accept_types[0]: type "skill" is not in trust.restricted.allow_types`}},
		{"duplicate type", "p.yaml", "trust:\n  trusted:\n    allow_types: [belief, skill, belief]\n",
			[]string{`trust.trusted.allow_types[2]: type "belief" is listed twice`}},
		{"unknown access", "p.yaml", "trust:\n  trusted:\n    allow_access: [public, secret]\n",
			[]string{`trust.trusted.allow_access[1]: unknown access level "secret" (allowed: public, agent, user, sensitive)`}},
		{"system access", "p.yaml", "trust:\n  trusted:\n    allow_access: [system]\n",
			[]string{`trust.trusted.allow_access[0]: access level "system" is reserved`}},
		{"no access", "p.yaml", "trust:\n  standard:\n    allow_access: []\n",
			[]string{"trust.standard.allow_access: must list at least one access level"}},
		{"pii action", "p.yaml", "pii:\n  action: drop\n",
			[]string{"policy: pii.action: must be one of quarantine, reject", "line 2"}},
		{"own conversation action", "p.yaml", "pii:\n  own_conversation:\n    action: drop\n",
			[]string{"pii.own_conversation.action: must be one of readable, quarantine"}},
		{"own conversation secret", "p.yaml", "pii:\n  own_conversation:\n    kinds: [email, secret]\n",
			[]string{"pii.own_conversation.kinds: must not list secret"}},
		{"pii kind", "p.yaml", "pii:\n  kinds: [email, passport]\n",
			[]string{`pii.kinds[1]: unknown kind "passport" (allowed: email, phone, ssn, card, secret)`}},
		{"pii no kinds", "p.yaml", "pii:\n  kinds: []\n",
			[]string{"pii.kinds: must list at least one kind while pii.enabled is true"}},
		{"content too large", "p.yaml", "limits:\n  max_content_bytes: 2000000\n",
			[]string{"policy: limits.max_content_bytes: must be between 1 and 1048576"}},
		{"content zero", "p.json", `{"limits": {"max_content_bytes": 0}}`,
			[]string{"policy: limits.max_content_bytes: must be between 1 and 1048576", "p.json line 1"}},
		{"negative entities", "p.yaml", "limits:\n  max_entities: -1\n",
			[]string{"limits.max_entities: must be between 0 and 4096"}},
		{"request below content", "p.yaml", "limits:\n  max_request_bytes: 1000\n",
			[]string{"limits.max_request_bytes: must be >= limits.max_content_bytes (32768)"}},
		{"ttl zero", "p.yaml", "approvals:\n  ttl: 0s\n",
			[]string{"policy: approvals.ttl: must be positive"}},
		{"ttl negative", "p.json", `{"approvals": {"ttl": "-1h"}}`,
			[]string{"policy: approvals.ttl: must be positive"}},
		{"ttl number", "p.yaml", "approvals:\n  ttl: 24\n",
			[]string{"approvals.ttl: expected a duration string", `"24h"`, "got number 24"}},
		{"ttl number json", "p.json", `{"approvals": {"ttl": 86400}}`,
			[]string{"approvals.ttl: expected a duration string", "got number 86400"}},
		{"ttl garbage", "p.yaml", "approvals:\n  ttl: soon\n",
			[]string{`approvals.ttl: invalid duration "soon"`}},
		{"ttl days", "p.yaml", "approvals:\n  ttl: 7d\n",
			[]string{`approvals.ttl: invalid duration "7d"`, "168h"}},
		{"unknown top key", "p.yaml", "rate_limits:\n  agent: {per_second: 1}\n",
			[]string{`policy: unknown key "rate_limits"`, `did you mean "rate_limit"`, "line 1"}},
		{"unknown nested key", "p.yaml", "trust:\n  restricted:\n    auto_accep_types: [belief]\n",
			[]string{`policy: unknown key "trust.restricted.auto_accep_types"`, `did you mean "auto_accept_types"`, "line 3"}},
		{"unknown key json", "p.json", "{\n  \"pii\": {\"enabled\": true, \"mode\": \"strict\"}\n}",
			[]string{`policy: unknown key "pii.mode"`, "line 2"}},
		{"unknown key no suggestion", "p.yaml", "storage: {}\n",
			[]string{`unknown key "storage" (known keys: limits, rate_limit, trust, pii, approvals, duplicates, conflicts, graph, mcp, maintenance)`}},
		{"string for number", "p.yaml", "limits:\n  max_entities: many\n",
			[]string{`policy: limits.max_entities: expected an integer, got string "many"`, "line 2"}},
		{"quoted number", "p.json", `{"rate_limit": {"agent": {"burst": "10"}}}`,
			[]string{`rate_limit.agent.burst: expected an integer, got string "10"`}},
		{"float for int", "p.yaml", "limits:\n  max_evidence: 1.5\n",
			[]string{"limits.max_evidence: expected an integer, got number 1.5"}},
		{"string for float", "p.yaml", "rate_limit:\n  agent: {per_second: fast}\n",
			[]string{`rate_limit.agent.per_second: expected a number, got string "fast"`}},
		{"string for bool", "p.yaml", "duplicates:\n  exact: sometimes\n",
			[]string{`duplicates.exact: expected true or false, got string "sometimes"`}},
		{"list for string", "p.yaml", "pii:\n  action: [reject]\n",
			[]string{"pii.action: expected a string, got a list"}},
		{"string for list", "p.yaml", "pii:\n  kinds: email\n",
			[]string{`pii.kinds: expected a list, got string "email"`}},
		{"scalar for section", "p.yaml", "trust: trusted\n",
			[]string{`trust: expected a mapping of keys, got string "trusted"`}},
		{"null scalar", "p.yaml", "pii:\n  action:\n",
			[]string{"pii.action: expected a string, got no value"}},
		{"null duration", "p.json", `{"approvals": {"ttl": null}}`,
			[]string{"approvals.ttl: expected a duration string", "got no value"}},
		{"huge int", "p.yaml", "limits:\n  max_request_bytes: 99999999999999999999999\n",
			[]string{"limits.max_request_bytes: expected an integer"}},
		{"duplicate key", "p.yaml", "pii:\n  action: reject\n  action: quarantine\n",
			[]string{"pii.action: duplicate key (first set on line 2)", "line 3"}},
		{"duplicate key json", "p.json", `{"pii": {"action": "reject", "action": "quarantine"}}`,
			[]string{"pii.action: duplicate key"}},
		{"top level list", "p.yaml", "- limits\n",
			[]string{"the top level must be a mapping of keys, got a list"}},
		{"yaml syntax", "p.yaml", "pii:\n  action: reject\n   kinds: [email]\n",
			[]string{"policy: invalid YAML", "p.yaml line 3"}},
		{"yaml tabs", "p.yaml", "pii:\n\taction: reject\n",
			[]string{"policy: invalid YAML", "line 2"}},
		{"two documents", "p.yaml", "pii: {}\n---\nlimits: {}\n",
			[]string{"more than one YAML document"}},
		{"json syntax", "p.json", "{\n  \"pii\": {\"action\": \"reject\",}\n}",
			[]string{"policy: invalid JSON at column", "p.json line 2"}},
		{"yaml in json file", "p.json", "pii:\n  action: reject\n",
			[]string{"policy: invalid JSON"}},
		{"json trailing data", "p.json", `{} {}`,
			[]string{"unexpected data after the top-level value"}},
		{"merge key", "p.yaml", "rate_limit:\n  agent: &b {per_second: 5, burst: 10}\n  user:\n    <<: *b\n",
			[]string{"rate_limit.user: merge keys (<<) are not supported"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writePolicy(t, c.file, c.content)
			_, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%q) succeeded", c.content)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n  does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "policy: ") {
				t.Errorf("error %q lacks the policy: prefix", err)
			}
			if !errors.Is(err, ErrInvalidPolicy) || fault.CodeOf(err) != fault.InvalidArgument {
				t.Errorf("error %q: errors.Is ErrInvalidPolicy %v, code %s", err, errors.Is(err, ErrInvalidPolicy), fault.CodeOf(err))
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	_, err := Load(writePolicy(t, "p.yaml", `
rate_limit:
  agent: {per_second: -1, burst: -1}
pii:
  action: drop
`))
	if err == nil {
		t.Fatal("no error")
	}
	var keys []string
	for _, pe := range policyErrors(err) {
		keys = append(keys, pe.Key)
		if pe.Line == 0 {
			t.Errorf("%v: no line", pe)
		}
	}
	want := []string{"rate_limit.agent.per_second", "rate_limit.agent.burst", "pii.action"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys = %v, want %v (error %q)", keys, want, err)
	}
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Key != "rate_limit.agent.per_second" || pe.Line != 3 || !strings.HasSuffix(pe.File, "p.yaml") {
		t.Errorf("errors.As = %+v", pe)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "policy: ") {
		t.Fatalf("err = %v", err)
	}
}

func TestValidateNamesKeys(t *testing.T) {
	p := Default()
	p.RateLimit.Agent.PerSecond = -2
	p.Trust.Restricted.AutoAcceptTypes = []memory.Type{memory.Belief, "blog"}
	p.PII.Action = "drop"
	p.Approvals.TTL = 0
	p.Limits.MaxContentBytes = 0
	err := p.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{
		"policy: rate_limit.agent.per_second: must be >= 0",
		`policy: trust.restricted.auto_accept_types[1]: unknown type "blog" (allowed: belief, decision,`,
		"policy: pii.action: must be one of quarantine, reject",
		"policy: approvals.ttl: must be positive",
		"policy: limits.max_content_bytes: must be between 1 and 1048576",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\n  does not contain %q", err, w)
		}
	}
	// No file, no location.
	if strings.Contains(err.Error(), "line") {
		t.Errorf("error %q has a location", err)
	}
}

func TestDurationEncoding(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{24 * time.Hour, "24h"}, {90 * time.Minute, "1h30m"}, {time.Minute, "1m"}, {90 * time.Second, "1m30s"},
		{1500 * time.Millisecond, "1.5s"}, {0, "0s"}, {25*time.Hour + time.Second, "25h0m1s"},
	} {
		d := Duration(c.d)
		if d.String() != c.want {
			t.Errorf("%v.String() = %q, want %q", c.d, d.String(), c.want)
		}
		j, err := json.Marshal(d)
		if err != nil || string(j) != `"`+c.want+`"` {
			t.Errorf("json.Marshal(%v) = %s, %v", c.d, j, err)
		}
		var back Duration
		if err := json.Unmarshal(j, &back); err != nil || back != d {
			t.Errorf("json round trip %v = %v, %v", c.d, back, err)
		}
		y, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var yback Duration
		if err := yaml.Unmarshal(y, &yback); err != nil || yback != d {
			t.Errorf("yaml round trip %v (%q) = %v, %v", c.d, y, yback, err)
		}
	}
	for _, bad := range []string{`86400`, `"soon"`, `""`, `true`, `"7d"`, `["24h"]`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("json.Unmarshal(%s) = %v, want an error", bad, d)
		}
	}
	for _, bad := range []string{`86400`, `soon`, `""`, `[24h]`, `{a: b}`, `1.5`} {
		var d Duration
		if err := yaml.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("yaml.Unmarshal(%s) = %v, want an error", bad, d)
		}
	}
}

func TestPolicyDumpRoundTrips(t *testing.T) {
	p := Default()
	p.Approvals.TTL = Duration(36 * time.Hour)
	p.Trust.Restricted.AutoAcceptTypes = []memory.Type{memory.Preference}

	y, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "ttl: 36h") {
		t.Errorf("yaml dump lacks the ttl string:\n%s", y)
	}
	got, err := Load(writePolicy(t, "dump.yaml", string(y)))
	if err != nil {
		t.Fatalf("reload yaml: %v\n%s", err, y)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("yaml round trip:\n got %+v\nwant %+v", got, p)
	}

	j, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"ttl": "36h"`) {
		t.Errorf("json dump lacks the ttl string:\n%s", j)
	}
	got, err = Load(writePolicy(t, "dump.json", string(j)))
	if err != nil {
		t.Fatalf("reload json: %v\n%s", err, j)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("json round trip:\n got %+v\nwant %+v", got, p)
	}
	var viaJSON Policy
	if err := json.Unmarshal(j, &viaJSON); err != nil || !reflect.DeepEqual(viaJSON, p) {
		t.Errorf("json.Unmarshal = %+v, %v", viaJSON, err)
	}
}

func TestLoadJSONEscapes(t *testing.T) {
	// Valid JSON that a YAML parser would reject (\/ escape) still loads.
	p, err := Load(writePolicy(t, "p.json", `{"pii": {"action": "re\/ject"}}`))
	if err == nil || !strings.Contains(err.Error(), `got "re/ject"`) {
		t.Errorf("got %+v, %v", p.PII, err)
	}
	p, err = Load(writePolicy(t, "p.json", `{"pii": {"action": "rej\u0065ct"}}`))
	if err != nil || p.PII.Action != PIIReject {
		t.Errorf("got %+v, %v", p.PII, err)
	}
}

func TestLoadAliases(t *testing.T) {
	p, err := Load(writePolicy(t, "p.yaml", "rate_limit:\n  agent: &b {per_second: 5, burst: 10}\n  user: *b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.RateLimit.User != (Bucket{5, 10}) || p.RateLimit.Agent != (Bucket{5, 10}) {
		t.Errorf("rate_limit = %+v", p.RateLimit)
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"abc", "abc", 0}, {"rate_limits", "rate_limit", 1}, {"kitten", "sitting", 3}, {"", "ab", 2}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
