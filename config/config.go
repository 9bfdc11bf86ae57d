// Package config reads robotsgate's YAML configuration: the file format, the
// built-in defaults (the same as config.yaml at the repository root) and
// validation. It must not act on a configuration, start anything or touch
// the network: the packages that use a setting apply it.
//
// Load and Parse start from Default, overlay what the file sets, and then
// Validate the result. Decoding is strict: unknown keys, values of the wrong
// type and invalid values are all errors, and every error names the key as a
// dotted path ("pacing.max_wait", "clients[1].mode") and, where known, the file
// and line:
//
//	config.yaml:12: pacing.max_wait: invalid duration "abc" (want a Go duration such as 1.5s, 10m or 24h)
//
// All errors found are reported at once, joined (errors.Join), in line order;
// each one is an *Error.
//
// A key the file does not mention keeps its default. A list in the file
// replaces the default list; an empty list ([]) is stored as nil. A mapping
// left empty ("robots:" with nothing under it) keeps all its defaults. A
// string key left empty ("audit:") means ""; a number, boolean or duration
// left empty is an error rather than a silent zero.
package config

import (
	"log/slog"
	"strconv"
	"time"
)

// Config is the whole configuration. Its zero value is not usable: start from
// Default (Load and Parse do).
type Config struct {
	// StateDir is the directory robotsgate keeps what it writes at run
	// time in: the interception CA and its key, the robots.txt archive,
	// the audit log and the evidence key, each at a default path under it
	// unless its own key names another. Created if needed. Default
	// "robotsgate-state" (in the working directory). Restart-only.
	StateDir string `yaml:"state_dir"`
	// Listen is the proxy's own address, host:port (port 0 picks a free port).
	// Default "127.0.0.1:8080".
	Listen string `yaml:"listen"`
	// AdminListen is the admin listener's address, host:port: /metrics,
	// /healthz, /readyz, /explain and the status page. "" disables it.
	// Default "127.0.0.1:9090".
	AdminListen string `yaml:"admin_listen"`
	// AdminHosts are further names the admin listener answers to, besides
	// the address it listens on and, on loopback, localhost: a request
	// whose Host is none of them gets 421 (a DNS-rebinding page names its
	// own host). Default none. Restart-only.
	AdminHosts []string `yaml:"admin_hosts"`
	// AdminAuth makes every admin request (metrics included) present
	// Basic credentials of a user of auth.htpasswd: for an admin listener
	// that others can reach. Default false. Restart-only.
	AdminAuth bool `yaml:"admin_auth"`
	// MemoryLimit is the Go runtime's soft memory limit: MemoryLimitAuto
	// (robots.cache_bytes + usage.cache_bytes + the RSL cache's 16 MiB, a
	// quarter more, and 64 MiB), MemoryLimitOff, or a size of at least
	// 32 MiB. GOMEMLIMIT in the environment wins over it. Default "auto".
	// Restart-only.
	MemoryLimit MemoryLimit `yaml:"memory_limit"`
	// KeyPermissions is what serve does with a private key file (the CA's,
	// the evidence key, the Web Bot Auth keys) that group or others may
	// read or write: "warn" names the file and its mode in the log and
	// goes on, "refuse" does not start. Default "warn": keys created by
	// older tools or copied with a permissive umask keep working, and the
	// warning says how to fix them. Restart-only.
	KeyPermissions KeyPermissions `yaml:"key_permissions"`
	// PACProxy is the host:port the admin listener's /proxy.pac sends
	// browsers to: the name clients reach the proxy by. Default "": the
	// listen address, or when the proxy listens on every address
	// (0.0.0.0, [::]), the host the PAC file was fetched from with the
	// listen port. A reload applies it.
	PACProxy string `yaml:"pac_proxy"`

	Robots   Robots   `yaml:"robots"`
	Egress   Egress   `yaml:"egress"`
	MITM     MITM     `yaml:"mitm"`
	Pacing   Pacing   `yaml:"pacing"`
	Upstream Upstream `yaml:"upstream"`
	Auth     Auth     `yaml:"auth"`
	// ClientsDefault is what a client no clients entry matches may do:
	// "allow" (use the proxy in enforce mode) or "deny" (407 when proxy
	// users are configured, else 403 client-denied). A proxy listening on
	// a non-loopback address with "allow" and no clients entries is open
	// to anyone who can reach it (it says so at start). Default "allow".
	ClientsDefault ClientsDefault `yaml:"clients_default"`
	Clients        []Client       `yaml:"clients"`
	Sites          []Site         `yaml:"sites"`
	Usage          Usage          `yaml:"usage"`
	Trap           Trap           `yaml:"trap"`
	Identify       Identify       `yaml:"identify"`
	BotAuth        BotAuth        `yaml:"bot_auth"`
	Timeouts       Timeouts       `yaml:"timeouts"`
	Transparent    Transparent    `yaml:"transparent"`
	SOCKS          SOCKS          `yaml:"socks"`
	Connections    Connections    `yaml:"connections"`
	Archive        Archive        `yaml:"archive"`
	Log            Log            `yaml:"log"`
}

// Archive keeps the evidence of the decisions: every distinct robots.txt
// body judged, stored once by SHA-256, and a log of every robots.txt
// fetch, so that each audit record can be replayed (robotsgate verify).
type Archive struct {
	// Dir is the archive's directory, created if needed; it grows by
	// distinct robots.txt versions and one line per fetch. Several
	// instances may share it. "" disables archiving. Needs a restart to
	// change. Default "robots-archive" (relative to the working directory).
	Dir string `yaml:"dir"`
}

