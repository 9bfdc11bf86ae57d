package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	origins "github.com/robotsgate/robotsgate/origin" // "origin" is a type of the tests
	"github.com/robotsgate/robotsgate/pacing"
	"github.com/robotsgate/robotsgate/policy"
	"github.com/robotsgate/robotsgate/proxy"
)

// Exit statuses of check (and lint, which reads "unreachable" as "could
// not be read").
const (
	exitAllowed     = 0
	exitRefused     = 1 // refused by robots.txt or policy; lint: errors found
	exitUnreachable = 2 // robots.txt could not be fetched; lint: an input could not be read
	exitCheckUsage  = 3 // usage or configuration error
)

// checkCommand is `robotsgate check [flags] URL...`.
var checkCommand = &command{
	name:     "check",
	synopsis: "[-config FILE] [-agent NAME | -ua HEADER] [-client ADDR] [-user NAME] [-purposes LIST] [-fetch] URL... | -config FILE",
	summary:  "print the proxy's decision on URLs, without sending them",
	details: "Prints, for each URL, the decision the proxy would make on a request for it, without\n" +
		"sending the request: the verdict, the robots.txt rule and line that decided it, and the\n" +
		"pacing interval (Crawl-delay or Request-rate, within the configuration's limits) that\n" +
		"would apply. robots.txt (and /.well-known/tdmrep.json) is fetched as the proxy fetches\n" +
		"it, through the configuration's egress rules. Then every AI-usage signal found for the URL, with the purposes each\n" +
		"refuses: robots.txt's Content-Usage and Content-Signal lines, the tdmrep.json entry and,\n" +
		"with -fetch, the response's header fields and HTML meta tags (the URL is then requested,\n" +
		"with GET, if it is allowed, and its response judged as the proxy judges it: a signal that\n" +
		"refuses the client's purpose makes the decision usage-denied).\n\n" +
		"The request is judged as from the default client (enforced, no purposes) unless -client\n" +
		"and -user name one: then the clients entry that would identify it applies, with its mode,\n" +
		"fixed agent and purposes, as in the proxy.\n\n" +
		"Exit status: 0 every URL allowed, 1 a URL refused by robots.txt or by policy (egress\n" +
		"rules, clients, AI-usage signals, crawler-trap limits, pacing.max_delay; for a monitored\n" +
		"client, a decision the proxy would only log), 2 a robots.txt could\n" +
		"not be fetched (everything on that origin is refused), or a tdmrep.json for a client with\n" +
		"a text-and-data-mining purpose, or an RSL licence the site names for a client with\n" +
		"purposes (usage-unknown), or the destination's name does not resolve (upstream-error) or\n" +
		"time ran out (client-closed), 3 usage or configuration error\n" +
		"(bad flags, bad configuration file, invalid URL). With several URLs, the highest applies.\n\n" +
		"With -config FILE and no URL it tests the configuration, as serve -t: exit status 0\n" +
		"valid, 1 invalid.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML); the built-in defaults without one (which refuse\nloopback and private networks)")
		agent := fs.String("agent", "", "judge as this agent `NAME`, a product token such as FooBot (default: no User-Agent,\njudged by the * group)")
		ua := fs.String("ua", "", "judge as this User-Agent `HEADER`, as a client would send it (overrides -agent)")
		purposes := fs.String("purposes", "", "judge for a client with these purposes, a comma-separated `LIST` such as\ntrain-ai,search (default: the client's, none for the default client)")
		fetch := fs.Bool("fetch", false, "request each allowed URL (GET) and judge its response as the proxy would (AI-usage\nsignals of its header fields and HTML head)")
		clientAddr := fs.String("client", "", "judge as a request from this IP `ADDR`, as the configuration's clients entries\nidentify it (mode, fixed agent, purposes)")
		user := fs.String("user", "", "judge as a request authenticated as this proxy user `NAME` (its password taken as valid)")
		return func(args []string, s stdio) (int, error) {
			asker := proxy.Asker{UserAgent: *ua, User: *user, By: "check"}
			if asker.UserAgent == "" {
				asker.UserAgent = *agent
			}
			if *purposes != "" {
				asker.Purposes = policy.ParsePurposes(*purposes)
			}
			if *clientAddr != "" {
				addr, err := netip.ParseAddr(*clientAddr)
				if err != nil {
					return 0, usageError(fmt.Sprintf("-client %q: not an IP address", *clientAddr))
				}
				asker.Addr = addr
			}
			if len(args) == 0 && *configPath != "" {
				return testConfiguration(*configPath, "", "", s), nil // a configuration test, as serve -t
			}
			return check(*configPath, asker, *fetch, args, s)
		}
	},
}

