package egress

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/robotsgate/robotsgate/origin"
)

// writeList writes a list file in a temporary directory and returns its path.
func writeList(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// replaceList replaces a list file as an editor or a deploy script would:
// a new file renamed over the old one.
func replaceList(t testing.TB, p, text string) {
	t.Helper()
	tmp := p + ".new"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

func loadLists(t testing.TB, paths ...string) *DenyLists {
	t.Helper()
	l, err := LoadDenyLists(paths)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestDenyListParsing(t *testing.T) {
	list := "\uFEFF# a company's blocklist\r\n" + // 1: BOM, comment, CRLF
		"\n" + // 2
		"   \t\n" + // 3
		"Evil.Example.  # trailing comment\n" + // 4: case, trailing dot
		"*.tracker.example\n" + // 5
		"Bücher.example\n" + // 6: IDN, written in Unicode
		"*.Bücher.test\n" + // 7: IDN in a glob
		"127.1\n" + // 8: an IPv4 shorthand, canonical 127.0.0.1
		"[2001:DB8::1]\n" + // 9
		"2001:db8::2#no space before the comment\n" + // 10
		"ads*.example.net\n" + // 11: a glob filed under example.net
		"10.0.0.*\n" + // 12: a glob without a domain
		"cdn-[0-9].example.org\n" + // 13
		"evil.example\n" + // 14: a duplicate: line 4 is reported
		"*.tracker.example\n" + // 15: a duplicate
		"deep.sub.tracker.example\n" // 16: also under line 5's glob
	p := writeList(t, t.TempDir(), "deny.txt", list)
	l := loadLists(t, p)
	if got := l.Len(); got != 11 {
		t.Errorf("Len() = %d, want 11 (duplicates are not counted)", got)
	}
	for _, tt := range []struct {
		host  string
		line  int // 0: not listed
		entry string
	}{
		{"evil.example", 4, "evil.example"},
		{"www.evil.example", 0, ""}, // a host is only itself
		{"a.tracker.example", 5, "*.tracker.example"},
		{"a.b.c.tracker.example", 5, "*.tracker.example"},
		{"tracker.example", 0, ""}, // *.x does not match x (path.Match, as deny_hosts)
		{"badtracker.example", 0, ""},
		{"xn--bcher-kva.example", 6, "xn--bcher-kva.example"},
		{"shop.xn--bcher-kva.test", 7, "*.xn--bcher-kva.test"},
		{"127.0.0.1", 8, "127.0.0.1"},
		{"2001:db8::1", 9, "2001:db8::1"},
		{"2001:db8::2", 10, "2001:db8::2"},
		{"ads.example.net", 11, "ads*.example.net"},
		{"ads42.example.net", 11, "ads*.example.net"},
		{"ads.cdn.example.net", 11, "ads*.example.net"}, // '*' spans dots, as in path.Match
		{"www.example.net", 0, ""},
		{"10.0.0.7", 12, "10.0.0.*"},
		{"10.0.1.7", 0, ""},
		{"cdn-7.example.org", 13, "cdn-[0-9].example.org"},
		{"cdn-x.example.org", 0, ""},
		{"deep.sub.tracker.example", 16, "deep.sub.tracker.example"}, // its own line first
		{"example.com", 0, ""},
		{"", 0, ""},
	} {
		m, ok := l.Lookup(tt.host)
		if tt.line == 0 {
			if ok {
				t.Errorf("Lookup(%q) = %+v, want no match", tt.host, m)
			}
			continue
		}
		if !ok || m.Line != tt.line || m.Entry != tt.entry || m.File != p {
			t.Errorf("Lookup(%q) = %+v, %t; want %s line %d %q", tt.host, m, ok, p, tt.line, tt.entry)
		}
	}
}

// A list means what the same globs mean in egress.deny_hosts (path.Match
// against the lower-case host), only faster.
func TestDenyListMatchesLikeDenyHosts(t *testing.T) {
	globs := []string{
		"example.com", "*.example.com", "*example.org", "a?c.example.net", "*.b*.example.net",
		"[a-c]*.example.io", "x.*.example.dev", "*", "192.0.2.*", "*.2.0.192", `esc\*.example`, "*-cdn.example",
	}
	hosts := []string{
		"example.com", "www.example.com", "a.b.example.com", "badexample.com", "example.org", "myexample.org",
		"abc.example.net", "abcd.example.net", "x.bq.example.net", "x.q.example.net", "a1.example.io", "d1.example.io",
		"x.y.example.dev", "x.example.dev", "192.0.2.9", "1.2.0.192", "esc*.example", "escx.example",
		"img-cdn.example", "cdn.example", "2001:db8::1",
	}
	dir := t.TempDir()
	for _, g := range globs {
		l := loadLists(t, writeList(t, dir, "one.txt", g+"\n"))
		for _, h := range hosts {
			want := matchAny([]string{g}, h)
			_, got := l.Lookup(h)
			if got != want {
				t.Errorf("list %q, host %q: listed %t, deny_hosts %t", g, h, got, want)
			}
		}
	}
}

func TestDenyListBadLinesNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		line, want string
	}{
		{"https://evil.example/", `"https://evil.example/": want a host such as example.com, not a URL`},
		{"0.0.0.0 evil.example", `"0.0.0.0 evil.example": want one host or glob per line`},
		{".evil.example", `list example.com and *.example.com`},
		{"evil..example", `"evil..example" is not a valid host`},
		{"evil.example:443", `"evil.example:443" is not a valid host or IP address (a list has no ports)`},
		{"ev!l.example", `"ev!l.example" is not a valid host: character '!' not allowed`},
		{"bü!cher.example", `"bü!cher.example" is not a valid host: `},
		{"*.ev!l.example", `character '!' not allowed`},
		{"*.ev il.example", `one host or glob per line`},
		{"[a-.example", `is not a valid glob`},
		{"*.ex@mple", `character '@' is not allowed in a host glob`},
		{"b*ücher.example", `punycode`},
		{"*..example", `bad label ""`},
	} {
		p := writeList(t, dir, "bad.txt", "# header\nfine.example\n"+tt.line+"\n")
		_, err := LoadDenyLists([]string{p})
		if err == nil || !strings.Contains(err.Error(), p+":3: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("line %q: err = %v, want %s:3: ...%s", tt.line, err, p, tt.want)
		}
		if err := CheckDenyLists([]string{p}); err == nil || !strings.Contains(err.Error(), p+":3: ") {
			t.Errorf("CheckDenyLists, line %q: err = %v", tt.line, err)
		}
	}

	many := writeList(t, dir, "many.txt", strings.Repeat("http://x/\n", 9))
	_, err := LoadDenyLists([]string{many})
	if err == nil || !strings.Contains(err.Error(), many+":5: ") || strings.Contains(err.Error(), many+":6: ") ||
		!strings.Contains(err.Error(), "4 more bad lines") {
		t.Errorf("nine bad lines: err = %v, want the first five and a count", err)
	}

	missing := filepath.Join(dir, "missing.txt")
	if _, err := LoadDenyLists([]string{missing}); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := LoadDenyLists([]string{dir}); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: err = %v", err)
	}
}

