package tdmrep

import (
	"fmt"
	"strings"
	"testing"
)

// reportExample is the final report's example of three groups of files.
const reportExample = `[
  {"location": "/directory-a/", "tdm-reservation": 1},
  {"location": "/directory-b/html/", "tdm-reservation": 1, "tdm-policy": "https://provider.com/policies/policy.json"},
  {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0}
]`

// TestMatch: which rule a target falls under (its index, -1 for none),
// and whether it is reserved.
func TestMatch(t *testing.T) {
	tests := []struct {
		name, file, target string
		entry              int
		reserved           bool
	}{
		{"report: reserved directory", reportExample, "/directory-a/paper.pdf", 0, true},
		{"report: reserved with a policy", reportExample, "/directory-b/html/page.html", 1, true},
		{"report: not reserved", reportExample, "/directory-b/images/cat.jpg", 2, false},
		{"report: no rule", reportExample, "/directory-b/images/cat.png", -1, false},
		{"report: prefix of a location is not a match", reportExample, "/directory-a", -1, false},

		{"first match beats a later broader rule", `[{"location":"/private/open/*","tdm-reservation":0},{"location":"/private/","tdm-reservation":1}]`, "/private/open/a", 0, false},
		{"the later broader rule applies elsewhere", `[{"location":"/private/open/*","tdm-reservation":0},{"location":"/private/","tdm-reservation":1}]`, "/private/a", 1, true},
		{"first match beats a later longer rule", `[{"location":"/","tdm-reservation":1},{"location":"/public/","tdm-reservation":0}]`, "/public/a", 0, true},

		{"$ anchors the end", `[{"location":"/exact$","tdm-reservation":1}]`, "/exact", 0, true},
		{"$ anchored does not match longer", `[{"location":"/exact$","tdm-reservation":1}]`, "/exact/more", -1, false},
		{"* in the middle", `[{"location":"/*.pdf$","tdm-reservation":1}]`, "/a/b/c.pdf", 0, true},
		{"* then $ is not a prefix match", `[{"location":"/*.pdf$","tdm-reservation":1}]`, "/a/b/c.pdf.html", -1, false},
		{"a leading * matches anywhere", `[{"location":"*.jpg","tdm-reservation":1}]`, "/x/y.jpg", 0, true},
		{"query is part of the target", `[{"location":"/*?print=1","tdm-reservation":1}]`, "/article?print=1", 0, true},
		{"case-sensitive", `[{"location":"/Private/","tdm-reservation":1}]`, "/private/a", -1, false},
		{"no leading slash gets one", `[{"location":"images/","tdm-reservation":1}]`, "/images/a.png", 0, true},
		{"white space around a location", `[{"location":"  /images/ ","tdm-reservation":1}]`, "/images/a.png", 0, true},
		{"empty target is /", `[{"location":"/$","tdm-reservation":1}]`, "", 0, true},
		{"fragment ignored", `[{"location":"/a$","tdm-reservation":1}]`, "/a#frag", 0, true},

		{"unreserved escape in the location decoded", `[{"location":"/%7Ejoe/","tdm-reservation":1}]`, "/~joe/index.html", 0, true},
		{"unreserved escape in the target decoded", `[{"location":"/~joe/","tdm-reservation":1}]`, "/%7ejoe/index.html", 0, true},
		{"reserved escape kept", `[{"location":"/a/b","tdm-reservation":1}]`, "/a%2Fb", -1, false},
		{"escapes compared upper-cased", `[{"location":"/a%2fb","tdm-reservation":1}]`, "/a%2Fb", 0, true},
		{"non-ASCII location %-encoded", `[{"location":"/café/","tdm-reservation":1}]`, "/caf%C3%A9/menu", 0, true},
		{"dot segments resolved", `[{"location":"/private/","tdm-reservation":1}]`, "/public/../private/a", 0, true},
		{"repeated slashes resolved", `[{"location":"/private/","tdm-reservation":1}]`, "//private/a", 0, true},
		{"$ escaped is a literal", `[{"location":"/price-%24","tdm-reservation":1}]`, "/price-$", 0, true},
		{"a non-final $ is a literal", `[{"location":"/a$b","tdm-reservation":1}]`, "/a$b/c", 0, true},
		{"* escaped is a literal", `[{"location":"/a%2a$","tdm-reservation":1}]`, "/a*", 0, true},
		{"* escaped is not a wildcard", `[{"location":"/a%2A$","tdm-reservation":1}]`, "/ab", -1, false},

		{"unset rule matches in its place", `[{"location":"/","tdm-reservation":"1"},{"location":"/","tdm-reservation":1}]`, "/a", 0, false},
		{"skipped element does not", `[{"location":7,"tdm-reservation":1},{"location":"/","tdm-reservation":0}]`, "/a", 1, false},
		{"empty file", `[]`, "/a", -1, false},
		{"not a tdmrep.json", `<html><body>Not found</body></html>`, "/a", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Parse([]byte(tt.file)).Match(tt.target)
			got := -1
			if m.Entry != nil {
				got = m.Entry.Index
			}
			if got != tt.entry || m.Reserved() != tt.reserved || m.TooCostly {
				t.Errorf("Match(%q) = entry %d, reserved %v (too costly %v); want entry %d, reserved %v",
					tt.target, got, m.Reserved(), m.TooCostly, tt.entry, tt.reserved)
			}
		})
	}
}

