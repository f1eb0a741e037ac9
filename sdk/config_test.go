package sdk

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLoadHybridConfig(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("  "+testUserKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const url = "http://127.0.0.1:9"
	creds := func(c HybridConfig) *HybridConfig {
		c.BaseURL, c.UserID, c.UserKey = url, testUserID, testUserKey
		return &c
	}

	tests := []struct {
		name     string
		section  *HybridConfig
		mode     string // effective mode when no error
		warnings int    // number of warnings
		errField string // ConfigError.Field, when an error is expected
		check    func(*testing.T, HybridConfig)
		mention  []string // substrings the warning or error must hold
	}{
		{name: "missing section degrades", section: nil, mode: ModeCurated, warnings: 1,
			mention: []string{"base_url", "user_id", "user_key", "curated"}},
		{name: "implicit with credentials", section: creds(HybridConfig{}), mode: ModeHybrid,
			check: func(t *testing.T, c HybridConfig) {
				if !slices.Equal(c.Scopes, []string{ScopeCurrentChat, ScopeAllUserMemory}) || c.TopK != 8 ||
					c.Timeout != 10*time.Second || c.AppID != "default" || c.ProjectID != "default" {
					t.Errorf("defaults not applied: %v", c)
				}
			}},
		{name: "implicit partial degrades", section: &HybridConfig{BaseURL: url, UserID: testUserID}, mode: ModeCurated, warnings: 1,
			mention: []string{"user_key"}},
		{name: "explicit hybrid", section: creds(HybridConfig{Mode: ModeHybrid}), mode: ModeHybrid},
		{name: "hybrid missing key", section: &HybridConfig{Mode: ModeHybrid, BaseURL: url, UserID: testUserID}, errField: "user_key"},
		{name: "hybrid missing url", section: &HybridConfig{Mode: ModeHybrid, UserID: testUserID, UserKey: testUserKey}, errField: "base_url"},
		{name: "hybrid missing all", section: &HybridConfig{Mode: ModeHybrid}, errField: "base_url",
			mention: []string{"base_url, user_id, user_key"}},
		{name: "hybrid blank user id", section: &HybridConfig{Mode: ModeHybrid, BaseURL: url, UserID: "  ", UserKey: testUserKey}, errField: "user_id"},
		{name: "curated without credentials", section: &HybridConfig{Mode: ModeCurated}, mode: ModeCurated},
		{name: "unknown mode", section: creds(HybridConfig{Mode: "remote"}), errField: "mode"},
		{name: "mode is case sensitive", section: creds(HybridConfig{Mode: "Hybrid"}), errField: "mode"},
		{name: "scopes subset kept in order", section: creds(HybridConfig{Scopes: []string{ScopeResources, ScopeCurrentChat}}), mode: ModeHybrid,
			check: func(t *testing.T, c HybridConfig) {
				if !slices.Equal(c.Scopes, []string{ScopeResources, ScopeCurrentChat}) {
					t.Errorf("scopes = %q", c.Scopes)
				}
			}},
		{name: "unknown scope", section: creds(HybridConfig{Scopes: []string{"everything"}}), errField: "scopes"},
		{name: "duplicate scope", section: creds(HybridConfig{Scopes: []string{ScopeResources, ScopeResources}}), errField: "scopes"},
		{name: "scopes checked in curated mode too", section: &HybridConfig{Mode: ModeCurated, Scopes: []string{"x"}}, errField: "scopes"},
		{name: "top_k 1", section: creds(HybridConfig{TopK: 1}), mode: ModeHybrid},
		{name: "top_k 100", section: creds(HybridConfig{TopK: 100}), mode: ModeHybrid},
		{name: "top_k 101", section: creds(HybridConfig{TopK: 101}), errField: "top_k"},
		{name: "top_k negative", section: creds(HybridConfig{TopK: -1}), errField: "top_k"},
		{name: "timeout negative", section: creds(HybridConfig{Timeout: -time.Second}), errField: "timeout"},
		{name: "timeout kept", section: creds(HybridConfig{Timeout: 50 * time.Millisecond}), mode: ModeHybrid,
			check: func(t *testing.T, c HybridConfig) {
				if c.Timeout != 50*time.Millisecond {
					t.Errorf("timeout = %v", c.Timeout)
				}
			}},
		{name: "app and project kept", section: creds(HybridConfig{AppID: "chat", ProjectID: "p1"}), mode: ModeHybrid,
			check: func(t *testing.T, c HybridConfig) {
				if c.AppID != "chat" || c.ProjectID != "p1" {
					t.Errorf("app/project = %q/%q", c.AppID, c.ProjectID)
				}
			}},
		{name: "base_url not http", section: &HybridConfig{BaseURL: "ftp://host", UserID: "u", UserKey: testUserKey}, errField: "base_url"},
		{name: "base_url relative", section: &HybridConfig{BaseURL: "/memories", UserID: "u", UserKey: testUserKey}, errField: "base_url"},
		{name: "base_url holding the key is not echoed", section: &HybridConfig{BaseURL: "htp://" + testUserKey, UserID: "u", UserKey: testUserKey}, errField: "base_url"},
		{name: "key file", section: &HybridConfig{Mode: ModeHybrid, BaseURL: url, UserID: testUserID, UserKeyFile: keyFile}, mode: ModeHybrid,
			check: func(t *testing.T, c HybridConfig) {
				if c.UserKey != testUserKey {
					t.Error("key file not read and trimmed")
				}
			}},
		{name: "key file missing", section: &HybridConfig{Mode: ModeHybrid, BaseURL: url, UserID: testUserID, UserKeyFile: filepath.Join(dir, "nope")}, errField: "user_key_file"},
		{name: "key file empty", section: &HybridConfig{Mode: ModeHybrid, BaseURL: url, UserID: testUserID, UserKeyFile: emptyFile}, errField: "user_key_file"},
		{name: "key and key file", section: creds(HybridConfig{UserKeyFile: keyFile}), errField: "user_key_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, warnings, err := LoadHybrid(tt.section, nil)
			var said []string
			said = append(said, warnings...)
			if err != nil {
				said = append(said, err.Error())
			}
			for _, s := range said {
				if strings.Contains(s, testUserKey) || strings.Contains(s, url) {
					t.Errorf("configured value leaked: %q", s)
				}
			}
			for _, m := range tt.mention {
				if !strings.Contains(strings.Join(said, "\n"), m) {
					t.Errorf("%q does not mention %q", said, m)
				}
			}
			if tt.errField != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Field != tt.errField {
					t.Fatalf("err = %v, want a ConfigError on %s", err, tt.errField)
				}
				if h != nil {
					t.Error("helper returned with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if len(warnings) != tt.warnings {
				t.Errorf("warnings = %q, want %d", warnings, tt.warnings)
			}
			if h.Mode() != tt.mode || h.Config().Mode != tt.mode || h.Enabled() != (tt.mode == ModeHybrid) {
				t.Errorf("mode = %s/%s, enabled %v, want %s", h.Mode(), h.Config().Mode, h.Enabled(), tt.mode)
			}
			if tt.check != nil {
				tt.check(t, h.Config())
			}
		})
	}
}

func TestHybridConfigJSON(t *testing.T) {
	in := `{"mode": "hybrid", "base_url": "http://127.0.0.1:8080", "user_id": "u1", "user_key": "k",
		"scopes": ["resources"], "top_k": 3, "timeout": "250ms", "app_id": "a", "project_id": "p", "extra": 1}`
	var c HybridConfig
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	want := HybridConfig{Mode: "hybrid", BaseURL: "http://127.0.0.1:8080", UserID: "u1", UserKey: "k",
		Scopes: []string{"resources"}, TopK: 3, Timeout: 250 * time.Millisecond, AppID: "a", ProjectID: "p"}
	if c.String() != want.String() || c.UserKey != want.UserKey {
		t.Errorf("decoded %v\nwant    %v", c, want)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"timeout":"250ms"`) {
		t.Errorf("encoded %s", out)
	}
	var back HybridConfig
	if err := json.Unmarshal(out, &back); err != nil || back.String() != c.String() {
		t.Errorf("round trip: %v, %v", back, err)
	}

	for _, bad := range []string{`{"timeout": 10}`, `{"timeout": "ten seconds"}`, `{"top_k": "eight"}`, `[1]`} {
		var c HybridConfig
		err := json.Unmarshal([]byte(bad), &c)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want a ConfigError", bad, err)
		}
	}
	// A missing timeout leaves the default to LoadHybrid.
	var d HybridConfig
	if err := json.Unmarshal([]byte(`{"mode":"curated"}`), &d); err != nil || d.Timeout != 0 {
		t.Errorf("timeout = %v, err %v", d.Timeout, err)
	}
}
