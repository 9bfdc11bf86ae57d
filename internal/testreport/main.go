// Command testreport runs `go test -json` and prints what `go test` prints
// without -v (a line per package, and the output of every failed test), then
// the list of the tests that were skipped, with the reason each gave. With
// -allow FILE it fails when a test skipped that FILE does not list: a skip
// is a test that did not run, and one nobody sees is a guard nobody has.
//
//	go run ./internal/testreport -allow .ci/allowed-skips -- -race ./...
//
// Everything after "--" goes to `go test`. The exit status is go test's
// when it failed, else 1 when a skip is not allowed, else 0. The output of
// tests that pass (their logs and prints) is left out, as -v would show it.
//
// FILE has one entry per line, "IMPORT-PATH TEST-REGEXP": a package and a
// regular expression that must match the whole name of the skipped test
// (subtests included, "TestX/case"). '#' starts a comment; every entry
// should have one saying why that test may skip.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its arguments and output, for the tests.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	allowFile := fs.String("allow", "", "fail on a skipped test not listed in `FILE`")
	goCmd := fs.String("go", "go", "the go command")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var allow []allowEntry
	if *allowFile != "" {
		var err error
		if allow, err = readAllowList(*allowFile); err != nil {
			fmt.Fprintf(stderr, "testreport: %v\n", err)
			return 2
		}
	}

	cmd := exec.Command(*goCmd, append([]string{"test", "-json"}, fs.Args()...)...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testreport: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testreport: %v\n", err)
		return 2
	}
	r := newReport(stdout)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event (go test prints some errors as plain text):
			// pass it on as it is.
			fmt.Fprintln(stdout, sc.Text())
			continue
		}
		r.event(e)
	}
	scanErr := sc.Err()
	waitErr := cmd.Wait()
	r.flush()

	notAllowed := r.summary(stdout, allow, *allowFile != "")
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		return exit.ExitCode()
	case waitErr != nil:
		fmt.Fprintf(stderr, "testreport: go test: %v\n", waitErr)
		return 2
	case scanErr != nil:
		fmt.Fprintf(stderr, "testreport: reading go test's output: %v\n", scanErr)
		return 2
	case notAllowed > 0:
		fmt.Fprintf(stdout, "FAIL: %d skipped test(s) not on the allow-list %s: install what they need (make deps), or, if the skip is legitimate, list the test there with a comment saying why\n",
			notAllowed, *allowFile)
		return 1
	}
	return 0
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// testState is what is known of one test (or subtest) of a package.
type testState struct {
	name  string
	lines []string // its output, without the "=== RUN" framing
	done  bool     // passed, failed or skipped
	fail  bool
}

// report turns events into go test's plain output and collects the skips.
type report struct {
	w       io.Writer
	tests   map[string]*testState // by package + "\x00" + test
	order   map[string][]*testState
	skipped []skip
}

// skip is a skipped test and the reason it printed.
type skip struct {
	pkg, test, reason string
}

func newReport(w io.Writer) *report {
	return &report{w: w, tests: map[string]*testState{}, order: map[string][]*testState{}}
}

func (r *report) state(pkg, test string) *testState {
	key := pkg + "\x00" + test
	st, ok := r.tests[key]
	if !ok {
		st = &testState{name: test}
		r.tests[key] = st
		r.order[pkg] = append(r.order[pkg], st)
	}
	return st
}

func (r *report) event(e event) {
	switch {
	case e.Action == "build-output":
		io.WriteString(r.w, e.Output)
	case e.Test == "":
		// A package's own lines: "ok  pkg 1.2s", "FAIL pkg", a panic
		// outside any test... The bare "PASS" go test prints only with -v.
		if e.Action == "output" && e.Output != "PASS\n" {
			io.WriteString(r.w, e.Output)
		}
		if e.Action == "pass" || e.Action == "fail" {
			r.flushPackage(e.Package)
		}
	default:
		st := r.state(e.Package, e.Test)
		switch e.Action {
		case "output":
			if !strings.HasPrefix(e.Output, "=== ") {
				st.lines = append(st.lines, e.Output)
			}
		case "pass":
			st.done = true
		case "skip":
			st.done = true
			r.skipped = append(r.skipped, skip{e.Package, e.Test, skipReason(st)})
		case "fail":
			st.done, st.fail = true, true
			if !strings.Contains(e.Test, "/") {
				r.printFailed(e.Package, st, 0)
			}
		}
	}
}

