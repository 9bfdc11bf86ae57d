package main

import (
	"bufio"
	"cmp"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/compliance"
	"github.com/robotsgate/robotsgate/config"
)

// Exit statuses of verify.
const (
	exitVerifyOK         = 0 // every decision resting on robots.txt verified
	exitVerifyFailed     = 1 // a disagreement, or a body missing without -allow-missing
	exitVerifyUnreadable = 2 // an audit file could not be read, or is not an audit log
)

// verifyCommand is `robotsgate verify [-config FILE] [-audit FILE...] [-archive DIR] [-key KEY] [-witness URL|FILE] [-allow-missing] [-partial] [-legacy]`.
var verifyCommand = &command{
	name:     "verify",
	synopsis: "[-config FILE] [-audit FILE...] [-archive DIR] [-key KEY] [-witness URL|FILE [-witness-key KEY] [-witness-ca FILE]] [-allow-missing] [-partial] [-legacy]",
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
		"Audit files: -audit FILE, repeated, and any further arguments (so -audit audit.log* works),\n" +
		"oldest first; without them the configuration's log.audit (the same defaults as serve, so\n" +
		"verify after serve needs no flag). The archive is the configuration's archive.dir unless\n" +
		"-archive names one. The files are read as a stream, in order; memory grows with the number\n" +
		"of distinct robots.txt bodies, not with the logs.\n\n" +
		"The hash chain is checked too: every line must carry the hash of the line before it, so\n" +
		"a line removed, added, moved or changed afterwards is reported where the chain breaks\n" +
		"(\"file:line: chain broken\"); a last line cut by a crash is reported as torn, not as a\n" +
		"break. Every checkpoint must be signed by the evidence key: -key (the base64 public key\n" +
		"robotsgate evidence-key prints, as a reviewer pins it), else the configuration's key.\n" +
		"Since anyone can recompute a chain, only the checkpoints prove it: every record must come\n" +
		"before a checkpoint that verifies, but for the lines after the last one, which may be no\n" +
		"more than the interval that checkpoint promises (what a crash leaves; verify says how many\n" +
		"and from when). A log with records and no such checkpoint fails, and so does one where\n" +
		"more records than the interval come between two checkpoints (checkpoints were removed),\n" +
		"one without a key to verify with, and one whose lines carry no link, unless -legacy says\n" +
		"they were written before robotsgate chained its logs. The first line read must start the\n" +
		"chain: a log whose first lines were cut looks like a rotated file whose predecessors are\n" +
		"gone, and fails unless -partial accepts that.\n\n" +
		"-witness checks the log against what a witness saw (log.witness): a witness's URL (its\n" +
		"receipts for this log's key are fetched) or a file of receipts (the log's .witness file,\n" +
		"kept beside it). Each receipt must be signed by -witness-key (default: the\n" +
		"configuration's log.witness.key); every checkpoint the witness saw must be in the log,\n" +
		"and only the checkpoints it saw cover records. So whoever holds the evidence key cannot\n" +
		"rewrite what the witness saw.\n\n" +
		"Prints each disagreement and each record whose body cannot be read (file:line, method,\n" +
		"URL, agent, recorded and replayed decision and rule), each line that is not an audit\n" +
		"record (\"file:line: skipped: why\"; reading goes on, and it counts as unverifiable), then\n" +
		"\"N verified, M disagree, K unverifiable\".\n\n" +
		"Exit status: 0 every decision verified (M = 0 and K = 0; with -allow-missing, K may count\n" +
		"bodies missing from the archive) and every record covered by a checkpoint that verifies,\n" +
		"1 a disagreement, an unverifiable record, a skipped line, a break in the chain, a\n" +
		"checkpoint that does not verify or records no checkpoint covers, 2 an audit file (or the\n" +
		"witness) could not be read, 3 usage error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML) whose log.audit, archive.dir and log.evidence_key are\nread; the built-in defaults without one")
		var audits fileList
		fs.Var(&audits, "audit", "audit log `FILE` to verify (JSON lines); repeat the flag, or list more files after it\n(default: the configuration's log.audit)")
		dir := fs.String("archive", "", "the robots.txt archive `DIR` (default: the configuration's archive.dir)")
		keyText := fs.String("key", "", "the evidence `KEY` checkpoints must be signed with, in base64 as robotsgate\nevidence-key prints it (default: the configuration's log.evidence_key)")
		allowMissing := fs.Bool("allow-missing", false, "exit 0 even when archived bodies are missing (records still listed and counted as\nunverifiable); a body that no longer matches its SHA-256 still fails")
		partial := fs.Bool("partial", false, "accept audit logs whose first line continues a file not named (rotated logs whose\npredecessors are gone); without it that fails, as lines cut from the start would")
		ev := evidenceFlags(fs)
		return func(args []string, s stdio) (int, error) {
			cfg, err := loadConfig(*configPath, "", "")
			if err != nil {
				return exitCheckUsage, err
			}
			files, err := auditFiles(append(audits, args...), cfg)
			if err != nil {
				return exitCheckUsage, err
			}
			pub, err := chainKey(cfg, *keyText, s)
			if err != nil {
				return exitCheckUsage, usageError(err.Error())
			}
			o, err := ev.options(cfg, pub)
			if err != nil {
				return exitCheckUsage, usageError(err.Error())
			}
			return verify(files, cmp.Or(*dir, cfg.Archive.Dir), *allowMissing, compliance.Accept{Partial: *partial, Legacy: *ev.legacy}, o, s)
		}
	},
}

