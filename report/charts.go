package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// The charts are inline SVG drawn here, on the server: no script, no
// fonts or images fetched. Their text is escaped with html.EscapeString.

// Colours, shared with the page's CSS (the legends).
const (
	colAllowed = "#1d4ed8"
	colRefused = "#c81e1e"
	colOther   = "#9ca3af"
	colKept    = "#1d4ed8"
	colAxis    = "#444"
	colGrid    = "#e5e7eb"
)

// svgBuilder writes SVG markup.
type svgBuilder struct{ strings.Builder }

func (b *svgBuilder) f(format string, args ...any) { fmt.Fprintf(b, format, args...) }

// text writes a <text> element with escaped content.
func (b *svgBuilder) text(x, y float64, anchor, class, s string) {
	b.f(`<text x="%s" y="%s" text-anchor="%s" class="%s">%s</text>`, num(x), num(y), anchor, class, html.EscapeString(s))
}

// num formats a coordinate.
func num(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// niceMax rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceMax(v int64) int64 {
	if v <= 1 {
		return 1
	}
	p := int64(1)
	for {
		for _, m := range []int64{1, 2, 5} {
			if m*p >= v {
				return m * p
			}
		}
		p *= 10
	}
}

// yTicks draws the horizontal grid lines and labels of a count axis from
// 0 to ymax (a half-way line when it falls on a whole count).
func yTicks(b *svgBuilder, ymax int64, x1, x2, base, plotH float64) {
	for _, v := range []int64{0, ymax / 2, ymax} {
		if v == ymax/2 && (ymax%2 != 0 || v == 0) {
			continue
		}
		y := base - float64(v)/float64(ymax)*plotH
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x1), num(y), num(x2), num(y), colGrid)
		b.text(x1-6, y+4, "end", "tick", formatCount(v))
	}
}