func TestDenyListRefresh(t *testing.T) {
	dir := t.TempDir()
	a := writeList(t, dir, "a.txt", "one.example\ntwo.example\n")
	b := writeList(t, dir, "b.txt", "*.three.example\n")
	l := loadLists(t, a, b)
	listed := func(host string) (string, int) {
		m, ok := l.Lookup(host)
		if !ok {
			return "", 0
		}
		return filepath.Base(m.File), m.Line
	}
	if changes, err := l.Refresh(); len(changes) != 0 || err != nil {
		t.Fatalf("nothing changed: Refresh() = %v, %v", changes, err)
	}

	// An edit: one entry removed, another added.
	replaceList(t, a, "two.example\n# added:\nfour.example\n")
	changes, err := l.Refresh()
	if err != nil || len(changes) != 1 || changes[0].File != a || changes[0].Entries != 2 || changes[0].Err != nil {
		t.Fatalf("after an edit: Refresh() = %+v, %v", changes, err)
	}
	if f, line := listed("one.example"); line != 0 {
		t.Errorf("removed entry still listed (%s:%d)", f, line)
	}
	if f, line := listed("four.example"); f != "a.txt" || line != 3 {
		t.Errorf("added entry: %s:%d, want a.txt:3", f, line)
	}
	if f, line := listed("x.three.example"); f != "b.txt" || line != 1 {
		t.Errorf("the other file: %s:%d", f, line)
	}

	// A bad edit keeps the previous entries and says where it is wrong,
	// once as a change and then in every error until it is fixed.
	replaceList(t, a, "five.example\nnot a host\n")
	changes, err = l.Refresh()
	if len(changes) != 1 || changes[0].Err == nil || !strings.Contains(changes[0].Err.Error(), a+":2: ") || err == nil {
		t.Fatalf("after a bad edit: Refresh() = %+v, %v", changes, err)
	}
	if _, line := listed("four.example"); line != 3 {
		t.Error("a bad edit dropped the previous entries")
	}
	if _, line := listed("five.example"); line != 0 {
		t.Error("a bad edit was applied in part")
	}
	if changes, err := l.Refresh(); len(changes) != 0 || err == nil || !strings.Contains(err.Error(), a+":2: ") {
		t.Errorf("unchanged bad file: Refresh() = %+v, %v; want no change and the error", changes, err)
	}

	// A file removed keeps its entries too, and is reported once.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	changes, err = l.Refresh()
	if len(changes) != 1 || !errors.Is(changes[0].Err, os.ErrNotExist) || err == nil {
		t.Fatalf("file removed: Refresh() = %+v, %v", changes, err)
	}
	if changes, err := l.Refresh(); len(changes) != 0 || err == nil {
		t.Errorf("still removed: Refresh() = %+v, %v", changes, err)
	}
	if _, line := listed("four.example"); line != 3 {
		t.Error("a removed file dropped its entries")
	}

	// Back, fixed: it applies.
	writeList(t, dir, "a.txt", "five.example\n")
	if changes, err := l.Refresh(); len(changes) != 1 || changes[0].Entries != 1 || err != nil {
		t.Fatalf("file fixed: Refresh() = %+v, %v", changes, err)
	}
	if _, line := listed("five.example"); line != 1 {
		t.Error("the fixed file did not apply")
	}
	if _, line := listed("four.example"); line != 0 {
		t.Error("the fixed file's previous entries remain")
	}

	// An edit in place that keeps the size is seen too (the modification
	// time changes).
	old := time.Now().Add(-time.Hour)
	os.Chtimes(a, old, old)
	l.Refresh()
	if err := os.WriteFile(a, []byte("fivf.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changes, _ := l.Refresh(); len(changes) != 1 {
		t.Fatalf("same-size edit: Refresh() = %+v", changes)
	}
	if _, line := listed("fivf.example"); line != 1 {
		t.Error("the same-size edit did not apply")
	}
}

// The guard refuses a listed host by name, before any lookup, naming the
// list and line.
func TestGuardRefusesListedHostsBeforeResolving(t *testing.T) {
	p := writeList(t, t.TempDir(), "deny.txt", "# list\n*.listed.example\n")
	rec := &recordingDialer{}
	g := &Guard{DenyLists: loadLists(t, p), Resolver: failingResolver{t}, Dial: rec.dial}
	for _, check := range []func() error{
		func() error { return g.CheckName("WWW.Listed.Example.") },
		func() error { return g.CheckHost(context.Background(), "www.listed.example", 443) },
		func() error {
			_, err := g.DialContext(context.Background(), "tcp", "www.listed.example:80")
			return err
		},
	} {
		err := check()
		var denied *DeniedError
		if !errors.As(err, &denied) || denied.Class != ListedHost || denied.Listed.File != p || denied.Listed.Line != 2 ||
			denied.Listed.Entry != "*.listed.example" {
			t.Fatalf("err = %v, want a ListedHost refusal naming %s line 2", err, p)
		}
		if want := "egress denied: www.listed.example (deny list " + p + ":2: *.listed.example)"; err.Error() != want {
			t.Errorf("Error() = %q, want %q", err, want)
		}
		if Cause(err) != CauseDenied {
			t.Errorf("Cause = %s", Cause(err))
		}
	}
	if len(rec.addrs) != 0 {
		t.Errorf("dialled %v", rec.addrs)
	}
	g.Resolver = fakeResolver{[]netip.Addr{netip.MustParseAddr("93.184.215.14")}}
	if err := g.CheckHost(context.Background(), "listed.example", 443); err != nil {
		t.Errorf("an unlisted host: %v", err)
	}
	var none *Guard = &Guard{}
	if err := none.CheckName("anything.example"); err != nil {
		t.Errorf("no lists: %v", err)
	}
}

type failingResolver struct{ t *testing.T }

func (r failingResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.t.Errorf("resolved %s: a listed host must be refused before any lookup", host)
	return nil, errors.New("no lookups")
}

// millionList writes a list of n entries, half hosts and half "*." globs,
// as a blocklist of that size would look.
func millionList(t testing.TB, n int) string {
	t.Helper()
	var b strings.Builder
	b.Grow(n * 28)
	b.WriteString("# generated: hosts and *. globs\n")
	for i := range n / 2 {
		fmt.Fprintf(&b, "site-%d.example%d.com\n*.dom-%d.example%d.net\n", i, i%97, i, i%89)
	}
	return writeList(t, t.TempDir(), "million.txt", b.String())
}

func TestDenyListMillionEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a list of a million entries")
	}
	const n = 1_000_000
	l := loadLists(t, millionList(t, n))
	if got := l.Len(); got != n {
		t.Fatalf("Len() = %d, want %d", got, n)
	}
	for _, i := range []int{0, 1, 4711, n/2 - 1} {
		if m, ok := l.Lookup(fmt.Sprintf("site-%d.example%d.com", i, i%97)); !ok || m.Line != 2+2*i {
			t.Errorf("host %d: %+v %t, want line %d", i, m, ok, 2+2*i)
		}
		if m, ok := l.Lookup(fmt.Sprintf("a.b.dom-%d.example%d.net", i, i%89)); !ok || m.Line != 3+2*i {
			t.Errorf("glob %d: %+v %t, want line %d", i, m, ok, 3+2*i)
		}
		for _, miss := range []string{
			fmt.Sprintf("site-%d.example%d.com", i, i%97+1), fmt.Sprintf("www.site-%d.example%d.com", i, i%97),
			fmt.Sprintf("dom-%d.example%d.net", i, i%89), fmt.Sprintf("a.dom-%d.example%d.org", i, i%89),
		} {
			if m, ok := l.Lookup(miss); ok {
				t.Errorf("%s listed: %+v", miss, m)
			}
		}
	}
}

