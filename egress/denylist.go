package egress

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/robotsgate/robotsgate/origin"
)

// DenyLists are host lists read from files (egress.deny_hosts_files): one
// host or glob per line, '#' comments (whole-line and trailing), blank lines
// ignored. A host (example.com, bücher.example, 192.0.2.1, 2001:db8::1) is
// taken in its canonical form (origin.CanonicalHost: lower case, punycode,
// IPv4 shorthands resolved); a glob has the path.Match syntax of
// egress.deny_hosts and the same meaning, matched against the lower-case
// host: "*.example.com" matches every name under example.com, not
// example.com itself.
//
// Lookups cost the same whatever the size of the lists: a map of hosts and a
// map of "*.domain" suffixes, probed once per label suffix of the host asked
// for. Other globs ("ads*.example.com", "tracker?.example.net") are grouped
// by their literal domain suffix and matched only against hosts under it;
// globs without one ("10.0.0.*") are matched against every host, so they
// are for short lists.
//
// Refresh re-reads the files that changed; a file that no longer loads
// keeps its previous entries. Lookup and Refresh may be called concurrently.
type DenyLists struct {
	mu    sync.Mutex // serialises Refresh
	files []*denyFile
}

// DenyMatch is the line of a list that matched a host.
type DenyMatch struct {
	File  string // the list's path, as configured
	Line  int    // 1-based
	Entry string // the entry as read (canonical form), e.g. "*.example.com"
}

// DenyChange reports a file that Refresh re-read: how many entries it now
// has, or why it did not load (its previous entries stay in use).
type DenyChange struct {
	File    string
	Entries int
	Err     error
}

type denyFile struct {
	path string
	set  atomic.Pointer[denySet] // the last version that loaded

	// Guarded by DenyLists.mu: the version last read (nil: it could not be
	// opened) and why it did not load (nil: it did).
	stamp os.FileInfo
	err   error
}

// denySet is one file's entries. Keys are substrings of the file's text
// where the canonical form is spelled as written, so most entries cost no
// allocation of their own.
type denySet struct {
	exact   map[string]uint32     // host -> line
	suffix  map[string]uint32     // "*.example.com" as "example.com" -> line
	globs   map[string][]denyGlob // other globs, by literal domain suffix
	loose   []denyGlob            // globs without a literal domain suffix
	entries int
}

type denyGlob struct {
	pattern string
	line    uint32
}

