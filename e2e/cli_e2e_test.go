//go:build unix

package e2e

// End-to-end tests of the command line (help, flags after arguments, check's
// exit statuses and pacing, lint's inputs and output, version) on the real
// binary built by TestMain. Every URL is on a loopback origin started here.

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// cliRobotsTxt asks every agent for 2 s between requests and FooBot for one
// request every 5 s (Request-rate).
const cliRobotsTxt = "User-agent: *\n" +
	"Disallow: /private\n" +
	"Crawl-delay: 2\n" +
	"\n" +
	"User-agent: FooBot\n" +
	"Disallow: /foo-only\n" +
	"Request-rate: 1/5s\n"

// robotsOrigin is an HTTP server on 127.0.0.1 serving robotsTxt as
// /robots.txt (everything else 404); it records the requests it gets.
type robotsOrigin struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // "User-Agent path"
}

func startRobotsOrigin(t *testing.T, robotsTxt string) *robotsOrigin {
	t.Helper()
	o := &robotsOrigin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.requests = append(o.requests, r.UserAgent()+" "+r.URL.Path)
		o.mu.Unlock()
		if r.URL.Path != "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, robotsTxt)
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *robotsOrigin) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.requests...)
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// runBinStdin is runBin with stdin as the process's standard input.
func runBinStdin(t *testing.T, dir, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, binEnv(), strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("robotsgate %s: still running after 30s", strings.Join(args, " "))
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("robotsgate %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// TestCLIHelp: `help` lists the commands, `help COMMAND`, `COMMAND -h` and
// `COMMAND -help` print the command's usage and every flag with what it does
// and its default, on standard output with exit status 0.
//
//	robotsgate help
//	robotsgate help check; robotsgate check -h; robotsgate check -help (each command)
//	robotsgate help nosuch
func TestCLIHelp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	out, errOut, code := runBin(t, dir, "help")
	if code != 0 || errOut != "" {
		t.Fatalf("help: exit %d, stderr %q; want 0 and nothing on stderr", code, errOut)
	}
	for _, name := range []string{"serve", "check", "lint", "ca", "version", "help"} {
		if !hasLinePrefix(out, "  "+name+" ") {
			t.Errorf("help does not list %s:\n%s", name, out)
		}
	}
	for _, flagOut := range []string{"-h", "--help"} {
		if top, _, code := runBin(t, dir, flagOut); code != 0 || top != out {
			t.Errorf("robotsgate %s: exit %d, want 0 and the same text as help; got:\n%s", flagOut, code, top)
		}
	}

	for _, c := range []struct {
		name  string
		flags []string // each flag's line and a part of its description
	}{
		{"serve", []string{"-config FILE\n", "-listen ADDR\n", "-admin-listen ADDR\n", `"off" turns them off`, "built-in default 127.0.0.1:8080"}},
		{"check", []string{"-config FILE\n", "-agent NAME\n", "-ua HEADER\n", "product token such as FooBot", "Exit status: 0 every URL allowed, 1"}},
		{"lint", []string{"-config FILE\n", "-json\n", "egress rules", "- for standard input"}},
		{"ca", []string{"-dir DIR\n", `(default "robotsgate-state")`, "-force\n", "replace an existing CA"}},
		{"version", []string{"takes no flags"}},
		{"help", []string{"takes no flags"}},
	} {
		help, errOut, code := runBin(t, dir, "help", c.name)
		if code != 0 || errOut != "" || !strings.HasPrefix(help, "usage: robotsgate "+c.name) {
			t.Errorf("help %s: exit %d, stderr %q, stdout:\n%s\nwant 0 and the usage line first", c.name, code, errOut, help)
			continue
		}
		for _, want := range c.flags {
			if !strings.Contains(help, want) {
				t.Errorf("help %s does not contain %q:\n%s", c.name, want, help)
			}
		}
		for _, h := range []string{"-h", "-help"} {
			if out, errOut, code := runBin(t, dir, c.name, h); code != 0 || out != help || errOut != "" {
				t.Errorf("%s %s: exit %d, stderr %q, stdout:\n%s\nwant 0 and the text of help %[1]s", c.name, h, code, errOut, out)
			}
		}
	}

	_, errOut, code = runBin(t, dir, "help", "nosuch")
	if code != 2 || !strings.Contains(errOut, `unknown command "nosuch"`) {
		t.Errorf("help nosuch: exit %d, stderr %q; want 2 naming it", code, errOut)
	}
	// A bad flag: the error and the usage line on stderr, nothing on stdout.
	out, errOut, code = runBin(t, dir, "ca", "init", "-nope")
	if code != 2 || out != "" || !strings.Contains(errOut, "flag provided but not defined: -nope") ||
		!strings.Contains(errOut, "usage: robotsgate ca init") {
		t.Errorf("ca init -nope: exit %d, stdout %q, stderr %q; want 2, the error and the usage line", code, out, errOut)
	}
}

// hasLinePrefix reports whether text has a line starting with prefix.
func hasLinePrefix(text, prefix string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// TestCLIFlagsAfterArguments: flags are taken before or after the
// arguments, and "--" ends them.
//
//	robotsgate check URL -config FILE -agent FooBot URL2
//	robotsgate lint FILE -json
//	robotsgate lint -- -json            (a file named "-json")
func TestCLIFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startRobotsOrigin(t, cliRobotsTxt)
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, e2eConfig{dir: dir}.yaml())

	out, errOut, code := runBin(t, dir, "check", o.URL+"/foo-only", "-config", cfgPath, "-agent", "FooBot", o.URL+"/private/x")
	if code != 1 || !strings.HasPrefix(out, "DISALLOW  "+o.URL+"/foo-only") || !strings.Contains(out, "ALLOW     "+o.URL+"/private/x") {
		t.Errorf("check URL -config FILE -agent FooBot URL: exit %d, want 1, /foo-only refused and /private/x allowed for FooBot; stdout:\n%s\nstderr: %s", code, out, errOut)
	}

	file := filepath.Join(dir, "robots.txt")
	writeFile(t, file, "User-agent: *\nDisallow: nopath\n")
	out, errOut, code = runBin(t, dir, "lint", file, "-json")
	var findings []map[string]any
	if err := json.Unmarshal([]byte(out), &findings); err != nil || code != 1 || len(findings) != 1 {
		t.Errorf("lint FILE -json: exit %d, want 1 and a JSON array of one finding (%v); stdout:\n%s\nstderr: %s", code, err, out, errOut)
	}

	writeFile(t, filepath.Join(dir, "-json"), "User-agent: *\nDisallow: /\n")
	out, errOut, code = runBin(t, dir, "lint", "--", "-json")
	if code != 0 || !strings.HasPrefix(out, "-json: no problems") {
		t.Errorf("lint -- -json: exit %d, stdout %q, stderr %q; want 0 and the file named -json linted", code, out, errOut)
	}
}

