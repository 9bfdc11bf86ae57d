package robots

import (
	"bytes"
	"fmt"
	"time"
)

// Visit-time (an extension some sites write, "Visit-time: 0600-0845") asks
// crawlers to visit only within a window of the day, in UTC. A group may
// have several lines: a visit is welcome within any of them. A window whose
// end is before its start runs past midnight ("2200-0600").

// VisitWindow is one Visit-time line of a group: a daily window in UTC,
// from Start (included) to End (excluded), both offsets from midnight.
// End before Start means the window runs past midnight.
type VisitWindow struct {
	Start, End time.Duration
	Line       int
}

// String writes the window as robots.txt does ("0600-0845").
func (w VisitWindow) String() string {
	hm := func(d time.Duration) string { return fmt.Sprintf("%02d%02d", int(d.Hours()), int(d.Minutes())%60) }
	return hm(w.Start) + "-" + hm(w.End)
}

// contains reports whether the time of day t (an offset from midnight)
// lies in the window.
func (w VisitWindow) contains(t time.Duration) bool {
	if w.Start <= w.End {
		return w.Start <= t && t < w.End
	}
	return t >= w.Start || t < w.End
}

// VisitWindows are the Visit-time lines of a group; none means any time.
type VisitWindows []VisitWindow

// Open reports whether t falls in one of the windows (always, without
// windows) and, when it does not, how long until the next window opens.
func (ws VisitWindows) Open(t time.Time) (bool, time.Duration) {
	if len(ws) == 0 {
		return true, 0
	}
	t = t.UTC()
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	tod := t.Sub(midnight)
	next := 24 * time.Hour
	for _, w := range ws {
		if w.contains(tod) {
			return true, 0
		}
		wait := w.Start - tod
		if wait <= 0 {
			wait += 24 * time.Hour
		}
		next = min(next, wait)
	}
	return false, next
}

// VisitTimes returns the group's Visit-time windows in file order; nil
// when it has none (visits are welcome at any time).
func (g Group) VisitTimes() VisitWindows {
	vs := g.f.extras().visitRules()
	if len(vs) == 0 {
		return nil
	}
	var out VisitWindows
	g.eachRun(func(run uint32, _ *run) {
		for _, v := range vs {
			if v.run == run {
				out = append(out, VisitWindow{Start: minutes(v.start), End: minutes(v.end), Line: int(v.line)})
			}
		}
	})
	return out
}

// visitRule is a Visit-time line: its window in minutes of the day, its
// line and the run it belongs to.
type visitRule struct {
	run        uint32
	line       uint32
	start, end uint16
}

func minutes(m uint16) time.Duration { return time.Duration(m) * time.Minute }

// visitRules are the file's Visit-time lines, nil when it has none.
func (x *fileExtras) visitRules() []visitRule {
	if x.visits == nil {
		return nil
	}
	return *x.visits
}

// parseVisitTime reads "HHMM-HHMM" (UTC; spaces around '-' allowed, text
// after the window ignored), each time 0000 to 2359, the two different.
func parseVisitTime(v []byte) (start, end uint16, ok bool) {
	from, to, found := bytes.Cut(v, []byte("-"))
	if !found {
		return 0, 0, false
	}
	start, okFrom := hhmm(trimSpace(from))
	end, okTo := hhmm(firstWord(trimSpace(to)))
	if !okFrom || !okTo || start == end {
		return 0, 0, false
	}
	return start, end, true
}

// hhmm reads four digits HHMM as minutes of the day.
func hhmm(b []byte) (uint16, bool) {
	if len(b) != 4 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	h, m := n/100, n%100
	if h > 23 || m > 59 {
		return 0, false
	}
	return uint16(h*60 + m), true
}
