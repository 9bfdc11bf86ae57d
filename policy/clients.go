package policy

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/crypto/bcrypt"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/rsl"
)

// Mode is how a client's requests are treated.
type Mode uint8

// Modes. Enforce is the zero value.
const (
	Enforce Mode = iota // refuse and hold as robots.txt asks
	Monitor             // decide and log, never refuse or hold: a dry run
	Bypass              // no robots checks; the egress guard still applies
)

var modeNames = [...]string{Enforce: "enforce", Monitor: "monitor", Bypass: "bypass"}

// String returns the mode's configuration name.
func (m Mode) String() string { return modeNames[m] }

// Client is who is asking, as the clients configuration identifies them.
type Client struct {
	// Name identifies the matched clients entry in logs: its user, else its
	// CIDR; "" for requests that matched none.
	Name string
	// User is the authenticated proxy user, if any.
	User string
	Mode Mode
	// Agent is a fixed product token to judge the client by instead of its
	// User-Agent header; "" to use the header.
	Agent string
	// Purposes are checked against the sites' AI-usage preferences.
	Purposes []string
	// Licence is what the client declares for the terms of RSL licences
	// (clients[].rsl_user, country, accept_payment, accept_reporting).
	Licence rsl.Client
	// IgnoreBackoff: the client is never held for an origin's pause
	// (clients[].backoff: ignore).
	IgnoreBackoff bool
	// MonitorHeader: a monitored client's responses say what would have
	// been refused (clients[].monitor_header).
	MonitorHeader bool
	// Entry is the position of the matched clients entry in the
	// configuration, counted from 1; 0 for requests that matched none
	// (what the proxy reads of the entry beyond the decision: its signing
	// key, its maximum price).
	Entry int
	// OwnFetch: the request is robotsgate's own (an RSL licence document
	// a site names), judged and paced as any, but not counted in
	// pacing.max_concurrency, which bounds the clients' requests as it
	// never bounds robots.txt fetches.
	OwnFetch bool
}

// ErrAuthRequired means the request must be answered 407: proxy
// authentication is configured and the request has no valid credentials
// for any entry that applies to it.
var ErrAuthRequired = errors.New("proxy authentication required")

// ErrClientDenied is returned by Identify for a client that no entry
// matches when unmatched clients are denied and no proxy users are
// configured (credentials would not help it).
var ErrClientDenied = errors.New("client not allowed to use this proxy (clients_default: deny)")

// Clients identifies clients by source address and proxy user. It is safe
// for concurrent use.
type Clients struct {
	rules    []clientRule
	needAuth bool // some entry names a user
	// denyUnmatched refuses clients no entry matches (clients_default: deny).
	denyUnmatched bool
	realm         string
	// verified caches successful password checks: bcrypt costs tens of
	// milliseconds by design, far too much for every request.
	verified *lru.Cache[[sha256.Size]byte, struct{}]
	// htpasswd are auth.htpasswd's users (CheckUser).
	htpasswd  map[string][]byte
	dummyOnce sync.Once
	dummy     []byte
}

// dummyHash returns a hash to compare the password of a user nobody is
// against, so that an unknown user costs what a wrong password does: the
// time of an answer must not tell which user names exist. Its cost is
// the highest of the configured hashes', made once.
func (c *Clients) dummyHash() []byte {
	c.dummyOnce.Do(func() {
		cost := bcrypt.MinCost
		for _, h := range c.htpasswd {
			if n, err := bcrypt.Cost(h); err == nil {
				cost = max(cost, n)
			}
		}
		for i := range c.rules {
			if n, err := bcrypt.Cost(c.rules[i].hash); err == nil {
				cost = max(cost, n)
			}
		}
		c.dummy, _ = bcrypt.GenerateFromPassword([]byte("robotsgate: no such user"), cost)
	})
	return c.dummy
}

// CheckUser reports whether user and password are those of a user of
// auth.htpasswd (the admin listener's users). An unknown user costs the
// same bcrypt comparison as a known one.
func (c *Clients) CheckUser(user, password string) bool {
	hash, ok := c.htpasswd[user]
	if !ok {
		bcrypt.CompareHashAndPassword(c.dummyHash(), []byte(password))
		return false
	}
	return c.check(&clientRule{user: user, hash: hash}, user, password)
}

type clientRule struct {
	prefix    netip.Prefix // invalid = any address
	user      string
	hash      []byte
	client    Client
	hasPrefix bool
}

// NewClients builds the matcher from the clients entries (in order: the
// first that matches applies) and the auth settings, reading auth.htpasswd
// for users without password_bcrypt.
func NewClients(entries []config.Client, auth config.Auth) (*Clients, error) {
	htpasswd, err := readHtpasswd(auth.Htpasswd)
	if err != nil {
		return nil, err
	}
	cache, _ := lru.New[[sha256.Size]byte, struct{}](1024)
	c := &Clients{realm: auth.Realm, verified: cache, htpasswd: htpasswd}
	for i, e := range entries {
		r, err := newClientRule(e, htpasswd)
		if err != nil {
			return nil, fmt.Errorf("clients[%d]: %w", i, err)
		}
		r.client.Entry = i + 1
		c.needAuth = c.needAuth || r.user != ""
		c.rules = append(c.rules, r)
	}
	return c, nil
}