// Robots configures how robots.txt files are fetched and cached (docs/decisions.md, step 3).
type Robots struct {
	// FetchUserAgent is the User-Agent header of the proxy's own fetches
	// (robots.txt, tdmrep.json, licences): a product token and a URL that
	// says who fetches and why (the crawler best-practices draft asks for
	// both). Default "robotsgate/1.0 (+https://github.com/robotsgate/robotsgate)".
	FetchUserAgent string `yaml:"fetch_user_agent"`
	// FetchTimeout bounds one whole robots.txt fetch: connecting, redirects,
	// headers and body. Must be > 0. Default 10s.
	FetchTimeout Duration `yaml:"fetch_timeout"`
	// CacheEntries is the number of origins whose parsed robots.txt is kept
	// (LRU). Must be > 0. Default 100000.
	CacheEntries int `yaml:"cache_entries"`
	// CacheBytes bounds the memory the robots.txt cache keeps, as the parsed
	// files measure it (a 500 KiB file keeps up to about 2 MiB): the least
	// recently used are dropped first. With CacheEntries, whichever bound is
	// reached first applies. Must be >= 1MiB. Default 256MiB.
	CacheBytes ByteSize `yaml:"cache_bytes"`
	// ColdFetchesPerClient bounds the requests of one client address that
	// may wait at once for an uncached origin's robots.txt (or
	// tdmrep.json, or an RSL licence, also one a response names): a client asking for thousands of new origins at once
	// must not start thousands of fetches. Beyond it a request waits for a
	// place, at most pacing.max_wait, then gets 503 fetch-limited. 0 means
	// no bound. Default 16.
	ColdFetchesPerClient int `yaml:"cold_fetches_per_client"`
	// MinTTL is the shortest time a fetched copy is considered fresh, whatever
	// Cache-Control says. Default 1m.
	MinTTL Duration `yaml:"min_ttl"`
	// MaxTTL is the longest time a fetched copy is considered fresh (RFC 9309:
	// 24 h); without Cache-Control max-age a copy is fresh this long. Must be
	// > 0 and >= MinTTL. Default 24h.
	MaxTTL Duration `yaml:"max_ttl"`
	// RetryMin is how long an unreachable robots.txt (429, 5xx, timeout,
	// connection or TLS error) is remembered before the first retry; the
	// wait doubles with each further failure up to RetryMax. Must be > 0.
	// Default 10s.
	RetryMin Duration `yaml:"retry_min"`
	// RetryMax caps the retry backoff after repeated failures. Must be
	// >= RetryMin. Default 10m.
	RetryMax Duration `yaml:"retry_max"`
	// StrictPaths also judges the canonical form of each path (dot segments
	// removed, unreserved %xx decoded, repeated slashes collapsed) and refuses
	// if either judgement disallows: the evasion guard (docs/decisions.md, step 5).
	// Default true.
	StrictPaths bool `yaml:"strict_paths"`
}

// Egress configures the egress guard: which destinations may be reached at
// all (docs/security.md). It applies to proxied requests and robots.txt fetches, and
// to clients in bypass mode too.
type Egress struct {
	// BlockPrivateNetworks refuses destinations whose resolved address is
	// loopback, private, link-local, CGNAT, ULA, multicast or unspecified
	// (also in IPv4-mapped and similar embedded forms). Default true.
	BlockPrivateNetworks bool `yaml:"block_private_networks"`
	// AllowNetworks lists CIDRs (e.g. 10.1.0.0/16) exempt from
	// BlockPrivateNetworks: internal sites that may be reached. Host bits
	// are ignored. Default none.
	AllowNetworks []string `yaml:"allow_networks"`
	// AllowHosts, when not empty, restricts destinations to hosts matching
	// one of these globs (path.Match syntax, matched against the lower-case
	// host, e.g. "*.example.com"). It does not exempt a host from
	// BlockPrivateNetworks. Default none (any host).
	AllowHosts []string `yaml:"allow_hosts"`
	// DenyHosts refuses hosts matching any of these globs; it wins over
	// AllowHosts. Default none.
	DenyHosts []string `yaml:"deny_hosts"`
	// DenyHostsFiles are files of hosts to refuse like DenyHosts (e.g. a
	// list of copyright-infringing sites, or a company's blocklist): one
	// host or glob per line ("*.example.com" matches the names under
	// example.com, not example.com itself), '#' comments, blank lines
	// ignored; lookups stay fast for millions of entries. Relative paths
	// are from the working directory. A refusal names the file and line.
	// The files are read again on SIGHUP and when they change (checked
	// every 2 seconds); a file that no longer loads keeps its previous
	// entries. Default none.
	DenyHostsFiles []string `yaml:"deny_hosts_files"`
	// AllowPorts, when not empty, restricts every destination (proxied
	// requests, CONNECT tunnels, robots.txt fetches) to these ports
	// (1..65535). Default none (any port).
	AllowPorts []int `yaml:"allow_ports"`
	// TunnelPorts are the ports a CONNECT may reach without interception (a
	// blind tunnel: mitm.enabled false or a mitm.skip_hosts match); empty
	// means no blind tunnels. Default [443].
	TunnelPorts []int `yaml:"tunnel_ports"`
}

// MITM configures HTTPS interception (docs/configuration.md).
type MITM struct {
	// Enabled intercepts CONNECT tunnels with robotsgate's own CA so that
	// every request inside is judged; when false every tunnel is blind and
	// only host-level decisions are possible. Default true.
	Enabled bool `yaml:"enabled"`
	// CACert is the interception CA's certificate (PEM); created with CAKey
	// on first start if missing. Required when Enabled. Default
	// "certs/ca.pem".
	CACert string `yaml:"ca_cert"`
	// CAKey is the interception CA's private key (PEM, mode 0600). Required
	// when Enabled. Default "certs/ca-key.pem".
	CAKey string `yaml:"ca_key"`
	// UpstreamCA is a PEM file of extra roots trusted for upstream TLS, in
	// addition to the system roots. Default "" (system roots only).
	UpstreamCA string `yaml:"upstream_ca"`
	// SkipHosts lists host globs (path.Match syntax) whose tunnels are never
	// intercepted (e.g. certificate-pinned services). Default none.
	SkipHosts []string `yaml:"skip_hosts"`
}

