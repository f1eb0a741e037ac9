package graph

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU reads CLOCK_THREAD_CPUTIME_ID: the CPU time of the calling OS
// thread. With the goroutine locked to its thread, the difference around a
// call is that call's own work, whatever else the machine is running.
func threadCPU() (time.Duration, bool) {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
