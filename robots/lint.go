package robots

import (
	"github.com/robotsgate/robotsgate/internal/editdist"

	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Severity says how much a Diagnostic matters. Severities are ordered:
// Info < Warning < Error.
type Severity uint8

const (
	// Info is a remark: the line works as written, with Google and
	// RFC 9309, but is unusual or surprising.
	Info Severity = iota
	// Warning: Google's parser reads the line, but perhaps not as meant,
	// or other crawlers may read it differently.
	Warning
	// Error: the line or file does not do what it says; Google ignores it,
	// or its rule can never match.
	Error
)

// String returns "info", "warning" or "error".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// Diagnostic is one finding of Lint.
type Diagnostic struct {
	// Line is the line the finding is about, from 1, counted as Google's
	// parser counts lines (LF, CR LF and a lone CR each end one). It is 0
	// for findings about the whole file.
	Line     int
	Severity Severity
	// Code identifies the kind of finding; the codes are listed at Lint and
	// are stable. Each code always comes with the same Severity.
	Code string
	// Message says what is wrong and what Google's parser does with it.
	Message string
}

// String formats d as "line 3: warning: code: message", or
// "file: error: code: message" for a finding about the whole file.
func (d Diagnostic) String() string {
	where := "file"
	if d.Line > 0 {
		where = "line " + strconv.Itoa(d.Line)
	}
	return where + ": " + d.Severity.String() + ": " + d.Code + ": " + d.Message
}

// Lint reports what a robots.txt checker should say about body, sorted by
// line. It reads the file as Parse does, with Google's semantics, and says
// for each finding what Google's parser makes of it. Codes:
//
// About the file as a whole:
//
//	html                     error    an HTML (or XML) page instead of robots.txt
//	utf-16                   error    UTF-16 text, which Google's parser cannot read
//	too-large                error    content beyond MaxFileSize (500 KiB) is ignored
//	cr-line-ends             warning  lines ended by a lone CR (reported once)
//	agent-in-several-groups  warning  one agent named in several groups, which are merged
//
// About how a line is read:
//
//	non-utf8                 warning  bytes that are not UTF-8
//	nul-byte                 warning  a NUL byte ends the line for Google
//	line-too-long            warning  a line longer than Google reads is cut
//	leading-whitespace       info     a directive indented by whitespace
//	missing-colon            warning  "Disallow /x": Google reads it, others may not
//	missing-colon-ignored    error    no colon and not exactly two words: ignored
//	missing-key              error    nothing before the colon: ignored
//	unknown-field            warning  an unknown field, with a suggestion for typos
//	accepted-typo            warning  a misspelt or extended field name Google accepts
//	comment-in-value         warning  a '#' glued to a value cuts it or empties it
//
// About groups and rules:
//
//	rule-before-user-agent   error    a group directive before any user-agent line
//	empty-user-agent         error    a user-agent line without a value
//	user-agent-no-token      warning  a user-agent value Google reads as no name
//	user-agent-token         info     a user-agent value Google reads as a shorter name
//	group-continues          warning  a user-agent line joining the previous group
//	no-rules                 warning  a group with no allow or disallow line
//	empty-allow              info     "Allow:" without a path, which does nothing
//	several-paths            error    whitespace inside a path: one pattern, not several
//	path-no-slash            error    a pattern not starting with '/' or '*' matches nothing
//
// About the other fields:
//
//	sitemap-url              warning  a sitemap that is not an absolute http(s) URL
//	invalid-crawl-delay      warning  a crawl-delay that is not a number of seconds
//	invalid-request-rate     warning  a request-rate that is not "n/T"
//	invalid-visit-time       warning  a visit-time that is not "HHMM-HHMM" (UTC)
//	invalid-preferences      warning  a content-usage/content-signal without preferences
//	license-url              warning  a License (RSL) that is not an absolute http(s) URL
//	license-repeated         warning  a License URL given on an earlier line too
//
// A UTF-16 file, or an HTML page in which Google finds no rule, gets only
// that one finding: its lines are not worth reporting one by one.
func Lint(body []byte) []Diagnostic {
	l := linter{agents: map[string]*agentUse{}}
	if bytes.HasPrefix(body, []byte{0xFF, 0xFE}) || bytes.HasPrefix(body, []byte{0xFE, 0xFF}) {
		l.add(0, chkUTF16, "the file is UTF-16 (it starts with a UTF-16 byte order mark): "+
			"Google's parser reads UTF-8, cuts every line at its first NUL byte and finds no rules; save the file as UTF-8")
		return l.diags
	}
	parsed := body[:min(len(body), MaxFileSize)]
	sc := newLineScanner(parsed)
	var last []byte
	for {
		text, ok := sc.next()
		if !ok {
			break
		}
		if sc.crOnly > l.crOnly {
			l.noteCR(sc.num, sc.crOnly)
		}
		l.atLimit = sc.done && len(body) > MaxFileSize
		l.line(sc.num, text)
		last = text
	}
	if num, start := markupStart(parsed); num > 0 && !l.anyRule {
		// An HTML page: its lines are not worth reporting one by one.
		l.diags = l.diags[:0]
		l.add(num, chkHTML, "the file is HTML, not robots.txt (it starts with %s): "+
			"probably an error or home page served as /robots.txt; Google finds no rules in it", quote(start, 30))
		return l.diags
	}
	if len(body) > MaxFileSize {
		l.tooLarge(body, sc.num, last)
	}
	l.finish()
	slices.SortStableFunc(l.diags, func(a, b Diagnostic) int { return a.Line - b.Line })
	return l.diags
}

// check is a kind of finding: its code and its severity.
type check struct {
	code string
	sev  Severity
}

var (
	chkHTML            = check{"html", Error}
	chkUTF16           = check{"utf-16", Error}
	chkTooLarge        = check{"too-large", Error}
	chkCRLineEnds      = check{"cr-line-ends", Warning}
	chkAgentSeveral    = check{"agent-in-several-groups", Warning}
	chkNonUTF8         = check{"non-utf8", Warning}
	chkNUL             = check{"nul-byte", Warning}
	chkLineTooLong     = check{"line-too-long", Warning}
	chkLeadingSpace    = check{"leading-whitespace", Info}
	chkMissingColon    = check{"missing-colon", Warning}
	chkColonIgnored    = check{"missing-colon-ignored", Error}
	chkMissingKey      = check{"missing-key", Error}
	chkUnknownField    = check{"unknown-field", Warning}
	chkAcceptedTypo    = check{"accepted-typo", Warning}
	chkCommentInValue  = check{"comment-in-value", Warning}
	chkRuleBeforeAgent = check{"rule-before-user-agent", Error}
	chkEmptyUserAgent  = check{"empty-user-agent", Error}
	chkAgentNoToken    = check{"user-agent-no-token", Warning}
	chkAgentToken      = check{"user-agent-token", Info}
	chkGroupContinues  = check{"group-continues", Warning}
	chkNoRules         = check{"no-rules", Warning}
	chkEmptyAllow      = check{"empty-allow", Info}
	chkSeveralPaths    = check{"several-paths", Error}
	chkPathNoSlash     = check{"path-no-slash", Error}
	chkSitemapURL      = check{"sitemap-url", Warning}
	chkInvalidDelay    = check{"invalid-crawl-delay", Warning}
	chkInvalidRate     = check{"invalid-request-rate", Warning}
	chkInvalidPrefs    = check{"invalid-preferences", Warning}
	chkInvalidVisit    = check{"invalid-visit-time", Warning}
	chkLicenseURL      = check{"license-url", Warning}
	chkLicenseRepeated = check{"license-repeated", Warning}
)

// allChecks lists every check, for the tests.
var allChecks = []check{
	chkHTML, chkUTF16, chkTooLarge, chkCRLineEnds, chkAgentSeveral,
	chkNonUTF8, chkNUL, chkLineTooLong, chkLeadingSpace, chkMissingColon,
	chkColonIgnored, chkMissingKey, chkUnknownField, chkAcceptedTypo,
	chkCommentInValue, chkRuleBeforeAgent, chkEmptyUserAgent, chkAgentNoToken,
	chkAgentToken, chkGroupContinues, chkNoRules, chkEmptyAllow,
	chkSeveralPaths, chkPathNoSlash, chkSitemapURL, chkInvalidDelay,
	chkInvalidRate, chkInvalidPrefs, chkInvalidVisit, chkLicenseURL,
	chkLicenseRepeated,
}

// keyNames are the directives' names as messages spell them.
var keyNames = [...]string{
	keyUserAgent:     "User-agent",
	keyAllow:         "Allow",
	keyDisallow:      "Disallow",
	keySitemap:       "Sitemap",
	keyCrawlDelay:    "Crawl-delay",
	keyRequestRate:   "Request-rate",
	keyHost:          "Host",
	keyContentUsage:  "Content-Usage",
	keyContentSignal: "Content-Signal",
	keyVisitTime:     "Visit-time",
	keyLicense:       "License",
}

// linter follows a file line by line, keeping the group state that Parse's
// builder keeps, and collects diagnostics.
type linter struct {
	diags []Diagnostic

	inGroup bool // a user-agent line has been read
	sawRule bool // an allow/disallow line since the last user-agent line
	anyRule bool // an allow/disallow line in a group
	runs    int  // runs of user-agent lines so far
	runLine int  // first user-agent line of the current run
	runUsed bool // the current run has a rule or a group-level extension
	// between names a directive read after a user-agent line of a run that
	// has no rule yet ("Crawl-delay on line 4"): a user-agent line after it
	// still joins that run, which is seldom what the author meant.
	between string
	agents  map[string]*agentUse // by lower-case token; "*" for all crawlers

	licenses map[string]int // License URLs, and the line each was first given on

	crOnly, firstCR int  // lines ended by a lone CR, and the first of them
	atLimit         bool // the line being read is cut at MaxFileSize
}

// agentUse records where one agent is named.
type agentUse struct {
	name    string // as first written
	lines   []int  // the first line naming it in each run
	lastRun int
}

func (l *linter) add(line int, c check, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{
		Line:     line,
		Severity: c.sev,
		Code:     c.code,
		Message:  fmt.Sprintf(format, args...),
	})
}