// timelineSVG draws the requests over time, allowed, refused and other
// stacked, one bar per bin.
func timelineSVG(tl Timeline) template.HTML {
	const (
		width, height          = 960.0, 250.0
		left, right, top, base = 56.0, 12.0, 16.0, 200.0
	)
	var peak int64
	for _, b := range tl.Bins {
		peak = max(peak, b.Allowed+b.Refused+b.Other)
	}
	if len(tl.Bins) == 0 {
		return ""
	}
	ymax := niceMax(peak)
	plotW, plotH := width-left-right, base-top
	var b svgBuilder
	b.f(`<svg class="chart" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-labelledby="timeline-title">`,
		num(width), num(height), num(width), num(height))
	bin := time.Duration(tl.BinSeconds * float64(time.Second))
	b.f(`<title id="timeline-title">Requests per %s: allowed, refused and other, stacked</title>`, html.EscapeString(formatDuration(bin)))
	yTicks(&b, ymax, left, width-right, base, plotH)
	bw := plotW / float64(len(tl.Bins))
	gap := 0.0
	if bw >= 4 {
		gap = math.Min(2, bw*0.15)
	}
	for i, bn := range tl.Bins {
		x := left + float64(i)*bw
		y := base
		start := tl.Start.Add(time.Duration(i) * bin)
		for _, part := range []struct {
			n      int64
			colour string
			what   string
		}{{bn.Allowed, colAllowed, "allowed"}, {bn.Refused, colRefused, "refused"}, {bn.Other, colOther, "other"}} {
			if part.n == 0 {
				continue
			}
			h := float64(part.n) / float64(ymax) * plotH
			y -= h
			b.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s: %s %s</title></rect>`,
				num(x+gap/2), num(y), num(bw-gap), num(h), part.colour,
				html.EscapeString(start.Format("2006-01-02 15:04:05.0Z07:00")), formatCount(part.n), part.what)
		}
	}
	b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(left), num(base), num(width-right), num(base), colAxis)
	// Time labels: the start, the end and up to four between.
	end := tl.Start.Add(time.Duration(len(tl.Bins)) * bin)
	var layout string
	switch span := end.Sub(tl.Start); {
	case span >= 48*time.Hour:
		layout = "2006-01-02"
	case span >= 12*time.Hour:
		layout = "01-02 15:04"
	case span >= 5*time.Minute:
		layout = "15:04:05"
	default:
		layout = "15:04:05.0"
	}
	n := min(len(tl.Bins), 5)
	for k := 0; k <= n; k++ {
		i := k * len(tl.Bins) / n
		x := left + float64(i)*bw
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(base), num(x), num(base+5), colAxis)
		anchor := "middle"
		switch k {
		case 0:
			anchor = "start"
		case n:
			anchor = "end"
		}
		b.text(x, base+18, anchor, "tick", tl.Start.Add(time.Duration(i)*bin).Format(layout))
	}
	b.text(left, height-8, "start", "axis", fmt.Sprintf("UTC, %s per bar, from %s", formatDuration(bin), tl.Start.Format("2006-01-02 15:04:05Z")))
	lx := width - right - 250
	for i, l := range []struct{ colour, what string }{{colAllowed, "allowed"}, {colRefused, "refused"}, {colOther, "other"}} {
		x := lx + float64(i)*85
		b.f(`<rect x="%s" y="%s" width="12" height="12" fill="%s"/>`, num(x), num(height-19), l.colour)
		b.text(x+16, height-8, "start", "axis", l.what)
	}
	b.f(`</svg>`)
	return template.HTML(b.String())
}

// histogramSVG draws the gaps of an origin by gap ÷ asked interval, the
// buckets below the interval in red, with the interval marked. asked
// describes the interval ("0.5 s", "0.5 s to 1 s").
func histogramSVG(id string, h Histogram, asked string) template.HTML {
	const (
		width, height          = 720.0, 210.0
		left, right, top, base = 48.0, 12.0, 22.0, 160.0
	)
	var peak int64
	one := -1 // index of the bucket starting at 1
	for i, bk := range h.Buckets {
		peak = max(peak, bk.Count)
		if bk.From == 1 {
			one = i
		}
	}
	if peak == 0 {
		return ""
	}
	ymax := niceMax(peak)
	plotW, plotH := width-left-right, base-top
	bw := plotW / float64(len(h.Buckets))
	var b svgBuilder
	b.f(`<svg class="chart hist" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-labelledby="%s">`,
		num(width), num(height), num(width), num(height), id)
	b.f(`<title id="%s">Gaps between paced requests, by gap ÷ the interval asked (%s)</title>`, id, html.EscapeString(asked))
	yTicks(&b, ymax, left, width-right, base, plotH)
	for i, bk := range h.Buckets {
		x := left + float64(i)*bw
		colour := colKept
		if bk.From < 1 {
			colour = colRefused
		}
		if bk.Count > 0 {
			hgt := math.Max(1, float64(bk.Count)/float64(ymax)*plotH)
			b.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s: %s</title></rect>`,
				num(x+2), num(base-hgt), num(bw-4), num(hgt), colour, html.EscapeString(bucketName(bk)), formatCount(bk.Count))
			b.text(x+bw/2, base-hgt-4, "middle", "count", formatCount(bk.Count))
		}
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(base), num(x), num(base+4), colAxis)
		b.text(x, base+16, "middle", "tick", formatRatio(bk.From))
	}
	b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(left), num(base), num(width-right), num(base), colAxis)
	if one >= 0 {
		x := left + float64(one)*bw
		b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="5 3"/>`, num(x), num(top-14), num(x), num(base), colRefused)
		b.text(x+4, top-4, "start", "mark", "asked interval: "+asked)
		b.text(x-4, top-4, "end", "mark", "too close")
	}
	b.text(left, height-8, "start", "axis", "gap ÷ the interval robots.txt asked (buckets from the value under each tick; not to scale)")
	b.f(`</svg>`)
	return template.HTML(b.String())
}

// bucketName says what a bucket holds ("1.01× to 1.02× the interval").
func bucketName(bk Bucket) string {
	if bk.To == nil {
		return formatRatio(bk.From) + "× the interval or more"
	}
	return formatRatio(bk.From) + "× to " + formatRatio(*bk.To) + "× the interval"
}

func formatRatio(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

// formatCount writes n with thousands separators.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// formatDuration writes d for a reader: 250 ms, 0.505 s, 12.5 s, 3 min.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0 s"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + " ms"
	case d < 100*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) + " s"
	case d < 2*time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < 2*time.Hour:
		return strconv.FormatFloat(d.Minutes(), 'f', 1, 64) + " min"
	case d < 48*time.Hour:
		return strconv.FormatFloat(d.Hours(), 'f', 1, 64) + " h"
	}
	return strconv.FormatFloat(d.Hours()/24, 'f', 1, 64) + " days"
}

// formatSeconds is formatDuration of a number of seconds.
func formatSeconds(s float64) string {
	return formatDuration(time.Duration(math.Round(s * float64(time.Second))))
}