// Pacing configures how requests are held to honour Crawl-delay and
// Request-rate (docs/configuration.md, Pacing).
type Pacing struct {
	// MaxWait is the longest a request is held for its slot; a request whose
	// slot lies further ahead is refused with 429 and Retry-After. 0 refuses
	// every request that would have to wait. Default 60s.
	MaxWait Duration `yaml:"max_wait"`
	// DefaultDelay is the operator's floor interval between requests to one
	// origin, applied where robots.txt sets a shorter delay or none.
	// Default 0s (none).
	DefaultDelay Duration `yaml:"default_delay"`
	// MaxDelay caps the interval taken from robots.txt; what happens above it
	// is OverMaxDelay. Must be >= DefaultDelay when set. Default 0s (no cap).
	MaxDelay Duration `yaml:"max_delay"`
	// OverMaxDelay decides what happens to requests to an origin whose
	// robots.txt asks for an interval above MaxDelay: "clamp" paces them at
	// MaxDelay, "refuse" refuses them with 429. Default "clamp".
	OverMaxDelay OverMaxDelay `yaml:"over_max_delay"`
	// Key decides what shares one pacing schedule: "origin+group" (the origin
	// and the robots.txt group that judged the request, so different agents
	// are paced independently) or "origin" (one schedule per origin, whatever
	// the agent). Default "origin+group".
	Key PacingKey `yaml:"key"`
	// MaxConcurrency limits the requests in flight to one origin at a time
	// (paced or not), across the fleet with Store "redis"; further requests
	// wait like paced ones. 0 = unlimited. Default 0.
	MaxConcurrency int `yaml:"max_concurrency"`
	// Store holds the pacing state: "memory" (this process) or "redis"
	// (shared by a fleet through Redis, which then also shares the
	// robots.txt and tdmrep.json files the instances fetch). Default
	// "memory".
	Store Store `yaml:"store"`
	// Redis is the Redis server used when Store is "redis".
	Redis Redis `yaml:"redis"`
	// OnStoreError decides how paced requests are answered while the store
	// (Redis) fails: "refuse" (503 + Retry-After) or "local" (in-process
	// pacing until Redis is back). Default "refuse".
	OnStoreError StoreErrorPolicy `yaml:"on_store_error"`
	// Backoff pauses an origin that answers that it is overloaded (429,
	// 503), whatever robots.txt says.
	Backoff Backoff `yaml:"backoff"`
	// Adaptive paces an origin by its response time (off by default).
	Adaptive Adaptive `yaml:"adaptive"`
}

// Backoff configures the pause of an origin that answered 429 or 503 (or
// another configured status), or failed several times in a row: every
// request to it, whatever its group or client, is held until the pause
// ends (at most pacing.max_wait) or refused with 429 origin-backoff
// (docs/configuration.md, Politeness).
type Backoff struct {
	// Enabled turns the pauses on. Default true.
	Enabled bool `yaml:"enabled"`
	// Statuses are the origin's answers that pause it at once: 429 and 5xx
	// codes. Default [429, 503].
	Statuses []int `yaml:"statuses"`
	// ConnectionErrors also pauses at once an origin that cannot be
	// connected to or times out (an upstream-error). Default false (a
	// timeout counts towards Failures instead).
	ConnectionErrors bool `yaml:"connection_errors"`
	// Failures are answers that pause an origin only several in a row.
	Failures Failures `yaml:"failures"`
	// Initial is the first pause when the answer has no Retry-After; each
	// further answer in a row multiplies it by Factor (plus up to 10 %
	// jitter, never less), up to Max. Default 5s.
	Initial Duration `yaml:"initial"`
	// Factor multiplies the pause at each answer in a row. Must be >= 1.
	// Default 2.
	Factor Factor `yaml:"factor"`
	// Max caps the computed pauses (those of answers without a
	// Retry-After); a success, or Max without such an answer, starts the
	// series again from Initial. Default 1h.
	Max Duration `yaml:"max"`
	// RetryAfterMax caps a pause an answer's own Retry-After asks for: it
	// is obeyed in full up to this bound, which is not Max. Must be >= Max.
	// Default 24h.
	RetryAfterMax Duration `yaml:"retry_after_max"`
}

// Failures are the answers that pause an origin once InARow of them came
// in a row (no success in between, each within Backoff.Max of the
// previous): one broken URL does not pause a site, a failing site does.
type Failures struct {
	// Statuses are the 5xx statuses that count. Default [500, 502, 504].
	Statuses []int `yaml:"statuses"`
	// Timeouts counts a request the origin did not answer in time (or whose
	// connection timed out). Default true.
	Timeouts bool `yaml:"timeouts"`
	// InARow is how many failures in a row pause the origin; each further
	// one pauses it again, for the next term of the series. 0 counts
	// none. Default 3.
	InARow int `yaml:"in_a_row"`
}

// Adaptive configures pacing by response time: the interval of an origin
// becomes at least Factor times its recent response time (the median of
// its last five), within Min and Max, and the larger of that, Crawl-delay
// and the floors applies.
type Adaptive struct {
	// Factor multiplies the response time; 0 turns adaptive pacing off.
	// Default 0.
	Factor Factor `yaml:"factor"`
	// Min and Max bound the adaptive interval. Defaults 0s and 30s.
	Min Duration `yaml:"min"`
	Max Duration `yaml:"max"`
}