// markupStart returns the first line of body that is not blank, and its
// number, when it starts like HTML or XML; else 0.
func markupStart(body []byte) (num int, start []byte) {
	sc := newLineScanner(body)
	for {
		text, ok := sc.next()
		if !ok {
			return 0, nil
		}
		if t := trimSpace(text); len(t) > 0 {
			if isMarkup(t) {
				return sc.num, t
			}
			return 0, nil
		}
	}
}

// isMarkup reports text starting like an HTML or XML tag: "<html", "<!DOCTYPE", "<?xml".
func isMarkup(t []byte) bool {
	if len(t) < 2 || t[0] != '<' {
		return false
	}
	c := lowerASCII(t[1])
	return c == '!' || c == '?' || 'a' <= c && c <= 'z'
}

func (l *linter) noteCR(num, count int) {
	if l.firstCR == 0 {
		l.firstCR = num
	}
	l.crOnly = count
}

// line checks one line, read as Parse's builder reads it.
func (l *linter) line(num int, text []byte) {
	l.checkBytes(num, text)
	key, value, shape, ok := splitLine(text)
	if !ok {
		l.unreadable(num, text, shape)
		return
	}
	if isSpace(text[0]) {
		l.add(num, chkLeadingSpace, "the line starts with whitespace: Google and RFC 9309 ignore it, some older parsers do not")
	}
	kind, typo := classifyKey(key)
	if kind == keyUnknown {
		l.unknownField(num, key)
		return
	}
	l.checkSpelling(num, key, kind, typo)
	if shape&shapeNoColon != 0 {
		l.add(num, chkMissingColon, "no ':' after %s: Google reads the line as %s: %s, other crawlers may ignore it",
			quote(key, 30), keyNames[kind], quote(value, 60))
	}
	if shape&shapeComment != 0 {
		l.checkComment(num, text, kind, value)
	}
	l.directive(num, kind, value)
}