// TestParse: what each rule is read as, and what the file reports.
func TestParse(t *testing.T) {
	type entry struct {
		index       int
		location    string
		reservation Reservation
		policy      string
	}
	tests := []struct {
		name     string
		body     string
		entries  []entry
		err      string // a part of Err's text; "" for no error
		problems []string
	}{
		{name: "report example", body: reportExample, entries: []entry{
			{0, "/directory-a/", Reserved, ""},
			{1, "/directory-b/html/", Reserved, "https://provider.com/policies/policy.json"},
			{2, "/directory-b/images/*.jpg", NotReserved, ""},
		}},
		{name: "numbers of any spelling", body: `[{"location":"/a","tdm-reservation":1.0},{"location":"/b","tdm-reservation":1e0},{"location":"/c","tdm-reservation":-0}]`,
			entries: []entry{{0, "/a", Reserved, ""}, {1, "/b", Reserved, ""}, {2, "/c", NotReserved, ""}}},
		{name: "member names ignore case", body: `[{"Location":"/a","TDM-Reservation":1,"TDM-Policy":" https://p.example/ "}]`,
			entries: []entry{{0, "/a", Reserved, "https://p.example/"}}},
		{name: "byte order mark", body: "\xef\xbb\xbf" + `[{"location":"/","tdm-reservation":1}]`, entries: []entry{{0, "/", Reserved, ""}}},
		{name: "strict types: reservation", body: `[{"location":"/a","tdm-reservation":"1"},{"location":"/b","tdm-reservation":true},{"location":"/c","tdm-reservation":2},{"location":"/d"},{"location":"/e","tdm-reservation":null},{"location":"/f","tdm-reservation":0.5}]`,
			entries: []entry{{0, "/a", Unset, ""}, {1, "/b", Unset, ""}, {2, "/c", Unset, ""}, {3, "/d", Unset, ""}, {4, "/e", Unset, ""}, {5, "/f", Unset, ""}},
			problems: []string{
				`tdmrep.json[0]: tdm-reservation "\"1\"" is not the number 0 or 1: unset`,
				`tdmrep.json[1]: tdm-reservation "true" is not the number 0 or 1: unset`,
				`tdmrep.json[2]: tdm-reservation "2" is not the number 0 or 1: unset`,
				`tdmrep.json[3]: no tdm-reservation: unset`,
				`tdmrep.json[4]: no tdm-reservation: unset`,
				`tdmrep.json[5]: tdm-reservation "0.5" is not the number 0 or 1: unset`,
			}},
		{name: "strict types: location and policy", body: `[1, "x", [], {"location":["/"],"tdm-reservation":1}, {"tdm-reservation":1}, {"location":" ","tdm-reservation":1}, {"location":"/p","tdm-reservation":1,"tdm-policy":{"url":"x"}}]`,
			entries: []entry{{6, "/p", Reserved, ""}},
			problems: []string{
				"tdmrep.json[0]: not an object: skipped",
				"tdmrep.json[1]: not an object: skipped",
				"tdmrep.json[2]: not an object: skipped",
				`tdmrep.json[3]: location "[\"/\"]" is not a string: skipped`,
				"tdmrep.json[4]: no location: skipped",
				"tdmrep.json[5]: empty location: skipped",
				`tdmrep.json[6]: tdm-policy "{\"url\":\"x\"}" is not a string: ignored`,
			}},
		{name: "empty array", body: "[ ]"},
		{name: "HTML page", body: "<!doctype html><title>404</title>", err: "not JSON"},
		{name: "empty body", body: "", err: "not JSON: unexpected end of the file"},
		{name: "an object, not an array", body: `{"location":"/","tdm-reservation":1}`, err: "not a JSON array"},
		{name: "syntax error after two rules", body: `[{"location":"/a","tdm-reservation":1},{"location":"/b","tdm-reservation":0},{"location":}]`,
			entries: []entry{{0, "/a", Reserved, ""}, {1, "/b", NotReserved, ""}}, err: "tdmrep.json[2]: invalid character '}'"},
		{name: "cut after a rule", body: `[{"location":"/a","tdm-reservation":1},{"locat`,
			entries: []entry{{0, "/a", Reserved, ""}}, err: "tdmrep.json[1]: unexpected end of the file (the 1 rules before it stand)"},
		{name: "no closing bracket", body: `[{"location":"/a","tdm-reservation":1}`,
			entries: []entry{{0, "/a", Reserved, ""}}, err: "after the last rule: unexpected end of the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Parse([]byte(tt.body))
			var got []entry
			for _, e := range f.Entries {
				got = append(got, entry{e.Index, e.Location, e.Reservation, e.Policy})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.entries) {
				t.Errorf("entries\n got %v\nwant %v", got, tt.entries)
			}
			switch {
			case tt.err == "" && f.Err != nil:
				t.Errorf("Err = %v, want none", f.Err)
			case tt.err != "" && (f.Err == nil || !strings.Contains(f.Err.Error(), tt.err)):
				t.Errorf("Err = %v, want one containing %q", f.Err, tt.err)
			}
			if fmt.Sprintf("%q", f.Problems) != fmt.Sprintf("%q", tt.problems) {
				t.Errorf("problems\n got %q\nwant %q", f.Problems, tt.problems)
			}
			if f.Truncated {
				t.Error("Truncated")
			}
		})
	}
}

