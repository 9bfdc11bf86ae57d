// Package panics is a fixture of testreport's tests: a test that crashes
// the test binary. It is under testdata, so `go test ./...` never runs it.
package panics

import "testing"

func TestPanics(t *testing.T) {
	t.Log("a log line before the panic")
	var m map[string]int
	m["x"] = 1
}