// checkBytes reports bytes that Google's parser reads differently from how
// an editor shows them: a line too long, a NUL byte, bytes that are not UTF-8.
func (l *linter) checkBytes(num int, text []byte) {
	if len(text) > maxLineLen {
		l.add(num, chkLineTooLong, "the line is %d bytes long: Google reads only its first %d bytes", len(text), maxLineLen)
	}
	cut, shape := cutLine(text)
	if shape&shapeNUL != 0 {
		l.add(num, chkNUL, "NUL byte: Google reads the line only up to it, as %s", quote(trimSpace(cut), 60))
	}
	code := cut
	if i := bytes.IndexByte(cut, '#'); i >= 0 {
		code = cut[:i] // comments may hold any bytes
	}
	i := invalidUTF8(code)
	if i < 0 {
		return
	}
	cutShort := len(cut) == maxLineLen || l.atLimit
	if cutShort && len(code) == len(cut) && !utf8.FullRune(code[i:]) {
		return // only a character cut in two where Google cuts the line
	}
	l.add(num, chkNonUTF8, "byte 0x%02X is not UTF-8 (in %s): Google keeps such bytes as they are (a pattern gets %%%02X), "+
		"so they match only URLs with the same raw bytes; save the file as UTF-8", code[i], quote(trimSpace(code), 60), code[i])
}