func TestParseBoundsProblems(t *testing.T) {
	f := Parse([]byte("[" + strings.Repeat("1,", 99) + "1]"))
	if len(f.Problems) != maxProblems+1 || f.Problems[maxProblems] != "and 80 more" {
		t.Errorf("%d problems, the last %q", len(f.Problems), f.Problems[len(f.Problems)-1])
	}
}

// TestParseTruncated: only MaxFileSize bytes are read, and the rules
// complete before the cut stand.
func TestParseTruncated(t *testing.T) {
	var b strings.Builder
	b.WriteString(`[{"location":"/first/","tdm-reservation":1}`)
	for b.Len() <= MaxFileSize {
		b.WriteString(`,{"location":"/filler/","tdm-reservation":0}`)
	}
	b.WriteString(`,{"location":"/","tdm-reservation":1}]`)
	f := Parse([]byte(b.String()))
	if !f.Truncated || f.Err == nil {
		t.Fatalf("Truncated %v, Err %v", f.Truncated, f.Err)
	}
	if m := f.Match("/first/a"); !m.Reserved() || m.Entry.Index != 0 {
		t.Errorf("the first rule: %+v", m)
	}
	if m := f.Match("/elsewhere"); m.Entry != nil {
		t.Errorf("a rule after the cut applied: %+v", m.Entry)
	}
}

