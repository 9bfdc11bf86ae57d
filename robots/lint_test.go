package robots

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// lintDir holds the golden tests: NAME.txt is an input, NAME.golden the
// String of each of its diagnostics, one per line.
const lintDir = "testdata/lint"

// generatedLintInputs are golden inputs too large to commit; their goldens
// are in lintDir like the others.
var generatedLintInputs = map[string]func() []byte{
	"too-large": func() []byte {
		// 27 bytes, then lines of 23 bytes: MaxFileSize falls 16 bytes
		// into line 2 + ceil((512000-27)/23) = 22262.
		var b bytes.Buffer
		b.WriteString("User-agent: *\nDisallow: /a\n")
		for i := range 23000 {
			fmt.Fprintf(&b, "Disallow: /page/%06d\n", i)
		}
		return b.Bytes()
	},
	"line-too-long": func() []byte {
		return []byte("User-agent: *\nDisallow: /" + strings.Repeat("a", 20000) + "\nDisallow: /b\n")
	},
}

func lintOutput(body []byte) []byte {
	var b bytes.Buffer
	for _, d := range Lint(body) {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func lintInputs(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(lintDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[strings.TrimSuffix(filepath.Base(f), ".txt")] = body
	}
	for name, gen := range generatedLintInputs {
		inputs[name] = gen()
	}
	return inputs
}

func TestLintGolden(t *testing.T) {
	inputs := lintInputs(t)
	for name, body := range inputs {
		t.Run(name, func(t *testing.T) {
			golden := filepath.Join(lintDir, name+".golden")
			got := lintOutput(body)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestLintGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Lint(%s.txt):\n%s\nwant (%s):\n%s", name, got, golden, want)
			}
		})
	}
	goldens, _ := filepath.Glob(filepath.Join(lintDir, "*.golden"))
	for _, g := range goldens {
		if _, ok := inputs[strings.TrimSuffix(filepath.Base(g), ".golden")]; !ok {
			t.Errorf("%s has no input", g)
		}
	}
}

// lintCodeCases name, for every code, an input that produces it and the
// line it is reported at.
var lintCodeCases = []struct {
	code string
	body string
	line int
}{
	{"html", "\n<html><body>Not found</body></html>\n", 2},
	{"html", "\xEF\xBB\xBF  <!doctype HTML>\n", 1},
	{"html", "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code></Error>", 1},
	{"utf-16", "\xFE\xFF\x00U\x00s\x00e\x00r", 0},
	{"too-large", "User-agent: *\nDisallow: /a\n" + strings.Repeat("#", MaxFileSize), 3},
	{"cr-line-ends", "User-agent: *\nDisallow: /a\rDisallow: /b\r\n", 2},
	{"agent-in-several-groups", "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\nUser-agent: A\nDisallow: /z\n", 5},
	{"agent-in-several-groups", "User-agent: *\nDisallow: /x\nUser-agent: b\nDisallow: /y\nUser-agent: *\nDisallow: /z\n", 5},
	{"non-utf8", "User-agent: *\nDisallow: /\xFF\n", 2},
	{"nul-byte", "User-agent: *\x00\nDisallow: /a\n", 1},
	{"line-too-long", "User-agent: *\nDisallow: /" + strings.Repeat("é", maxLineLen) + "\n", 2},
	{"leading-whitespace", "User-agent: *\n Disallow: /a\n", 2},
	{"missing-colon", "User-agent: *\nDisallow /a\n", 2},
	{"missing-colon-ignored", "User-agent: *\nDisallow /a /b\nDisallow: /c\n", 2},
	{"missing-colon-ignored", "User-agent: *\nDisallow\nDisallow: /c\n", 2},
	{"missing-key", "User-agent: *\n : /a\nDisallow: /c\n", 2},
	{"unknown-field", "User-agent: *\nDisallow: /a\nNoindex: /b\n", 3},
	{"accepted-typo", "User-agent: *\nDisallaw: /a\n", 2},
	{"accepted-typo", "User-agents: *\nDisallow: /a\n", 1},
	{"comment-in-value", "User-agent: *\nDisallow: /a#b\n", 2},
	{"comment-in-value", "User-agent: *\nDisallow:#/a\n", 2},
	{"rule-before-user-agent", "Disallow: /a\nUser-agent: *\nDisallow: /b\n", 1},
	{"empty-user-agent", "User-agent: \nUser-agent: *\nDisallow: /a\n", 1},
	{"user-agent-no-token", "User-agent: *bot\nDisallow: /a\n", 1},
	{"user-agent-token", "User-agent: MJ12bot\nDisallow: /a\n", 1},
	{"group-continues", "User-agent: a\nSitemap: https://example.com/s.xml\nUser-agent: b\nDisallow: /\n", 3},
	{"no-rules", "User-agent: a\nDisallow: /\n\nUser-agent: b\nUser-agent: c\n", 4},
	{"empty-allow", "User-agent: *\nAllow:\n", 2},
	{"several-paths", "User-agent: *\nDisallow: /a\t/b\n", 2},
	{"path-no-slash", "User-agent: *\nAllow: a\n", 2},
	{"sitemap-url", "Sitemap: sitemap.xml\nUser-agent: *\nDisallow:\n", 1},
	{"license-url", "User-agent: *\nDisallow:\nLicense: /license.xml\n", 3},
	{"license-url", "License: ftp://example.com/license.xml\n", 1},
	{"license-repeated", "License: https://example.com/l.xml\nLicense: https://example.com/l.xml\n", 2},
	{"invalid-crawl-delay", "User-agent: *\nCrawl-delay: 1,5\nDisallow:\n", 2},
	{"invalid-request-rate", "User-agent: *\nRequest-rate: 1/\nDisallow:\n", 2},
	{"invalid-preferences", "User-agent: *\nDisallow:\nContent-Usage: train-ai\n", 3},
	{"invalid-visit-time", "User-agent: *\nDisallow:\nVisit-time: 6am-9am\n", 3},
	{"invalid-visit-time", "User-agent: *\nDisallow:\nVisit-time: 2400-0100\n", 3},
}

func TestLintCodes(t *testing.T) {
	severity := map[string]Severity{}
	for _, c := range allChecks {
		if _, dup := severity[c.code]; dup {
			t.Errorf("code %q defined twice", c.code)
		}
		severity[c.code] = c.sev
	}
	tested := map[string]bool{}
	for _, tc := range lintCodeCases {
		tested[tc.code] = true
		diags := Lint([]byte(tc.body))
		i := slices.IndexFunc(diags, func(d Diagnostic) bool { return d.Code == tc.code })
		if i < 0 {
			t.Errorf("%s: not reported for %q; got %v", tc.code, tc.body, diags)
			continue
		}
		if d := diags[i]; d.Line != tc.line || d.Severity != severity[tc.code] {
			t.Errorf("%s: got %v, want line %d, severity %v", tc.code, d, tc.line, severity[tc.code])
		}
	}
	for code := range severity {
		if !tested[code] {
			t.Errorf("code %q has no case in lintCodeCases", code)
		}
	}
}

func TestLintClean(t *testing.T) {
	for _, body := range []string{
		"",
		"\n\n# just a comment\n",
		"User-agent: *\nDisallow:\n",
		"User-agent: *\r\nDisallow: /a # comment\r\nAllow: /a/b\r\n",
		"\xEF\xBB\xBFUser-agent: Googlebot/2.1\nDisallow: /*.pdf$\nCrawl-delay: 1.5\nRequest-rate: 1/5s\n",
		"User-agent: a\nUser-agent: b\nDisallow: /x\nUser-agent: c\nDisallow: /y\n",
		"User-agent: *\nDisallow: /caf\xC3\xA9\n# caf\xE9\n",
		"User-agent: *\nCrawl-delay: 5\n", // a group may set only a delay
		"User-agent: *\nDisallow: /\nContent-Usage: /blog/ train-ai=n\nContent-Signal: search=yes\nSitemap: https://example.com/s.xml\nHost: example.com\n",
	} {
		if diags := Lint([]byte(body)); len(diags) > 0 {
			t.Errorf("Lint(%q) = %v, want none", body, diags)
		}
	}
}

// TestLintHTMLWithRules checks that a robots.txt that merely starts with
// markup, such as an HTML comment, is linted line by line.
func TestLintHTMLWithRules(t *testing.T) {
	body := "<!-- $Id: robots.txt 3287 $ -->\nUser-agent: *\nDisallow: /cgi-bin/\n"
	var codes []string
	for _, d := range Lint([]byte(body)) {
		codes = append(codes, d.Code)
	}
	if want := []string{"unknown-field"}; !slices.Equal(codes, want) {
		t.Errorf("Lint(%q) codes = %v, want %v", body, codes, want)
	}
}

// TestLintTooLargeBoundaries checks the line reported when MaxFileSize falls
// inside a line, exactly after a line end, and between the CR and LF of a
// line end (which is no lone CR).
func TestLintTooLargeBoundaries(t *testing.T) {
	head := "User-agent: *\r\nDisallow: /a\r\n" // 2 lines, 29 bytes
	pad := func(end string) string {
		n := MaxFileSize - len(head) - len(end)
		return head + "#" + strings.Repeat("x", n-1) + end
	}
	for _, tc := range []struct {
		name string
		body string
		line int
		says string
	}{
		{"inside a line", pad("") + "yz\r\nDisallow: /b\r\n", 3, "this line is cut after"},
		{"after a line end", pad("\r\n") + "Disallow: /b\r\n", 4, "parsing stops before this line"},
		{"inside CR LF", pad("\r") + "\nDisallow: /b\r\n", 4, "parsing stops before this line"},
	} {
		var got []Diagnostic
		for _, d := range Lint([]byte(tc.body)) {
			if d.Code != "line-too-long" { // the padding line
				got = append(got, d)
			}
		}
		if len(got) != 1 || got[0].Code != "too-large" || got[0].Line != tc.line || !strings.Contains(got[0].Message, tc.says) {
			t.Errorf("%s: got %v, want only too-large at line %d saying %q", tc.name, got, tc.line, tc.says)
		}
	}
}

func TestDiagnosticString(t *testing.T) {
	for _, tc := range []struct {
		d    Diagnostic
		want string
	}{
		{Diagnostic{3, Warning, "unknown-field", "m"}, "line 3: warning: unknown-field: m"},
		{Diagnostic{0, Error, "utf-16", "m"}, "file: error: utf-16: m"},
		{Diagnostic{1, Info, "x", "m"}, "line 1: info: x: m"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	if got := Severity(9).String(); got != "severity(9)" {
		t.Errorf("Severity(9).String() = %q", got)
	}
}

func TestSuggestKey(t *testing.T) {
	for key, want := range map[string]string{
		"Disalllow":    "disallow",
		"Alow":         "allow", // no typo Google accepts for allow
		"Usr-agent":    "user-agent",
		"User_agent":   "user-agent",
		"Sitmap":       "sitemap",
		"Crawl delay":  "crawl-delay",
		"Request_Rate": "request-rate",
		"Hots":         "host",
		"Content-Usge": "content-usage",
		"Ho":           "",
		"Foo":          "",
		"Noindex":      "",
		"Visit_time":   "visit-time",
	} {
		if got := suggestKey([]byte(key)); got != want {
			t.Errorf("suggestKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// FuzzLint checks that Lint does not panic and that its diagnostics are
// sorted, name a line of the file and carry a known code with its severity.
func FuzzLint(f *testing.F) {
	for _, tc := range lintCodeCases {
		f.Add([]byte(tc.body))
	}
	files, _ := filepath.Glob(filepath.Join(lintDir, "*.txt"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	severity := map[string]Severity{}
	for _, c := range allChecks {
		severity[c.code] = c.sev
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		lines := 0
		sc := newLineScanner(body[:min(len(body), MaxFileSize)])
		for _, ok := sc.next(); ok; _, ok = sc.next() {
			lines++
		}
		diags := Lint(body)
		for i, d := range diags {
			if i > 0 && d.Line < diags[i-1].Line {
				t.Fatalf("not sorted: %v", diags)
			}
			if d.Line < 0 || d.Line > lines {
				t.Fatalf("line %d outside the file's %d lines: %v", d.Line, lines, d)
			}
			if sev, ok := severity[d.Code]; !ok || sev != d.Severity || d.Message == "" {
				t.Fatalf("bad diagnostic %v", d)
			}
		}
	})
}
