//go:build !unix

package cli

import "time"

// processCPU is not measured here: figures show 0 CPU seconds.
func processCPU() time.Duration { return 0 }
