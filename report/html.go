package report

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robotsgate/robotsgate/archive"
)

// WriteHTML writes r as one self-contained HTML page: inline CSS and SVG,
// no script, nothing to fetch, a print stylesheet. The robots.txt bodies
// r refers to are read from r.ArchiveDir one at a time, as they are
// written, and embedded with their line numbers (each line an anchor the
// rules link to).
func WriteHTML(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	if err := pageTemplate.ExecuteTemplate(bw, "page", newPage(r)); err != nil {
		return err
	}
	for _, b := range r.Bodies {
		v := bodyView{Body: b, ID: bodyID(b.SHA256)}
		if !b.Missing {
			text, err := archive.ReadBody(r.ArchiveDir, b.SHA256)
			if err != nil {
				v.Error = err.Error()
			} else {
				v.Lines = splitLines(text)
			}
		}
		if err := pageTemplate.ExecuteTemplate(bw, "body", v); err != nil {
			return err
		}
	}
	if err := pageTemplate.ExecuteTemplate(bw, "end", r); err != nil {
		return err
	}
	return bw.Flush()
}

// page is what the template shows.
type page struct {
	*Report
	TimelineSVG template.HTML
	Views       []originView
}

type originView struct {
	*Origin
	ID           string
	Asked        string // the intervals asked, in words ("none" when none)
	HistogramSVG template.HTML
}

type bodyView struct {
	Body
	ID    string
	Error string
	Lines []line
}

type line struct {
	N    int
	Text string
}

func newPage(r *Report) *page {
	p := &page{Report: r, TimelineSVG: timelineSVG(r.Timeline)}
	for i := range r.Origins {
		o := &r.Origins[i]
		v := originView{Origin: o, ID: "origin-" + strconv.Itoa(i+1), Asked: askedText(o)}
		v.HistogramSVG = histogramSVG(v.ID+"-gaps", o.Gaps.Histogram, v.Asked)
		p.Views = append(p.Views, v)
	}
	return p
}

// askedText says which intervals robots.txt asked of an origin's paced
// requests: "0.500 s", "0.500 s to 2.000 s", "none".
func askedText(o *Origin) string {
	var vals []float64
	for _, k := range o.Pacing {
		for _, a := range k.Asked {
			if a.IntervalSeconds > 0 && !slices.Contains(vals, a.IntervalSeconds) {
				vals = append(vals, a.IntervalSeconds)
			}
		}
	}
	switch len(vals) {
	case 0:
		return "none"
	case 1:
		return formatSeconds(vals[0])
	}
	return formatSeconds(slices.Min(vals)) + " to " + formatSeconds(slices.Max(vals))
}

// bodyID is the anchor of an archived body in the appendix.
func bodyID(sha string) string { return "robots-" + sha }

// splitLines splits a robots.txt body into numbered lines as robotsgate's
// parser counts them (LF, CR and CR LF end a line; a UTF-8 BOM at the
// start is skipped), so that a rule's line number points at its line.
// Bytes that are not UTF-8 are shown as U+FFFD.
func splitLines(body []byte) []line {
	s := string(body)
	for _, p := range []string{"\xEF\xBB\xBF", "\xEF\xBB", "\xEF"} {
		if strings.HasPrefix(s, p) {
			s = s[len(p):]
			break
		}
	}
	var out []line
	for n := 1; ; n++ {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			if s != "" {
				out = append(out, line{n, strings.ToValidUTF8(s, "\uFFFD")})
			}
			return out
		}
		out = append(out, line{n, strings.ToValidUTF8(s[:i], "\uFFFD")})
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
}

func formatTime(v any) string {
	switch t := v.(type) {
	case *time.Time:
		if t == nil {
			return "–"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	case time.Time:
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	}
	return fmt.Sprint(v)
}

func shortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"time":  formatTime,
	"n":     formatCount,
	"secs":  formatSeconds,
	"ms":    func(ms float64) string { return formatSeconds(ms / 1000) },
	"short": shortSHA,
	"bodyID": func(sha string) string {
		return bodyID(sha)
	},
	"lineID": func(sha string, n int) string { return bodyID(sha) + "-L" + strconv.Itoa(n) },
	"deref":  func(f *float64) float64 { return *f },
	"ratio":  func(f *float64) string { return strconv.FormatFloat(*f, 'f', 3, 64) },
	"join":   strings.Join,
	"status": func(s int) string {
		if s == 0 {
			return "none"
		}
		return strconv.Itoa(s)
	},
	"statuses": func(ss []int) string {
		var out []string
		for _, s := range ss {
			out = append(out, strconv.Itoa(s))
		}
		return strings.Join(out, ", ")
	},
}).Parse(pageHTML))