// check prints the proxy's decision for each URL and returns the exit
// status.
func check(configPath string, asker proxy.Asker, fetch bool, urls []string, s stdio) (int, error) {
	if len(urls) == 0 {
		return 0, usageError("no URL to check")
	}
	for _, u := range urls {
		if err := checkURL(u); err != nil {
			return 0, usageError(err.Error())
		}
	}
	cfg, err := loadConfig(configPath, "", "")
	if err != nil {
		return exitCheckUsage, err
	}
	cfg.MITM.Enabled = false // no interception: only decisions
	// Nor evidence: check decides nothing that happens, and must not
	// write into the archive or audit log of a proxy using the same file.
	cfg.Archive.Dir, cfg.Log.Audit = "", ""
	srv, err := proxy.New(cfg, proxy.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return exitCheckUsage, err
	}
	code := exitAllowed
	for _, u := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Robots.FetchTimeout.Duration()+5*time.Second)
		x, err := srv.Judge(ctx, u, asker, fetch)
		cancel()
		if err != nil {
			return exitCheckUsage, err // checkURL accepted it: not expected
		}
		verdict, why, c := verdictOf(&x)
		fmt.Fprintf(s.out, "%-9s %s  %s\n", verdict, u, why)
		printSignals(s.out, x.Signals, x.FetchErr, fetch)
		code = max(code, c)
	}
	return code, nil
}

// verdictOf is check's line for an explained URL: the verdict, why, and
// the exit status it gives. A refusal made before a decision is told as
// the proxy's refusal tells the operator (refusal.Refusal.Why).
func verdictOf(x *proxy.Explained) (verdict, why string, code int) {
	if r := x.Refused; r != nil {
		return strings.ToUpper(r.Decision()), "(" + r.Why() + ")", exitStatus(r.Decision())
	}
	d := &x.Decision
	why = describe(d)
	if p := x.Pause; p != nil {
		why = strings.TrimSuffix(why, ")") + "; " + describePause(p, x.AwaitingProbe, x.MaxWait) + ")"
	}
	return strings.ToUpper(d.Verdict.String()), why, exitStatus(d.Verdict.String())
}

// exitStatus is check's exit status for a decision: allowed, refused, or
// not decidable now (robots.txt, a tdmrep.json or a licence cannot be
// read, the destination's name does not resolve, time ran out).
func exitStatus(decision string) int {
	switch decision {
	case audit.Allow:
		return exitAllowed
	case audit.Unreachable, audit.UsageUnknown, audit.UpstreamError, audit.ClientClosed:
		return exitUnreachable
	}
	return exitRefused
}

// describePause says that the origin is paused (or its pause is over and
// its first request after it unanswered: probe), why, and what a request
// gets meanwhile.
func describePause(p *pacing.Pause, probe bool, maxWait time.Duration) string {
	if probe {
		return fmt.Sprintf("origin paused until %s: %s; the pause is over: a request now waits for the answer to the first one sent after it, or is that one",
			p.Until.UTC().Format("15:04:05Z"), p.Cause())
	}
	left := time.Until(p.Until).Round(time.Second)
	what := "a request now waits " + left.String()
	if left > maxWait {
		what = "a request now is refused (origin-backoff), the pause being longer than pacing.max_wait"
	}
	return fmt.Sprintf("origin paused until %s: %s; %s", p.Until.UTC().Format("15:04:05Z"), p.Cause(), what)
}

// checkURL says what is wrong with a URL check cannot judge.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL %q: %v", raw, errors.Unwrap(err))
	}
	if _, err := origins.FromURL(u); err != nil {
		return fmt.Errorf("invalid URL %q: %v", raw, err)
	}
	return nil
}

