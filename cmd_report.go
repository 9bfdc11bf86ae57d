package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/report"
)

// Exit statuses of report: exitReportIncomplete when the report was
// written but lines of the audit logs were skipped, exitReportFailed when
// a file could not be read or the report written.
const (
	exitReportIncomplete = 1
	exitReportFailed     = 2
)

// reportCommand is `robotsgate report -audit FILE... [flags]`.
var reportCommand = &command{
	name:     "report",
	synopsis: "[-config FILE] [-audit FILE...] [-archive DIR] [-key KEY] [-witness URL|FILE [-witness-key KEY] [-witness-ca FILE]] [-since T] [-until T] [-format html|json] [-o FILE] [-partial] [-legacy] [-lenient]",
	summary:  "write a compliance report (HTML or JSON) from the audit log and the robots.txt archive",
	details: "Reads the audit log (log.audit) and the robots.txt archive (archive.dir) and writes a\n" +
		"report a reviewer reads without the tool: the period, the clients and agents, the totals\n" +
		"by decision; per origin the requests, those allowed, those refused by each robots.txt\n" +
		"rule (with its line), the robots.txt versions in force (fetch time, status, SHA-256, the\n" +
		"text itself), the interval Crawl-delay or Request-rate asked and the smallest gap between\n" +
		"requests the proxy forwarded, which must never be below it, and the longest hold; charts of\n" +
		"the requests over time and of the gaps against the interval asked.\n\n" +
		"The HTML is one self-contained file (inline CSS and SVG, no script, nothing fetched) that\n" +
		"prints well; -format json writes the same figures as JSON. Audit files are named with\n" +
		"-audit or as arguments (rotated files, or the logs of several proxies: records are merged\n" +
		"by time). Each is read once, streaming: memory grows with the number of origins and of\n" +
		"distinct robots.txt bodies, not with the log.\n\n" +
		"-since and -until take an RFC 3339 time (2025-07-01T12:00:00Z) or a date (2025-07-01, UTC:\n" +
		"-until includes the whole day).\n\n" +
		"A line of the audit logs that is not a record (not JSON, longer than 1 MiB, torn) is\n" +
		"named on standard error (\"file:line: skipped: why\") and in the report's notes, and\n" +
		"reading goes on.\n\n" +
		"The audit log's hash chain and signed checkpoints are checked too, as verify does (-key,\n" +
		"-legacy, -partial, -witness mean what they mean there), and the report says whether the log\n" +
		"is whole and which evidence key signed it: \"whole\" only when every record is covered by\n" +
		"a checkpoint that verifies, but for the lines after the last, no more than its interval.\n\n" +
		"Without -audit and -archive the configuration's log.audit and archive.dir are read (the\n" +
		"same defaults as serve, so report after serve needs no flag).\n\n" +
		"Exit status: 0 the report was written, 1 it was written but audit lines were skipped, a\n" +
		"gap between requests is below the interval asked or the logs are not evidence (a broken\n" +
		"chain, records no verified checkpoint covers, no chain, no key; -lenient: only skipped\n" +
		"lines), so that it can gate a pipeline, 2 a file could not be read (an audit log, the\n" +
		"archive, the witness) or the report could not be written, 3 usage error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML) whose log.audit, archive.dir and log.evidence_key are\nread; the built-in defaults without one")
		var audit fileList // cmd_verify.go
		fs.Var(&audit, "audit", "an audit log `FILE`; repeat it, or name more files as arguments (default: the\nconfiguration's log.audit)")
		archiveDir := fs.String("archive", "", "the robots.txt archive `DIR` (default: the configuration's archive.dir); \"none\" for\nnone (the report then lacks the robots.txt texts and the intervals asked)")
		keyText := fs.String("key", "", "the evidence `KEY` checkpoints must be signed with, in base64 as robotsgate\nevidence-key prints it (default: the configuration's log.evidence_key)")
		partial := fs.Bool("partial", false, "accept audit logs whose first line continues a file not named (rotated logs whose\npredecessors are gone); without it the chain is not whole")
		lenient := fs.Bool("lenient", false, "exit 0 even when a gap is below the interval asked or the hash chain is broken")
		since := fs.String("since", "", "leave out records that arrived before `T` (RFC 3339 time or date)")
		until := fs.String("until", "", "leave out records that arrived after `T` (RFC 3339 time, or date: the whole day)")
		format := fs.String("format", "html", "`FORMAT` of the report: html or json")
		out := fs.String("o", "-", "write the report to `FILE` (- for standard output)")
		ev := evidenceFlags(fs)
		return func(args []string, s stdio) (int, error) {
			cfg, err := loadConfig(*configPath, "", "")
			if err != nil {
				return exitCheckUsage, err
			}
			opts := report.Options{Archive: cmp.Or(*archiveDir, cfg.Archive.Dir), Partial: *partial}
			if opts.Archive == "none" {
				opts.Archive = ""
			}
			if opts.Audit, err = auditFiles(append(audit, args...), cfg); err != nil {
				return exitCheckUsage, err
			}
			if opts.Key, err = chainKey(cfg, *keyText, s); err != nil {
				return exitCheckUsage, usageError(err.Error())
			}
			o, err := ev.options(cfg, opts.Key)
			if err != nil {
				return exitCheckUsage, usageError(err.Error())
			}
			co, err := o.chainOptions()
			if err != nil {
				return exitReportFailed, err
			}
			opts.Interval, opts.Witness, opts.Legacy = co.Interval, co.Witness, *ev.legacy
			if opts.Since, err = parseReportTime(*since, false); err != nil {
				return 0, usageError("-since: " + err.Error())
			}
			if opts.Until, err = parseReportTime(*until, true); err != nil {
				return 0, usageError("-until: " + err.Error())
			}
			if !opts.Since.IsZero() && !opts.Until.IsZero() && opts.Until.Before(opts.Since) {
				return 0, usageError("-until is before -since")
			}
			if *format != "html" && *format != "json" {
				return 0, usageError(fmt.Sprintf("-format %q: want html or json", *format))
			}
			return writeReport(opts, *format, *out, *lenient, s)
		}
	},
}

