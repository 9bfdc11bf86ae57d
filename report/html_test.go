package report

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/archive"
	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/robots"
)

// TestSplitLines: the appendix numbers lines as the parser does, so the
// line a rule names shows that rule (LF, CR LF, lone CR, a BOM).
func TestSplitLines(t *testing.T) {
	body := []byte("\xEF\xBB\xBFUser-agent: *\r\nAllow: /a\rDisallow: /b\n\nDisallow: /c\xff\n")
	f := robots.Parse(body)
	lines := splitLines(body)
	for _, target := range []string{"/a", "/b"} {
		d := f.Group("x").Decide(target)
		if !d.Matched || d.Rule.Line < 1 || d.Rule.Line > len(lines) {
			t.Fatalf("%s: %+v", target, d)
		}
		if got := lines[d.Rule.Line-1].Text; got != d.Rule.String() {
			t.Errorf("%s: rule %q on line %d, which shows %q", target, d.Rule.String(), d.Rule.Line, got)
		}
	}
	if len(lines) != 5 || lines[0].Text != "User-agent: *" || lines[3].Text != "" || lines[4].Text != "Disallow: /c\uFFFD" {
		t.Errorf("lines %+v", lines)
	}
}

// TestWriteHTML: the page is self-contained (no script, no reference to
// anything outside it), embeds the robots.txt texts escaped with an
// anchor per line, and flags a gap below the interval in red.
func TestWriteHTML(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "archive")
	body := []byte("User-agent: *\nCrawl-delay: 1\nDisallow: /x</pre><script>alert(1)</script>\n# <img src=\"https://tracker.example/p.gif\">\n")
	sha := archive.Sum(body)
	writeArchive(t, arch, []archive.Fetch{{Time: at(0), Origin: "http://a.example", HTTPStatus: 200, Outcome: "ok", SHA256: sha}}, map[string][]byte{sha: body})
	auditPath := writeAudit(t, dir, "audit.log", []audit.Record{
		allowed("http://a.example/1", sha, 0, 0),
		allowed("http://a.example/2", sha, 500*time.Millisecond, 0), // too soon
		refused("http://a.example/x</pre><script>alert(1)</script>", sha, "Disallow: /x</pre><script>alert(1)</script>", 3, sec),
	})
	r, err := Build(Options{Audit: []string{auditPath}, Archive: arch, Now: at(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, "<img") {
		t.Error("the page holds a script or an image: the robots.txt text or a URL was not escaped")
	}
	if refs := externalRefs(page); len(refs) > 0 {
		t.Errorf("the page refers to outside resources: %q", refs)
	}
	for _, want := range []string{
		`id="robots-` + sha + `"`,
		`id="robots-` + sha + `-L3"`,
		`href="#robots-` + sha + `-L3"`,
		"Crawl-delay: 1",
		"&lt;img src=&#34;https://tracker.example/p.gif&#34;&gt;",
		`<tr class="bad">`,
		"@media print",
		"<svg",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Error("the page does not end with </html>")
	}
}

var (
	tagRE  = regexp.MustCompile(`<[a-zA-Z][^>]*>`)
	attrRE = regexp.MustCompile(`(?i)\s(?:src|href|action|srcset|poster|data|xlink:href|background|formaction|ping|manifest)\s*=\s*["']?([^"'\s>]*)`)
	cssRE  = regexp.MustCompile(`(?i)url\(|@import`)
)

// externalRefs returns the references of a page to anything but itself:
// attributes of its tags that name a resource other than an anchor
// within it, and CSS that loads one. Text (escaped) is not looked at.
func externalRefs(page string) []string {
	var out []string
	for _, tag := range tagRE.FindAllString(page, -1) {
		for _, m := range attrRE.FindAllStringSubmatch(tag, -1) {
			if !strings.HasPrefix(m[1], "#") {
				out = append(out, m[0])
			}
		}
	}
	if i, j := strings.Index(page, "<style>"), strings.Index(page, "</style>"); i >= 0 && j > i {
		out = append(out, cssRE.FindAllString(page[i:j], -1)...)
	}
	return out
}

// TestBuildEmptyRange: bounds that leave every record out give an empty
// report, which still renders.
func TestBuildEmptyRange(t *testing.T) {
	dir := t.TempDir()
	auditPath := writeAudit(t, dir, "audit.log", []audit.Record{allowed("http://a.example/1", "", 0, 0)})
	r, err := Build(Options{Audit: []string{auditPath}, Since: at(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Records != 0 || r.OutOfRange != 1 || r.First != nil || len(r.Origins) != 0 || len(r.Timeline.Bins) != 0 {
		t.Errorf("report %+v", r)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil || !strings.Contains(buf.String(), "no request in range") {
		t.Errorf("HTML: %v\n%s", err, buf.String())
	}
	if err := WriteJSON(&buf, r); err != nil {
		t.Error(err)
	}
}

// A count of one takes the singular: "1 request", not "1 requests".
func TestHTMLCountsAgreeWithTheirNoun(t *testing.T) {
	dir := t.TempDir()
	auditPath := writeAudit(t, dir, "audit.log", []audit.Record{allowed("http://a.example/1", "", 0, 0)})
	r, err := Build(Options{Audit: []string{auditPath}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if !strings.Contains(html, "1 request:") || strings.Contains(html, "1 requests") || strings.Contains(html, "1 lines") {
		t.Errorf("want \"1 request:\" and no \"1 requests\" or \"1 lines\":\n%s", html)
	}
}

// An origin whose every request was refused before robots.txt was
// consulted (egress-denied, bad-request) is a row of one table, not a
// section; an origin with anything else keeps its section.
func TestHTMLSumsUpOriginsRefusedBeforeRobotsTxt(t *testing.T) {
	denied := func(url, decision string) audit.Record {
		r := allowed(url, "", 0, 0)
		r.Decision, r.UpstreamStatus, r.Status, r.RobotsStatus = decision, 0, 403, ""
		return r
	}
	tunnel := denied("https://update.example/", "egress-denied")
	tunnel.Method = "CONNECT"
	recs := []audit.Record{
		denied("http://10.0.0.1/", "egress-denied"), denied("http://10.0.0.1/x", "egress-denied"),
		tunnel,
		denied("http://mixed.example/", "egress-denied"), allowed("http://mixed.example/ok", "", sec, 0),
	}
	r, err := Build(Options{Audit: []string{writeAudit(t, t.TempDir(), "audit.log", recs)}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	_, after, ok := strings.Cut(html, `id="quiet-table"`)
	if !ok {
		t.Fatalf("no table of origins refused before robots.txt:\n%s", html)
	}
	table, _, _ := strings.Cut(after, "</table>")
	for _, o := range []string{"http://10.0.0.1", "https://update.example"} {
		if !strings.Contains(table, o) || strings.Contains(html, "<h2>"+o+"</h2>") {
			t.Errorf("%s: want a row of the quiet table and no section", o)
		}
	}
	if strings.Contains(table, "mixed.example") || !strings.Contains(html, "<h2>http://mixed.example</h2>") {
		t.Errorf("mixed.example, which allowed a request, must keep its section and stay out of the quiet table")
	}
}