// TestCLICheckExitStatus: check exits 0 when every URL is allowed, 1 when
// robots.txt or policy (here the egress rules) refuses one, 2 when a
// robots.txt cannot be fetched, 3 on a usage or configuration error; and it
// prints the pacing interval that would apply.
//
//	robotsgate check -config FILE URL...
//	robotsgate check URL                    (built-in defaults: loopback refused)
//	robotsgate check -config bad.yaml URL; check -nope URL; check; check ftp://...
func TestCLICheckExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := startRobotsOrigin(t, cliRobotsTxt)
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, e2eConfig{dir: dir}.yaml())
	floorPath := filepath.Join(dir, "floor.yaml")
	writeFile(t, floorPath, e2eConfig{dir: dir}.yaml()+"pacing:\n  default_delay: 3s\n")
	badPath := filepath.Join(dir, "bad.yaml")
	writeFile(t, badPath, "robots:\n  strict_paths: maybe\n")
	down := "http://" + closedPort(t)

	for _, c := range []struct {
		name string
		args []string
		code int
		want []string // in stdout, or in stderr for exit status 3
	}{
		{"allowed, Crawl-delay", []string{"-config", cfgPath, o.URL + "/public"}, 0,
			[]string{"ALLOW     " + o.URL + "/public", "pacing: one request every 2s, the largest of: robots.txt Crawl-delay 2s"}},
		{"allowed, Request-rate", []string{"-config", cfgPath, "-agent", "FooBot", o.URL + "/public"}, 0,
			[]string{"pacing: one request every 5s, the largest of: robots.txt Request-rate 5s"}},
		{"allowed, pacing.default_delay", []string{"-config", floorPath, o.URL + "/public"}, 0,
			[]string{"pacing: one request every 3s, the largest of: robots.txt Crawl-delay 2s, the configured minimum delay 3s"}},
		{"refused by robots.txt", []string{"-config", cfgPath, o.URL + "/private/x"}, 1,
			[]string{"DISALLOW  " + o.URL + "/private/x", `"Disallow: /private" (line 2`}},
		{"refused by the egress rules", []string{o.URL + "/public"}, 1,
			[]string{"EGRESS-DENIED " + o.URL + "/public", "(loopback); the egress guard refused the address (egress.allow_networks would allow it)"}},
		{"robots.txt unreachable", []string{"-config", cfgPath, down + "/x"}, 2,
			[]string{"UNREACHABLE " + down + "/x", "robots.txt " + down + "/robots.txt unreachable"}},
		{"allowed and unreachable: the highest status", []string{"-config", cfgPath, o.URL + "/public", down + "/x", o.URL + "/private/y"}, 2,
			[]string{"ALLOW     " + o.URL + "/public", "DISALLOW  " + o.URL + "/private/y"}},
		{"unknown flag", []string{"-config", cfgPath, o.URL + "/public", "-nope"}, 3, []string{"flag provided but not defined: -nope", "usage: robotsgate check"}},
		{"no URL", []string{"-agent", "FooBot"}, 3, []string{"no URL to check"}},
		// With -config and no URL, check tests the configuration (TestCLIConfigTest).
		{"no URL, a configuration", []string{"-config", cfgPath}, 0, []string{"configuration " + cfgPath + ": valid"}},
		{"not an http(s) URL", []string{"-config", cfgPath, "ftp://127.0.0.1/x"}, 3, []string{`invalid URL "ftp://127.0.0.1/x"`}},
		{"unparsable URL", []string{"-config", cfgPath, "http://[::1/x"}, 3, []string{`invalid URL "http://[::1/x"`}},
		{"invalid configuration", []string{"-config", badPath, o.URL + "/public"}, 3, []string{"bad.yaml:2: robots.strict_paths"}},
		{"missing configuration", []string{"-config", filepath.Join(dir, "missing.yaml"), o.URL + "/public"}, 3, []string{"missing.yaml"}},
	} {
		out, errOut, code := runBin(t, dir, append([]string{"check"}, c.args...)...)
		where := out
		if c.code == 3 {
			where = errOut
		}
		if code != c.code {
			t.Errorf("%s: check %s: exit %d, want %d; stdout:\n%s\nstderr:\n%s", c.name, strings.Join(c.args, " "), code, c.code, out, errOut)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(where, want) {
				t.Errorf("%s: check %s: output does not contain %q; stdout:\n%s\nstderr:\n%s", c.name, strings.Join(c.args, " "), want, out, errOut)
			}
		}
	}
	// The egress refusal is decided before anything is sent; without
	// -fetch the URLs themselves are never requested, only the files
	// that judge them.
	for _, r := range o.seen() {
		if !strings.HasSuffix(r, " /robots.txt") && !strings.HasSuffix(r, " /.well-known/tdmrep.json") {
			t.Errorf("the origin got a request other than robots.txt and tdmrep.json: %q", r)
		}
	}
}