// parseReportTime reads an RFC 3339 time or a date (UTC); for the end of
// a range a date means its last instant. "" is the zero time.
func parseReportTime(s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2025-07-01T12:00:00Z) nor a date (2025-07-01)", s)
	}
	if end {
		return d.AddDate(0, 0, 1).Add(-time.Nanosecond), nil
	}
	return d, nil
}

// writeReport builds the report and writes it; a file is written whole or
// not at all (a temporary file renamed into place).
func writeReport(opts report.Options, format, out string, lenient bool, s stdio) (int, error) {
	if opts.Archive != "" {
		if fi, err := os.Stat(opts.Archive); err != nil || !fi.IsDir() {
			return exitReportFailed, fmt.Errorf("archive %s: not a directory (-archive names the proxy's archive.dir; -archive none reports without it)", opts.Archive)
		}
	}
	r, err := report.Build(opts)
	if err != nil {
		return exitReportFailed, err
	}
	for _, line := range r.SkippedLines {
		fmt.Fprintln(s.errOut, line)
	}
	code := 0
	if r.Skipped > 0 || !lenient && (r.Pacing.BelowAsked > 0 || !r.Chain.Whole) {
		code = exitReportIncomplete
	}
	for _, p := range r.Chain.Problems {
		fmt.Fprintln(s.errOut, p)
	}
	write := func(w io.Writer) error {
		if format == "json" {
			return report.WriteJSON(w, r)
		}
		return report.WriteHTML(w, r)
	}
	if out == "-" {
		if err := write(s.out); err != nil {
			return exitReportFailed, err
		}
		return code, nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return exitReportFailed, err
	}
	err = write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o640) // it names clients' addresses, as the audit log does
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return exitReportFailed, fmt.Errorf("writing %s: %w", out, err)
	}
	fmt.Fprintf(s.errOut, "robotsgate report: %s written: %d records from %d origins", out, r.Records, len(r.Origins))
	if r.Pacing.BelowAsked > 0 {
		fmt.Fprintf(s.errOut, "; %d gaps below the interval robots.txt asked", r.Pacing.BelowAsked)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(s.errOut, "; %s skipped (not records)", plural(r.Skipped, "audit line"))
	}
	if !r.Chain.Whole {
		fmt.Fprint(s.errOut, "; the logs are NOT EVIDENCE: "+strings.Join(r.Chain.Failures, "; "))
	}
	fmt.Fprintln(s.errOut)
	return code, nil
}
