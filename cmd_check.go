package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/proxy"
	"github.com/robotsgate/robotsgate/robots"
)

// check prints the proxy's decision for each URL; exit status 1 if any is
// refused (disallowed, or robots.txt unreachable).
func check(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("check", stderr)
	configPath := fs.String("config", "", "configuration file (YAML)")
	agent := fs.String("agent", "", "judge as this agent (a product token such as FooBot)")
	ua := fs.String("ua", "", "judge as this User-Agent header")
	if err := fs.Parse(args); err != nil {
		return 2, errUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: robotsgate check [-config FILE] [-agent NAME | -ua HEADER] URL...")
		return 2, errUsage
	}
	cfg, err := loadConfig(*configPath, "", "")
	if err != nil {
		return 2, err
	}
	cfg.MITM.Enabled = false // no interception: only decisions
	srv, err := proxy.New(cfg, proxy.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 2, err
	}
	userAgent := *ua
	if userAgent == "" {
		userAgent = *agent
	}
	refused := false
	for _, u := range fs.Args() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Robots.FetchTimeout.Duration()+5*time.Second)
		d, err := srv.Decide(ctx, u, userAgent, policy.Client{})
		cancel()
		if err != nil {
			fmt.Fprintf(stdout, "ERROR     %s  %v\n", u, err)
			refused = true
			continue
		}
		fmt.Fprintf(stdout, "%-9s %s  %s\n", strings.ToUpper(d.Verdict.String()), u, describe(&d))
		refused = refused || d.Verdict != policy.Allow
	}
	if refused {
		return 1, nil
	}
	return 0, nil
}

// describe explains a decision in one line.
func describe(d *policy.Decision) string {
	switch {
	case d.Robots == nil:
		return "(robots.txt itself is always allowed)"
	case d.Verdict == policy.Unreachable:
		return fmt.Sprintf("(robots.txt %s unreachable: %v)", d.Robots.URL(), d.Robots.Err())
	case d.Robots.File == nil:
		return fmt.Sprintf("(robots.txt %s unavailable, HTTP %d: everything allowed)", d.Robots.URL(), d.Robots.HTTPStatus)
	}
	return fmt.Sprintf("(%s; robots.txt %s)", d.Rule.String(), d.Robots.URL())
}

// lint checks a robots.txt file or URL; exit status 1 if it has errors.
func lint(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("lint", stderr)
	asJSON := fs.Bool("json", false, "print the diagnostics as JSON")
	if err := fs.Parse(args); err != nil {
		return 2, errUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: robotsgate lint [-json] FILE|URL")
		return 2, errUsage
	}
	body, err := readRobots(fs.Arg(0))
	if err != nil {
		return 2, err
	}
	diags := robots.Lint(body)
	counts := map[robots.Severity]int{}
	for _, d := range diags {
		counts[d.Severity]++
	}
	if *asJSON {
		out := make([]map[string]any, len(diags))
		for i, d := range diags {
			out[i] = map[string]any{"line": d.Line, "severity": d.Severity.String(), "code": d.Code, "message": d.Message}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
	} else {
		for _, d := range diags {
			fmt.Fprintln(stdout, d.String())
		}
		fmt.Fprintf(stdout, "%d errors, %d warnings, %d notes\n", counts[robots.Error], counts[robots.Warning], counts[robots.Info])
	}
	if counts[robots.Error] > 0 {
		return 1, nil
	}
	return 0, nil
}

// readRobots reads a file, or fetches an http(s) URL through the egress
// guard (at most robots.MaxFileSize+1 bytes, so lint can report the excess).
func readRobots(arg string) ([]byte, error) {
	if !strings.HasPrefix(arg, "http://") && !strings.HasPrefix(arg, "https://") {
		return os.ReadFile(arg)
	}
	cfg := config.Default()
	guard := &egress.Guard{BlockPrivate: cfg.Egress.BlockPrivateNetworks}
	client := &http.Client{
		Timeout:   cfg.Robots.FetchTimeout.Duration(),
		Transport: &http.Transport{Proxy: nil, DialContext: guard.DialContext},
	}
	req, err := http.NewRequest(http.MethodGet, arg, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", cfg.Robots.FetchUserAgent)
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", arg, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("fetch %s: HTTP %d", arg, resp.StatusCode)
	}
	return io.ReadAll(io.LimitReader(resp.Body, robots.MaxFileSize+1))
}