// Redis locates the Redis a fleet shares (the pacing schedule and the
// fetched robots.txt and tdmrep.json files): one server (Addr), a primary
// that Redis Sentinel fails over (Sentinel), or a Redis Cluster (Cluster);
// and how robotsgate logs in to it. Every Redis client robotsgate makes
// uses all of it.
type Redis struct {
	// Addr is the server's host:port; required when pacing.store is
	// "redis" and neither Sentinel nor Cluster is set, unused (and an
	// error to set) when one is. Default "127.0.0.1:6379".
	Addr string `yaml:"addr"`
	// Sentinel finds the primary through Redis Sentinel and follows its
	// failovers.
	Sentinel RedisSentinel `yaml:"sentinel"`
	// Cluster connects to a Redis Cluster.
	Cluster RedisCluster `yaml:"cluster"`
	// ReplicaAcks is how many replicas must acknowledge a pacing
	// reservation (WAIT) before the request it admits is sent, at most:
	// only the replicas that could be promoted in the primary's place are
	// waited for, so a primary left without replicas goes on alone. 0
	// relies on asynchronous replication (a failover may lose the last
	// reservations). With Sentinel or Cluster only. Default 1.
	ReplicaAcks int `yaml:"replica_acks"`
	// Username is the ACL user robotsgate authenticates as (AUTH username
	// password); "" means the default user, with PasswordFile's password
	// (requirepass) if any. Default "".
	Username string `yaml:"username"`
	// PasswordFile is a file holding the password (its first line), read
	// at start; the password itself never goes in the configuration.
	// Required with Username. Default "" (no password).
	PasswordFile string `yaml:"password_file"`
	// DB is the database number, selected on connect. Default 0.
	DB int `yaml:"db"`
	// KeyPrefix is put before every key robotsgate uses: KeyPrefix +
	// "pacing:", "robots:" and "tdmrep:" + the pacing key or origin. One
	// Redis can serve several fleets with different prefixes, and an ACL
	// can confine robotsgate to ~KeyPrefix*. Printable ASCII without
	// spaces, glob characters (* ? [ ] \) or braces (Redis Cluster's hash
	// tags are the origins in braces). Default "robotsgate:".
	KeyPrefix string `yaml:"key_prefix"`
	// TLS connects to Redis with TLS.
	TLS RedisTLS `yaml:"tls"`
}

// RedisSentinel locates the primary through Redis Sentinel. Set both
// keys or neither.
type RedisSentinel struct {
	// MasterName is the name the sentinels monitor the primary under
	// (sentinel monitor NAME ...). Default "".
	MasterName string `yaml:"master_name"`
	// Addrs are sentinels' host:port; robotsgate asks them, in turn, where
	// the primary is, and learns of the others from them. Default [].
	Addrs []string `yaml:"addrs"`
	// Username and PasswordFile log in to the sentinels (their own
	// requirepass or ACL user, not the data nodes'); the password is the
	// file's first line. PasswordFile is required with Username. Default
	// "" (none).
	Username     string `yaml:"username"`
	PasswordFile string `yaml:"password_file"`
}

// RedisCluster locates a Redis Cluster.
type RedisCluster struct {
	// Addrs are some of the cluster's nodes (host:port); robotsgate learns
	// the others from them. Default [].
	Addrs []string `yaml:"addrs"`
}

// RedisTLS configures TLS to Redis (data nodes and sentinels alike).
type RedisTLS struct {
	// Enabled connects with TLS (TLS 1.2 or later), verifying each
	// server's certificate for the host it is reached at (pacing.redis.addr,
	// a sentinel's address, the primary's address as the sentinels or the
	// cluster announce it). Default false.
	Enabled bool `yaml:"enabled"`
	// CAFile is a PEM file of the CA certificates that verify the server,
	// trusted instead of the system roots; "" means the system roots.
	// Needs Enabled. Default "".
	CAFile string `yaml:"ca_file"`
}

// Upstream configures how robotsgate reaches origins: directly, or through
// a parent proxy (corporate networks).
type Upstream struct {
	// Proxy is a parent proxy that every upstream connection goes through,
	// robots.txt fetches and blind tunnels included: "http://host:port" or
	// "https://host:port" (TLS to the parent, verified against the system
	// roots and mitm.upstream_ca), optionally with "user:password@"
	// (percent-encoded), sent as Proxy-Authorization: Basic and never
	// logged. The port is required. http:// requests go to the parent in
	// absolute form, https:// requests and tunnels through CONNECT. The
	// egress guard still checks every destination locally before anything
	// is sent; the parent itself may be on any network. Default "" (connect
	// directly).
	Proxy string `yaml:"proxy"`
	// NoProxy lists host globs (path.Match syntax, matched against the
	// lower-case host or IP literal, e.g. "*.corp.example", "10.1.2.3")
	// that are reached directly rather than through Proxy. Default none.
	NoProxy []string `yaml:"no_proxy"`
}

// Auth configures proxy authentication (Proxy-Authorization: Basic) for the
// clients entries that name a user.
type Auth struct {
	// Htpasswd is an htpasswd-style file of "user:bcrypt-hash" lines, used
	// for clients entries with a user and no password_bcrypt.
	// Default "" (none).
	Htpasswd string `yaml:"htpasswd"`
	// Realm is the realm of the Proxy-Authenticate challenge sent with 407.
	// Default "robotsgate".
	Realm string `yaml:"realm"`
	// FailureLimit is how many failed proxy credentials (a wrong
	// password, an unknown user) an address may send in a minute; beyond
	// it, its attempts get 429 auth-limited without being checked, so
	// passwords cannot be guessed at bcrypt's pace. 0 means no limit.
	// Default 10.
	FailureLimit int `yaml:"failure_limit"`
}

