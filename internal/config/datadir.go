package config

import "path/filepath"

// UserDataDir is the default data directory: $XDG_DATA_HOME/memgate, else
// $HOME/.local/share/memgate, so every command, started from any folder
// (an MCP client starts `memgate mcp` wherever it likes), finds the same
// memory. It is "" when neither variable is set; Validate then asks for
// --data-dir.
func UserDataDir(getenv func(string) string) string {
	if x := getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "memgate")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "memgate")
	}
	return ""
}
