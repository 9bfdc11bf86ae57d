package robots

import (
	"math"
	"strings"
	"time"
)

// File is a parsed robots.txt. It is immutable and safe for concurrent use.
// The zero value is an empty file (everything allowed); Parse builds others.
type File struct {
	// arena holds every string of the file back to back (escaped patterns,
	// lower-case agent tokens, agent names); rules and agents point into it.
	arena   string
	rules   []rule   // per run contiguous, each run sorted by precedence
	runs    []run    // runs of user-agent lines and the lines that follow
	agents  []agent  // sorted by key
	members []member // per agent contiguous, sorted by run; global last
	// extra holds what many files lack, so that they do not pay for it.
	extra *fileExtras
	// global is where the members of the "*" group start; they run to the
	// end of members. With Truncated it keeps File at 128 bytes, a size
	// class, which matters for a cache of many small files.
	global uint32
	// Truncated reports that the body exceeded MaxFileSize and only its
	// first MaxFileSize bytes were parsed (a line cut at the limit is read
	// as far as it goes, as a crawler truncating the download would).
	Truncated bool
}

// fileExtras are the non-RFC 9309 lines of a file and its canonical twin.
type fileExtras struct {
	// ai is nil for the many files without AI-usage lines; most files with
	// extras have only sitemaps.
	ai *aiPrefs
	// sitemaps are the Sitemap values joined by '\n' (a line cannot hold
	// one) and host the first Host value, both in File.arena.
	sitemaps, host span
	// canon and decoded are the file with its patterns in canonical and
	// in decoded form, for the evasion guard (Group.DecideStrict); nil
	// when no pattern changes.
	canon, decoded *File
	// visits are the Visit-time lines, nil for the many files without.
	visits *[]visitRule
	// licenses are the License lines, nil for the many files without.
	licenses *[]LicenseLine
}

// aiPrefs are a file's Content-Usage and Content-Signal lines.
type aiPrefs struct {
	usage   []usageRule
	signals []Statement
}

var (
	noExtras  fileExtras
	noAIPrefs aiPrefs
)

func (x *fileExtras) aiPrefs() *aiPrefs {
	if x.ai == nil {
		return &noAIPrefs
	}
	return x.ai
}

func (f *File) extras() *fileExtras {
	if f == nil || f.extra == nil {
		return &noExtras
	}
	return f.extra
}

// span is a half-open index range into one of File's slices.
type span struct{ start, end uint32 }

func (s span) len() int { return int(s.end - s.start) }

// rule is one allow/disallow line, its pattern stored in File.arena. It is
// 16 bytes: the scan of a group's rules touches one contiguous array, and
// most rules are rejected by pre without reading the arena.
type rule struct {
	off       uint32 // pattern offset in arena
	n         uint16 // pattern length in octets (its precedence)
	lit       uint16 // length of the literal prefix before any '*' or final '$'
	lineFlags uint32 // line number in the low 24 bits, ruleFlags in the high 8
	pre       uint32 // the literal prefix's first 4 octets, little-endian, zero-padded
}

const lineBits = 24 // a 500 KiB file has at most 512,001 lines

func (r *rule) line() uint32     { return r.lineFlags & (1<<lineBits - 1) }
func (r *rule) flags() ruleFlags { return ruleFlags(r.lineFlags >> lineBits) }

type ruleFlags uint8

const (
	ruleAllow    ruleFlags = 1 << iota
	ruleStar               // pattern has a '*'
	ruleAnchored           // pattern ends in '$'
	ruleImplied            // allow "/dir/$" implied by "allow: /dir/index.htm..."
)

// run is a run of user-agent lines with the directives that follow it until
// the next user-agent line that comes after a rule.
type run struct {
	rules           span
	crawlDelay      delay
	requestInterval delay
	line            uint32 // first user-agent line
}

// delay is a Crawl-delay or Request-rate interval in milliseconds, kept in
// 32 bits so that runs stay small (up to MaxDelay, about 49 days).
type delay uint32

// MaxDelay is the longest interval a Group reports (Interval, CrawlDelay,
// RequestInterval), about 49.7 days: longer Crawl-delay and Request-rate
// values read as MaxDelay.
const MaxDelay = time.Duration(math.MaxUint32) * time.Millisecond

func toDelay(d time.Duration) delay     { return delay(min(d, MaxDelay) / time.Millisecond) }
func (d delay) duration() time.Duration { return time.Duration(d) * time.Millisecond }

// agent is one product token named in user-agent lines: its lower-case key
// and its first spelling, both n octets of the arena.
type agent struct {
	keyOff, nameOff, n uint32
	members            span
}

// member records that an agent (or "*") is named in a run at a line.
type member struct{ run, line uint32 }

type usageRule struct {
	pattern string // escaped; "/" when the line names no path
	stmt    Statement
	run     uint32
}

// Pref is one AI-usage preference of a Statement: a Content-Usage (IETF
// aipref) or Content-Signal (Cloudflare) entry such as "train-ai=n" or
// "ai-train=no". Line is the statement's robots.txt line, 0 for a header.
type Pref struct {
	Name  string
	Value string
	Line  int
}

func (f *File) agentKey(i int) string {
	a := &f.agents[i]
	return f.arena[a.keyOff : a.keyOff+a.n]
}

func (f *File) agentName(i int) string {
	a := &f.agents[i]
	return f.arena[a.nameOff : a.nameOff+a.n]
}

func (f *File) rulePattern(r *rule) string { return f.arena[r.off : r.off+uint32(r.n)] }

// Sitemaps returns the sitemap URLs the file lists, in order, in a new
// slice.
func (f *File) Sitemaps() []string {
	s := f.extras().sitemaps
	if s.len() == 0 {
		return nil
	}
	return strings.Split(f.arena[s.start:s.end], "\n")
}

// Host returns the value of the first Host line (a Yandex extension), or "".
func (f *File) Host() string {
	h := f.extras().host
	return f.arena[h.start:h.end]
}

// canonical returns the file with canonical patterns, nil when f's
// patterns are all canonical.
func (f *File) canonical() *File { return f.extras().canon }

// decodedFile returns the file with decoded patterns, nil when f's
// patterns are all decoded.
func (f *File) decodedFile() *File { return f.extras().decoded }

// ContentSignals returns the file's Content-Signal statements (Cloudflare's
// "search=yes, ai-train=no" lines, ParseContentSignal), in order, whatever
// group they are written in. The caller must not modify the slice.
func (f *File) ContentSignals() []Statement { return f.extras().aiPrefs().signals }

// MaxLicenses bounds the License lines a File keeps (the first ones): each
// names a document a client may have to fetch before a request is judged.
const MaxLicenses = 8

// LicenseLine is a License line: the URL of an RSL licence that applies to
// the whole site, for every agent (RSL 1.0), as written.
type LicenseLine struct {
	URL  string
	Line int
}

// Licenses returns the file's License lines, in order, at most
// MaxLicenses. The caller must not modify the slice.
func (f *File) Licenses() []LicenseLine {
	l := f.extras().licenses
	if l == nil {
		return nil
	}
	return *l
}

// Agents returns the product tokens the file names in user-agent lines, in
// lower case, sorted; "*" is not included.
func (f *File) Agents() []string {
	out := make([]string, len(f.agents))
	for i := range f.agents {
		out[i] = f.agentKey(i)
	}
	return out
}
