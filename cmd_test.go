package main

// Unit tests of the command line's pure helpers; the commands themselves
// are tested end to end on the real binary (e2e/cli_e2e_test.go).

import (
	"flag"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/robots"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// TestParseArgs: flags are parsed wherever they are, with the flag
// package's rules for values; "--" ends them and "-" is an argument.
func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args       []string
		positional []string
		agent      string
		json       bool
		err        string
	}{
		{args: []string{"u1", "u2"}, positional: []string{"u1", "u2"}},
		{args: []string{"-agent", "FooBot", "u1"}, positional: []string{"u1"}, agent: "FooBot"},
		{args: []string{"u1", "-json"}, positional: []string{"u1"}, json: true},
		{args: []string{"u1", "-agent", "FooBot", "u2", "--json"}, positional: []string{"u1", "u2"}, agent: "FooBot", json: true},
		{args: []string{"u1", "-agent=FooBot", "-json=false", "u2"}, positional: []string{"u1", "u2"}, agent: "FooBot"},
		// A boolean flag takes no value: "u2" stays an argument.
		{args: []string{"-json", "u2"}, positional: []string{"u2"}, json: true},
		// "--" ends the flags; after it "-json" is an argument.
		{args: []string{"u1", "--", "-json", "-agent"}, positional: []string{"u1", "-json", "-agent"}},
		{args: []string{"--", "--"}, positional: []string{"--"}},
		// "--" as the value of a flag does not end the flags.
		{args: []string{"-agent", "--", "u1", "-json"}, positional: []string{"u1"}, agent: "--", json: true},
		// "-" is standard input, an argument.
		{args: []string{"-", "-json"}, positional: []string{"-"}, json: true},
		{args: []string{"u1", "-nope"}, err: "flag provided but not defined: -nope"},
		{args: []string{"u1", "-agent"}, err: "flag needs an argument: -agent"},
		{args: []string{"u1", "-h"}, err: flag.ErrHelp.Error()},
		{args: []string{"-help", "u1"}, err: flag.ErrHelp.Error()},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		agent := fs.String("agent", "", "")
		asJSON := fs.Bool("json", false, "")
		positional, err := parseArgs(fs, c.args)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("parseArgs(%q): error %v, want %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(positional, c.positional) || *agent != c.agent || *asJSON != c.json {
			t.Errorf("parseArgs(%q) = %q, %v with -agent %q -json %t; want %q with -agent %q -json %t",
				c.args, positional, err, *agent, *asJSON, c.positional, c.agent, c.json)
		}
	}
}

// TestLintCounts: the counts line has correct plurals and leaves out the
// severities with no finding.
func TestLintCounts(t *testing.T) {
	for _, c := range []struct {
		errors, warnings, notes int
		want                    string
	}{
		{0, 0, 0, "no problems"},
		{1, 0, 0, "1 error"},
		{0, 1, 0, "1 warning"},
		{0, 0, 1, "1 note"},
		{1, 2, 0, "1 error, 2 warnings"},
		{2, 1, 3, "2 errors, 1 warning, 3 notes"},
		{0, 2, 1, "2 warnings, 1 note"},
	} {
		var n lintCounts
		n[robots.Error], n[robots.Warning], n[robots.Info] = c.errors, c.warnings, c.notes
		if got := n.String(); got != c.want {
			t.Errorf("%d errors, %d warnings, %d notes: %q, want %q", c.errors, c.warnings, c.notes, got, c.want)
		}
	}
}

// TestVersionText: the version comes from the build information (module
// version, VCS revision, time, modified, Go version) unless set with -X.
func TestVersionText(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "83947e8b5570c4018acaf47ca83b5c66ef8e5dee"},
		{Key: "vcs.time", Value: "2026-11-23T19:21:40Z"},
	}
	info := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/robotsgate/robotsgate", Version: version}, Settings: settings}
	}
	for _, c := range []struct {
		name     string
		override string
		info     *debug.BuildInfo
		want     string
	}{
		{"checkout, modified", "", info("v0.0.0-20261123192140-83947e8b5570+dirty", append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "true"})...),
			"robotsgate v0.0.0-20261123192140-83947e8b5570+dirty\nrevision 83947e8b5570c4018acaf47ca83b5c66ef8e5dee (2026-11-23T19:21:40Z, modified)\ngo1.26.8\n"},
		{"tagged, clean", "", info("v1.2.0", append(vcs, debug.BuildSetting{Key: "vcs.modified", Value: "false"})...),
			"robotsgate v1.2.0\nrevision 83947e8b5570c4018acaf47ca83b5c66ef8e5dee (2026-11-23T19:21:40Z)\ngo1.26.8\n"},
		{"-X main.version", "1.2.0-deb1", info("(devel)", vcs...),
			"robotsgate 1.2.0-deb1\nrevision 83947e8b5570c4018acaf47ca83b5c66ef8e5dee (2026-11-23T19:21:40Z)\ngo1.26.8\n"},
		{"no VCS information (-buildvcs=false)", "", info("(devel)"), "robotsgate (devel)\ngo1.26.8\n"},
		{"installed with go install", "", info("v1.2.0"), "robotsgate v1.2.0\ngo1.26.8\n"},
		{"no build information", "", nil, "robotsgate unknown\n"},
	} {
		if got := versionText(c.override, c.info); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
}