// BenchmarkDenyListLookup looks hosts up in lists of a thousand and a
// million entries (half hosts, half "*." globs): listed hosts, hosts under
// a listed glob, and hosts on neither (short and long names). Each kind
// cycles through 65,536 distinct hosts drawn at random from the whole
// list, so that with a million entries a lookup usually finds its part of
// the maps out of the CPU's cache, as a proxy's lookups of many sites do;
// one host looked up again and again would stay in cache and cost the same
// at any size by construction. `benchstat -col /entries` shows the two
// sizes side by side.
func BenchmarkDenyListLookup(b *testing.B) {
	const distinct = 1 << 16
	for _, n := range []int{1_000, 1_000_000} {
		l := loadLists(b, millionList(b, n))
		r := rand.New(rand.NewPCG(uint64(n), 7))
		for _, bb := range []struct {
			name   string
			host   func(i int) string // i: an entry pair of the list
			listed bool
		}{
			{"exact-hit", func(i int) string { return fmt.Sprintf("site-%d.example%d.com", i, i%97) }, true},
			{"glob-hit", func(i int) string { return fmt.Sprintf("www.cdn.dom-%d.example%d.net", i, i%89) }, true},
			{"miss", func(i int) string { return fmt.Sprintf("www.example-%d.org", i) }, false},
			{"miss-long", func(i int) string { return fmt.Sprintf("a.b.c.d.e.f.site-%d.example%d.org", i, i%97) }, false},
		} {
			hosts := make([]string, distinct)
			for k := range hosts {
				hosts[k] = bb.host(r.IntN(n / 2))
			}
			b.Run(fmt.Sprintf("entries=%s/%s", map[int]string{1_000: "1k", 1_000_000: "1M"}[n], bb.name), func(b *testing.B) {
				b.ReportAllocs()
				k := 0
				for b.Loop() {
					if _, ok := l.Lookup(hosts[k]); ok != bb.listed {
						b.Fatalf("%s: listed %t", hosts[k], ok)
					}
					k = (k + 1) % distinct
				}
			})
		}
	}
}

