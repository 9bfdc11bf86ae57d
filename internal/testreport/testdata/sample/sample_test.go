// Package sample is the fixture of testreport's tests: a passing test, a
// failing one with logs, a skipped one and subtests of each kind. It is
// under testdata, so `go test ./...` never runs it.
package sample

import "testing"

func TestPasses(t *testing.T) {
	t.Log("a log line of a passing test")
}

func TestFails(t *testing.T) {
	t.Log("a log line before the failure")
	t.Error("the failure message")
}

func TestSkips(t *testing.T) {
	t.Skip("needs something that is missing")
}

func TestSubtests(t *testing.T) {
	t.Log("a log line of the parent")
	t.Run("passes", func(t *testing.T) { t.Log("a log line of a passing subtest") })
	t.Run("fails", func(t *testing.T) { t.Errorf("the subtest's failure") })
	t.Run("skips", func(t *testing.T) { t.Skipf("subtest skipped: %d", 42) })
}
