package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/compliance"
)

// Exit statuses of verify.
const (
	exitVerifyOK         = 0 // every decision resting on robots.txt verified
	exitVerifyFailed     = 1 // a disagreement, or a body missing without -allow-missing
	exitVerifyUnreadable = 2 // an audit file could not be read, or is not an audit log
)

// verifyCommand is `robotsgate verify -audit FILE... [-archive DIR] [-allow-missing]`.
var verifyCommand = &command{
	name:     "verify",
	synopsis: "-audit FILE... [-archive DIR] [-allow-missing]",
	summary:  "replay every robots.txt decision of audit logs against the archived robots.txt",
	details: "Reads audit logs (log.audit) and replays every decision that rests on robots.txt (a record\n" +
		"with robots_sha256): the archived body of that SHA-256 (archive.dir) is parsed again and\n" +
		"judges the record's agent, target and strict_paths setting as the proxy did; a CONNECT\n" +
		"that was not intercepted is judged as a host (refused only when every path is refused).\n" +
		"A record agrees when the replay disallows and it says disallow with the same rule and\n" +
		"line, or when the replay allows and it does not say disallow (allow, rate-limited,\n" +
		"usage-denied... are refusals of other kinds) and names no other rule. Monitor-mode records\n" +
		"(what would have been decided) are checked the same way. Records that do not rest on\n" +
		"robots.txt (robots.txt itself, bypass, an unreachable robots.txt...) are counted apart.\n\n" +
		"Audit files: -audit FILE, repeated, and any further arguments (so -audit audit.log* works).\n" +
		"The files are read as a stream, in order; memory grows with the number of distinct\n" +
		"robots.txt bodies, not with the logs.\n\n" +
		"Prints each disagreement and each record whose body cannot be read (file:line, method,\n" +
		"URL, agent, recorded and replayed decision and rule), each line that is not an audit\n" +
		"record (\"file:line: skipped: why\"; reading goes on, and it counts as unverifiable), then\n" +
		"\"N verified, M disagree, K unverifiable\".\n\n" +
		"Exit status: 0 every decision verified (M = 0 and K = 0; with -allow-missing, K may count\n" +
		"bodies missing from the archive), 1 a disagreement, an unverifiable record or a skipped\n" +
		"line, 2 an audit file could not be read, 3 usage error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		var audits fileList
		fs.Var(&audits, "audit", "audit log `FILE` to verify (JSON lines, log.audit); repeat the flag, or list more\nfiles after it")
		dir := fs.String("archive", "robots-archive", "the robots.txt archive `DIR` (archive.dir of the configuration that wrote the logs)")
		allowMissing := fs.Bool("allow-missing", false, "exit 0 even when archived bodies are missing (records still listed and counted as\nunverifiable); a body that no longer matches its SHA-256 still fails")
		return func(args []string, s stdio) (int, error) {
			return verify(append(audits, args...), *dir, *allowMissing, s)
		}
	},
}

// fileList is a flag that may be repeated.
type fileList []string

func (l *fileList) String() string { return strings.Join(*l, " ") }

func (l *fileList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// verifyCounts is what verify found.
type verifyCounts struct {
	records, verified, disagree, unverifiable, missing, skipped int
}

func verify(files []string, dir string, allowMissing bool, s stdio) (int, error) {
	if len(files) == 0 {
		return 0, usageError("no audit log to verify (-audit FILE)")
	}
	for _, f := range files {
		if f == "" {
			return 0, usageError("an empty audit file name")
		}
	}
	// Every file must open before any is read: a typo fails at once.
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return exitVerifyUnreadable, fmt.Errorf("audit log: %w", err)
		}
		fh.Close()
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(s.errOut, "robotsgate verify: warning: the archive %s is not a readable directory: every decision that rests on robots.txt is unverifiable\n", dir)
	}
	out := bufio.NewWriterSize(s.out, 64<<10)
	defer out.Flush()
	bodies := compliance.NewBodies(dir)
	var n verifyCounts
	err := compliance.VerifyAudit(files, bodies, 0, func(rec *audit.Record, file string, line int, v compliance.Verification) error {
		n.records++
		switch v.Outcome {
		case compliance.Verified:
			n.verified++
		case compliance.Disagrees:
			n.disagree++
			fmt.Fprintf(out, "%s:%d: DISAGREE %s %s agent %q: recorded %s, replayed %s (robots.txt %s)\n",
				file, line, rec.Method, rec.URL, rec.Agent, recordedJudgement(rec), replayedJudgement(v.Replayed), shortSum(rec.RobotsSHA256))
		case compliance.Unverifiable:
			n.unverifiable++
			why := v.Err.Error()
			if v.Missing() {
				n.missing++
				why = "not in the archive " + dir
			}
			fmt.Fprintf(out, "%s:%d: UNVERIFIABLE %s %s agent %q: recorded %s; robots.txt body %s: %s\n",
				file, line, rec.Method, rec.URL, rec.Agent, recordedJudgement(rec), rec.RobotsSHA256, why)
		}
		return nil
	}, func(file string, line int, err error) {
		n.skipped++
		n.unverifiable++
		fmt.Fprintf(out, "%s:%d: skipped: %v\n", file, line, err)
	})
	if err != nil {
		out.Flush()
		return exitVerifyUnreadable, fmt.Errorf("audit log: %w", err)
	}
	judged := n.verified + n.disagree + n.unverifiable
	fmt.Fprintf(out, "%s in %s: %d resting on robots.txt, replayed; %d not judged by robots.txt rules\n",
		plural(n.records, "audit record"), plural(len(files), "file"), judged-n.skipped, n.records-judged+n.skipped)
	if n.skipped > 0 {
		fmt.Fprintf(out, "%s not an audit record, skipped (counted as unverifiable)\n", plural(n.skipped, "line"))
	}
	fmt.Fprintf(out, "%d verified, %d disagree, %d unverifiable\n", n.verified, n.disagree, n.unverifiable)
	switch {
	case n.disagree > 0:
		return exitVerifyFailed, nil
	case n.unverifiable > n.missing:
		return exitVerifyFailed, nil
	case n.missing > 0 && !allowMissing:
		return exitVerifyFailed, nil
	}
	return exitVerifyOK, nil
}

// recordedJudgement says what a record says: its decision and rule.
func recordedJudgement(rec *audit.Record) string {
	d := rec.Decision
	if d == "" {
		d = `""`
	}
	if rec.Mode == "monitor" && !rec.Enforced {
		d += " (monitor, not enforced)"
	}
	return d + " " + ruleText(rec.Rule, rec.Line)
}

// replayedJudgement says what the replay found.
func replayedJudgement(j compliance.Judgement) string {
	d := "disallow"
	if j.Allowed {
		d = "allow"
	}
	return d + " " + ruleText(j.Rule, j.Line)
}

func ruleText(rule string, line int) string {
	if rule == "" {
		return "(no rule)"
	}
	return fmt.Sprintf("(%s, line %d)", rule, line)
}

// shortSum is a SHA-256's first 12 hex digits, enough to tell versions
// apart in a listing.
func shortSum(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}
