package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// timings are the parts of go test's output that differ between runs.
var timings = regexp.MustCompile(`\(\d+\.\d+s\)|\t\d+\.\d+s|goroutine \d+|0x[0-9a-f]+`)

func normalise(s string) []string {
	var out []string
	for _, l := range strings.Split(timings.ReplaceAllString(s, "T"), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// runReport runs testreport with args and returns its output (stdout, then
// stderr) and status. The two are separate buffers: go test's stderr is
// copied by another goroutine.
func runReport(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return out.String() + errOut.String(), code
}

// goTest runs plain `go test args...`, the oracle of what a reader expects
// to see.
func goTest(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command("go", append([]string{"test"}, args...)...).CombinedOutput()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("go test %v: %v", args, err)
	}
	return string(out), code
}

// TestFailuresAreShownAsGoTestShowsThem: every line plain `go test` prints
// for the fixtures (failed tests with their logs and subtests, a panic's
// stack, the package lines) is in testreport's output, in the same order,
// with the same exit status.
func TestFailuresAreShownAsGoTestShowsThem(t *testing.T) {
	for _, pkg := range []string{"./testdata/sample", "./testdata/panics"} {
		t.Run(pkg, func(t *testing.T) {
			want, wantCode := goTest(t, pkg)
			got, code := runReport(t, "--", pkg)
			if code != wantCode || code == 0 {
				t.Errorf("exit status %d, go test's %d (non-zero: the fixture fails)", code, wantCode)
			}
			gotLines, wantLines := normalise(got), normalise(want)
			if n := len(wantLines); n > 0 && wantLines[n-1] == "FAIL" {
				wantLines = wantLines[:n-1] // the go command's closing line, not a package's
			}
			i := 0
			for _, w := range wantLines {
				for i < len(gotLines) && gotLines[i] != w {
					i++
				}
				if i == len(gotLines) {
					t.Fatalf("go test prints %q, testreport does not (in that order).\ngo test:\n%s\ntestreport:\n%s", w, want, got)
				}
				i++
			}
			if strings.Contains(got, "a log line of a passing") || strings.Contains(got, "=== RUN") {
				t.Errorf("testreport shows what go test shows only with -v:\n%s", got)
			}
		})
	}
}

// TestSkippedTestsAreListedWithTheirReason: after the tests, every skipped
// test and subtest is listed with its package and the reason it gave.
func TestSkippedTestsAreListedWithTheirReason(t *testing.T) {
	got, _ := runReport(t, "--", "./testdata/sample")
	const pkg = "github.com/robotsgate/robotsgate/internal/testreport/testdata/sample"
	tail := got[strings.LastIndex(got, "skipped tests"):]
	for _, want := range []string{
		"skipped tests (2):",
		pkg + " TestSkips: sample_test.go:18: needs something that is missing",
		pkg + " TestSubtests/skips: sample_test.go:25: subtest skipped: 42",
	} {
		if !strings.Contains(tail, want) {
			t.Errorf("the summary does not have %q:\n%s", want, tail)
		}
	}
	if got, _ := runReport(t, "--", "-run", "TestPasses", "./testdata/sample"); !strings.Contains(got, "skipped tests: none") {
		t.Errorf("no skip, yet:\n%s", got)
	}
}

// TestSkipsNotOnTheAllowListFail: with -allow, a run whose tests pass
// fails when a skip is not listed, and only then.
func TestSkipsNotOnTheAllowListFail(t *testing.T) {
	const pkg = "github.com/robotsgate/robotsgate/internal/testreport/testdata/sample"
	tests := []struct {
		name, allow string // "-" for no -allow flag
		code        int
		says        string
	}{
		{"no allow-list: listed, not checked", "-", 0, "  " + pkg + " TestSkips:"},
		{"listed with a comment", "# needs something missing here\n" + pkg + " TestSkips\n", 0, "allowed: " + pkg + " TestSkips"},
		{"listed by a pattern", pkg + " Test(Skips|Other)  # why\n", 0, "allowed: " + pkg + " TestSkips"},
		{"empty allow-list", "# nothing may skip\n", 1, "NOT ALLOWED: " + pkg + " TestSkips"},
		{"another package", "github.com/robotsgate/robotsgate/robots TestSkips\n", 1, "NOT ALLOWED: " + pkg + " TestSkips"},
		{"a pattern matches the whole name only", pkg + " TestSkip\n", 1, "NOT ALLOWED: " + pkg + " TestSkips"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--", "-run", "^(TestPasses|TestSkips)$", "./testdata/sample"}
			if tt.allow != "-" {
				file := filepath.Join(t.TempDir(), "allowed-skips")
				if err := os.WriteFile(file, []byte(tt.allow), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"-allow", file}, args...)
			}
			got, code := runReport(t, args...)
			if code != tt.code || !strings.Contains(got, tt.says) {
				t.Errorf("exit status %d, want %d, saying %q:\n%s", code, tt.code, tt.says, got)
			}
		})
	}
}

func TestMalformedAllowListIsAnError(t *testing.T) {
	for _, content := range []string{"onlyapackage\n", "a b c\n", "pkg Test(\n"} {
		file := filepath.Join(t.TempDir(), "allowed-skips")
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, code := runReport(t, "-allow", file, "--", "./testdata/sample"); code != 2 || !strings.Contains(got, file+":1") {
			t.Errorf("%q: exit status %d, output %q; want 2 naming the line", content, code, got)
		}
	}
}

// The repository's allow-list is read by `make test`: it must parse, and
// every entry must have a comment above it saying why.
func TestRepositoryAllowListIsCommented(t *testing.T) {
	const file = "../../.ci/allowed-skips"
	list, err := readAllowList(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) == 0 {
		t.Fatal("no entries")
	}
	data, _ := os.ReadFile(file)
	prevComment := false
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "#"):
			prevComment = true
		case line == "":
			prevComment = false
		case !prevComment:
			t.Errorf("%s:%d: %q has no comment above it saying why it may skip", file, n+1, line)
		}
	}
}