// LoadDenyLists reads the files at paths. Any file that cannot be read or
// has a line that is not a host or glob is an error naming the file and,
// for a bad line, the line.
func LoadDenyLists(paths []string) (*DenyLists, error) {
	l := &DenyLists{}
	var errs []error
	for _, p := range paths {
		f := &denyFile{path: p}
		set, stamp, err := readSettled(p, true)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.set.Store(set)
		f.stamp = stamp
		l.files = append(l.files, f)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// CheckDenyLists reads the files at paths and reports what LoadDenyLists
// would, without building the lists.
func CheckDenyLists(paths []string) error {
	var errs []error
	for _, p := range paths {
		if _, _, err := readSettled(p, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Paths returns the files' paths in the order given to LoadDenyLists.
func (l *DenyLists) Paths() []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l.files))
	for i, f := range l.files {
		out[i] = f.path
	}
	return out
}

// Len returns the number of entries in use, over all files.
func (l *DenyLists) Len() int {
	if l == nil {
		return 0
	}
	n := 0
	for _, f := range l.files {
		n += f.set.Load().entries
	}
	return n
}

// Lookup returns the line that matches host (a lower-case host without a
// trailing dot or an IP address in canonical form, as origin.CanonicalHost
// gives them) in the first file, in order, that has one: the host's own
// line, else the line of its longest matching suffix. A nil *DenyLists
// matches nothing.
func (l *DenyLists) Lookup(host string) (DenyMatch, bool) {
	if l == nil {
		return DenyMatch{}, false
	}
	for _, f := range l.files {
		if line, entry, ok := f.set.Load().lookup(host); ok {
			return DenyMatch{File: f.path, Line: int(line), Entry: entry}, true
		}
	}
	return DenyMatch{}, false
}

// Refresh re-reads each file whose size, modification time or identity
// (inode) changed since it was last read, and reports those that now load
// and those that fail anew. A file that is gone or does not load keeps its
// previous entries; the error names every such file, whether or not it
// changed this time.
func (l *DenyLists) Refresh() ([]DenyChange, error) {
	if l == nil {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var changes []DenyChange
	var errs []error
	for _, f := range l.files {
		if fi, err := os.Stat(f.path); err == nil && f.stamp != nil && sameVersion(f.stamp, fi) {
			if f.err != nil {
				errs = append(errs, f.err)
			}
			continue
		}
		set, stamp, err := readDenyFile(f.path, true)
		if errors.Is(err, errChanging) {
			continue // being written: read it at the next call
		}
		same := err != nil && stamp == nil && f.stamp == nil && f.err != nil && err.Error() == f.err.Error() // still gone
		f.stamp, f.err = stamp, err
		if err != nil {
			errs = append(errs, err)
			if !same {
				changes = append(changes, DenyChange{File: f.path, Err: err})
			}
			continue
		}
		f.set.Store(set)
		changes = append(changes, DenyChange{File: f.path, Entries: set.entries})
	}
	return changes, errors.Join(errs...)
}

func sameVersion(a, b os.FileInfo) bool {
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && os.SameFile(a, b)
}

// errChanging is a file that changed while it was read.
var errChanging = errors.New("changed while being read")

// maxLineErrors bounds the bad lines one file's error lists.
const maxLineErrors = 5

// readSettled is readDenyFile, tried again while the file changes under it
// (a few times: it may be written as it is read).
func readSettled(p string, index bool) (*denySet, os.FileInfo, error) {
	set, stamp, err := readDenyFile(p, index)
	for try := 0; errors.Is(err, errChanging) && try < 3; try++ {
		set, stamp, err = readDenyFile(p, index)
	}
	return set, stamp, err
}

// readDenyFile reads and parses one list; with index false it only checks
// the lines. The FileInfo is that of the file read (nil if it could not be
// opened), for Refresh to tell a later version.
func readDenyFile(p string, index bool) (*denySet, os.FileInfo, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, fi, fmt.Errorf("%s: is a directory, not a list of hosts", p)
	}
	// Read into a string of the file's size: the entries are substrings of
	// it, and no copy is made.
	var text strings.Builder
	text.Grow(int(fi.Size()))
	if _, err := io.Copy(&text, fh); err != nil {
		return nil, fi, fmt.Errorf("read %s: %w", p, err)
	}
	if after, err := os.Stat(p); err != nil || !sameVersion(fi, after) || int64(text.Len()) != fi.Size() {
		return nil, nil, fmt.Errorf("%s: %w", p, errChanging)
	}
	set, err := parseDenyList(p, text.String(), index)
	return set, fi, err
}

// parseDenyList parses a list's text; name is used in errors.
func parseDenyList(name, text string, index bool) (*denySet, error) {
	text = strings.TrimPrefix(text, "\uFEFF")
	set := &denySet{}
	if index {
		// Sized up front from a cheap count, which saves most of the
		// growing (time, and garbage the size of the maps).
		hosts, suffixes := countLines(text)
		set.exact = make(map[string]uint32, hosts)
		set.suffix = make(map[string]uint32, suffixes)
	}
	var bad []string
	badLines := 0
	for lineNo := 1; text != ""; lineNo++ {
		var raw string
		raw, text, _ = strings.Cut(text, "\n")
		kind, key, msg := parseDenyLine(raw)
		switch {
		case msg != "":
			if badLines++; badLines <= maxLineErrors {
				bad = append(bad, fmt.Sprintf("%s:%d: %s", name, lineNo, msg))
			}
			continue
		case kind == entryNone || !index:
			continue
		}
		line := uint32(lineNo)
		switch kind {
		case entryExact:
			if _, dup := set.exact[key]; dup {
				continue
			}
			set.exact[key] = line
		case entrySuffix:
			if _, dup := set.suffix[key]; dup {
				continue
			}
			set.suffix[key] = line
		case entryGlob:
			g := denyGlob{pattern: key, line: line}
			if dom := globDomain(key); dom != "" {
				if set.globs == nil {
					set.globs = map[string][]denyGlob{}
				}
				set.globs[dom] = append(set.globs[dom], g)
			} else {
				set.loose = append(set.loose, g)
			}
		}
		set.entries++
	}
	if badLines > maxLineErrors {
		bad = append(bad, fmt.Sprintf("%s: %d more bad lines", name, badLines-maxLineErrors))
	}
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "\n"))
	}
	return set, nil
}

// countLines estimates a list's hosts and "*." globs from the first
// character of each line.
func countLines(text string) (hosts, suffixes int) {
	for text != "" {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimLeft(line, " \t")
		switch {
		case line == "" || line[0] == '#' || line[0] == '\r':
		case line[0] == '*':
			suffixes++
		default:
			hosts++
		}
	}
	return hosts, suffixes
}

type entryKind uint8

const (
	entryNone   entryKind = iota // blank or comment
	entryExact                   // a host
	entrySuffix                  // "*." + a domain
	entryGlob                    // any other glob
)