// describe explains a decision in one line: what decided it and, for an
// allowed request, the pacing that would apply.
func describe(d *policy.Decision) string {
	var why string
	switch {
	case d.Robots == nil:
		why = d.Note // robots.txt itself, a bypass client, an ignored site, a trap refusal
	case d.Verdict == policy.Unreachable:
		why = fmt.Sprintf("robots.txt %s unreachable: %v", d.Robots.URL(), d.Robots.Err())
	case d.Robots.File == nil:
		why = fmt.Sprintf("robots.txt %s unavailable, HTTP %d: everything allowed", d.Robots.URL(), d.Robots.HTTPStatus)
	default:
		why = fmt.Sprintf("%s; robots.txt %s", d.Rule.String(), d.Robots.URL())
		if d.Note != "" {
			why += "; " + d.Note
		}
	}
	if r := d.Response; r != nil {
		why += fmt.Sprintf("; the origin's response (%d) would be withheld: %s", r.UpstreamStatus, r.Signal.Explain())
	}
	if d.Verdict == policy.Allow {
		if why != "" {
			why += "; "
		}
		why += describePacing(d)
	}
	if c := d.Request.Client; c.Agent != "" || len(c.Purposes) > 0 || c.Mode != policy.Enforce {
		why += "; " + describeClient(c)
	}
	return "(" + why + ")"
}

// describeClient says how the clients entry that identified the client
// changes its judgement: its mode, the agent it fixes, its purposes.
func describeClient(c policy.Client) string {
	var parts []string
	if c.Mode != policy.Enforce {
		parts = append(parts, c.Mode.String()+" mode")
	}
	if c.Agent != "" {
		parts = append(parts, "judged as agent "+c.Agent)
	}
	if len(c.Purposes) > 0 {
		parts = append(parts, "purposes "+strings.Join(c.Purposes, ", "))
	}
	if c.Name == "" {
		return strings.Join(parts, ", ")
	}
	return "clients entry " + c.Name + ": " + strings.Join(parts, ", ")
}

// describePacing says how far apart requests like this one would start,
// and why: the largest of robots.txt's Crawl-delay or Request-rate (capped
// by pacing.max_delay), the configured minimum (pacing.default_delay or
// the site's delay) and the adaptive interval.
func describePacing(d *policy.Decision) string {
	if d.Interval <= 0 {
		return "not paced"
	}
	source := "Crawl-delay"
	if d.Robots != nil && d.Robots.File != nil && d.Rule.Group.RequestInterval() > d.Rule.Group.CrawlDelay() {
		source = "Request-rate"
	}
	var causes []string
	add := func(d time.Duration, what string) {
		if d > 0 {
			causes = append(causes, fmt.Sprintf("%s %v", what, d))
		}
	}
	add(d.Asked, "robots.txt "+source)
	if d.Asked > d.Interval {
		causes[len(causes)-1] += " capped by pacing.max_delay"
	}
	add(d.Floor, "the configured minimum delay")
	add(d.Adaptive, "adaptive (pacing.adaptive.factor × the origin's response time)")
	return fmt.Sprintf("pacing: one request every %v, the largest of: %s", d.Interval, strings.Join(causes, ", "))
}

// printSignals lists the AI-usage signals found for a URL under its
// decision line, one per line, with the purposes each refuses.
func printSignals(w io.Writer, signals []audit.UsageSignal, fetchErr error, fetch bool) {
	for _, sig := range signals {
		refuses := "refuses no purpose"
		if len(sig.Refuses) > 0 {
			refuses = "refuses " + strings.Join(sig.Refuses, ", ")
		}
		if sig.Policy != "" {
			refuses += " (tdm-policy " + sig.Policy + ")"
		}
		if sig.License != "" {
			refuses += " (RSL licence " + sig.License
			if sig.Server != "" {
				refuses += ", licence server " + sig.Server
				if len(sig.LicenseFor) > 0 {
					refuses += " needed for " + strings.Join(sig.LicenseFor, ", ")
				}
			}
			refuses += ")"
		}
		fmt.Fprintf(w, "          usage signal %s %q at %s: %s\n", sig.Signal, sig.Value, sig.Where, refuses)
		for _, t := range sig.Terms { // an RSL licence's: payment, user types, countries
			fmt.Fprintf(w, "            %s\n", t)
		}
	}
	if fetch && fetchErr != nil {
		fmt.Fprintf(w, "          response signals not read: %v\n", fetchErr)
	}
}