// Client is one clients entry: who is asking (source network and/or proxy
// user) and how their requests are treated (docs/configuration.md, Clients and sites). When both CIDR and
// User are set, both must match. The first matching entry applies; a
// request that matches none is enforced and judged by its User-Agent.
type Client struct {
	// CIDR matches the client's source address, e.g. "10.0.0.0/8". Host
	// bits are ignored. Default "" (any address).
	CIDR string `yaml:"cidr"`
	// User matches the proxy user of Proxy-Authorization: Basic. Its
	// password is PasswordBcrypt, or else the user's line in auth.htpasswd.
	// Default "" (no authentication).
	User string `yaml:"user"`
	// PasswordBcrypt is the bcrypt hash ("$2a$", "$2b$" or "$2y$") of User's
	// password. Default "".
	PasswordBcrypt string `yaml:"password_bcrypt"`
	// Mode is "enforce" (refuse and hold as robots.txt asks), "monitor"
	// (decide and log, never refuse or hold: a dry run) or "bypass" (no
	// robots checks; the egress guard still applies). Default "enforce".
	Mode Mode `yaml:"mode"`
	// MonitorHeader, in monitor mode, adds X-Robotsgate-Would-Refuse to
	// the responses of requests the proxy would have refused: the
	// decision, its status and why, so that the client's operator sees
	// what enforcing would change without reading the proxy's log.
	// Default false (a dry run adds nothing to what the client gets).
	MonitorHeader bool `yaml:"monitor_header"`
	// Agent is a fixed product token ([A-Za-z_-]+, e.g. "ResearchBot") to
	// judge this client's requests by, instead of their User-Agent header.
	// Default "" (use the header).
	Agent string `yaml:"agent"`
	// Backoff is "obey" (held or refused while an origin pauses after a
	// 429 or 503, pacing.backoff) or "ignore" (never held for it). Default
	// "obey".
	Backoff BackoffPolicy `yaml:"backoff"`
	// Purposes are the uses this client makes of what it fetches, in the
	// vocabulary of the sites' AI-usage preferences (content-usage,
	// content-signal), e.g. "train-ai", "search". A path whose preferences
	// refuse one of them is refused with 403 usage-denied. train-ai,
	// train-genai, ai-train and tdm (text and data mining) are also judged
	// by the site's TDM reservations (/.well-known/tdmrep.json, see
	// usage.on_unknown). Lower-case tokens [a-z0-9-]. Default none
	// (preferences are not checked).
	Purposes []string `yaml:"purposes"`
	// SignatureAgent gives this client a Web Bot Auth identity of its own
	// (docs/webbotauth.md): the HTTPS URL of the key directory that
	// publishes SignKey's public key. This client's requests are then
	// signed with SignKey instead of bot_auth's key. Default "" (signed as
	// bot_auth says). A reload applies it.
	SignatureAgent string `yaml:"signature_agent"`
	// SignKey is the file of this client's Ed25519 signing key (PKCS #8
	// PEM): a bare file name is in state_dir. Created on first start when
	// missing (also by a reload). Required with signature_agent. Default "".
	SignKey string `yaml:"sign_key"`
	// MaxPrice is the most this client pays per request under pay per
	// crawl, as "USD 0.05" (a currency code and an amount with at most six
	// decimals): an origin's 402 with a crawler-price within it is retried
	// once, signed, with crawler-exact-price set to that price; a higher
	// price, or another currency, is relayed. Needs signing (bot_auth or
	// signature_agent). Default "" (402s are relayed).
	MaxPrice string `yaml:"max_price"`
	// RSLUser is what this client is for the user terms of RSL licences
	// (<permits type="user">, <prohibits type="user">): commercial,
	// non-commercial, education, government or personal. Default ""
	// (undeclared: a licence that permits only some user types, or
	// prohibits any, refuses this client's purposes).
	RSLUser string `yaml:"rsl_user"`
	// Country is where this client operates, an ISO 3166-1 alpha-2 code
	// (FR, US), for the geo terms of RSL licences (EU in a licence stands
	// for its member states). Default "" (undeclared: a licence with geo
	// terms refuses this client's purposes).
	Country string `yaml:"country"`
	// AcceptPayment are the RSL payment types (<payment type>) this client
	// has settled or pays: purchase, subscription, training, crawl, use,
	// contribution, attribution, or all (any payment, also one of no or
	// another type). Default none: a licence that asks for payment refuses
	// with 403 license-required, naming the term.
	AcceptPayment []string `yaml:"accept_payment"`
	// AcceptReporting are the reporting profiles (the profile URIs of RSL
	// <reporting> terms) this client complies with, or all. Default none:
	// a licence with a reporting obligation refuses with 403
	// license-required.
	AcceptReporting []string `yaml:"accept_reporting"`
}

// Site is one sites entry: a per-host override (docs/configuration.md). The first entry
// with a matching host glob applies.
type Site struct {
	// Hosts are host globs (path.Match syntax, matched against the
	// lower-case host, e.g. "*.example.com"). At least one is required.
	Hosts []string `yaml:"hosts"`
	// Robots is "obey" (judge by robots.txt) or "ignore" (no robots checks
	// for these hosts; the egress guard still applies). Default "obey".
	Robots RobotsPolicy `yaml:"robots"`
	// Delay is the operator's floor interval for these hosts, used instead of
	// pacing.default_delay. Default 0s (pacing.default_delay applies).
	Delay Duration `yaml:"delay"`
	// Backoff is "obey" (requests wait while the origin pauses after a 429
	// or 503, pacing.backoff) or "ignore" (an origin of the operator's,
	// whose 503s must not hold anyone). Default "obey" (also when "").
	Backoff BackoffPolicy `yaml:"backoff"`
}