// TestCLILint: several inputs (files, standard input, URLs), counts with
// plurals, URL fetches through the egress rules of -config, JSON without
// HTML escaping.
//
//	robotsgate lint FILE1 FILE2
//	robotsgate lint - FILE2 < robots.txt
//	robotsgate lint -json - < page.html
//	robotsgate lint -config FILE URL; robotsgate lint URL
func TestCLILint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	withError := filepath.Join(dir, "error.txt") // 1 error (line 2), 2 warnings (lines 3, 4)
	writeFile(t, withError, "User-agent: *\nDisallow: nopath\nFoo: 1\nBar: 2\n")
	withWarning := filepath.Join(dir, "warning.txt") // 1 warning (line 3)
	writeFile(t, withWarning, "User-agent: *\nDisallow: /x\nFoo: 1\n")

	out, errOut, code := runBin(t, dir, "lint", withError, withWarning)
	for _, want := range []string{
		withError + ": line 2: error: path-no-slash",
		withError + ": 1 error, 2 warnings\n",
		withWarning + ": line 3: warning: unknown-field",
		withWarning + ": 1 warning\n",
		"total: 1 error, 3 warnings in 2 files\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint of two files: stdout does not contain %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("lint of two files, one with an error: exit %d, want 1; stderr %q", code, errOut)
	}

	out, errOut, code = runBinStdin(t, dir, "User-agent: *\nDisallow: /\n", "lint", "-", withWarning)
	if code != 0 || !strings.Contains(out, "<stdin>: no problems\n") || !strings.Contains(out, withWarning+": 1 warning\n") {
		t.Errorf("lint - FILE: exit %d, want 0, standard input and the file linted; stdout:\n%s\nstderr: %s", code, out, errOut)
	}

	out, errOut, code = runBinStdin(t, dir, "<html><body>Not found & gone</body></html>\n", "lint", "-json", "-")
	var findings []struct {
		File, Code string
		Line       int
	}
	if err := json.Unmarshal([]byte(out), &findings); err != nil || code != 1 || len(findings) != 1 ||
		findings[0].Code != "html" || findings[0].File != "<stdin>" || findings[0].Line != 1 {
		t.Errorf("lint -json - with an HTML page: exit %d, %v; want 1 and one html finding of <stdin> line 1; stdout:\n%s\nstderr: %s", code, err, out, errOut)
	}
	if !strings.Contains(out, `"<html><body>Not found & gone`) || strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) {
		t.Errorf("lint -json escapes HTML (<, >, &) in the quoted line, or does not quote it:\n%s", out)
	}

	// A URL is fetched through the egress rules of -config (loopback
	// allowed by egress.allow_networks), with its robots.fetch_user_agent.
	o := startRobotsOrigin(t, cliRobotsTxt)
	cfgPath := filepath.Join(dir, "cfg.yaml")
	writeFile(t, cfgPath, e2eConfig{dir: dir}.yaml())
	out, errOut, code = runBin(t, dir, "lint", o.URL+"/robots.txt", "-config", cfgPath)
	if code != 0 || !strings.Contains(out, o.URL+"/robots.txt: no problems") {
		t.Errorf("lint URL -config FILE: exit %d, want 0 and the fetched file linted; stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	if seen := o.seen(); len(seen) != 1 || seen[0] != e2eFetchUA+" /robots.txt" {
		t.Errorf("the origin got %q, want one robots.txt fetch by %q", seen, e2eFetchUA)
	}
	// Without -config the built-in egress rules refuse loopback: nothing
	// is sent, exit status 2 (could not be read).
	out, errOut, code = runBin(t, dir, "lint", o.URL+"/robots.txt")
	if code != 2 || !strings.Contains(errOut, "egress denied") || !strings.Contains(errOut, "egress.allow_networks") {
		t.Errorf("lint URL on the built-in egress rules: exit %d, stderr %q, stdout %q; want 2 and the egress refusal", code, errOut, out)
	}
	if seen := o.seen(); len(seen) != 1 {
		t.Errorf("lint on the built-in egress rules reached the loopback origin: %q", seen)
	}
	// A missing file: reported, the others still linted, exit status 2.
	out, errOut, code = runBin(t, dir, "lint", filepath.Join(dir, "missing.txt"), withError)
	if code != 2 || !strings.Contains(errOut, "missing.txt") || !strings.Contains(out, withError+": 1 error, 2 warnings") {
		t.Errorf("lint MISSING FILE: exit %d, stdout %q, stderr %q; want 2, the missing file named and the other linted", code, out, errOut)
	}
	if _, errOut, code := runBin(t, dir, "lint"); code != 3 || !strings.Contains(errOut, "usage: robotsgate lint") {
		t.Errorf("lint without arguments: exit %d, stderr %q; want 3 and the usage line", code, errOut)
	}
}

