//go:build race

package e2e

// raceEnabled: the tests run under the race detector, so the binary they
// start is built with it too.
const raceEnabled = true