// Usage configures the AI-usage signals read besides robots.txt, for
// clients with purposes (clients[].purposes): a signal refuses only the
// purposes it concerns, and clients without purposes are never affected.
// The response headers tdm-reservation, Content-Usage, Content-Signal,
// X-Robots-Tag and Robots-Tag (noai, noml, noimageai) are always checked:
// a refusing header means the response is withheld and the client gets
// 403 usage-denied.
type Usage struct {
	// ScanHTML also reads the <meta> tags of HTML responses (text/html,
	// application/xhtml+xml, or no Content-Type: tdm-reservation, robots
	// noai/noml/noimageai) for clients whose purposes they concern, and
	// their <link rel="license"> tags (RSL licences) for every client with
	// purposes: the proxy holds back up to the first 64 KiB of the page
	// (until </head> or <body>) while it reads them, which delays the first
	// byte. Such a client's requests ask only for the codings the scan
	// decodes, and a page whose head cannot be read follows OnUnknown.
	// Default false.
	ScanHTML bool `yaml:"scan_html"`
	// OnUnknown decides what happens to the requests of a client with a
	// text-and-data-mining purpose (train-ai, train-genai, ai-train, tdm)
	// while the origin's /.well-known/tdmrep.json (W3C TDMRep) cannot be
	// fetched (429, 5xx, network; a 404 or other 4xx means no
	// reservation): "refuse" (503 usage-unknown, Retry-After, as an
	// unreachable robots.txt refuses everything) or "allow". The file is
	// fetched, cached and archived like robots.txt, and only for those
	// clients. The same setting applies to an RSL licence a site names
	// (robots.txt License, a Link header, an HTML <link rel="license">)
	// that cannot be read (any answer but a 2xx with a valid RSL
	// document), for a client with any purpose, and to an HTML page whose
	// head cannot be read with ScanHTML. Default "refuse".
	OnUnknown UsageOnUnknown `yaml:"on_unknown"`
	// OnLicenseServer decides what happens to the request of a client
	// with a purpose that an RSL licence grants only through a licence
	// server (<content server="…">: a client must present a licence token,
	// Authorization: License …, which robotsgate does not obtain):
	// "refuse" (403 license-required, naming the server) or "allow"
	// (forwarded; the origin answers 401 or 402 itself if it checks). A
	// request that carries its own token (Authorization: License …) is
	// always forwarded. An RSL document that cannot be read follows
	// on_unknown. Default "refuse".
	OnLicenseServer UsageOnUnknown `yaml:"on_license_server"`
	// RSLUnstatedUsage decides what an RSL licence grants that states no
	// usage (no <permits type="usage"> nor <prohibits type="usage">: an
	// empty <license/>, or one with only payment, legal, user or geo
	// terms): "refuse" (it grants nothing: a use not permitted is not
	// licensed) or "grant" (every usage it does not prohibit, on its other
	// terms). Default "refuse".
	RSLUnstatedUsage RSLUnstated `yaml:"rsl_unstated_usage"`
	// CacheBytes bounds the memory the tdmrep.json cache keeps, as the
	// parsed files measure it (its entries are bounded by
	// robots.cache_entries). Must be >= 1MiB. Default 64MiB.
	CacheBytes ByteSize `yaml:"cache_bytes"`
	// LicenseFetchesPerResponse caps the RSL licence documents that one
	// response (or one robots.txt, for its License lines) may make
	// robotsgate fetch: documents already cached do not count; a licence
	// beyond the cap is unknown (on_unknown) for this request and fetched
	// for a later one. A site naming many licence URLs on another site
	// cannot turn robotsgate into a reflector. Must be >= 1. Default 4.
	LicenseFetchesPerResponse int `yaml:"license_fetches_per_response"`
	// LicenseFetchesPerOrigin caps the RSL licence documents robotsgate
	// fetches from one origin in any minute, whoever names them; beyond
	// it a licence is unknown (on_unknown). Every licence fetch also obeys
	// the licence origin's robots.txt, Crawl-delay and pauses, as
	// robotsgate's own agent (robots.fetch_user_agent). Must be 1..100.
	// Default 10.
	LicenseFetchesPerOrigin int `yaml:"license_fetches_per_origin"`
}

// Trap configures the crawler-trap guard (docs/configuration.md): limits that stop a
// crawler looping through endless generated URLs. Requests over a limit are
// refused (403 trap-denied; 429 for the page budget).
type Trap struct {
	// Enabled turns the guard on. Default false.
	Enabled bool `yaml:"enabled"`
	// MaxURLLength is the longest request-target (path and query), in
	// bytes. 0 = no limit. Default 2048.
	MaxURLLength int `yaml:"max_url_length"`
	// MaxRepeatedSegments is how many times in a row the same path segment,
	// or run of segments, may repeat (/a/b/a/b/a/b repeats a/b three
	// times). 0 = no limit. Default 3.
	MaxRepeatedSegments int `yaml:"max_repeated_segments"`
	// PageBudget is the number of requests allowed to one origin per
	// BudgetWindow. 0 = no budget. Default 0.
	PageBudget int `yaml:"page_budget"`
	// BudgetWindow is the window of PageBudget. Must be > 0 when PageBudget
	// is set. Default 1h.
	BudgetWindow Duration `yaml:"budget_window"`
}

// Identify adds identification to forwarded requests, after the decision is
// made (the decision uses the client's own User-Agent), for crawlers that
// must say who runs them.
type Identify struct {
	// From is the value of a From header added to forwarded requests and
	// to robotsgate's own fetches: a mail address, e.g.
	// "crawler-admin@example.org". Default "" (none; own fetches then carry
	// bot_auth.contact's mailto: address, if any).
	From string `yaml:"from"`
	// UserAgentSuffix is appended, after a space, to the User-Agent of
	// forwarded requests, e.g. "(+https://example.org/bot)". Default "".
	UserAgentSuffix string `yaml:"user_agent_suffix"`
}

// BotAuth signs the requests robotsgate sends upstream for Web Bot Auth
// (RFC 9421 HTTP Message Signatures as draft-ietf-webbotauth-httpsig-
// protocol-00 profiles them; docs/webbotauth.md): every request of every
// client (unless the client signed it itself, or has its own key:
// clients[].signature_agent), and the robots.txt and tdmrep.json fetches.
// A reload applies all of it (a key file that is missing is then
// created, one that cannot be read rejects the reload).
type BotAuth struct {
	// SignatureAgent is where the gateway key's public half is published,
	// as operators publish it: an https origin ("https://crawler.example",
	// whose key directory is at /.well-known/http-message-signatures-
	// directory; robotsgate bot-auth writes it, the admin listener serves
	// it), that well-known URL, or the https URL of a key set served
	// elsewhere. Default "" (no gateway signing).
	SignatureAgent string `yaml:"signature_agent"`
	// SignatureAgentForm is how Signature-Agent names it: "typed" (the
	// origin, or the URL with ;type=jwks_uri: draft-ietf-webbotauth-
	// httpsig-protocol-00), "url" (the key set's URL: the working group's
	// editor's copy of 9 October 2026) or "string" (the pre-working-group
	// bare String that Cloudflare's documentation and web-bot-auth 0.1.3
	// verify). Default "typed".
	SignatureAgentForm string `yaml:"signature_agent_form"`
	// Key is the file of the gateway's Ed25519 signing key (PKCS #8 PEM).
	// Created on first start when signature_agent is set. Default
	// state_dir/bot-auth-key.pem.
	Key string `yaml:"key"`
	// ProductToken is the robots.txt product token the signature agent
	// card states (rfc9309-product-token), e.g. "ResearchBot". Default ""
	// (none: robotsgate judges each client by its own User-Agent).
	ProductToken string `yaml:"product_token"`
	// Purpose is what the card says the fetched data is used for (purpose,
	// an aipref vocabulary label such as "search" or "train-ai"). Default
	// "" (none stated).
	Purpose string `yaml:"purpose"`
	// Contact is a URI to reach the operator, e.g.
	// "mailto:crawler-admin@example.org", stated in the signature agent
	// card; a mailto: address is also the From of robotsgate's own fetches
	// when identify.from is not set. Default "" (none).
	Contact string `yaml:"contact"`
}