// BenchmarkDenyListLoad reads a list of a million entries; B/entry is the
// heap the loaded list keeps (maps and the file's text). The check
// sub-benchmark is CheckDenyLists, which serve runs before New loads the
// lists (so a start pays both).
func BenchmarkDenyListLoad(b *testing.B) {
	const n = 1_000_000
	p := millionList(b, n)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := CheckDenyLists([]string{p}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) { benchmarkLoad(b, p, n) })
}

func benchmarkLoad(b *testing.B, p string, n int) {
	var kept uint64
	for b.Loop() {
		var before, after runtime.MemStats
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		l := loadLists(b, p)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		kept = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(l)
		b.StartTimer()
	}
	b.ReportMetric(float64(kept)/float64(n), "B/entry")
}

// FuzzDenyListMatchesLikeDenyHosts: whatever line a list accepts, its
// lookup answers as the line means in egress.deny_hosts, for any host made
// of the characters hosts have. The expectation is worked out from the
// line's text by the documented rules, not with the list's own parser: an
// IPv6 literal may be in brackets; a glob matches as path.Match does with
// the lower-case glob (a trailing dot dropped); a host is its
// origin.CanonicalHost spelling and matches only itself. Globs with non-ASCII
// labels (written in punycode by the list) are left to the unit tests.
func FuzzDenyListMatchesLikeDenyHosts(f *testing.F) {
	for _, seed := range [][2]string{
		{"*.example.com", "www.example.com"}, {"ads*.example.net", "ads.cdn.example.net"},
		{"cdn-[0-9].example.org", "cdn-7.example.org"}, {`a\.b*.example`, "a.bc.example"},
		{"x[.]example.com", "x.example.com"}, {"10.0.0.*", "10.0.0.7"}, {"*", "anything"},
		{"Bücher.example", "xn--bcher-kva.example"}, {"[^a]?.*.io", "bz.q.io"},
		{"0x7f.1", "127.0.0.1"}, {"example.017", "example.017"}, {"a.b0x", "a.b0x"},
		{"*.Example.COM. # a comment", "a.b.example.com"}, {"*.example.com", "example.com"},
		{"[2001:db8::1]", "2001:db8::1"}, {"www.example.com", "example.com"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, line, host string) {
		if strings.ContainsAny(line, "\n") {
			return // one line
		}
		for i := 0; i < len(host); i++ {
			if c := host[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:", c) >= 0) {
				return
			}
		}
		if d := strings.ToLower(line); plainDomain(d) {
			if h, err := origin.CanonicalHost(d); err != nil || h != d {
				t.Errorf("plainDomain(%q) but CanonicalHost gives %q, %v", d, h, err)
			}
		}
		set, err := parseDenyList("fuzz.txt", line+"\n", true)
		if err != nil {
			return // a line the list refuses has no meaning to compare
		}
		entry, _, _ := strings.Cut(line, "#")
		entry = strings.TrimSpace(entry)
		if entry == "" {
			if _, _, got := set.lookup(host); got {
				t.Errorf("line %q lists nothing, yet %q is listed", line, host)
			}
			return
		}
		if len(entry) > 2 && entry[0] == '[' && entry[len(entry)-1] == ']' && strings.Contains(entry, ":") {
			entry = entry[1 : len(entry)-1] // an IPv6 literal in brackets, as in a URL
		}
		var want bool
		if strings.ContainsAny(entry, `*?[\`) {
			glob := strings.ToLower(strings.TrimSuffix(entry, "."))
			for i := 0; i < len(glob); i++ {
				if glob[i] >= 0x80 {
					return
				}
			}
			want, _ = path.Match(glob, host)
		} else {
			canonical, err := origin.CanonicalHost(entry)
			if err != nil {
				t.Fatalf("line %q accepted, but its host is not valid: %v", line, err)
			}
			want = host == canonical
		}
		if _, _, got := set.lookup(host); got != want {
			t.Errorf("line %q, host %q: listed %t, want %t", line, host, got, want)
		}
	})
}