// TestDescribePacing: check says which interval applies and what it is
// the largest of (Crawl-delay, Request-rate, the operator's floor or cap,
// adaptive pacing).
func TestDescribePacing(t *testing.T) {
	file := robots.Parse([]byte("User-agent: *\nDisallow: /private\nCrawl-delay: 2\n\n" +
		"User-agent: FooBot\nDisallow: /private\nCrawl-delay: 1\nRequest-rate: 1/5s\n\n" +
		"User-agent: BarBot\nDisallow: /x\n"))
	decision := func(agent string, interval, asked, floor, adaptive time.Duration) *policy.Decision {
		g := file.GroupForUserAgent(agent)
		return &policy.Decision{Robots: &resolver.Result{File: file}, Rule: g.Decide("/"), Interval: interval,
			Asked: asked, Floor: floor, Adaptive: adaptive}
	}
	s := time.Second
	for _, c := range []struct {
		d    *policy.Decision
		want string
	}{
		{decision("AnyBot", 2*s, 2*s, 0, 0), "pacing: one request every 2s, the largest of: robots.txt Crawl-delay 2s"},
		{decision("FooBot", 5*s, 5*s, 0, 0), "pacing: one request every 5s, the largest of: robots.txt Request-rate 5s"},
		{decision("AnyBot", 3*s, 2*s, 3*s, 0), "pacing: one request every 3s, the largest of: robots.txt Crawl-delay 2s, the configured minimum delay 3s"},
		{decision("BarBot", 3*s, 0, 3*s, 0), "pacing: one request every 3s, the largest of: the configured minimum delay 3s"},
		{decision("FooBot", s, 5*s, 0, 0), "pacing: one request every 1s, the largest of: robots.txt Request-rate 5s capped by pacing.max_delay"},
		{decision("AnyBot", 5*s, 2*s, 0, 5*s), "pacing: one request every 5s, the largest of: robots.txt Crawl-delay 2s, adaptive (pacing.adaptive.factor × the origin's response time) 5s"},
		{decision("BarBot", 0, 0, 0, 0), "not paced"},
	} {
		if got := describePacing(c.d); got != c.want {
			t.Errorf("agent %q interval %v: %q, want %q", c.d.Rule.Group.Name(), c.d.Interval, got, c.want)
		}
	}
}

// TestCommandsHelp: every command has a usage line and a description, and
// each of its flags a description (the help output lists them).
func TestCommandsHelp(t *testing.T) {
	for _, c := range commands {
		if c.summary == "" || c.details == "" || c.usageExit == 0 {
			t.Errorf("command %s: summary, details and usage exit status are required", c.name)
		}
		fs := c.flagSet(io.Discard)
		c.setup(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if f.Usage == "" {
				t.Errorf("%s -%s has no description", c.name, f.Name)
			}
			if !strings.Contains(c.synopsis, "-"+f.Name) {
				t.Errorf("%s -%s is missing from the usage line %q", c.name, f.Name, c.synopsis)
			}
		})
	}
}

// TestCheckExitStatusOfEveryDecision: check exits 0 for an allowed URL, 2
// when nothing can be decided now (robots.txt, a tdmrep.json or a licence
// unreadable, the destination's name not resolving, time running out) and
// 1 for every other refusal, the decision's name being the proxy's.
func TestCheckExitStatusOfEveryDecision(t *testing.T) {
	undecidable := []string{audit.Unreachable, audit.UsageUnknown, audit.UpstreamError, audit.ClientClosed}
	for _, d := range audit.Decisions() {
		want := exitRefused
		switch {
		case d.Name == audit.Allow:
			want = exitAllowed
		case slices.Contains(undecidable, d.Name):
			want = exitUnreachable
		}
		if got := exitStatus(d.Name); got != want {
			t.Errorf("check's exit status for %s: %d, want %d", d.Name, got, want)
		}
	}
}
