//go:build !linux

package vector

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
