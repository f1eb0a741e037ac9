//go:build !linux

package graph

import "time"

func threadCPU() (time.Duration, bool) { return 0, false }
