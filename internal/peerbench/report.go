package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sample is one load run: one setup, one mode, one round.
type sample struct {
	round       int
	setup, mode string
	res         loadResult
	cpuTicks    int64  // the proxy's CPU over the run (its process tree), clock ticks
	fail        string // why the run does not count ("" when it does)
}

// cell is a setup's figures in one mode over all rounds.
type cell struct {
	measured bool
	fail     string
	rate     float64       // requests/s, median over the rounds
	p50, p99 time.Duration // medians over the rounds
	cpu      time.Duration // proxy CPU per request: all rounds' CPU over all rounds' requests
}

// column is a setup as the report shows it.
type column struct {
	name, title string
	rssKiB      int64 // peak RSS (VmHWM) of the proxy's main process, 0 unknown
}

// round is one pass over every setup and mode.
type round struct {
	n                     int
	loadBefore, loadAfter string
}

// report is everything printed at the end.
type report struct {
	header  []string
	columns []column
	modes   []mode
	rounds  []round
	samples []sample
}

// cells aggregates the samples per setup and mode.
func (r *report) cells() map[string]map[string]cell {
	type acc struct {
		rates       []float64
		p50s, p99s  []time.Duration
		ticks, reqs int64
		fail        string
		measured    bool
	}
	accs := map[[2]string]*acc{}
	for _, s := range r.samples {
		k := [2]string{s.setup, s.mode}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
		}
		a.measured = true
		if s.fail != "" {
			if a.fail == "" {
				a.fail = s.fail
			}
			continue
		}
		a.rates = append(a.rates, s.res.rate())
		a.p50s = append(a.p50s, s.res.p50)
		a.p99s = append(a.p99s, s.res.p99)
		a.ticks += s.cpuTicks
		a.reqs += s.res.ok
	}
	out := map[string]map[string]cell{}
	for k, a := range accs {
		c := cell{measured: a.measured, fail: a.fail}
		if a.fail == "" && len(a.rates) > 0 {
			c.rate = median(a.rates)
			c.p50 = time.Duration(median(durs(a.p50s)))
			c.p99 = time.Duration(median(durs(a.p99s)))
			if a.reqs > 0 {
				c.cpu = time.Duration(a.ticks) * (time.Second / clockTicks) / time.Duration(a.reqs)
			}
		}
		if out[k[0]] == nil {
			out[k[0]] = map[string]cell{}
		}
		out[k[0]][k[1]] = c
	}
	return out
}