// Timeouts bounds how long a client may keep a connection busy without
// sending: the proxy port and the inside of intercepted tunnels alike.
// They need a restart to change.
type Timeouts struct {
	// ClientHeader is the longest a client may take to send a request head,
	// from its first byte (slow heads: slowloris). Must be > 0. Default 30s.
	ClientHeader Duration `yaml:"client_header"`
	// ClientIdle is how long a kept-alive client connection may wait for its
	// next request. Must be > 0. Default 90s.
	ClientIdle Duration `yaml:"client_idle"`
	// ClientBody is the longest silence while a request body is read: a
	// client that stops sending its body for this long loses the request
	// (408) and the connection. Idle time, not total: a long upload that
	// keeps sending is never cut off. Must be > 0. Default 60s.
	ClientBody Duration `yaml:"client_body"`
}

// Transparent configures the transparent listeners (Linux): they receive
// the connections that firewall rules (iptables or nftables REDIRECT)
// send to robotsgate instead of their destination, so that clients with
// no proxy setting are judged too (docs/operations.md, Transparent
// interception). Every key needs a restart to change.
type Transparent struct {
	// HTTPListen is the address (host:port) of the listener for redirected
	// plain HTTP (port 80): each request is judged as http://Host, and its
	// Host must resolve to the address the client connected to. "" disables
	// it. Default "".
	HTTPListen string `yaml:"http_listen"`
	// TLSListen is the address of the listener for redirected TLS (port
	// 443): intercepted with a certificate minted for the SNI, or passed
	// blind for mitm.skip_hosts; the SNI must resolve to the address the
	// client connected to. "" disables it. Default "".
	TLSListen string `yaml:"tls_listen"`
	// Mark is the socket mark (SO_MARK, 1..4294967295; 0x2a in hex is
	// fine) set on every
	// upstream connection robotsgate makes, so that the firewall rule can
	// leave them alone (on the same host, they would otherwise be
	// redirected back to robotsgate). Setting it needs CAP_NET_ADMIN. 0
	// sets none (exclude robotsgate's connections by its user instead).
	// Default 0.
	Mark int `yaml:"mark"`
}

// SOCKS configures the SOCKS5 listener (RFC 1928; CONNECT only).
type SOCKS struct {
	// Listen is its address (host:port); "" disables it. Clients entries
	// with a user authenticate with username/password (RFC 1929), as with
	// Proxy-Authorization on the proxy port. Needs a restart to change.
	// Default "".
	Listen string `yaml:"listen"`
}

// Connections caps the connections each listener (the proxy port, the
// SOCKS5 and transparent listeners, the admin listener) holds open at
// once, so that one client cannot take every descriptor of the process
// (docs/operations.md, Descriptor budget). A connection beyond a cap is
// closed as soon as it is accepted, and counted. They need a restart to
// change.
type Connections struct {
	// MaxPerListener caps the connections open at once on each listener;
	// 0 sets no cap. At start it is lowered, with a warning, to what the
	// process's descriptor limit (RLIMIT_NOFILE) holds for every listener,
	// two descriptors per connection and 128 kept for the rest. Default
	// 4096.
	MaxPerListener int `yaml:"max_per_listener"`
	// MaxPerClient caps the connections open at once on each listener
	// from one client address (an IPv6 client's /64); 0 sets no cap. When
	// max_per_listener is lowered to fit the descriptor limit, it is
	// lowered to at most a quarter of it. Default 256.
	MaxPerClient int `yaml:"max_per_client"`
}

// Log configures logging.
type Log struct {
	// Level is the least severity logged: "debug", "info", "warn" or
	// "error". Default "info".
	Level LogLevel `yaml:"level"`
	// Audit is where the audit log (one JSON line per decision) goes: a file
	// path (appended to, reopened on SIGHUP), "-" for stdout, or "" for none.
	// Default "".
	Audit string `yaml:"audit"`
	// AuditOnError decides what happens to requests while the audit log
	// cannot be written (a full disk): "continue" serves them (each failed
	// record is logged and counted, /readyz says not ready), "refuse"
	// refuses them with 503 audit-unavailable, for deployments where no
	// request may go unrecorded. Default "continue".
	AuditOnError AuditOnError `yaml:"audit_on_error"`
	// AuditFsync makes the audit log's writer fsync the file after each
	// batch of records it writes, so that a record written survives a
	// crash of the machine (a process's crash loses only what was not yet
	// written, docs/operations.md). Default false: the page cache is
	// written back by the kernel, a disk flush per batch costs more than
	// the rest of the log. Restart-only.
	AuditFsync bool `yaml:"audit_fsync"`
	// EvidenceKey is the Ed25519 key that signs the audit log's
	// checkpoints (PKCS #8 PEM, created with mode 0600 if missing; not the
	// CA's key): `robotsgate evidence-key` prints its public half for a
	// reviewer to pin. Default state_dir/evidence-key.pem. Restart-only.
	EvidenceKey string `yaml:"evidence_key"`
	// CheckpointEvery and CheckpointRecords are how often a signed
	// checkpoint of the audit log's hash chain is written: after this much
	// time with records written since the last one, or this many records,
	// whichever comes first. Defaults 1m and 10000.
	CheckpointEvery   Duration `yaml:"checkpoint_every"`
	CheckpointRecords int      `yaml:"checkpoint_records"`
	// Witness sends the head of every checkpoint to a witness that the
	// operator of robotsgate does not control alone, so that whoever holds
	// the evidence key cannot rewrite the log's history unnoticed
	// (docs/operations.md). Restart-only.
	Witness Witness `yaml:"witness"`
}