// auditFiles is the audit logs named on the command line, else the
// configuration's log.audit when it exists: verify or report right after
// serve needs no flag, and a missing default is a usage error that says where
// it looked rather than a read error.
func auditFiles(named []string, cfg config.Config) ([]string, error) {
	if len(named) > 0 {
		return named, nil
	}
	if cfg.Log.Audit == "" || cfg.Log.Audit == "-" {
		return nil, usageError("no audit log: the configuration's log.audit is off or standard output; name one with -audit FILE")
	}
	if _, err := os.Stat(cfg.Log.Audit); errors.Is(err, fs.ErrNotExist) {
		return nil, usageError(fmt.Sprintf("no audit log at %s (log.audit; serve writes it); name one with -audit FILE", cfg.Log.Audit))
	}
	return []string{cfg.Log.Audit}, nil
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

// chainKey is the key checkpoints are checked with: -key, else the
// configuration's evidence key (nil, with a warning, when there is none).
func chainKey(cfg config.Config, keyText string, s stdio) (ed25519.PublicKey, error) {
	if keyText != "" {
		return parsePublicKey(keyText)
	}
	pub, err := evidencePublicKey(cfg)
	if err != nil {
		fmt.Fprintf(s.errOut, "robotsgate: warning: %v: the checkpoints cannot be verified, so the logs are no evidence (-key KEY verifies them)\n", err)
		return nil, nil
	}
	return pub, nil
}

func verify(files []string, dir string, allowMissing bool, accept compliance.Accept, o chainOptions, s stdio) (int, error) {
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
	co, err := o.chainOptions() // the witness read before the long replay
	if err != nil {
		return exitVerifyUnreadable, err
	}
	out := bufio.NewWriterSize(s.out, 64<<10)
	defer out.Flush()
	bodies := compliance.NewBodies(dir)
	var n verifyCounts
	err = compliance.VerifyAudit(files, bodies, 0, func(rec *audit.Record, file string, line int, v compliance.Verification) error {
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
	chain, err := compliance.CheckChain(files, co)
	if err != nil {
		out.Flush()
		return exitVerifyUnreadable, fmt.Errorf("audit log: %w", err)
	}
	failures := chain.Failures(accept)
	printChain(out, chain, failures, accept)
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		fetches, err := compliance.CheckFetchLogs(dir, co)
		if err != nil {
			out.Flush()
			return exitVerifyUnreadable, fmt.Errorf("archive: %w", err)
		}
		f := fetches.Failures(compliance.Accept{Legacy: accept.Legacy})
		printFetchChain(out, fetches, f)
		failures = append(failures, f...)
	}
	judged := n.verified + n.disagree + n.unverifiable
	fmt.Fprintf(out, "%s in %s: %d resting on robots.txt, replayed; %d not judged by robots.txt rules\n",
		plural(n.records, "audit record"), plural(len(files), "file"), judged-n.skipped, n.records-judged+n.skipped)
	if n.skipped > 0 {
		fmt.Fprintf(out, "%s not an audit record, skipped (counted as unverifiable)\n", plural(n.skipped, "line"))
	}
	fmt.Fprintf(out, "%d verified, %d disagree, %d unverifiable\n", n.verified, n.disagree, n.unverifiable)
	switch {
	case n.disagree > 0 || len(failures) > 0:
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

// printFetchChain says whether the archive's fetch logs are evidence.
func printFetchChain(out io.Writer, c *compliance.ChainResult, failures []string) {
	printPlaces(out, c)
	switch {
	case c.Lines == 0:
		return
	case c.Chained == 0:
		fmt.Fprintf(out, "fetch logs: no hash chain (%s without links: written before the chain)\n", plural(int(c.Lines), "line"))
	case !c.Whole():
		fmt.Fprintf(out, "fetch logs: BROKEN: %s, %s that do not verify\n", plural(len(c.Breaks), "break"), plural(len(c.BadCheckpoints), "checkpoint"))
	case len(failures) > 0:
		fmt.Fprintf(out, "fetch logs: NOT EVIDENCE: %s\n", strings.Join(failures, "; "))
	default:
		fmt.Fprintf(out, "fetch logs: whole across %s, %s\n", plural(int(c.Lines), "line"), plural(int(c.Checkpoints), "signed checkpoint"))
	}
}

// printPlaces lists the lines where something is wrong.
func printPlaces(out io.Writer, c *compliance.ChainResult) {
	for _, list := range [][]compliance.ChainPlace{c.Breaks, c.Torn, c.BadCheckpoints, c.Uncovered, c.Gaps} {
		for _, p := range list {
			fmt.Fprintln(out, p)
		}
	}
	for _, m := range c.WitnessMissing {
		fmt.Fprintln(out, m)
	}
}

// printChain lists what is wrong with the hash chain and sums it up: it
// says "whole" only when the checkpoints prove it (failures is empty).
func printChain(out io.Writer, c *compliance.ChainResult, failures []string, accept compliance.Accept) {
	printPlaces(out, c)
	switch {
	case c.Chained == 0:
		fmt.Fprintf(out, "hash chain: none (%s without links: written before the chain", plural(int(c.Lines), "line"))
		if accept.Legacy && len(failures) == 0 {
			fmt.Fprint(out, "; accepted with -legacy: nothing shows whether they were changed")
		}
		fmt.Fprintln(out, ")")
	case !c.Whole():
		fmt.Fprintf(out, "hash chain: BROKEN: %s, %s that %s not verify\n", plural(len(c.Breaks), "break"),
			plural(len(c.BadCheckpoints), "checkpoint"), map[bool]string{true: "does", false: "do"}[len(c.BadCheckpoints) == 1])
	case len(failures) > 0:
		fmt.Fprintf(out, "hash chain: NOT VERIFIED: %s linked, but nothing proves they are as written\n", plural(int(c.Lines), "line"))
	default:
		fmt.Fprintf(out, "hash chain: whole across %s\n", plural(int(c.Lines), "line"))
	}
	if c.Chained > 0 {
		printCheckpoints(out, c)
	}
	if c.Start != "" {
		fmt.Fprintf(out, "chain start: %s; the lines before it were not read (-partial accepts that)\n", c.Start)
	}
	for _, f := range failures {
		fmt.Fprintf(out, "not evidence: %s\n", f)
	}
}

// printCheckpoints says which checkpoints verified, and which lines come
// after the last: how many, from when, and the interval they must stay
// within.
func printCheckpoints(out io.Writer, c *compliance.ChainResult) {
	signer := "not verified (no key)"
	if c.Key != "" {
		signer = "signed by " + c.Key
	}
	fmt.Fprintf(out, "checkpoints: %d %s", c.Checkpoints, signer)
	if c.Witness {
		fmt.Fprintf(out, ", %d seen by the witness", c.Witnessed)
	}
	if c.LastCheckpoint != "" {
		fmt.Fprintf(out, ", the last at %s (%s)", c.LastCheckpoint, c.LastCheckpointTime.UTC().Format(time.RFC3339))
		if c.Unsigned > 0 {
			fmt.Fprintf(out, "; %s after it", plural(int(c.Unsigned), "line"))
			if !c.UnsignedFrom.IsZero() {
				fmt.Fprintf(out, ", from %s to %s,", c.UnsignedFrom.UTC().Format(time.RFC3339), c.UnsignedTo.UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(out, " which no checkpoint covers yet (what a crash leaves: at most %s", plural(int(c.Tail.Records), "record"))
			if c.Tail.Every > 0 {
				fmt.Fprintf(out, ", arrived within %s of it", c.Tail.Every)
			}
			fmt.Fprint(out, ")")
		}
	}
	fmt.Fprintln(out)
}
