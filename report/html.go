package report

import (
	"bufio"
	_ "embed"
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
	// Quiet are the origins summed up in one table instead of a section:
	// every request and tunnel refused before robots.txt was consulted.
	Quiet []*Origin
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
		if quiet(o) {
			p.Quiet = append(p.Quiet, o)
			continue
		}
		v := originView{Origin: o, ID: "origin-" + strconv.Itoa(i+1), Asked: askedText(o)}
		v.HistogramSVG = histogramSVG(v.ID+"-gaps", o.Gaps.Histogram, v.Asked)
		p.Views = append(p.Views, v)
	}
	return p
}

// quietDecisions are refusals made before robots.txt is consulted, about
// the request itself: an origin with nothing else has nothing to show but
// them (a browser's update host, a malformed request).
var quietDecisions = map[string]bool{"egress-denied": true, "bad-request": true}

// quiet reports whether all of an origin's records were refused before
// robots.txt was consulted.
func quiet(o *Origin) bool {
	if o.Allowed+o.Forwarded+o.Monitored+o.Tunnels.Intercepted+o.Tunnels.Blind+o.Tunnels.Monitored > 0 || len(o.Versions) > 0 {
		return false
	}
	for _, d := range o.Decisions {
		if !quietDecisions[d.Decision] {
			return false
		}
	}
	return true
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

// formatCountOf writes n and the noun that agrees with it: "1 request",
// "2 requests".
func formatCountOf(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return formatCount(n) + " " + many
}

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"time":  formatTime,
	"n":     formatCount,
	"count": formatCountOf,
	"plural": func(n any, one, many string) string {
		if fmt.Sprint(n) == "1" {
			return one
		}
		return many
	},
	"sub":   func(a, b int64) int64 { return a - b },
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
	"css": func() template.CSS { return template.CSS(pageCSS) },
}).Parse(pageHTML))

// The report's page and its style sheet, inlined into the page so that the
// report is one self-contained file.
var (
	//go:embed report.html
	pageHTML string
	//go:embed report.css
	pageCSS string
)