// Witness is log.witness: where checkpoints are witnessed.
type Witness struct {
	// URL is the witness's https:// base URL (`robotsgate witness`
	// serves one). "" sends checkpoints nowhere. Default "".
	URL string `yaml:"url"`
	// Key is the witness's public key (base64 Ed25519, as it prints it):
	// receipts it does not verify are not kept. Required with URL.
	Key string `yaml:"key"`
	// CA is a PEM file of roots for the witness's certificate, beside the
	// system's. Default "".
	CA string `yaml:"ca"`
}

// KeyPermissions is what happens to a private key that others may read.
type KeyPermissions string

// The key_permissions values.
const (
	KeyPermissionsWarn   KeyPermissions = "warn"
	KeyPermissionsRefuse KeyPermissions = "refuse"
)

// AuditOnError is what happens to requests while the audit log cannot be
// written.
type AuditOnError string

// Audit failure policies.
const (
	AuditContinue AuditOnError = "continue"
	AuditRefuse   AuditOnError = "refuse"
)

// ClientsDefault is the policy for clients no clients entry matches.
type ClientsDefault string

// The clients_default values.
const (
	ClientsAllow ClientsDefault = "allow"
	ClientsDeny  ClientsDefault = "deny"
)

// Mode is a client's mode.
type Mode string

// The client modes.
const (
	ModeEnforce Mode = "enforce"
	ModeMonitor Mode = "monitor"
	ModeBypass  Mode = "bypass"
)

// RobotsPolicy is a site's robots setting.
type RobotsPolicy string

// The site robots settings.
const (
	RobotsObey   RobotsPolicy = "obey"
	RobotsIgnore RobotsPolicy = "ignore"
)

// BackoffPolicy says whether a site's or a client's requests wait while an
// origin pauses.
type BackoffPolicy string

// The backoff policies.
const (
	BackoffObey   BackoffPolicy = "obey"
	BackoffIgnore BackoffPolicy = "ignore"
)

// Factor is a non-negative multiplier, written as an integer or a decimal
// (2, 1.5).
type Factor float64

// Store is the pacing store.
type Store string

// The pacing stores.
const (
	StoreMemory Store = "memory"
	StoreRedis  Store = "redis"
)

// StoreErrorPolicy says how paced requests are answered while the store fails.
type StoreErrorPolicy string

// The store error policies.
const (
	OnStoreErrorRefuse StoreErrorPolicy = "refuse"
	OnStoreErrorLocal  StoreErrorPolicy = "local"
)

// PacingKey says what shares one pacing schedule.
type PacingKey string

// The pacing keys.
const (
	KeyOriginGroup PacingKey = "origin+group"
	KeyOrigin      PacingKey = "origin"
)

// UsageOnUnknown says what happens while a site's TDM reservations
// cannot be known.
type UsageOnUnknown string

// The usage.on_unknown values.
const (
	UsageUnknownRefuse UsageOnUnknown = "refuse"
	UsageUnknownAllow  UsageOnUnknown = "allow"
)

// RSLUnstated is usage.rsl_unstated_usage.
type RSLUnstated string

// The usage.rsl_unstated_usage values.
const (
	RSLUnstatedRefuse RSLUnstated = "refuse"
	RSLUnstatedGrant  RSLUnstated = "grant"
)

// OverMaxDelay says what happens when robots.txt asks for more than
// pacing.max_delay.
type OverMaxDelay string

// The over-max-delay policies.
const (
	OverMaxDelayClamp  OverMaxDelay = "clamp"
	OverMaxDelayRefuse OverMaxDelay = "refuse"
)

// LogLevel is a log severity name.
type LogLevel string

// The log levels.
const (
	LevelDebug LogLevel = "debug"
	LevelInfo  LogLevel = "info"
	LevelWarn  LogLevel = "warn"
	LevelError LogLevel = "error"
)

// SlogLevel returns the level as a log/slog level (info for unknown names).
func (l LogLevel) SlogLevel() slog.Level {
	switch l {
	case LevelDebug:
		return slog.LevelDebug
	case LevelWarn:
		return slog.LevelWarn
	case LevelError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Duration is a time.Duration written in YAML as a Go duration string
// ("1.5s", "10m", "24h"; "0" is zero).
type Duration time.Duration

// MemoryLimit is a soft memory limit: MemoryLimitAuto, MemoryLimitOff or
// a number of bytes, written "auto", "off" or as a ByteSize.
type MemoryLimit int64

// The memory limits that are not sizes.
const (
	MemoryLimitAuto MemoryLimit = 0
	MemoryLimitOff  MemoryLimit = -1
)

// MinMemoryLimit is the least memory_limit: below it the collector would
// run all the time for the process' own needs.
const MinMemoryLimit = 32 << 20

// String is "auto", "off" or the size ("1GiB").
func (m MemoryLimit) String() string {
	switch {
	case m == MemoryLimitAuto:
		return "auto"
	case m < 0:
		return "off"
	}
	return ByteSize(m).String()
}

// ByteSize is a number of bytes, written as an integer or with a binary
// unit: 512KiB, 256MiB, 1GiB (KB, MB, GB are taken as the same units).
type ByteSize int64

// String formats s with the largest unit that divides it ("256MiB").
func (s ByteSize) String() string {
	for _, u := range byteUnits {
		if s >= ByteSize(u.n) && int64(s)%u.n == 0 {
			return strconv.FormatInt(int64(s)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

var byteUnits = []struct {
	name string
	n    int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// Duration returns d as a time.Duration.
func (d Duration) Duration() time.Duration { return time.Duration(d) }

// String formats d as time.Duration does ("1m0s").
func (d Duration) String() string { return time.Duration(d).String() }
