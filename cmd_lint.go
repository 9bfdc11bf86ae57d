package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/robots"
)

// lintCommand is `robotsgate lint [-json] FILE|URL`.
var lintCommand = &command{
	name:     "lint",
	synopsis: "[-json] FILE|URL",
	summary:  "check robots.txt files for errors and warnings, with line numbers",
	details: "Checks a robots.txt file as Google's parser reads it and prints each finding (error,\n" +
		"warning or note) with its line number, then the counts. The argument is a file or an\n" +
		"http(s) URL.\n\n" +
		"Exit status: 0 no errors, 1 errors found, 2 usage error or the file could not be read.",
	usageExit: exitUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		asJSON := fs.Bool("json", false, "print the findings as a JSON array")
		return func(args []string, s stdio) (int, error) {
			if len(args) != 1 {
				return 0, usageError("one FILE or URL")
			}
			return lint(args[0], *asJSON, s.out)
		}
	},
}

// lint checks a robots.txt file or URL; exit status 1 if it has errors.
func lint(arg string, asJSON bool, stdout io.Writer) (int, error) {
	body, err := readRobots(arg)
	if err != nil {
		return 2, err
	}
	diags := robots.Lint(body)
	counts := map[robots.Severity]int{}
	for _, d := range diags {
		counts[d.Severity]++
	}
	if asJSON {
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