const globMeta = `*?[\`

// parseDenyLine returns a line's entry, or what is wrong with it.
func parseDenyLine(raw string) (kind entryKind, key, msg string) {
	s, _, _ := strings.Cut(raw, "#")
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return entryNone, "", ""
	case strings.ContainsAny(s, " \t\v\f"):
		return 0, "", fmt.Sprintf("%q: want one host or glob per line (e.g. example.com or *.example.com)", s)
	case strings.Contains(s, "/"):
		return 0, "", fmt.Sprintf("%q: want a host such as example.com, not a URL", s)
	case strings.HasPrefix(s, "."):
		return 0, "", fmt.Sprintf("%q: a host does not start with a dot (for a domain and every name under it, list example.com and *.example.com)", s)
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' && strings.Contains(s, ":") {
		s = s[1 : len(s)-1] // [2001:db8::1], not a glob's class
	}
	if !strings.ContainsAny(s, globMeta) {
		if d := strings.ToLower(strings.TrimSuffix(s, ".")); plainDomain(d) {
			return entryExact, d, "" // what CanonicalHost would return, found faster
		}
		if strings.Contains(s, ":") {
			if _, err := netip.ParseAddr(s); err != nil {
				return 0, "", fmt.Sprintf("%q is not a valid host or IP address (a list has no ports)", s)
			}
		}
		host, err := origin.CanonicalHost(s)
		if err != nil {
			return 0, "", fmt.Sprintf("%q is not a valid host: %s", s, origin.Reason(err))
		}
		return entryExact, host, ""
	}
	g, err := origin.CanonicalGlob(s)
	if err != nil {
		return 0, "", err.Error()
	}
	if rest, ok := strings.CutPrefix(g, "*."); ok && !strings.ContainsAny(rest, globMeta) {
		if msg := checkDomainText(rest); msg != "" {
			return 0, "", fmt.Sprintf("%q: %s", s, msg)
		}
		return entrySuffix, rest, ""
	}
	return entryGlob, g, ""
}

// checkDomainText reports what is wrong with the domain of a "*.domain"
// glob: empty labels or characters no domain has.
func checkDomainText(d string) string {
	for label := range strings.SplitSeq(d, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Sprintf("bad label %q", label)
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Sprintf("character %q not allowed", c)
			}
		}
	}
	return ""
}

// plainDomain reports whether d, lower-case, is a domain name that
// origin.CanonicalHost returns as it is: ASCII labels of letters, digits,
// '-' and '_', none empty or over 63 octets, 253 octets in all, the last
// not one a browser reads as a number (which makes the host an IPv4
// address: "1", "0x1f", "017").
func plainDomain(d string) bool {
	if len(d) > 253 || checkDomainText(d) != "" {
		return false
	}
	last := d[strings.LastIndexByte(d, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		return false
	}
	for i := 0; i < len(last); i++ {
		if c := last[i]; c < '0' || c > '9' {
			return true
		}
	}
	return false
}

// globDomain returns the domain every host matching glob ends with, after a
// dot: the glob's literal tail (after its last wildcard, class or escape)
// from its first dot on. "ads*.example.com" gives "example.com"; "10.0.0.*"
// and "*ads" give "".
func globDomain(glob string) string {
	end := 0
	for i := 0; i < len(glob); i++ {
		switch glob[i] {
		case '*', '?':
			end = i + 1
		case '\\':
			i++
			end = min(i+1, len(glob))
		case '[':
			for i++; i < len(glob) && glob[i] != ']'; i++ {
				if glob[i] == '\\' {
					i++
				}
			}
			end = min(i+1, len(glob))
		}
	}
	_, dom, ok := strings.Cut(glob[end:], ".")
	if !ok {
		return ""
	}
	return dom
}

// lookup returns the line and entry matching host. The host's label
// suffixes are probed in turn, longest first, each in the suffix map and
// among the globs filed under it.
func (s *denySet) lookup(host string) (uint32, string, bool) {
	if line, ok := s.exact[host]; ok {
		return line, host, true
	}
	for i := 0; i < len(host); i++ {
		if host[i] != '.' {
			continue
		}
		dom := host[i+1:]
		if line, ok := s.suffix[dom]; ok {
			return line, "*." + dom, true
		}
		if len(s.globs) > 0 {
			for _, g := range s.globs[dom] {
				if ok, _ := path.Match(g.pattern, host); ok {
					return g.line, g.pattern, true
				}
			}
		}
	}
	for _, g := range s.loose {
		if ok, _ := path.Match(g.pattern, host); ok {
			return g.line, g.pattern, true
		}
	}
	return 0, "", false
}
