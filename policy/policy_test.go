package policy

import (
	"encoding/base64"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/origin"
	"github.com/robotsgate/robotsgate/robots"
)

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func hash(t *testing.T, pass string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestClientsIdentify(t *testing.T) {
	htpasswd := filepath.Join(t.TempDir(), "htpasswd")
	os.WriteFile(htpasswd, []byte("# users\ncarol:"+hash(t, "c-pass")+"\n"), 0o600)
	clients, err := NewClients([]config.Client{
		{CIDR: "10.1.0.0/16", Mode: config.ModeMonitor},
		{User: "alice", PasswordBcrypt: hash(t, "a-pass"), Mode: config.ModeEnforce, Agent: "ResearchBot", Purposes: []string{"train-ai"}},
		{CIDR: "192.168.0.0/24", User: "bob", PasswordBcrypt: hash(t, "b-pass"), Mode: config.ModeBypass},
		{User: "carol", Mode: config.ModeEnforce},
	}, config.Auth{Htpasswd: htpasswd, Realm: "test"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, addr, auth string
		wantName         string
		wantMode         Mode
		wantErr          bool
	}{
		{"CIDR match, no auth needed", "10.1.2.3", "", "10.1.0.0/16", Monitor, false},
		{"IPv4-mapped address matches the CIDR", "::ffff:10.1.2.3", "", "10.1.0.0/16", Monitor, false},
		{"user with the right password", "8.8.8.8", basic("alice", "a-pass"), "alice", Enforce, false},
		{"user with a wrong password", "8.8.8.8", basic("alice", "nope"), "", 0, true},
		{"unknown user", "8.8.8.8", basic("mallory", "x"), "", 0, true},
		{"no credentials where auth is configured", "8.8.8.8", "", "", 0, true},
		{"user and CIDR: both must match", "192.168.0.7", basic("bob", "b-pass"), "bob", Bypass, false},
		{"user outside its CIDR", "192.168.1.7", basic("bob", "b-pass"), "", 0, true},
		{"htpasswd user", "8.8.8.8", basic("carol", "c-pass"), "carol", Enforce, false},
		{"malformed header", "8.8.8.8", "Basic !!!", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := clients.Identify(netip.MustParseAddr(tt.addr), tt.auth)
			if tt.wantErr {
				if !errors.Is(err, ErrAuthRequired) {
					t.Fatalf("err = %v, want ErrAuthRequired", err)
				}
				return
			}
			if err != nil || c.Name != tt.wantName || c.Mode != tt.wantMode {
				t.Fatalf("got %+v, %v; want %s %s", c, err, tt.wantName, tt.wantMode)
			}
		})
	}
	c, _ := clients.Identify(netip.MustParseAddr("8.8.8.8"), basic("alice", "a-pass"))
	if c.Agent != "ResearchBot" || c.User != "alice" || len(c.Purposes) != 1 {
		t.Errorf("alice = %+v", c)
	}
}

// IdentifyAs, for /explain and check, identifies as Identify does for the
// right password, without it: the same entry, or the same refusal.
func TestClientsIdentifyAsTakesThePasswordAsValid(t *testing.T) {
	clients, err := NewClients([]config.Client{
		{CIDR: "192.168.0.0/24", User: "bob", PasswordBcrypt: hash(t, "b-pass"), Mode: config.ModeBypass},
		{User: "alice", PasswordBcrypt: hash(t, "a-pass"), Agent: "ResearchBot", Purposes: []string{"train-ai"}},
		{CIDR: "10.0.0.0/8", Mode: config.ModeMonitor},
	}, config.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr, user string
		want       string // the entry's name, "" for ErrAuthRequired
	}{
		{"8.8.8.8", "alice", "alice"},
		{"192.168.0.7", "bob", "bob"},
		{"192.168.1.7", "bob", ""}, // outside bob's CIDR
		{"10.1.2.3", "", "10.0.0.0/8"},
		{"10.1.2.3", "mallory", "10.0.0.0/8"}, // an unknown user falls through, as with Identify
		{"8.8.8.8", "", ""},
	}
	for _, tt := range tests {
		c, err := clients.IdentifyAs(netip.MustParseAddr(tt.addr), tt.user)
		asked, _ := clients.Identify(netip.MustParseAddr(tt.addr), basic(tt.user, map[string]string{"alice": "a-pass", "bob": "b-pass"}[tt.user]))
		switch {
		case tt.want == "" && !errors.Is(err, ErrAuthRequired):
			t.Errorf("IdentifyAs(%s, %q) = %+v, %v; want ErrAuthRequired", tt.addr, tt.user, c, err)
		case tt.want != "" && (err != nil || c.Name != tt.want || c.Name != asked.Name || c.Agent != asked.Agent):
			t.Errorf("IdentifyAs(%s, %q) = %+v, %v; want entry %s, as Identify with the password: %+v", tt.addr, tt.user, c, err, tt.want, asked)
		}
	}
}

func TestClientsWithoutUsersNeedNoAuth(t *testing.T) {
	clients, err := NewClients([]config.Client{{CIDR: "10.0.0.0/8", Mode: config.ModeBypass}}, config.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := clients.Identify(netip.MustParseAddr("172.16.0.1"), "")
	if err != nil || c.Mode != Enforce || c.Name != "" {
		t.Errorf("unmatched client = %+v, %v; want the default, enforced", c, err)
	}
}

func TestUserWithoutPasswordIsAConfigError(t *testing.T) {
	if _, err := NewClients([]config.Client{{User: "dave"}}, config.Auth{}); err == nil {
		t.Error("a user without a password was accepted")
	}
}

func TestRepeatedSegments(t *testing.T) {
	for target, want := range map[string]int{
		"/":                         1,
		"/a/b/c":                    1,
		"/a/b/a/b/a/b":              3,
		"/x/x/x/x":                  4,
		"/cal/2024/cal/2024?q=/x/x": 2,
		"/a/b/c/a/b/c/a/b/c/d":      3,
	} {
		if got := repeatedSegments(target); got != want {
			t.Errorf("repeatedSegments(%q) = %d, want %d", target, got, want)
		}
	}
}

func TestTrapGuard(t *testing.T) {
	g := newTrapGuard(config.Trap{Enabled: true, MaxURLLength: 20, MaxRepeatedSegments: 2, PageBudget: 2, BudgetWindow: config.Duration(time.Minute)})
	for target, ok := range map[string]bool{
		"/short": true, "/" + string(make([]byte, 30)): false, "/a/a": true, "/a/a/a": false,
	} {
		if _, got := g.checkURL(target); got != ok {
			t.Errorf("checkURL(%q) = %v, want %v", target, got, ok)
		}
	}
	o := origin.Origin{Scheme: "http", Host: "example.com", Port: 80}
	now := time.Now()
	for i, want := range []bool{true, true, false} {
		if _, ok := g.spend(o, now); ok != want {
			t.Errorf("page %d: %v, want %v", i+1, ok, want)
		}
	}
	if wait, ok := g.spend(o, now.Add(20*time.Second)); ok || wait != 40*time.Second {
		t.Errorf("over budget: wait %v ok %v, want 40s", wait, ok)
	}
	if _, ok := g.spend(o, now.Add(61*time.Second)); !ok {
		t.Error("a new window did not reset the budget")
	}
	if _, ok := (*trapGuard)(nil).checkURL("/" + string(make([]byte, 5000))); !ok {
		t.Error("a disabled guard refused")
	}
}

func TestUsageRefusal(t *testing.T) {
	f := robots.Parse([]byte("User-agent: *\nContent-Usage: train-ai=n\nContent-Usage: /open/ train-ai=y\nContent-Signal: search=yes, ai-input=no\nAllow: /\n"))
	g := f.GroupForUserAgent("bot")
	tests := []struct {
		target   string
		purposes []string
		refused  bool
		line     int
	}{
		{"/page", []string{"train-ai"}, true, 2},
		{"/open/x", []string{"train-ai"}, false, 0},
		{"/page", []string{"search"}, false, 0},
		{"/page", []string{"ai-input"}, true, 4},
		{"/page", []string{"ai-use"}, true, 4}, // aipref's name for Cloudflare's ai-input
		{"/page", nil, false, 0},
	}
	for _, tt := range tests {
		pref, _, refused := usageRefusal(f, g, tt.target, tt.purposes)
		if refused != tt.refused || pref.Line != tt.line {
			t.Errorf("%s %v: refused %v by %+v, want %v line %d", tt.target, tt.purposes, refused, pref, tt.refused, tt.line)
		}
	}
}

func TestSites(t *testing.T) {
	s := newSites([]config.Site{
		{Hosts: []string{"*.internal.example"}, Robots: config.RobotsIgnore},
		{Hosts: []string{"slow.example"}, Robots: config.RobotsObey, Delay: config.Duration(5 * time.Second)},
	})
	if st, ok := s.match("wiki.internal.example"); !ok || !st.ignore {
		t.Error("glob did not match")
	}
	if st, ok := s.match("slow.example"); !ok || st.ignore || st.delay != 5*time.Second {
		t.Errorf("slow.example = %+v", st)
	}
	if _, ok := s.match("other.example"); ok {
		t.Error("unrelated host matched")
	}
}

// clients_default: deny refuses the clients no entry matches: 403
// (ErrClientDenied) without proxy users, 407 (ErrAuthRequired) with them;
// matched clients are served as before.
func TestClientsDefaultDeny(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries []config.Client
		addr    string
		want    error
	}{
		{"matched by CIDR", []config.Client{{CIDR: "10.0.0.0/8"}}, "10.1.2.3", nil},
		{"unmatched, no users", []config.Client{{CIDR: "10.0.0.0/8"}}, "192.0.2.1", ErrClientDenied},
		{"unmatched, users configured", []config.Client{{User: "alice", PasswordBcrypt: hash(t, "a")}}, "192.0.2.1", ErrAuthRequired},
		{"no entries at all", nil, "127.0.0.1", ErrClientDenied},
	} {
		e, err := New(Config{Clients: tt.entries, Auth: config.Auth{Realm: "r"}, DenyUnmatched: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Identify(netip.MustParseAddr(tt.addr), ""); !errors.Is(err, tt.want) && (err != nil || tt.want != nil) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

// An unknown proxy user costs the bcrypt comparison a known user with a
// wrong password costs: the answer's time does not tell which names exist
// (before, an unknown user was answered in microseconds).
func TestUnknownUsersCostABcryptComparison(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("right"), 10)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := NewClients([]config.Client{{User: "alice", PasswordBcrypt: string(hash)}}, config.Auth{})
	if err != nil {
		t.Fatal(err)
	}
	clients.dummyHash() // made once, not timed
	// bcrypt at cost 10 takes tens of milliseconds anywhere; a lookup
	// that skips it, microseconds. A loaded machine only makes it slower.
	const atLeast = 10 * time.Millisecond
	for _, c := range []struct{ name, auth string }{
		{"a wrong password", basic("alice", "wrong")},
		{"an unknown user", basic("mallory", "wrong")},
	} {
		start := time.Now()
		_, err := clients.Identify(netip.MustParseAddr("192.0.2.1"), c.auth)
		if took := time.Since(start); !errors.Is(err, ErrAuthRequired) || took < atLeast {
			t.Errorf("%s: %v in %v, want ErrAuthRequired after at least %v", c.name, err, took, atLeast)
		}
	}
	start := time.Now()
	if clients.CheckUser("nobody", "x") || time.Since(start) < atLeast {
		t.Errorf("CheckUser for an unknown user took %v, want at least %v", time.Since(start), atLeast)
	}
}