func durs(ds []time.Duration) []float64 {
	f := make([]float64, len(ds))
	for i, d := range ds {
		f[i] = float64(d)
	}
	return f
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// isOurs reports whether a column is robotsgate (compared with the peers)
// rather than a peer.
func isOurs(name string) bool { return strings.HasPrefix(name, "robotsgate") }

// peerLabel is how a ratio names a peer: its title without " tuned" or
// the version, e.g. "Privoxy".
func peerLabel(c column) string {
	f := strings.Fields(c.title)
	label := strings.TrimSuffix(f[0], ",")
	if c.name == "squid-log" {
		label += " (access log)"
	}
	return label
}

// write prints the report as markdown.
func (r *report) write(w io.Writer) {
	cells := r.cells()
	for _, h := range r.header {
		fmt.Fprintln(w, h)
	}
	fmt.Fprintln(w)

	// The table in the shape: requests/s per mode, the fastest in
	// bold, robotsgate's against the fastest peer.
	heads := []string{"mode"}
	for _, c := range r.columns {
		heads = append(heads, c.title)
	}
	tableHead(w, heads)
	for _, m := range r.modes {
		row := []string{m.label + ", req/s"}
		best := ""
		bestRate := 0.0
		for _, c := range r.columns {
			if x := cells[c.name][m.name]; x.fail == "" && x.rate > bestRate {
				best, bestRate = c.name, x.rate
			}
		}
		bestPeer, bestPeerRate := bestPeerOf(r.columns, cells, m.name)
		for _, c := range r.columns {
			x := cells[c.name][m.name]
			txt := cellText(x, func(x cell) string { return thousands(x.rate) })
			if x.fail == "" && x.measured && c.name == best {
				txt = "**" + txt + "**"
			}
			if x.fail == "" && x.measured && isOurs(c.name) && bestPeerRate > 0 {
				txt += fmt.Sprintf(" (%.2fx %s)", x.rate/bestPeerRate, peerLabel(bestPeer))
			}
			row = append(row, txt)
		}
		tableRow(w, row)
	}
	cpuRow := []string{"proxy CPU per request, µs (" + strings.Join(modeShortNames(r.modes), " / ") + ")"}
	for _, c := range r.columns {
		var parts []string
		for _, m := range r.modes {
			parts = append(parts, cellText(cells[c.name][m.name], func(x cell) string {
				return strconv.FormatInt(x.cpu.Round(time.Microsecond).Microseconds(), 10)
			}))
		}
		cpuRow = append(cpuRow, strings.Join(parts, " / "))
	}
	tableRow(w, cpuRow)
	rssRow := []string{"peak RSS (VmHWM) at the end, MiB"}
	for _, c := range r.columns {
		if c.rssKiB > 0 {
			rssRow = append(rssRow, strconv.FormatFloat(float64(c.rssKiB)/1024, 'f', 1, 64))
		} else {
			rssRow = append(rssRow, "?")
		}
	}
	tableRow(w, rssRow)
	fmt.Fprintln(w)

	fmt.Fprintln(w, "Latency, p50 / p99 in ms (the client's, medians over the rounds):")
	fmt.Fprintln(w)
	tableHead(w, heads)
	for _, m := range r.modes {
		row := []string{m.label}
		for _, c := range r.columns {
			row = append(row, cellText(cells[c.name][m.name], func(x cell) string {
				return ms(x.p50) + " / " + ms(x.p99)
			}))
		}
		tableRow(w, row)
	}
	fmt.Fprintln(w)

	r.writeRatios(w, cells)
	r.writeTargets(w, cells)
	r.writeRounds(w)
}

// floor is the column of the net/http floor: a reference, not a proxy an
// operator deploys, so no peer robotsgate is named against in the table.
const floor = "nethttp"

// bestPeerOf is the fastest peer (not robotsgate, not the floor) in a mode.
func bestPeerOf(cols []column, cells map[string]map[string]cell, mode string) (column, float64) {
	var best column
	rate := 0.0
	for _, c := range cols {
		if x := cells[c.name][mode]; !isOurs(c.name) && c.name != floor && x.fail == "" && x.rate > rate {
			best, rate = c, x.rate
		}
	}
	return best, rate
}

// writeRatios prints each robotsgate setup's requests/s over each peer's,
// and over robotsgate's without the audit log, in the same run.
func (r *report) writeRatios(w io.Writer, cells map[string]map[string]cell) {
	var ours, peers []column
	for _, c := range r.columns {
		if isOurs(c.name) {
			ours = append(ours, c)
		} else {
			peers = append(peers, c)
		}
	}
	if len(ours) == 0 {
		return
	}
	refs := peers
	for _, c := range ours {
		if c.name == "robotsgate-noaudit" || c.name == "robotsgate" {
			refs = append(refs, c)
		}
	}
	fmt.Fprintln(w, "robotsgate's requests/s against each, same run:")
	fmt.Fprintln(w)
	heads := []string{"setup", "mode"}
	for _, p := range refs {
		heads = append(heads, "/ "+p.title)
	}
	tableHead(w, heads)
	for _, o := range ours {
		for _, m := range r.modes {
			row := []string{o.title, m.label}
			for _, p := range refs {
				row = append(row, ratio(cells[o.name][m.name], cells[p.name][m.name], o.name == p.name))
			}
			tableRow(w, row)
		}
	}
	fmt.Fprintln(w)
}

func ratio(a, b cell, same bool) string {
	if same || !a.measured || !b.measured || a.fail != "" || b.fail != "" || b.rate == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2fx", a.rate/b.rate)
}

// target is one of the goals set for robotsgate with its defaults.
type target struct {
	mode, peer string
	min        float64
	what       string
}

var targets = []target{
	{"http-keepalive", "privoxy", 1.2, "plain HTTP keep-alive ≥ 1.2x Privoxy"},
	{"http-1conn", "privoxy", 1.0, "1 connection ≥ Privoxy"},
	{"https-keepalive", "goproxy", 1.2, "intercepted keep-alive ≥ 1.2x tuned goproxy"},
	{"https-keepalive", "squid", 1.5, "intercepted keep-alive ≥ 1.5x Squid ssl-bump"},
	{"https-newconn", "goproxy", 2.0, "new TLS connections ≥ 2x tuned goproxy"},
	{"http-keepalive", "robotsgate-noaudit", 0.95, "audit log on costs ≤ 5 % (plain HTTP keep-alive)"},
	{"https-keepalive", "robotsgate-noaudit", 0.95, "audit log on costs ≤ 5 % (intercepted keep-alive)"},
}

// writeTargets checks the targets for robotsgate with its defaults, and
// beside each the net/http floor's ratio against the same peer: a target
// the floor misses cannot be met by any proxy on net/http's server and
// httputil.ReverseProxy, whatever its own work costs.
func (r *report) writeTargets(w io.Writer, cells map[string]map[string]cell) {
	ours, ok := cells["robotsgate"]
	if !ok {
		return
	}
	fmt.Fprintln(w, "robotsgate (defaults) against its targets, and the net/http floor against the same:")
	fmt.Fprintln(w)
	tableHead(w, []string{"target", "measured", "met", "net/http floor"})
	for _, t := range targets {
		x, met := targetRatio(ours[t.mode], cells[t.peer][t.mode], t.min)
		atFloor := "—"
		if f, ok := cells[floor]; ok && t.peer != "robotsgate-noaudit" {
			atFloor, _ = targetRatio(f[t.mode], cells[t.peer][t.mode], t.min)
		}
		tableRow(w, []string{t.what, x, met, atFloor})
	}
	fmt.Fprintln(w)
}

// targetRatio is a's rate over b's and whether it reaches min; "—" for
// both when either was not measured or failed.
func targetRatio(a, b cell, min float64) (ratioText, met string) {
	x := ratio(a, b, false)
	if x == "—" {
		return x, x
	}
	if a.rate/b.rate >= min {
		return x, "yes"
	}
	return x, "no"
}

// writeRounds prints every run, with the machine's load around each round.
func (r *report) writeRounds(w io.Writer) {
	title := map[string]string{}
	for _, c := range r.columns {
		title[c.name] = c.title
	}
	label := map[string]string{}
	for _, m := range r.modes {
		label[m.name] = m.label
	}
	fmt.Fprintln(w, "Every run (rounds interleave the setups; load average = 1, 5, 15 minutes):")
	fmt.Fprintln(w)
	for _, rd := range r.rounds {
		fmt.Fprintf(w, "- round %d: load average %s before, %s after\n", rd.n, rd.loadBefore, rd.loadAfter)
	}
	fmt.Fprintln(w)
	tableHead(w, []string{"round", "mode", "setup", "req/s", "p50 / p99 ms", "proxy CPU µs/req", "requests", "check"})
	for _, s := range r.samples {
		check := "ok"
		if s.fail != "" {
			check = "FAILED: " + strings.ReplaceAll(s.fail, "\n", " ")
		}
		cpu := "—"
		if s.res.ok > 0 {
			cpu = strconv.FormatInt((time.Duration(s.cpuTicks) * (time.Second / clockTicks) / time.Duration(s.res.ok)).Microseconds(), 10)
		}
		tableRow(w, []string{strconv.Itoa(s.round), label[s.mode], title[s.setup], thousands(s.res.rate()),
			ms(s.res.p50) + " / " + ms(s.res.p99), cpu, strconv.FormatInt(s.res.ok, 10), check})
	}
}

func cellText(x cell, f func(cell) string) string {
	switch {
	case !x.measured:
		return "—"
	case x.fail != "":
		return "FAILED"
	}
	return f(x)
}

func modeShortNames(ms []mode) []string {
	short := map[string]string{"http-keepalive": "HTTP keep-alive", "http-1conn": "1 connection",
		"https-keepalive": "HTTPS keep-alive", "https-newconn": "new TLS connection"}
	var out []string
	for _, m := range ms {
		out = append(out, short[m.name])
	}
	return out
}

func tableHead(w io.Writer, heads []string) {
	tableRow(w, heads)
	seps := make([]string, len(heads))
	for i := range seps {
		seps[i] = "---"
	}
	tableRow(w, seps)
}

func tableRow(w io.Writer, cols []string) {
	fmt.Fprintln(w, "| "+strings.Join(cols, " | ")+" |")
}

// thousands formats a rate rounded to a whole number with comma
// separators: 23246.4 → "23,246".
func thousands(x float64) string {
	s := strconv.FormatInt(int64(x+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ms formats a latency in milliseconds with two decimals.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64)
}
