package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/proxy"
)

// checkCommand is `robotsgate check [flags] URL...`.
var checkCommand = &command{
	name:     "check",
	synopsis: "[-config FILE] [-agent NAME | -ua HEADER] URL...",
	summary:  "print the proxy's decision on URLs, without sending them",
	details: "Prints, for each URL, the decision the proxy would make on a request for it, without\n" +
		"sending the request: the verdict and the robots.txt rule and line that decided it.\n" +
		"robots.txt is fetched as the proxy fetches it, through the configuration's egress rules.\n\n" +
		"Exit status: 0 every URL allowed, 1 a URL refused, 2 usage or configuration error.",
	usageExit: exitUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML); the built-in defaults without one (which refuse\nloopback and private networks)")
		agent := fs.String("agent", "", "judge as this agent `NAME`, a product token such as FooBot (default: no User-Agent,\njudged by the * group)")
		ua := fs.String("ua", "", "judge as this User-Agent `HEADER`, as a client would send it (overrides -agent)")
		return func(args []string, s stdio) (int, error) {
			userAgent := *ua
			if userAgent == "" {
				userAgent = *agent
			}
			return check(*configPath, userAgent, args, s)
		}
	},
}

// check prints the proxy's decision for each URL; exit status 1 if any is
// refused (disallowed, or robots.txt unreachable).
func check(configPath, userAgent string, urls []string, s stdio) (int, error) {
	if len(urls) == 0 {
		return 0, usageError("no URL to check")
	}
	cfg, err := loadConfig(configPath, "", "")
	if err != nil {
		return 2, err
	}
	cfg.MITM.Enabled = false // no interception: only decisions
	srv, err := proxy.New(cfg, proxy.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 2, err
	}
	refused := false
	for _, u := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Robots.FetchTimeout.Duration()+5*time.Second)
		d, err := srv.Decide(ctx, u, userAgent, policy.Client{})
		cancel()
		if err != nil {
			fmt.Fprintf(s.out, "ERROR     %s  %v\n", u, err)
			refused = true
			continue
		}
		fmt.Fprintf(s.out, "%-9s %s  %s\n", strings.ToUpper(d.Verdict.String()), u, describe(&d))
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
