package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// Machine describes the machine a benchmark runs on, for its summary:
// figures mean little without it.
type Machine struct {
	Cores  int    `json:"cores"`
	CPU    string `json:"cpu"`
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
}

// ThisMachine returns the machine this process runs on.
func ThisMachine() Machine {
	return Machine{Cores: runtime.NumCPU(), CPU: cpuModel(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
}

// cpuModel is the CPU's model name, where the system says (Linux).
func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// PrintHeader starts a benchmark's summary: the machine, and the command
// that reproduces the run.
func PrintHeader(w io.Writer, command string) {
	m := ThisMachine()
	fmt.Fprintf(w, "machine: %d cores, %s (%s/%s)\n", m.Cores, m.CPU, m.GOOS, m.GOARCH)
	fmt.Fprintf(w, "command: %s\n", strings.TrimSpace(command))
}