func newClientRule(e config.Client, htpasswd map[string][]byte) (clientRule, error) {
	r := clientRule{user: e.User, client: Client{Mode: parseMode(e.Mode), Agent: e.Agent, Purposes: e.Purposes,
		IgnoreBackoff: e.Backoff == config.BackoffIgnore, MonitorHeader: e.MonitorHeader,
		Licence: rsl.Client{User: e.RSLUser, Country: e.Country, Payments: e.AcceptPayment, Reporting: e.AcceptReporting}}}
	r.client.Name = e.User
	if e.CIDR != "" {
		p, err := netip.ParsePrefix(e.CIDR)
		if err != nil {
			return r, fmt.Errorf("cidr: %w", err)
		}
		r.prefix, r.hasPrefix = p.Masked(), true
		if r.client.Name == "" {
			r.client.Name = r.prefix.String()
		}
	}
	if e.User != "" {
		r.hash = []byte(e.PasswordBcrypt)
		if len(r.hash) == 0 {
			r.hash = htpasswd[e.User]
		}
		if len(r.hash) == 0 {
			return r, fmt.Errorf("user %q has no password_bcrypt and no auth.htpasswd line", e.User)
		}
	}
	return r, nil
}

func parseMode(m config.Mode) Mode {
	switch m {
	case config.ModeMonitor:
		return Monitor
	case config.ModeBypass:
		return Bypass
	}
	return Enforce
}

// readHtpasswd reads "user:bcrypt-hash" lines; blank lines and '#'
// comments are skipped. Only bcrypt hashes are accepted.
func readHtpasswd(path string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("auth.htpasswd: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(hash, "$2") {
			return nil, fmt.Errorf("auth.htpasswd: %s:%d: want user:bcrypt-hash", path, n)
		}
		out[user] = []byte(hash)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("auth.htpasswd: %w", err)
	}
	return out, nil
}

// Realm is the realm for the Proxy-Authenticate challenge.
func (c *Clients) Realm() string { return c.realm }

// Identify returns the client a request comes from: the first entry whose
// CIDR contains addr and whose user (if any) presented the right password
// in the Proxy-Authorization header. With no matching entry, requests are
// the default client (enforced) unless some entry names a user, in which
// case ErrAuthRequired. Wrong credentials for a named user are always
// ErrAuthRequired.
func (c *Clients) Identify(addr netip.Addr, proxyAuthorization string) (Client, error) {
	user, pass, hasCreds := parseBasic(proxyAuthorization)
	return c.identify(addr, user, hasCreds, func(r *clientRule) bool { return c.check(r, user, pass) })
}

// IdentifyAs returns the client Identify returns for a request from addr
// that authenticated as user ("" for none) with the right password: for
// /explain and check, which judge as a client without its credentials.
func (c *Clients) IdentifyAs(addr netip.Addr, user string) (Client, error) {
	return c.identify(addr, user, user != "", func(*clientRule) bool { return true })
}

func (c *Clients) identify(addr netip.Addr, user string, hasCreds bool, verify func(*clientRule) bool) (Client, error) {
	addr = addr.Unmap()
	checked := false
	for i := range c.rules {
		r := &c.rules[i]
		if r.hasPrefix && !r.prefix.Contains(addr) {
			continue
		}
		if r.user == "" {
			return r.client, nil
		}
		if !hasCreds || user != r.user {
			continue
		}
		checked = true
		if !verify(r) {
			return Client{}, ErrAuthRequired
		}
		cl := r.client
		cl.User = user
		return cl, nil
	}
	if hasCreds && !checked {
		// An unknown user (or one outside its CIDR) costs what a wrong
		// password does.
		verify(&clientRule{hash: c.dummyHash()})
	}
	switch {
	case c.needAuth:
		return Client{}, ErrAuthRequired
	case c.denyUnmatched:
		return Client{}, ErrClientDenied
	}
	return Client{}, nil
}

func (c *Clients) check(r *clientRule, user, pass string) bool {
	key := sha256.Sum256([]byte(user + "\x00" + pass + "\x00" + string(r.hash)))
	if _, ok := c.verified.Get(key); ok {
		return true
	}
	if bcrypt.CompareHashAndPassword(r.hash, []byte(pass)) != nil {
		return false
	}
	c.verified.Add(key, struct{}{})
	return true
}

// parseBasic decodes "Basic base64(user:password)".
func parseBasic(h string) (user, pass string, ok bool) {
	scheme, cred, found := strings.Cut(strings.TrimSpace(h), " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}
