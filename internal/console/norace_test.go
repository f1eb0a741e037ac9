//go:build !race

package console_test

// raceEnabled is true under the race detector.
const raceEnabled = false
