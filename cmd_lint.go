package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/proxy"
	"github.com/robotsgate/robotsgate/refusal"
	"github.com/robotsgate/robotsgate/robots"
)

// stdinName names standard input ("-") in lint's output.
const stdinName = "<stdin>"

// lintCommand is `robotsgate lint [flags] FILE|URL|- ...`.
var lintCommand = &command{
	name:     "lint",
	synopsis: "[-config FILE] [-json] FILE|URL|- ...",
	summary:  "check robots.txt files for errors and warnings, with line numbers",
	details: "Checks robots.txt files as Google's parser reads them and prints each finding (error,\n" +
		"warning or note) with its line number, then the counts per input. An argument is a file,\n" +
		"an http(s) URL (fetched through the egress rules of the configuration, as the proxy\n" +
		"fetches robots.txt) or - for standard input.\n\n" +
		"Exit status: 0 no errors, 1 errors found, 2 an input could not be read or fetched, 3 usage\n" +
		"or configuration error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML) whose egress rules (egress.*) and mitm.upstream_ca URL\nfetches follow; the built-in defaults without one (which refuse loopback and private\nnetworks)")
		asJSON := fs.Bool("json", false, "print the findings as one JSON array, each with its file, line, severity, code and\nmessage")
		return func(args []string, s stdio) (int, error) {
			return lint(*configPath, *asJSON, args, s)
		}
	},
}

// lintFinding is one finding in lint -json output.
type lintFinding struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

// lintCounts counts findings by severity.
type lintCounts [robots.Error + 1]int

func (c *lintCounts) add(o lintCounts) {
	for i := range c {
		c[i] += o[i]
	}
}

// String says "1 error, 2 warnings, 1 note", leaving out the severities
// with none, or "no problems".
func (c lintCounts) String() string {
	var parts []string
	for _, k := range []struct {
		sev  robots.Severity
		noun string
	}{{robots.Error, "error"}, {robots.Warning, "warning"}, {robots.Info, "note"}} {
		if n := c[k.sev]; n > 0 {
			parts = append(parts, plural(n, k.noun))
		}
	}
	if len(parts) == 0 {
		return "no problems"
	}
	return strings.Join(parts, ", ")
}

// plural says "1 error", "2 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func lint(configPath string, asJSON bool, args []string, s stdio) (int, error) {
	if len(args) == 0 {
		return 0, usageError("no robots.txt to check (a FILE, URL, or - for standard input)")
	}
	stdins := 0
	for _, a := range args {
		if a == "-" {
			stdins++
		}
	}
	if stdins > 1 {
		return 0, usageError("standard input (-) given more than once")
	}
	cfg, err := loadConfig(configPath, "", "")
	if err != nil {
		return exitCheckUsage, err
	}
	var client *http.Client
	if slices.ContainsFunc(args, isURL) {
		if client, err = proxy.FetchClient(cfg); err != nil {
			return exitCheckUsage, err
		}
	}
	code := exitAllowed
	findings := []lintFinding{}
	var total lintCounts
	linted := 0
	for _, arg := range args {
		name := arg
		if arg == "-" {
			name = stdinName
		}
		body, err := readRobots(arg, s.in, client, cfg.Robots.FetchUserAgent)
		if err != nil {
			fmt.Fprintf(s.errOut, "robotsgate lint: %v\n", err)
			code = exitUnreachable
			continue
		}
		linted++
		var counts lintCounts
		for _, d := range robots.Lint(body) {
			counts[d.Severity]++
			if asJSON {
				findings = append(findings, lintFinding{File: name, Line: d.Line, Severity: d.Severity.String(), Code: d.Code, Message: d.Message})
			} else {
				fmt.Fprintf(s.out, "%s: %s\n", name, d)
			}
		}
		if !asJSON {
			fmt.Fprintf(s.out, "%s: %s\n", name, counts)
		}
		total.add(counts)
	}
	if asJSON {
		// SetEscapeHTML(false): findings quote robots.txt lines, often HTML
		// ("<html>"), which must read as they are, not as \u003c.
		enc := json.NewEncoder(s.out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(findings); err != nil {
			return 2, err
		}
	} else if linted > 1 {
		fmt.Fprintf(s.out, "total: %s in %d files\n", total, linted)
	}
	if code == exitAllowed && total[robots.Error] > 0 {
		code = exitRefused
	}
	return code, nil
}

func isURL(arg string) bool {
	scheme, _, ok := strings.Cut(arg, "://")
	return ok && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https"))
}

// readRobots reads standard input ("-"), a file, or fetches an http(s) URL
// with client (at most robots.MaxFileSize+1 bytes, so that lint can report
// the excess).
func readRobots(arg string, stdin io.Reader, client *http.Client, userAgent string) ([]byte, error) {
	switch {
	case arg == "-":
		body, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", stdinName, err)
		}
		return body, nil
	case !isURL(arg):
		return os.ReadFile(arg)
	}
	req, err := http.NewRequest(http.MethodGet, arg, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // not "Get URL": the URL is said once
		}
		var denied *egress.DeniedError
		if errors.As(err, &denied) {
			return nil, fmt.Errorf("fetch %s: %w (%s; the egress rules are those of -config FILE)", arg, err, refusal.EgressRule(err))
		}
		return nil, fmt.Errorf("fetch %s: %w", arg, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("fetch %s: HTTP %d", arg, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, robots.MaxFileSize+1))
}