// invalidUTF8 returns the index of the first byte of b that is not part of
// a valid UTF-8 sequence, or -1.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// unreadable reports a line with text that Google's parser cannot split
// into a key and a value, and so ignores.
func (l *linter) unreadable(num int, text []byte, shape lineShape) {
	content, _ := lineContent(text)
	switch {
	case len(content) == 0:
		// A blank line or a comment.
	case shape&shapeTooManyWS != 0:
		l.add(num, chkColonIgnored, "no ':' and more than two words in %s: Google ignores the line", quote(content, 60))
	case content[0] == ':':
		l.add(num, chkMissingKey, "nothing before ':' in %s: Google ignores the line", quote(content, 60))
	default:
		l.add(num, chkColonIgnored, "no ':' and no value in %s: Google ignores the line", quote(content, 60))
	}
}

// knownKeys are the fields an unknown one may be a typo of.
var knownKeys = []string{
	"user-agent", "allow", "disallow", "sitemap", "crawl-delay", "request-rate",
	"host", "content-usage", "content-signal", "visit-time",
}

// unknownNotes explain fields that are well known but not read by Google.
var unknownNotes = map[string]string{
	"noindex":     "Google stopped reading noindex in robots.txt in 2019; use a robots meta tag or an X-Robots-Tag header",
	"nofollow":    "use a robots meta tag or an X-Robots-Tag header",
	"clean-param": "a Yandex extension",
	"http":        `a URL on a line of its own? A sitemap needs "Sitemap:" before it`,
	"https":       `a URL on a line of its own? A sitemap needs "Sitemap:" before it`,
}

func (l *linter) unknownField(num int, key []byte) {
	msg := "unknown field " + quote(key, 40) + ": Google ignores the line"
	if note, ok := unknownNotes[string(bytes.ToLower(key))]; ok {
		msg += " (" + note + ")"
	} else if bytes.HasPrefix(key, utf8BOM[:]) {
		msg += " (it starts with a UTF-8 byte order mark, which Google skips only at the start of the file)"
	} else if s := suggestKey(key); s != "" {
		msg += "; did you mean " + strconv.Quote(s) + "?"
	}
	l.add(num, chkUnknownField, "%s", msg)
}