// TestMatchTooCostly: a file of wildcard rules against a long path stops
// at MaxMatchWork and counts as reserved, and it stops there: a rule past
// the budget that would match and grant the target is never reached,
// whether the file has 1,200 rules or ten times as many. (The cost is thus
// bounded by the budget, not by the file; BenchmarkMatchTooCostly shows it
// in time, which a test on a loaded machine cannot.)
func TestMatchTooCostly(t *testing.T) {
	long := "/" + strings.Repeat("a", 4096)
	// 1,200 rules of 4 KiB of comparisons each already exceed MaxMatchWork.
	for _, n := range []int{1200, 12000} {
		f := wildcardFile(t, n)
		if m := f.Match(long); !m.TooCostly || !m.Reserved() || m.Entry != nil {
			t.Errorf("%d rules: Match = %+v, want TooCostly (the last rule, past the budget, grants it)", n, m)
		}
		// Within the budget the last rule is reached: it is what the long
		// path would have matched.
		if m := f.Match("/short"); m.TooCostly || m.Entry == nil || m.Entry.Index != n || m.Reserved() {
			t.Errorf("%d rules, a short path: %+v, want the last rule", n, m)
		}
	}
}

// wildcardFile is n rules "/*x" that make a long path of a's expensive to
// judge and never match it, then one that matches every path and reserves
// nothing.
func wildcardFile(t testing.TB, n int) *File {
	var b strings.Builder
	b.WriteString("[")
	for range n {
		b.WriteString(`{"location":"/*x","tdm-reservation":0},`)
	}
	b.WriteString(`{"location":"/","tdm-reservation":0}]`)
	f := Parse([]byte(b.String()))
	if f.Err != nil || len(f.Entries) != n+1 {
		t.Fatalf("Err %v, %d entries, want %d", f.Err, len(f.Entries), n+1)
	}
	return f
}

// BenchmarkMatchTooCostly: the time of a match that exhausts MaxMatchWork
// is the same for 1,200 rules as for 12,000 (compare the rules=
// sub-benchmarks with benchstat -col /rules).
func BenchmarkMatchTooCostly(b *testing.B) {
	long := "/" + strings.Repeat("a", 4096)
	for _, n := range []int{1200, 12000} {
		f := wildcardFile(b, n)
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			for b.Loop() {
				f.Match(long)
			}
		})
	}
}

func TestEntryString(t *testing.T) {
	e := Entry{Index: 3, Location: "/a\n" + strings.Repeat("b", 300)}
	s := e.String()
	if !strings.HasPrefix(s, `tdmrep.json[3] (location "/a\nbbb`) || !strings.HasSuffix(s, `…")`) || len(s) > 300 {
		t.Errorf("String() = %q", s)
	}
	if got := Quote("\xff\xfe" + strings.Repeat("é", 200)); !strings.HasSuffix(got, `…"`) {
		t.Errorf("Quote = %q", got)
	}
}

var benchFile = func() []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := range 200 {
		fmt.Fprintf(&b, `{"location":"/section-%d/*.html","tdm-reservation":%d},`, i, i%2)
	}
	b.WriteString(`{"location":"/","tdm-reservation":1,"tdm-policy":"https://example.com/policy"}]`)
	return []byte(b.String())
}()

func BenchmarkMatch(b *testing.B) {
	f := Parse(benchFile)
	b.ReportAllocs()
	for b.Loop() {
		if !f.Match("/section-999/article/2024/some-long-title.html?page=2").Reserved() {
			b.Fatal("not reserved")
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.SetBytes(int64(len(benchFile)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(benchFile)
	}
}