// skipReason is what a skipped test printed, on one line.
func skipReason(st *testState) string {
	var parts []string
	for _, l := range st.lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--- SKIP: ") {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// printFailed prints a failed test as go test does: its "--- FAIL" line,
// what it printed, then its failed subtests, each level indented by four
// spaces.
func (r *report) printFailed(pkg string, st *testState, depth int) {
	indent := strings.Repeat("    ", depth)
	header := "--- FAIL: " + st.name + "\n"
	var body []string
	for _, l := range st.lines {
		if strings.HasPrefix(l, "--- FAIL: "+st.name+" ") {
			header = l
			continue
		}
		body = append(body, l)
	}
	io.WriteString(r.w, indent+header)
	for _, l := range body {
		io.WriteString(r.w, indent+l)
	}
	for _, sub := range r.order[pkg] {
		if sub.fail && isChild(st.name, sub.name) {
			r.printFailed(pkg, sub, depth+1)
		}
	}
	st.lines = nil
}

// isChild reports whether sub is a direct subtest of parent.
func isChild(parent, sub string) bool {
	rest, ok := strings.CutPrefix(sub, parent+"/")
	return ok && !strings.Contains(rest, "/")
}

// flushPackage prints what tests of pkg that never ended printed (a
// timeout or a crash of the test binary ends them without a verdict), and
// forgets the package.
func (r *report) flushPackage(pkg string) {
	for _, st := range r.order[pkg] {
		if !st.done && len(st.lines) > 0 {
			fmt.Fprintf(r.w, "--- %s did not finish; its output:\n", st.name)
			for _, l := range st.lines {
				io.WriteString(r.w, "    "+l)
			}
		}
		delete(r.tests, pkg+"\x00"+st.name)
	}
	delete(r.order, pkg)
}

// flush ends every package still open (go test itself died).
func (r *report) flush() {
	pkgs := make([]string, 0, len(r.order))
	for pkg := range r.order {
		pkgs = append(pkgs, pkg)
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		r.flushPackage(pkg)
	}
}

// summary prints the skipped tests, each marked when check is on, and
// returns how many are not allowed.
func (r *report) summary(w io.Writer, allow []allowEntry, check bool) (notAllowed int) {
	if len(r.skipped) == 0 {
		fmt.Fprintln(w, "\nskipped tests: none")
		return 0
	}
	fmt.Fprintf(w, "\nskipped tests (%d):\n", len(r.skipped))
	for _, s := range r.skipped {
		mark := ""
		if check {
			if allowed(allow, s) {
				mark = "allowed: "
			} else {
				mark, notAllowed = "NOT ALLOWED: ", notAllowed+1
			}
		}
		fmt.Fprintf(w, "  %s%s %s: %s\n", mark, s.pkg, s.test, s.reason)
	}
	return notAllowed
}

// allowEntry is one line of the allow-list.
type allowEntry struct {
	pkg  string
	test *regexp.Regexp
}

func allowed(list []allowEntry, s skip) bool {
	for _, e := range list {
		if e.pkg == s.pkg && e.test.MatchString(s.test) {
			return true
		}
	}
	return false
}

// readAllowList reads FILE (see the package documentation).
func readAllowList(path string) ([]allowEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list []allowEntry
	for n, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		switch len(fields) {
		case 0:
			continue
		case 2:
		default:
			return nil, fmt.Errorf("%s:%d: want \"IMPORT-PATH TEST-REGEXP\", got %q", path, n+1, strings.TrimSpace(line))
		}
		re, err := regexp.Compile("^(?:" + fields[1] + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n+1, err)
		}
		list = append(list, allowEntry{fields[0], re})
	}
	return list, nil
}