// suggestKey returns the known field that key is most likely a typo of, or "".
func suggestKey(key []byte) string {
	best, bestDist := "", 3
	for _, name := range knownKeys {
		if d := editDistance(key, name); d < bestDist && 2*d < len(key) {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the distance between key, ignoring ASCII case, and the
// lower-case name, capped at 3 (only 0–2 make a suggestion).
func editDistance(key []byte, name string) int {
	if len(key) > len(name)+2 || len(name) > len(key)+2 {
		return 3
	}
	return min(editdist.Distance(string(bytes.ToLower(key)), name), 3)
}

// checkSpelling reports a field name Google's parser accepts but a stricter
// parser may not: a known misspelling, or a name that only starts with the
// directive's ("Disallowed").
func (l *linter) checkSpelling(num int, key []byte, kind keyKind, typo bool) {
	name := keyNames[kind]
	lower := strings.ToLower(name)
	switch {
	case equalFold(key, lower):
	case !typo && hasPrefixFold(key, lower):
		l.add(num, chkAcceptedTypo, "field %s is read as %s (Google compares only the start of the field name); other crawlers may ignore the line",
			quote(key, 40), name)
	case kind <= keySitemap: // a key Google's parser knows
		l.add(num, chkAcceptedTypo, "field %s is read as %s, a misspelling Google's parser accepts; other crawlers may ignore the line",
			quote(key, 40), name)
	default:
		l.add(num, chkAcceptedTypo, "field %s is read as %s; other crawlers may ignore the line", quote(key, 40), name)
	}
}

// checkComment reports a '#' that does not look like the start of a comment
// but is one for Google: glued to the value before it ("/page#top"), or
// glued to the text after it where it leaves the directive without a value
// ("Disallow: #/x"). A '#' with whitespace around it is an ordinary comment.
func (l *linter) checkComment(num int, text []byte, kind keyKind, value []byte) {
	cut, _ := cutLine(text)
	i := bytes.IndexByte(cut, '#')
	switch {
	case len(value) > 0 && !isSpace(cut[i-1]):
		l.add(num, chkCommentInValue, "'#' starts a comment even inside a value: Google reads %s: %s", keyNames[kind], quote(value, 60))
	case len(value) == 0 && i+1 < len(cut) && !isSpace(cut[i+1]):
		l.add(num, chkCommentInValue, "'#' starts a comment even at the start of a value: Google reads %s with an empty value", keyNames[kind])
	}
}

// directive checks a line by what it says.
func (l *linter) directive(num int, kind keyKind, value []byte) {
	switch kind {
	case keyUserAgent:
		l.userAgent(num, value)
	case keyAllow, keyDisallow:
		l.rule(num, kind, value)
	case keyCrawlDelay, keyRequestRate, keyContentUsage, keyVisitTime:
		l.groupExtension(num, kind, value)
	case keySitemap:
		l.noteBetween(num, kind)
		l.sitemap(num, value)
	case keyHost:
		l.noteBetween(num, kind)
	case keyContentSignal:
		l.noteBetween(num, kind)
		l.checkPrefs(num, kind, value)
	case keyLicense:
		l.noteBetween(num, kind)
		l.license(num, value)
	}
}

// noteBetween remembers the first directive read between the user-agent
// lines of a run and its first rule.
func (l *linter) noteBetween(num int, kind keyKind) {
	if l.inGroup && !l.sawRule && l.between == "" {
		l.between = keyNames[kind] + " on line " + strconv.Itoa(num)
	}
}

// userAgent follows the runs of user-agent lines as the builder does: a
// user-agent line after a rule starts a new run, others join the current one.
func (l *linter) userAgent(num int, value []byte) {
	if !l.inGroup || l.sawRule {
		l.inGroup, l.sawRule, l.runUsed = true, false, false
		l.runs++
		l.runLine = num
	} else if l.between != "" {
		l.add(num, chkGroupContinues, "user-agent %s joins the group of line %d: %s does not end a group, only an allow or disallow line does",
			quote(value, 40), l.runLine, l.between)
	}
	l.between = ""
	if len(value) == 0 {
		l.add(num, chkEmptyUserAgent, "user-agent without a value names no crawler")
		return
	}
	if token, ok := l.agentToken(num, value); ok {
		l.noteAgent(num, token)
	}
}

// agentToken returns the name Google's matcher reads from a user-agent value
// ("*" for all crawlers) and reports readings that may surprise; ok is false
// when the value names no crawler.
func (l *linter) agentToken(num int, value []byte) (token []byte, ok bool) {
	if isGlobalAgent(value) {
		return []byte("*"), true
	}
	token = value[:tokenLen(value)]
	rest := value[len(token):]
	switch {
	case len(token) == 0:
		hint := ""
		if value[0] == '*' {
			hint = " ('*' means all crawlers only on its own)"
		}
		l.add(num, chkAgentNoToken, "user-agent %s names no crawler: Google reads the name up to the first character outside A-Z, a-z, '_' and '-', which leaves nothing%s",
			quote(value, 40), hint)
		return nil, false
	case len(rest) > 0 && (rest[0] != '/' || bytes.ContainsAny(rest, " \t")):
		l.add(num, chkAgentToken, "user-agent %s is read as %q: Google cuts the name at the first character outside A-Z, a-z, '_' and '-'",
			quote(value, 40), token)
	}
	return token, true
}

func (l *linter) noteAgent(num int, token []byte) {
	key := string(bytes.ToLower(token))
	u := l.agents[key]
	if u == nil {
		u = &agentUse{name: string(token)}
		l.agents[key] = u
	}
	if u.lastRun != l.runs {
		u.lines = append(u.lines, num)
		u.lastRun = l.runs
	}
}

// rule checks an allow or disallow line.
func (l *linter) rule(num int, kind keyKind, value []byte) {
	if !l.inGroup {
		l.add(num, chkRuleBeforeAgent, "%s before any user-agent line belongs to no group: Google ignores it", keyNames[kind])
		return
	}
	l.sawRule, l.runUsed, l.anyRule = true, true, true
	switch {
	case len(value) > 0:
		l.checkPattern(num, keyNames[kind], value)
	case kind == keyAllow:
		l.add(num, chkEmptyAllow, "Allow with an empty value allows nothing: Google ignores it (an empty Disallow is the usual way to allow everything)")
	}
}

// checkPattern reports allow/disallow patterns that cannot match as meant.
func (l *linter) checkPattern(num int, name string, value []byte) {
	if bytes.ContainsAny(value, " \t") {
		l.add(num, chkSeveralPaths, "%s %s has whitespace inside: Google reads one pattern, not several paths, and no URL matches it (URLs encode spaces); write one path per line",
			name, quote(value, 60))
	}
	if value[0] == '/' || value[0] == '*' {
		return
	}
	what, fix := "does not start with '/' or '*'", "/"+string(value)
	if i := bytes.Index(value, []byte("://")); i >= 0 {
		what, fix = "is a URL, not a path", "/"
		if j := bytes.IndexByte(value[i+3:], '/'); j >= 0 {
			fix = string(value[i+3+j:])
		}
	}
	l.add(num, chkPathNoSlash, "%s pattern %s %s: it matches nothing, since Google matches patterns from the start of the path, which is '/' (write %s)",
		name, quote(value, 60), what, quote([]byte(fix), 60))
}

// groupExtension checks a crawl-delay, request-rate, visit-time or
// content-usage line.
func (l *linter) groupExtension(num int, kind keyKind, value []byte) {
	if !l.inGroup {
		l.add(num, chkRuleBeforeAgent, "%s before any user-agent line belongs to no group: it is ignored", keyNames[kind])
		return
	}
	l.noteBetween(num, kind)
	l.runUsed = true
	switch kind {
	case keyCrawlDelay:
		if _, ok := parseCrawlDelay(value); !ok {
			l.add(num, chkInvalidDelay, "Crawl-delay %s is not a number of seconds: it is ignored", quote(value, 40))
		}
	case keyRequestRate:
		if _, ok := parseRequestRate(value); !ok {
			l.add(num, chkInvalidRate, "Request-rate %s is not a rate such as 1/10s: it is ignored", quote(value, 40))
		}
	case keyVisitTime:
		if _, _, ok := parseVisitTime(value); !ok {
			l.add(num, chkInvalidVisit, "Visit-time %s is not a window of the day in UTC such as 0600-0845: it is ignored", quote(value, 40))
		}
	case keyContentUsage:
		l.checkPrefs(num, kind, value)
	}
}

// checkPrefs reports a content-usage or content-signal line that states no
// preference: one that is not an RFC 9651 dictionary (for content-usage,
// draft-ietf-aipref-vocab-07 §6.5.1 makes that "no preference"), or one
// whose values are none the vocabulary defines (y or n; yes or no).
func (l *linter) checkPrefs(num int, kind keyKind, value []byte) {
	var s Statement
	if kind == keyContentUsage {
		u, _ := parseContentUsage(value, 0)
		s = u.stmt
	} else {
		s = ParseContentSignal([]string{string(value)}, 0)
	}
	switch {
	case s.Err != nil && kind == keyContentUsage:
		l.add(num, chkInvalidPrefs, "%s %s is not an RFC 9651 dictionary (lower-case names, token values: train-ai=n): it states no preference", keyNames[kind], quote(value, 60))
	case s.Err != nil:
		l.add(num, chkInvalidPrefs, "%s %s is not an RFC 9651 dictionary (lower-case names, token values: ai-train=no): readers may ignore it", keyNames[kind], quote(value, 60))
	case len(s.Prefs) == 0:
		l.add(num, chkInvalidPrefs, "%s %s states no preference (name=value, such as train-ai=n or ai-train=no): it is ignored", keyNames[kind], quote(value, 60))
	}
}

// sitemap checks that a sitemap line holds an absolute http(s) URL.
func (l *linter) sitemap(num int, value []byte) {
	u, err := url.Parse(string(value))
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return
	}
	l.add(num, chkSitemapURL, "sitemap %s is not an absolute http(s) URL: crawlers ignore it", quote(value, 60))
}

// license checks that a License line holds an absolute http(s) URL (RSL
// 1.0 requires one) given on no earlier line.
func (l *linter) license(num int, value []byte) {
	u, err := url.Parse(string(value))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.add(num, chkLicenseURL, "License %s is not an absolute http(s) URL, which RSL requires: other clients may ignore it (robotsgate resolves a relative one against the site)", quote(value, 60))
		return
	}
	if first, ok := l.licenses[string(value)]; ok {
		l.add(num, chkLicenseRepeated, "License %s was given on line %d already", quote(value, 60), first)
		return
	}
	if l.licenses == nil {
		l.licenses = map[string]int{}
	}
	if len(l.licenses) < MaxLicenses*4 {
		l.licenses[string(value)] = num
	}
}

// tooLarge reports where parsing stops in a body over MaxFileSize; num and
// last are the number and text of the last line read.
func (l *linter) tooLarge(body []byte, num int, last []byte) {
	if body[MaxFileSize-1] == '\r' && body[MaxFileSize] == '\n' && l.crOnly > 0 {
		// The cut split a CR LF; its CR was counted as a lone one.
		if l.crOnly--; l.crOnly == 0 {
			l.firstCR = 0
		}
	}
	where := "parsing stops before this line"
	if len(last) > 0 {
		where = fmt.Sprintf("this line is cut after %d bytes", len(last))
	}
	l.add(num, chkTooLarge, "the file is %d bytes and Google parses only the first %d bytes (500 KiB): %s and the rest of the file is ignored",
		len(body), MaxFileSize, where)
}

// finish reports what is known only at the end of the file.
func (l *linter) finish() {
	if l.inGroup && !l.runUsed {
		l.add(l.runLine, chkNoRules, "no allow or disallow line follows this group's user-agent lines: the group allows everything")
	}
	keys := make([]string, 0, len(l.agents))
	for k, u := range l.agents {
		if len(u.lines) > 1 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		u := l.agents[k]
		l.add(u.lines[1], chkAgentSeveral, "user-agent %q is named in %d groups (lines %s): Google merges their rules into one group",
			u.name, len(u.lines), joinLines(u.lines))
	}
	if l.crOnly > 0 {
		l.add(l.firstCR, chkCRLineEnds, "%s in a lone CR (old Mac OS line ends), the first here: Google reads a CR as a line end, but many parsers see one long line",
			plural(l.crOnly, "line ends", "lines end"))
	}
}

// joinLines formats line numbers as "1, 5 and 9".
func joinLines(lines []int) string {
	s := make([]string, len(lines))
	for i, n := range lines {
		s[i] = strconv.Itoa(n)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// quote quotes text from the file for a message, shortened to about n bytes.
func quote(b []byte, n int) string {
	if len(b) <= n {
		return strconv.Quote(string(b))
	}
	cut := n
	for k := 0; k < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(b[cut]); k++ {
		cut--
	}
	return strconv.Quote(string(b[:cut])) + "..."
}
