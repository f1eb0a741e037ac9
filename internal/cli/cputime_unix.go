//go:build unix

package cli

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used:
// on a shared machine it measures work where wall time measures the load.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
