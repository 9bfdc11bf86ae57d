//go:build !race

package e2e

// raceEnabled: the tests run without the race detector.
const raceEnabled = false