// TestCLIVersion: a binary built from this checkout without -X prints the
// module version and VCS revision from its build information, not a
// constant.
//
//	go build -buildvcs=auto -o DIR/robotsgate github.com/robotsgate/robotsgate && DIR/robotsgate version
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "robotsgate")
	// -buildvcs=auto: stamp the revision when building from a checkout,
	// whatever GOFLAGS says.
	cmd := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "github.com/robotsgate/robotsgate")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	want := "robotsgate " + info.Main.Version + "\n"
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		want += "revision " + rev + " (" + settings["vcs.time"]
		if settings["vcs.modified"] == "true" {
			want += ", modified"
		}
		want += ")\n"
	} else {
		t.Logf("built without VCS information (not a checkout, or no git): only the module version %q is checked", info.Main.Version)
	}
	want += info.GoVersion + "\n"
	out, errOut, code := runProgram(t, t.TempDir(), binEnv(), bin, "version")
	if code != 0 || out != want {
		t.Errorf("version: exit %d, stderr %q, stdout:\n%s\nwant 0 and:\n%s", code, errOut, out, want)
	}

	// -X main.version replaces the module version (the binary of the other
	// end-to-end tests is built so).
	out, _, code = runBin(t, t.TempDir(), "version")
	if code != 0 || !strings.HasPrefix(out, "robotsgate "+e2eVersion+"\n") {
		t.Errorf("version of the binary built with -X main.version=%s: exit %d, stdout %q", e2eVersion, code, out)
	}
}