const pageHTML = `{{define "page"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>robotsgate compliance report{{with .First}}, {{time .}}{{end}}{{with .Last}} to {{time .}}{{end}}</title>
<style>
:root{color-scheme:light}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;margin:0 auto;max-width:1180px;padding:24px 32px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:19px;margin:36px 0 8px;padding-bottom:4px;border-bottom:2px solid #1f2328}
h3{font-size:15px;margin:20px 0 6px}
p{margin:6px 0}
a{color:#1d4ed8}
table{border-collapse:collapse;width:100%;margin:6px 0 14px}
table.compact{width:auto;max-width:100%}
td,th{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f4f6;font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,pre,.mono{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
.meta{color:#57606a}
.kpis{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.kpi{border:1px solid #d0d7de;border-radius:6px;padding:8px 14px;min-width:120px}
.kpi b{display:block;font-size:22px;font-variant-numeric:tabular-nums}
.kpi.bad{border-color:#c81e1e;background:#fdecec}
.kpi.good{border-color:#15803d;background:#ecf8f0}
.bad{color:#c81e1e;font-weight:700}
.good{color:#15803d;font-weight:700}
td.bad,tr.bad td{background:#fdecec}
.notes{border:1px solid #d4a72c;background:#fff8c5;border-radius:6px;padding:6px 14px;margin:12px 0}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:0 24px}
.legend span{display:inline-block;width:11px;height:11px;margin:0 4px 0 12px;vertical-align:-1px}
svg.chart{display:block;max-width:100%;height:auto;font:11px system-ui,"DejaVu Sans",sans-serif}
svg .tick{fill:#444}
svg .axis{fill:#444}
svg .count{fill:#1f2328;font-size:10px}
svg .mark{fill:#c81e1e;font-weight:600}
section.origin{margin-top:28px}
section.origin>h2{font-size:17px;overflow-wrap:anywhere}
.robots{border:1px solid #d0d7de;border-radius:6px;margin:10px 0 18px}
.robots h3{margin:0;padding:6px 10px;background:#f3f4f6;border-bottom:1px solid #d0d7de;font-size:13px;overflow-wrap:anywhere}
.robots pre{margin:0;padding:6px 10px;white-space:pre-wrap;overflow-wrap:anywhere}
.robots .l:target{background:#fff8c5}
.robots .ln{display:inline-block;width:3.5em;margin-left:-.5em;color:#8c959f;text-align:right;padding-right:1em;user-select:none}
dl.method dt{font-weight:600;margin-top:8px}
dl.method dd{margin:2px 0 0 18px}
@media print{
 body{max-width:none;padding:0;font-size:10pt}
 @page{margin:14mm}
 a{color:inherit;text-decoration:none}
 h2,h3{break-after:avoid}
 table,figure,.kpis,.notes,svg.chart{break-inside:avoid}
 tr{break-inside:avoid}
 section.origin{break-before:page}
 #method,#appendix{break-before:page}
 .robots{break-inside:auto}
 .robots h3{break-after:avoid}
 th{background:#eee;-webkit-print-color-adjust:exact;print-color-adjust:exact}
 .kpi.bad,.kpi.good,td.bad,tr.bad td,svg{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
</style></head>
<body>
<header>
<h1>robotsgate compliance report</h1>
<p id="period"><b>Period:</b> {{if .First}}{{time .First}} to {{time .Last}} (UTC, first and last request in range){{else}}no request in range{{end}}.
{{if or .Since .Until}}Bounds asked: {{if .Since}}from {{time .Since}}{{end}}{{if .Until}} until {{time .Until}}{{end}} ({{n .OutOfRange}} records outside left out).{{end}}</p>
<p class="meta">Generated {{time .Generated}} by <span class="mono">robotsgate report</span> from the audit log{{if gt (len .AuditFiles) 1}}s{{end}} {{range $i, $f := .AuditFiles}}{{if $i}}, {{end}}<span class="mono">{{$f}}</span>{{end}} and {{if .ArchiveDir}}the robots.txt archive <span class="mono">{{.ArchiveDir}}</span>{{else}}no robots.txt archive{{end}}. The method is explained in <a href="#method">How to read this report</a>.</p>
</header>

<div class="kpis" id="totals">
<div class="kpi"><b>{{n .Totals.Requests}}</b>requests</div>
<div class="kpi"><b>{{n .Totals.Allowed}}</b>allowed</div>
<div class="kpi"><b>{{n .Totals.Refused}}</b>refused</div>
{{if .Totals.Monitored}}<div class="kpi"><b>{{n .Totals.Monitored}}</b>refusals only logged (monitor)</div>{{end}}
<div class="kpi"><b>{{n .Totals.Other}}</b>other (origin failed, client left)</div>
<div class="kpi"><b>{{len .Origins}}</b>origins</div>
{{with .Pacing}}{{if .BelowAsked}}<div class="kpi bad" id="pacing-verdict"><b>{{n .BelowAsked}}</b>gaps below the interval robots.txt asked</div>
{{else if .Gaps}}<div class="kpi good" id="pacing-verdict"><b>{{ratio .MinRatio}}×</b>smallest gap ÷ interval asked: every interval kept ({{n .Gaps}} gaps)</div>
{{else}}<div class="kpi" id="pacing-verdict"><b>–</b>no paced requests to measure</div>{{end}}
<div class="kpi"><b>{{ms .LongestHoldMS}}</b>longest hold</div>{{end}}
</div>
{{if .Notes}}<div class="notes" id="notes"><b>Limits of these figures</b><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul></div>{{end}}

<h2 id="over-time">Requests over time</h2>
{{if .TimelineSVG}}<figure style="margin:0">{{.TimelineSVG}}</figure>{{else}}<p>No requests in range.</p>{{end}}

<div class="grid">
<div>
<h2 id="decisions">Decisions</h2>
<table id="decisions-table"><tr><th>Decision</th><th>Refusal</th><th class="num">Requests</th></tr>
{{range .Decisions}}<tr><td class="mono">{{.Decision}}</td><td>{{if .Refusal}}yes{{else}}no{{end}}</td><td class="num">{{n .Count}}</td></tr>
{{else}}<tr><td colspan="3">None.</td></tr>{{end}}</table>
</div>
<div>
<h2 id="clients">Clients</h2>
<table id="clients-table"><tr><th>Address</th><th>Proxy user</th><th>Clients entry</th><th class="num">Requests</th></tr>
{{range .Clients}}<tr><td class="mono">{{.Address}}</td><td>{{.User}}</td><td>{{.Rule}}</td><td class="num">{{n .Requests}}</td></tr>
{{else}}<tr><td colspan="4">None.</td></tr>{{end}}
{{if .OtherClients}}<tr><td colspan="3">Others</td><td class="num">{{n .OtherClients}}</td></tr>{{end}}</table>
<h2 id="agents">Agents</h2>
<table id="agents-table"><tr><th>Judged as (agent)</th><th class="num">Requests</th></tr>
{{range .Agents}}<tr><td class="mono">{{if .Agent}}{{.Agent}}{{else}}(none: refused before it was judged){{end}}</td><td class="num">{{n .Requests}}</td></tr>
{{else}}<tr><td colspan="2">None.</td></tr>{{end}}
{{if .OtherAgents}}<tr><td>Others</td><td class="num">{{n .OtherAgents}}</td></tr>{{end}}</table>
</div>
</div>

<h2 id="origins">Origins</h2>
<table id="origins-table"><tr><th>Origin</th><th class="num">Requests</th><th class="num">Allowed</th><th class="num">Refused</th><th class="num">robots.txt versions</th><th>Interval asked</th><th class="num">Smallest gap</th><th class="num">Gaps below interval</th><th class="num">Longest hold</th></tr>
{{range .Views}}<tr{{if .Gaps.BelowAsked}} class="bad"{{end}}><td><a href="#{{.ID}}">{{.Origin.Origin}}</a></td><td class="num">{{n .Requests}}</td><td class="num">{{n .Allowed}}</td><td class="num">{{n .Refused}}</td><td class="num">{{len .Versions}}</td><td>{{.Asked}}</td><td class="num">{{with .Gaps.MinGapSeconds}}{{secs .}}{{else}}–{{end}}</td><td class="num{{if .Gaps.BelowAsked}} bad{{end}}">{{if .Gaps.Gaps}}{{n .Gaps.BelowAsked}}{{else}}–{{end}}</td><td class="num">{{ms .LongestHoldMS}}</td></tr>
{{else}}<tr><td colspan="9">None.</td></tr>{{end}}</table>

{{range .Views}}
<section class="origin" id="{{.ID}}">
<h2>{{.Origin.Origin}}</h2>
<p>{{n .Requests}} requests: {{n .Allowed}} allowed ({{n .Forwarded}} reached the origin), {{n .Refused}} refused{{if .Monitored}}, {{n .Monitored}} refusals only logged (monitor mode){{end}}{{if .Other}}, {{n .Other}} other{{end}}. Decisions: {{range $i, $d := .Decisions}}{{if $i}}, {{end}}<span class="mono">{{$d.Decision}}</span> {{n $d.Count}}{{end}}.</p>

<h3>Refused by robots.txt rule</h3>
{{if .RefusedByRule}}<table class="rules"><tr><th>Rule</th><th class="num">Line</th><th>robots.txt version</th><th>Decision</th><th class="num">Refused</th><th class="num">Only logged</th><th>First URL refused</th></tr>
{{range .RefusedByRule}}<tr><td class="mono">{{.Rule}}</td><td class="num">{{if .SHA256}}<a href="#{{lineID .SHA256 .Line}}">{{.Line}}</a>{{else}}{{.Line}}{{end}}</td><td class="mono">{{if .SHA256}}<a href="#{{bodyID .SHA256}}">{{short .SHA256}}</a>{{else}}not archived{{end}}</td><td class="mono">{{.Decision}}</td><td class="num">{{n .Count}}</td><td class="num">{{n .Monitored}}</td><td class="mono">{{.Example}}</td></tr>
{{end}}</table>{{else}}<p>No request was refused by a robots.txt rule.</p>{{end}}

<h3>robots.txt versions in force</h3>
{{if .Versions}}<table class="versions"><tr><th>Version (SHA-256)</th><th>Read as</th><th>First fetched</th><th class="num">HTTP status</th><th class="num">Fetches in period (304)</th><th>Last fetched</th><th class="num">Decisions judged</th><th>Used from</th><th>Used until</th></tr>
{{range .Versions}}<tr><td class="mono">{{if .SHA256}}<a href="#{{bodyID .SHA256}}">{{short .SHA256}}</a>{{if not .InArchive}} <span class="bad">not in the archive</span>{{end}}{{else}}no body{{end}}</td><td>{{.RobotsStatus}}{{with .Cause}} ({{.}}){{end}}{{if .Truncated}}, truncated at 500 KiB{{end}}</td><td class="mono">{{time .FirstFetched}}</td><td class="num">{{if .HTTPStatuses}}{{statuses .HTTPStatuses}}{{else}}–{{end}}</td><td class="num">{{n .Fetches}} ({{n .Revalidations}})</td><td class="mono">{{time .LastFetched}}</td><td class="num">{{n .Records}}</td><td class="mono">{{time .FirstUsed}}</td><td class="mono">{{time .LastUsed}}</td></tr>
{{end}}</table>{{else}}<p>robots.txt was not consulted (no decision rests on it).</p>{{end}}

<h3>Pacing</h3>
{{if .Pacing}}<table class="pacing"><tr><th>Group</th><th>Interval asked</th><th class="num">Paced requests</th><th class="num">Gaps</th><th class="num">Smallest gap</th><th class="num">÷ interval</th><th class="num">Below interval</th><th class="num">Longest hold</th><th class="num">Not paced</th></tr>
{{range .Pacing}}<tr{{if .BelowAsked}} class="bad"{{end}}><td class="mono">{{if .Group}}{{.Group}}{{else}}(none){{end}}</td><td>{{range $i, $a := .Asked}}{{if $i}}<br>{{end}}{{if $a.IntervalSeconds}}{{secs $a.IntervalSeconds}}{{if $a.CrawlDelaySeconds}} (Crawl-delay {{secs $a.CrawlDelaySeconds}}){{end}}{{if $a.RequestIntervalSeconds}} (Request-rate: one per {{secs $a.RequestIntervalSeconds}}){{end}}{{else}}none{{end}}{{if $a.SHA256}} in <a class="mono" href="#{{bodyID $a.SHA256}}">{{short $a.SHA256}}</a>{{end}}{{end}}{{if .AskedUnknown}}{{if .Asked}}<br>{{end}}unknown for {{n .AskedUnknown}} (body not archived){{end}}</td><td class="num">{{n .Paced}}</td><td class="num">{{n .Gaps}}</td><td class="num">{{with .MinGapSeconds}}{{secs .}}{{else}}–{{end}}</td><td class="num">{{with .MinRatio}}{{ratio .}}{{else}}–{{end}}</td><td class="num{{if .BelowAsked}} bad{{end}}">{{n .BelowAsked}}</td><td class="num">{{ms .LongestHoldMS}}</td><td class="num">{{n .NotPaced}}</td></tr>
{{end}}</table>
{{if .Gaps.Gaps}}<p>Smallest gap between two paced requests: <b class="{{if .Gaps.BelowAsked}}bad{{else}}good{{end}}">{{secs (deref .Gaps.MinGapSeconds)}}</b> where {{secs (deref .Gaps.MinGapAskedSeconds)}} was asked{{if .Gaps.BelowAsked}}: <span class="bad">{{n .Gaps.BelowAsked}} of {{n .Gaps.Gaps}} gaps are below the interval robots.txt asked</span>{{else}}: every one of the {{n .Gaps.Gaps}} gaps kept the interval asked{{end}}.</p>
<figure style="margin:0">{{.HistogramSVG}}</figure>{{else}}<p>No gaps to measure: {{if eq .Asked "none"}}robots.txt asked for no interval{{else}}fewer than two paced requests{{end}}.</p>{{end}}
{{else}}<p>No request was forwarded to this origin.</p>{{end}}
</section>
{{end}}

<section id="method">
<h2>How to read this report</h2>
<dl class="method">
<dt>Where the figures come from</dt>
<dd>robotsgate writes one audit record per request it handles (arrival time, client, agent, URL, decision, the deciding robots.txt rule and its line, the SHA-256 of the robots.txt body that judged it, the time the request was held for pacing, the origin's status). It archives every distinct robots.txt body it judged, by SHA-256, and logs every robots.txt fetch. This report reads those files only; <span class="mono">robotsgate verify</span> re-judges every record against the archived body.</dd>
<dt>Refused, allowed, other</dt>
<dd>Refused: the proxy answered the client itself and the origin never saw the request (robots.txt rules, unreachable robots.txt, AI-usage preferences, trap limits, pacing limits, egress rules, client rules). Only logged: a client in monitor mode, whose refusals are recorded but not enforced. Other: the origin failed, or the client left while its request was judged or held.</dd>
<dt>robots.txt versions in force</dt>
<dd>Each version is a robots.txt body by its SHA-256 (or no body: unavailable means every path allowed, unreachable every path refused). The decisions it judged in the period come from the audit; its fetches from the archive's fetch logs (a 304 revalidation kept the same body). Its text is reproduced in the appendix, with the line numbers the rules refer to.</dd>
<dt>Interval asked, smallest gap</dt>
<dd>The interval asked is the larger of the Crawl-delay and the Request-rate (n requests per T is one per T/n) of the robots.txt group that judged a request, in the version that judged it. Requests are paced per origin and group: each gap is the time between two successive requests of one origin and group that the proxy forwarded to the origin (allowed, with a status from the origin; not those of monitor or bypass clients, nor robots.txt itself, which the proxy does not pace), each taken when it left the proxy: its arrival plus the time it was held for its slot (wait_ms). The time spent judging a request (usually under a millisecond, a robots.txt fetch at most) is not recorded and not included. A gap is compared with the interval asked of the later request: <b>no gap may be below it</b>; one that is is counted and shown in red. The histogram counts gaps by gap ÷ interval: left of the dashed line, too close. The longest hold is the longest a request waited for its slot.</dd>
<dt>What it proves, and what it does not</dt>
<dd>It proves what the proxy did with the requests it received: which it refused, by which rule of which robots.txt version, and how far apart it let the others go. It does not prove that every request of a crawler went through the proxy: a client that bypassed it is not in the log. Nor does it cover gaps to requests outside the period or the audit files read.</dd>
</dl>
</section>

<section id="appendix">
<h2>Appendix: robots.txt versions</h2>
{{if not .Bodies}}<p>No robots.txt body was read in the period.</p>{{end}}
{{end}}

{{define "body"}}<div class="robots" id="{{.ID}}">
<h3>SHA-256 <span class="mono">{{.SHA256}}</span>, served by {{join .Origins ", "}}{{if not .Missing}}, {{n .Size}} bytes{{end}}</h3>
{{if .Missing}}<p class="bad" style="padding:6px 10px">{{.Body.Error}}: the text cannot be shown.</p>{{else if .Error}}<p class="bad" style="padding:6px 10px">{{.Error}}</p>{{else}}<pre>{{$sha := .SHA256}}{{range .Lines}}<span class="l" id="{{lineID $sha .N}}"><span class="ln">{{.N}}</span>{{.Text}}</span>
{{end}}</pre>{{end}}
</div>
{{end}}

{{define "end"}}</section>
</body></html>
{{end}}`
