package config

import "testing"

func TestUserDataDir(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_DATA_HOME": "/x/data", "HOME": "/home/u"}, "/x/data/memgate"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/memgate"},
		// The XDG spec ignores a relative XDG_DATA_HOME.
		{map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/home/u"}, "/home/u/.local/share/memgate"},
		{map[string]string{}, ""},
	} {
		if got := UserDataDir(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("UserDataDir(%v) = %q, want %q", c.env, got, c.want)
		}
	}
	cfg := Default()
	if err := cfg.Validate(); err == nil {
		t.Fatal("no data directory validated")
	}
}
