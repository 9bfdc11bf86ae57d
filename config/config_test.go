package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// A well-formed bcrypt hash (of "password", cost 10).
const hash = "$2b$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"

func TestDefaultValidates(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

// The sample config.yaml documents every key with its default value: it must
// parse, and mean exactly Default().
func TestSampleConfigIsDefault(t *testing.T) {
	c, err := Load("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := Default(); !reflect.DeepEqual(c, want) {
		t.Errorf("config.yaml parses to\n%+v\nwant Default()\n%+v", c, want)
	}
}

// Every key of Config appears in config.yaml, so the sample stays complete.
func TestSampleConfigHasEveryKey(t *testing.T) {
	data, err := os.ReadFile("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		if n.Kind == yaml.DocumentNode {
			walk(n.Content[0], path)
			return
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := join(path, n.Content[i].Value)
			present[key] = true
			walk(n.Content[i+1], key)
		}
	}
	walk(&root, "")
	// Every key of every section must be there; list items (clients,
	// sites) are documented in comments, their keys need not appear.
	var check func(typ reflect.Type, path string)
	check = func(typ reflect.Type, path string) {
		for name, i := range structFields(typ) {
			key := join(path, name)
			if !present[key] {
				t.Errorf("config.yaml lacks key %s", key)
				continue
			}
			if ft := typ.Field(i).Type; ft.Kind() == reflect.Struct {
				check(ft, key)
			}
		}
	}
	check(reflect.TypeFor[Config](), "")
}

// Marshalling a Config and parsing it back gives the same Config: every field
// has a YAML name and Duration round-trips.
func TestMarshalRoundTrip(t *testing.T) {
	c := Default()
	c.Clients = []Client{{CIDR: "10.0.0.0/8", User: "alice", PasswordBcrypt: hash, Mode: ModeMonitor, Agent: "ResearchBot", Purposes: []string{"train-ai"}}}
	c.Sites = []Site{{Hosts: []string{"*.example.com"}, Robots: RobotsIgnore, Delay: Duration(1500 * time.Millisecond)}}
	data, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data, "marshalled")
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip gives\n%+v\nwant\n%+v", got, c)
	}
}

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want func(c *Config) // changes from Default()
	}{
		{name: "empty", yaml: ""},
		{name: "comments only", yaml: "# nothing here\n\n# at all\n"},
		{name: "explicit null document", yaml: "---\n~\n"},
		{name: "empty section keeps defaults", yaml: "robots:\npacing:\n  redis:\n"},
		{name: "empty string", yaml: "admin_listen:\n", want: func(c *Config) { c.AdminListen = "" }},
		{name: "empty list is nil", yaml: "egress:\n  tunnel_ports: []\n", want: func(c *Config) { c.Egress.TunnelPorts = nil }},
		{name: "null list is nil", yaml: "egress:\n  tunnel_ports:\n", want: func(c *Config) { c.Egress.TunnelPorts = nil }},
		{name: "list replaces default", yaml: "egress:\n  tunnel_ports: [443, 8443]\n", want: func(c *Config) { c.Egress.TunnelPorts = []int{443, 8443} }},
		{name: "durations", yaml: "pacing:\n  max_wait: 1.5s\n  default_delay: 0\n  max_delay: 1h30m\n", want: func(c *Config) {
			c.Pacing.MaxWait = Duration(1500 * time.Millisecond)
			c.Pacing.MaxDelay = Duration(90 * time.Minute)
		}},
		{name: "usage", yaml: "usage:\n  on_unknown: allow\n", want: func(c *Config) { c.Usage.OnUnknown = UsageUnknownAllow }},
		{name: "hex int", yaml: "robots:\n  cache_entries: 0x10\n", want: func(c *Config) { c.Robots.CacheEntries = 16 }},
		{name: "quoted and unquoted strings", yaml: "listen: \"[::1]:8080\"\nlog: {audit: '-'}\n", want: func(c *Config) {
			c.Listen = "[::1]:8080"
			c.Log.Audit = "-"
		}},
		{name: "redis", yaml: "pacing:\n  store: redis\n  redis: {addr: redis.internal:6380}\n  on_store_error: local\n", want: func(c *Config) {
			c.Pacing.Store = StoreRedis
			c.Pacing.Redis.Addr = "redis.internal:6380"
			c.Pacing.OnStoreError = OnStoreErrorLocal
		}},
		{name: "redis with an ACL user over TLS", yaml: "pacing:\n  store: redis\n  redis:\n    addr: redis.internal:6380\n" +
			"    username: robotsgate\n    password_file: /etc/robotsgate/redis-password\n    db: 3\n    key_prefix: \"fleet-a:\"\n" +
			"    tls: {enabled: true, ca_file: /etc/robotsgate/redis-ca.pem}\n", want: func(c *Config) {
			c.Pacing.Store = StoreRedis
			c.Pacing.Redis = Redis{Addr: "redis.internal:6380", Username: "robotsgate", PasswordFile: "/etc/robotsgate/redis-password",
				DB: 3, KeyPrefix: "fleet-a:", ReplicaAcks: 1, TLS: RedisTLS{Enabled: true, CAFile: "/etc/robotsgate/redis-ca.pem"}}
		}},
		{name: "memory limit off", yaml: "memory_limit: off\n", want: func(c *Config) { c.MemoryLimit = MemoryLimitOff }},
		{name: "memory limit size", yaml: "memory_limit: 1GiB\n", want: func(c *Config) { c.MemoryLimit = 1 << 30 }},
		{name: "memory limit auto", yaml: "memory_limit: auto\n", want: func(c *Config) {}},
		{name: "redis through sentinels", yaml: "pacing:\n  store: redis\n  redis:\n    sentinel:\n      master_name: robotsgate\n" +
			"      addrs: [10.0.0.1:26379, 10.0.0.2:26379, 10.0.0.3:26379]\n      username: watcher\n      password_file: /etc/robotsgate/sentinel-password\n" +
			"    replica_acks: 2\n", want: func(c *Config) {
			c.Pacing.Store = StoreRedis
			c.Pacing.Redis.Sentinel = RedisSentinel{MasterName: "robotsgate", Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"},
				Username: "watcher", PasswordFile: "/etc/robotsgate/sentinel-password"}
			c.Pacing.Redis.ReplicaAcks = 2
		}},
		{name: "redis cluster", yaml: "pacing:\n  store: redis\n  redis:\n    cluster: {addrs: [\"10.0.0.1:7000\", \"[fd00::2]:7000\"]}\n    replica_acks: 0\n", want: func(c *Config) {
			c.Pacing.Store = StoreRedis
			c.Pacing.Redis.Cluster.Addrs = []string{"10.0.0.1:7000", "[fd00::2]:7000"}
			c.Pacing.Redis.ReplicaAcks = 0
		}},
		{name: "redis with requirepass", yaml: "pacing:\n  redis: {password_file: pw.txt}\n", want: func(c *Config) {
			c.Pacing.Redis.PasswordFile = "pw.txt"
		}},
		{name: "list items start from their defaults", yaml: "clients:\n  - cidr: 10.0.0.0/8\n  - user: alice\n    password_bcrypt: \"" + hash + "\"\n    mode: monitor\n    agent: Research_Bot\n    purposes: [train-ai, search]\nsites:\n  - hosts: [\"*.example.com\", example.com]\n    delay: 2s\n", want: func(c *Config) {
			c.Clients = []Client{
				{CIDR: "10.0.0.0/8", Mode: ModeEnforce},
				{User: "alice", PasswordBcrypt: hash, Mode: ModeMonitor, Agent: "Research_Bot", Purposes: []string{"train-ai", "search"}},
			}
			c.Sites = []Site{{Hosts: []string{"*.example.com", "example.com"}, Robots: RobotsObey, Delay: Duration(2 * time.Second)}}
		}},
		{name: "user checked against htpasswd", yaml: "auth: {htpasswd: /etc/robotsgate/htpasswd}\nclients: [{user: bob}]\n", want: func(c *Config) {
			c.Auth.Htpasswd = "/etc/robotsgate/htpasswd"
			c.Clients = []Client{{User: "bob", Mode: ModeEnforce}}
		}},
		{name: "anchors and aliases", yaml: "egress:\n  deny_hosts: &bad [evil.example]\nmitm:\n  skip_hosts: *bad\n", want: func(c *Config) {
			c.Egress.DenyHosts = []string{"evil.example"}
			c.MITM.SkipHosts = []string{"evil.example"}
		}},
		{name: "deny hosts files", yaml: "egress:\n  deny_hosts_files: [/etc/robotsgate/infringing.txt, lists/own.txt]\n", want: func(c *Config) {
			c.Egress.DenyHostsFiles = []string{"/etc/robotsgate/infringing.txt", "lists/own.txt"}
		}},
		{name: "mitm off needs no CA", yaml: "mitm: {enabled: false, ca_cert: \"\", ca_key: \"\"}\n", want: func(c *Config) {
			c.MITM = MITM{}
		}},
		{name: "clients_default deny", yaml: "clients_default: deny\n", want: func(c *Config) {
			c.ClientsDefault = ClientsDeny
		}},
		{name: "identify", yaml: "identify:\n  from: Crawler Admin <crawler@example.org>\n  user_agent_suffix: (+https://example.org/bot)\n", want: func(c *Config) {
			c.Identify = Identify{From: "Crawler Admin <crawler@example.org>", UserAgentSuffix: "(+https://example.org/bot)"}
		}},
		{name: "upstream proxy", yaml: "upstream:\n  proxy: http://alice:s3cret@proxy.corp:3128\n  no_proxy: [\"*.corp.example\", 10.1.2.3]\n", want: func(c *Config) {
			c.Upstream = Upstream{Proxy: "http://alice:s3cret@proxy.corp:3128", NoProxy: []string{"*.corp.example", "10.1.2.3"}}
		}},
		{name: "https upstream proxy", yaml: "upstream: {proxy: \"https://[fd00::1]:3129/\"}\n", want: func(c *Config) {
			c.Upstream.Proxy = "https://[fd00::1]:3129/"
		}},
		{name: "trap", yaml: "trap: {enabled: true, page_budget: 1000, budget_window: 10m}\n", want: func(c *Config) {
			c.Trap.Enabled = true
			c.Trap.PageBudget = 1000
			c.Trap.BudgetWindow = Duration(10 * time.Minute)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.yaml), "cfg.yaml")
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			if tc.want != nil {
				tc.want(&want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want string // exact substring of the error
	}{
		// Unknown keys.
		{"unknown top-level key", "listen: 127.0.0.1:8080\nlisen: x\n",
			"cfg.yaml:2: lisen: unknown key (did you mean listen?)"},
		{"unknown key, wrong case", "Listen: 127.0.0.1:8080\n",
			"cfg.yaml:1: Listen: unknown key (did you mean listen?)"},
		{"unknown nested key", "robots:\n  fetch_timeout: 5s\n  fetch_timeot: 5s\n",
			"cfg.yaml:3: robots.fetch_timeot: unknown key (did you mean fetch_timeout?)"},
		{"unknown key, no near miss", "pacing:\n  xyzzy: 1\n",
			"cfg.yaml:2: pacing.xyzzy: unknown key (valid keys here: max_wait, default_delay, max_delay, over_max_delay, key, max_concurrency, store, redis, on_store_error, backoff, adaptive)"},
		{"unknown key in a list item", "clients:\n  - cidr: 10.0.0.0/8\n  - cidr: 10.1.0.0/16\n    mod: monitor\n",
			"cfg.yaml:4: clients[1].mod: unknown key (did you mean mode?)"},
		{"unknown key deeper", "pacing:\n  redis:\n    address: x:1\n",
			"cfg.yaml:3: pacing.redis.address: unknown key (did you mean addr?)"},
		{"duplicate key", "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n",
			"cfg.yaml:2: listen: set twice (first at line 1)"},
		{"merge key", "base: &b {level: info}\nlog:\n  <<: *b\n",
			"cfg.yaml:3: log: YAML merge keys (<<) are not supported"},

		// The politeness governor.
		{"backoff status not 429 or 5xx", "pacing:\n  backoff:\n    statuses: [429, 404]\n",
			"cfg.yaml:3: pacing.backoff.statuses[1]: 404 is not 429 or a 5xx status"},
		{"backoff factor below 1", "pacing:\n  backoff:\n    factor: 0.5\n",
			"cfg.yaml:3: pacing.backoff.factor: must be >= 1 (1: every pause as long as the first), got 0.5"},
		{"backoff factor not a number", "pacing:\n  backoff:\n    factor: twice\n",
			`cfg.yaml:3: pacing.backoff.factor: expected a number >= 0 such as 2 or 1.5, got "twice"`},
		{"backoff max below initial", "pacing:\n  backoff:\n    initial: 10s\n    max: 5s\n",
			"cfg.yaml:4: pacing.backoff.max: 5s is shorter than pacing.backoff.initial (10s)"},
		{"retry-after bound below max", "pacing:\n  backoff:\n    retry_after_max: 30m\n",
			"cfg.yaml:3: pacing.backoff.retry_after_max: 30m0s is shorter than pacing.backoff.max (1h0m0s)"},
		{"failure status not 5xx", "pacing:\n  backoff:\n    failures:\n      statuses: [500, 404]\n",
			"cfg.yaml:4: pacing.backoff.failures.statuses[1]: 404 is not a 5xx status"},
		{"failure status also pauses at once", "pacing:\n  backoff:\n    failures:\n      statuses: [503]\n",
			"cfg.yaml:4: pacing.backoff.failures.statuses[0]: 503 is also in pacing.backoff.statuses"},
		{"negative failures in a row", "pacing:\n  backoff:\n    failures:\n      in_a_row: -1\n",
			"cfg.yaml:4: pacing.backoff.failures.in_a_row: must be >= 0 (0 counts none), got -1"},
		{"backoff initial zero", "pacing:\n  backoff:\n    initial: 0s\n",
			"cfg.yaml:3: pacing.backoff.initial: must be > 0, got 0s"},
		{"adaptive max below min", "pacing:\n  adaptive:\n    factor: 5\n    min: 2s\n    max: 1s\n",
			"cfg.yaml:5: pacing.adaptive.max: 1s is shorter than pacing.adaptive.min (2s)"},
		{"negative adaptive factor", "pacing:\n  adaptive:\n    factor: -1\n",
			`cfg.yaml:3: pacing.adaptive.factor: expected a number >= 0 such as 2 or 1.5, got "-1"`},
		{"site backoff policy", "sites:\n  - hosts: [a.example]\n    backoff: never\n",
			`cfg.yaml:3: sites[0].backoff: invalid value "never" (want obey or ignore)`},
		{"client backoff policy", "clients:\n  - cidr: 10.0.0.0/8\n    backoff: off\n",
			`cfg.yaml:3: clients[0].backoff: invalid value "off" (want obey or ignore)`},

		// Wrong types.
		{"string for int", "robots:\n  cache_entries: lots\n",
			`cfg.yaml:2: robots.cache_entries: expected an integer, got "lots"`},
		{"float for int", "trap:\n  max_url_length: 1.5\n",
			`cfg.yaml:2: trap.max_url_length: expected an integer, got "1.5"`},
		{"empty int", "robots:\n  cache_entries:\n",
			"cfg.yaml:2: robots.cache_entries: expected an integer, got nothing"},
		{"int overflow", "robots:\n  cache_entries: 99999999999999999999\n",
			"cfg.yaml:2: robots.cache_entries: "},
		{"list for map", "listen: 127.0.0.1:8080\npacing: [1, 2]\n",
			"cfg.yaml:2: pacing: expected a mapping (key: value lines), got a list"},
		{"block list for map", "pacing:\n  - max_wait: 1s\n",
			"cfg.yaml:2: pacing: expected a mapping (key: value lines), got a list"},
		{"map for list", "egress:\n  tunnel_ports:\n    https: 443\n",
			"cfg.yaml:3: egress.tunnel_ports: expected a list, got a mapping"},
		{"scalar for list", "egress:\n  tunnel_ports: 443\n",
			`cfg.yaml:2: egress.tunnel_ports: expected a list, got "443"`},
		{"yaml 1.1 bool", "robots:\n  strict_paths: yes\n",
			`cfg.yaml:2: robots.strict_paths: expected true or false, got "yes"`},
		{"list for string", "listen: [a, b]\n",
			"cfg.yaml:1: listen: expected a string, got a list"},
		{"scalar for list item mapping", "clients:\n  - 10.0.0.0/8\n",
			`cfg.yaml:2: clients[0]: expected a mapping (key: value lines), got "10.0.0.0/8"`},
		{"top level not a mapping", "- listen\n",
			"cfg.yaml:1: expected a mapping (key: value lines), got a list"},

		// Durations.
		{"invalid duration", "\n# pacing\npacing:\n  max_wait: abc\n",
			`cfg.yaml:4: pacing.max_wait: invalid duration "abc"`},
		{"duration without unit", "pacing:\n  max_wait: 10\n",
			`cfg.yaml:2: pacing.max_wait: invalid duration "10"`},
		{"empty duration", "pacing:\n  max_wait:\n",
			"cfg.yaml:2: pacing.max_wait: expected a duration such as 1.5s or 10m, got nothing"},
		{"duration in a list item", "sites:\n  - hosts: [a.example]\n    delay: soon\n",
			`cfg.yaml:3: sites[0].delay: invalid duration "soon"`},
		{"negative duration", "pacing:\n  max_wait: -1s\n",
			"cfg.yaml:2: pacing.max_wait: must not be negative, got -1s"},
		{"zero fetch timeout", "robots:\n  fetch_timeout: 0s\n",
			"cfg.yaml:2: robots.fetch_timeout: must be > 0, got 0s"},
		{"min_ttl > max_ttl", "robots:\n  min_ttl: 2h\n  max_ttl: 1h\n",
			"cfg.yaml:2: robots.min_ttl: 2h0m0s is longer than robots.max_ttl (1h0m0s)"},
		{"max_ttl < default min_ttl", "robots:\n  max_ttl: 30s\n",
			"cfg.yaml:2: robots.max_ttl: 30s is shorter than robots.min_ttl (1m0s)"},
		{"retry_min > retry_max", "robots:\n  retry_min: 1h\n",
			"cfg.yaml:2: robots.retry_min: 1h0m0s is longer than robots.retry_max (10m0s)"},
		{"default_delay > max_delay", "pacing:\n  default_delay: 10s\n  max_delay: 5s\n",
			"cfg.yaml:2: pacing.default_delay: 10s is longer than pacing.max_delay (5s)"},

		// Enums.
		{"invalid mode", "clients:\n  - cidr: 10.0.0.0/8\n  - user: bob\n    password_bcrypt: \"" + hash + "\"\n    mode: enforced\n",
			`cfg.yaml:5: clients[1].mode: invalid value "enforced" (want enforce, monitor or bypass)`},
		{"invalid store", "pacing:\n  store: memcached\n",
			`cfg.yaml:2: pacing.store: invalid value "memcached" (want memory or redis)`},
		{"invalid on_store_error", "pacing: {on_store_error: retry}\n",
			`cfg.yaml:1: pacing.on_store_error: invalid value "retry" (want refuse or local)`},
		{"invalid pacing key", "pacing:\n  key: group\n",
			`cfg.yaml:2: pacing.key: invalid value "group" (want origin+group or origin)`},
		{"invalid over_max_delay", "pacing:\n  over_max_delay: wait\n",
			`cfg.yaml:2: pacing.over_max_delay: invalid value "wait" (want clamp or refuse)`},
		{"invalid usage.on_unknown", "usage:\n  on_unknown: ignore\n",
			`cfg.yaml:2: usage.on_unknown: invalid value "ignore" (want refuse or allow)`},
		{"invalid site robots", "sites:\n  - hosts: [a.example]\n    robots: disobey\n",
			`cfg.yaml:3: sites[0].robots: invalid value "disobey" (want obey or ignore)`},
		{"invalid log level", "log:\n  level: verbose\n",
			`cfg.yaml:2: log.level: invalid value "verbose" (want debug, info, warn or error)`},

		// Addresses, networks, ports, globs.
		{"invalid listen", "listen: localhost\n",
			`cfg.yaml:1: listen: invalid address "localhost"`},
		{"invalid listen port", "listen: 127.0.0.1:http\n",
			`cfg.yaml:1: listen: invalid port "http" in "127.0.0.1:http"`},
		{"admin on the proxy port", "admin_listen: 127.0.0.1:8080\n",
			"cfg.yaml:1: admin_listen: same address as listen"},
		{"invalid SOCKS5 listen", "socks:\n  listen: localhost\n",
			`cfg.yaml:2: socks.listen: invalid address "localhost"`},
		{"SOCKS5 on the proxy port", "socks:\n  listen: 127.0.0.1:8080\n",
			"cfg.yaml:2: socks.listen: same address as listen"},
		{"transparent listeners on one port", "transparent:\n  http_listen: 127.0.0.1:8081\n  tls_listen: 127.0.0.1:8081\n",
			"cfg.yaml:3: transparent.tls_listen: same address as transparent.http_listen"},
		{"socket mark out of range", "transparent:\n  mark: 4294967296\n",
			"cfg.yaml:2: transparent.mark: must be 0..4294967295, got 4294967296"},
		{"invalid CIDR", "egress:\n  allow_networks:\n    - 10.0.0.0/8\n    - 10.0.0.0/33\n",
			`cfg.yaml:4: egress.allow_networks[1]: invalid CIDR "10.0.0.0/33"`},
		{"invalid client CIDR", "clients:\n  - cidr: 10.0.0/8\n",
			`cfg.yaml:2: clients[0].cidr: invalid CIDR "10.0.0/8"`},
		{"port out of range", "egress:\n  tunnel_ports: [443, 70000]\n",
			"cfg.yaml:2: egress.tunnel_ports[1]: invalid port 70000 (want 1..65535)"},
		{"port zero", "egress:\n  allow_ports:\n    - 0\n",
			"cfg.yaml:3: egress.allow_ports[0]: invalid port 0 (want 1..65535)"},
		{"redis store without addr", "pacing:\n  store: redis\n  redis:\n    addr: \"\"\n",
			"cfg.yaml:4: pacing.redis.addr: required when pacing.store is redis"},
		{"invalid redis addr", "pacing:\n  redis: {addr: redis}\n",
			`cfg.yaml:2: pacing.redis.addr: invalid address "redis"`},
		{"redis user name with a space", "pacing:\n  redis:\n    username: robots gate\n    password_file: pw\n",
			`cfg.yaml:3: pacing.redis.username: invalid user name "robots gate" (no spaces or control characters)`},
		{"redis user without password", "pacing:\n  redis:\n    username: robotsgate\n",
			`cfg.yaml:2: pacing.redis.password_file: required with pacing.redis.username`},
		{"negative redis db", "pacing:\n  redis:\n    db: -1\n",
			`cfg.yaml:3: pacing.redis.db: must be >= 0, got -1`},
		{"empty redis key prefix", "pacing:\n  redis:\n    key_prefix: \"\"\n",
			`cfg.yaml:3: pacing.redis.key_prefix: invalid key prefix ""`},
		{"glob in redis key prefix", "pacing:\n  redis:\n    key_prefix: \"fleet*\"\n",
			`cfg.yaml:3: pacing.redis.key_prefix: invalid key prefix "fleet*"`},
		{"space in redis key prefix", "pacing:\n  redis:\n    key_prefix: \"fleet a:\"\n",
			`cfg.yaml:3: pacing.redis.key_prefix: invalid key prefix "fleet a:"`},
		{"memory limit below 32MiB", "listen: 127.0.0.1:8080\nmemory_limit: 16MiB\n",
			`cfg.yaml:2: memory_limit: at least 32MiB, got 16MiB (or auto, or off)`},
		{"memory limit zero", "memory_limit: 0\n",
			`cfg.yaml:1: memory_limit: invalid memory limit "0" (want auto, off, or a size: 512MiB, 1GiB)`},
		{"memory limit not a size", "memory_limit: plenty\n",
			`cfg.yaml:1: memory_limit: invalid memory limit "plenty"`},
		{"brace in redis key prefix", "pacing:\n  redis:\n    key_prefix: \"fleet{a}:\"\n",
			`cfg.yaml:3: pacing.redis.key_prefix: invalid key prefix "fleet{a}:"`},
		{"redis addr beside sentinels", "pacing:\n  redis:\n    addr: 10.0.0.9:6379\n    sentinel: {master_name: m, addrs: [\"10.0.0.1:26379\"]}\n",
			`cfg.yaml:3: pacing.redis.addr: not with pacing.redis.sentinel or pacing.redis.cluster`},
		{"redis sentinels and cluster", "pacing:\n  redis:\n    sentinel: {master_name: m, addrs: [\"10.0.0.1:26379\"]}\n    cluster:\n      addrs: [\"10.0.0.1:7000\"]\n",
			`cfg.yaml:4: pacing.redis.cluster: not with pacing.redis.sentinel`},
		{"redis sentinels without a master name", "pacing:\n  redis:\n    sentinel:\n      addrs: [\"10.0.0.1:26379\"]\n",
			`cfg.yaml:3: pacing.redis.sentinel.master_name: required with pacing.redis.sentinel.addrs`},
		{"redis master name without sentinels", "pacing:\n  redis:\n    sentinel:\n      master_name: robotsgate\n",
			`cfg.yaml:3: pacing.redis.sentinel.addrs: required with pacing.redis.sentinel.master_name`},
		{"redis master name with a space", "pacing:\n  redis:\n    sentinel:\n      master_name: my master\n      addrs: [\"10.0.0.1:26379\"]\n",
			`cfg.yaml:4: pacing.redis.sentinel.master_name: invalid master name "my master"`},
		{"invalid sentinel addr", "pacing:\n  redis:\n    sentinel:\n      master_name: m\n      addrs:\n        - 10.0.0.1:26379\n        - sentinel-b\n",
			`cfg.yaml:7: pacing.redis.sentinel.addrs[1]: invalid address "sentinel-b"`},
		{"sentinel addr twice", "pacing:\n  redis:\n    sentinel:\n      master_name: m\n      addrs: [\"a:26379\", \"a:26379\"]\n",
			`cfg.yaml:5: pacing.redis.sentinel.addrs[1]: a:26379 is listed twice (also pacing.redis.sentinel.addrs[0])`},
		{"sentinel user without password", "pacing:\n  redis:\n    sentinel:\n      master_name: m\n      addrs: [\"a:26379\"]\n      username: watcher\n",
			`cfg.yaml:3: pacing.redis.sentinel.password_file: required with pacing.redis.sentinel.username`},
		{"invalid cluster addr", "pacing:\n  redis:\n    cluster:\n      addrs: [\"10.0.0.1:7000\", \"10.0.0.2:0\"]\n",
			`cfg.yaml:4: pacing.redis.cluster.addrs[1]: invalid port "0" in "10.0.0.2:0"`},
		{"cluster with a database", "pacing:\n  redis:\n    db: 2\n    cluster:\n      addrs: [\"10.0.0.1:7000\"]\n",
			`cfg.yaml:3: pacing.redis.db: must be 0 with pacing.redis.cluster`},
		{"negative replica acks", "pacing:\n  redis:\n    cluster: {addrs: [\"10.0.0.1:7000\"]}\n    replica_acks: -1\n",
			`cfg.yaml:4: pacing.redis.replica_acks: must be 0 to 16, got -1`},
		{"redis CA without TLS", "pacing:\n  redis:\n    tls:\n      ca_file: ca.pem\n",
			`cfg.yaml:4: pacing.redis.tls.ca_file: needs pacing.redis.tls.enabled: true`},
		{"redis password in the file", "pacing:\n  redis:\n    password: s3cret\n",
			`cfg.yaml:3: pacing.redis.password: unknown key (did you mean password_file?)`},
		{"invalid glob", "sites:\n  - hosts: [\"[a-\"]\n",
			`cfg.yaml:2: sites[0].hosts[0]: invalid host glob "[a-": syntax error in pattern`},
		{"URL for a glob", "egress:\n  deny_hosts:\n    - https://evil.example/\n",
			`cfg.yaml:3: egress.deny_hosts[0]: invalid host glob "https://evil.example/" (want a host such as *.example.com, not a URL)`},
		{"empty deny list path", "egress:\n  deny_hosts_files:\n    - lists/a.txt\n    - \"\"\n",
			`cfg.yaml:4: egress.deny_hosts_files[1]: empty path (want a file of hosts, one per line)`},
		{"deny list twice", "egress:\n  deny_hosts_files: [a.txt, b.txt, a.txt]\n",
			`cfg.yaml:2: egress.deny_hosts_files[2]: "a.txt" is listed twice`},
		{"site without hosts", "sites:\n  - robots: ignore\n",
			"cfg.yaml:2: sites[0].hosts: required: at least one host glob"},
		{"mitm without CA", "mitm:\n  ca_key: \"\"\n",
			"cfg.yaml:2: mitm.ca_key: required when mitm.enabled is true"},

		{"proxy without port", "upstream:\n  proxy: http://proxy.corp\n",
			`cfg.yaml:2: upstream.proxy: invalid URL "http://proxy.corp": the port is required`},
		{"proxy scheme", "upstream:\n  proxy: socks5://proxy.corp:1080\n",
			`cfg.yaml:2: upstream.proxy: invalid URL "socks5://proxy.corp:1080": scheme must be http or https`},
		{"proxy without scheme", "upstream:\n  proxy: proxy.corp:3128\n",
			`upstream.proxy: invalid URL "proxy.corp:3128": scheme must be http or https`},
		{"proxy with path", "upstream:\n  proxy: http://proxy.corp:3128/pac\n",
			`cfg.yaml:2: upstream.proxy: invalid URL "http://proxy.corp:3128/pac": a proxy URL has no path`},
		{"proxy port out of range", "upstream:\n  proxy: http://proxy.corp:65536\n",
			`cfg.yaml:2: upstream.proxy: invalid URL "http://proxy.corp:65536": bad host:port`},
		{"proxy password redacted", "upstream:\n  proxy: ftp://alice:s3cret@proxy.corp:3128\n",
			`cfg.yaml:2: upstream.proxy: invalid URL "ftp://alice:xxxxx@proxy.corp:3128": scheme`},
		{"unparsable proxy password redacted", "upstream:\n  proxy: \"http://alice:s3%zz@proxy.corp:3128\"\n",
			`cfg.yaml:2: upstream.proxy: invalid URL "http://alice:xxxxx@proxy.corp:3128" (want`},
		{"bad no_proxy glob", "upstream:\n  no_proxy: [\"http://intranet/\"]\n",
			`cfg.yaml:2: upstream.no_proxy[0]: invalid host glob "http://intranet/"`},

		// Clients.
		{"clients_default typo", "clients_default: refuse\n",
			`cfg.yaml:1: clients_default: invalid value "refuse"`},
		{"client without cidr or user", "clients:\n  - mode: monitor\n",
			"cfg.yaml:2: clients[0]: a client entry needs cidr or user (or both)"},
		{"bad bcrypt", "clients:\n  - user: alice\n    password_bcrypt: secret\n",
			"cfg.yaml:3: clients[0].password_bcrypt: not a bcrypt hash"},
		{"bcrypt of wrong length", "clients:\n  - user: alice\n    password_bcrypt: \"" + hash[:59] + "\"\n",
			"cfg.yaml:3: clients[0].password_bcrypt: not a bcrypt hash"},
		{"password without user", "clients:\n  - cidr: 10.0.0.0/8\n    password_bcrypt: \"" + hash + "\"\n",
			"cfg.yaml:3: clients[0].password_bcrypt: set without user"},
		{"user without password", "clients:\n  - user: alice\n",
			`cfg.yaml:2: clients[0].password_bcrypt: required for user "alice" (or set auth.htpasswd)`},
		{"user with colon", "auth: {htpasswd: pw}\nclients:\n  - user: \"a:b\"\n",
			`cfg.yaml:3: clients[0].user: invalid user name "a:b"`},
		{"bad agent token", "clients:\n  - cidr: 10.0.0.0/8\n    agent: ResearchBot/1.0\n",
			`cfg.yaml:3: clients[0].agent: invalid agent "ResearchBot/1.0" (want a product token`},
		{"pac_proxy without a host", "pac_proxy: \":8080\"\n", `cfg.yaml:1: pac_proxy: ":8080" names no host`},
		{"pac_proxy without a port", "pac_proxy: proxy.corp.example\n", `cfg.yaml:1: pac_proxy: invalid address "proxy.corp.example"`},
		{"monitor_header without monitor mode", "clients:\n  - cidr: 10.0.0.0/8\n    monitor_header: true\n",
			"cfg.yaml:3: clients[0].monitor_header: only with mode: monitor (this entry is enforce)"},
		{"bad purpose", "clients:\n  - cidr: 10.0.0.0/8\n    purposes:\n      - train-ai\n      - Train AI\n",
			`cfg.yaml:5: clients[0].purposes[1]: invalid purpose "Train AI"`},
		{"signature agent not https", "bot_auth:\n  signature_agent: http://gate.example/keys\n",
			`cfg.yaml:2: bot_auth.signature_agent: signature agent URL "http://gate.example/keys": must be an absolute https URL`},
		{"signature agent with a quote", "bot_auth:\n  signature_agent: 'https://gate.example/\"'\n",
			`cfg.yaml:2: bot_auth.signature_agent: signature agent URL`},
		{"signature agent with a query", "bot_auth:\n  signature_agent: https://gate.example/keys?v=1\n",
			`cfg.yaml:2: bot_auth.signature_agent: signature agent URL "https://gate.example/keys?v=1": no user information, query or fragment`},
		{"unknown signature agent form", "bot_auth:\n  signature_agent_form: directory\n",
			`cfg.yaml:2: bot_auth.signature_agent_form: invalid value "directory" (want typed, url or string)`},
		{"product token not a token", "bot_auth:\n  product_token: ResearchBot/1.0\n",
			`cfg.yaml:2: bot_auth.product_token: invalid product token "ResearchBot/1.0"`},
		{"card purpose not a label", "bot_auth:\n  purpose: AI Training\n",
			`cfg.yaml:2: bot_auth.purpose: invalid purpose "AI Training"`},
		{"client key without agent", "clients:\n  - cidr: 10.0.0.0/8\n    sign_key: k.pem\n",
			`cfg.yaml:3: clients[0].sign_key: set without signature_agent`},
		{"client agent without key", "clients:\n  - cidr: 10.0.0.0/8\n    signature_agent: https://c.example/keys\n",
			`clients[0].sign_key: required with signature_agent`},
		{"bad max price", "bot_auth:\n  signature_agent: https://gate.example/keys\nclients:\n  - cidr: 10.0.0.0/8\n    max_price: 5 dollars\n",
			`cfg.yaml:5: clients[0].max_price: invalid price "5 dollars" (want a currency code and an amount, e.g. USD 0.05)`},
		{"max price without signing", "clients:\n  - cidr: 10.0.0.0/8\n    max_price: USD 0.05\n",
			`cfg.yaml:3: clients[0].max_price: needs signing`},
		{"bad rsl user", "clients:\n  - cidr: 10.0.0.0/8\n    rsl_user: business\n",
			`cfg.yaml:3: clients[0].rsl_user: invalid user type "business" (want one of commercial, non-commercial, education, government, personal)`},
		{"bad country", "clients:\n  - cidr: 10.0.0.0/8\n    country: fr\n",
			`cfg.yaml:3: clients[0].country: invalid country "fr" (want an ISO 3166-1 alpha-2 code in upper case, e.g. FR)`},
		{"bad payment type", "clients:\n  - cidr: 10.0.0.0/8\n    accept_payment: [crawl, free]\n",
			`cfg.yaml:3: clients[0].accept_payment[1]: invalid payment type "free"`},
		{"bad reporting profile", "clients:\n  - cidr: 10.0.0.0/8\n    accept_reporting:\n      - telemetry\n",
			`cfg.yaml:4: clients[0].accept_reporting[0]: invalid reporting profile "telemetry" (want an absolute URI, or all)`},
		{"bad rsl_unstated_usage", "usage:\n  rsl_unstated_usage: allow\n",
			`cfg.yaml:2: usage.rsl_unstated_usage: invalid value "allow" (want refuse or grant)`},

		// Other sections.
		{"zero cache", "robots:\n  cache_entries: 0\n",
			"cfg.yaml:2: robots.cache_entries: must be > 0, got 0"},
		{"empty fetch user agent", "robots:\n  fetch_user_agent: \"\"\n",
			"cfg.yaml:2: robots.fetch_user_agent: required"},
		{"negative concurrency", "pacing:\n  max_concurrency: -1\n",
			"cfg.yaml:2: pacing.max_concurrency: must be >= 0 (0 = unlimited), got -1"},
		{"negative listener cap", "connections:\n  max_per_listener: -1\n",
			"cfg.yaml:2: connections.max_per_listener: must be >= 0 (0: no cap), got -1"},
		{"negative client cap", "connections:\n  max_per_client: -5\n",
			"cfg.yaml:2: connections.max_per_client: must be >= 0 (0: no cap), got -5"},
		{"no licence fetch per response", "usage:\n  license_fetches_per_response: 0\n",
			"cfg.yaml:2: usage.license_fetches_per_response: must be >= 1, got 0"},
		{"too many licence fetches per origin", "usage:\n  license_fetches_per_origin: 101\n",
			"cfg.yaml:2: usage.license_fetches_per_origin: must be 1..100, got 101"},
		{"budget without window", "trap:\n  page_budget: 10\n  budget_window: 0s\n",
			"cfg.yaml:3: trap.budget_window: must be > 0 when trap.page_budget is set"},
		{"invalid from", "identify:\n  from: nobody\n",
			`cfg.yaml:2: identify.from: invalid mail address "nobody"`},
		{"control character", "identify:\n  user_agent_suffix: \"a\\r\\nX-Evil: 1\"\n",
			"cfg.yaml:2: identify.user_agent_suffix: control character"},
		{"bad realm", "auth:\n  realm: 'a\"b'\n",
			"cfg.yaml:2: auth.realm: invalid realm"},

		// Not YAML, or more than one document.
		{"syntax error", "robots:\n  fetch_timeout: 5s\n  - x\n",
			"cfg.yaml:3: invalid YAML: "},
		{"tab indentation", "robots:\n\tfetch_timeout: 5s\n",
			"cfg.yaml:2: invalid YAML: "},
		{"two documents", "listen: 127.0.0.1:8080\n---\nlisten: 127.0.0.1:8081\n",
			"cfg.yaml:2: a config file holds one YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "cfg.yaml")
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "s3%zz") {
				t.Errorf("error repeats the parent proxy's password: %v", err)
			}
			if !reflect.DeepEqual(c, Config{}) {
				t.Errorf("on error, Config = %+v, want the zero value", c)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("error %v is not an *Error", err)
			}
		})
	}
}

// All problems are reported at once, one per line of the error, in line
// order, and a key that failed to decode is not reported again by validation.
func TestParseReportsAllErrors(t *testing.T) {
	const in = `pacing:
  store: nope
  max_wait: abc
robots:
  cache_entries: -1
clients:
  - cidr: 10.0.0.0/8
    mode: [monitor]
extra: 1
`
	_, err := Parse([]byte(in), "cfg.yaml")
	if err == nil {
		t.Fatal("no error")
	}
	got := strings.Split(err.Error(), "\n")
	want := []string{
		`cfg.yaml:2: pacing.store: invalid value "nope"`,
		`cfg.yaml:3: pacing.max_wait: invalid duration "abc"`,
		"cfg.yaml:5: robots.cache_entries: must be > 0, got -1",
		"cfg.yaml:8: clients[0].mode: expected a string, got a list",
		"cfg.yaml:9: extra: unknown key",
	}
	if len(got) != len(want) {
		t.Fatalf("%d errors:\n%v\nwant %d", len(got), err, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func TestValidateWithoutFile(t *testing.T) {
	c := Default()
	c.Pacing.Store = "etcd"
	c.Clients = []Client{{Mode: ModeEnforce}}
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	want := "pacing.store: invalid value \"etcd\" (want memory or redis)\nclients[0]: a client entry needs cidr or user (or both)"
	if err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rg.yaml")
	if err := os.WriteFile(path, []byte("log:\n  level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.Level != LevelDebug || c.Log.Level.SlogLevel().String() != "DEBUG" {
		t.Errorf("log.level = %q", c.Log.Level)
	}

	if err := os.WriteFile(path, []byte("log:\n  level: loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+":2: log.level: ") {
		t.Errorf("Load(invalid) = %v, want an error starting %q", err, path+":2: log.level: ")
	}

	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}
}

// Aliases multiply the work of decoding (each reference is decoded again);
// the work is bounded instead of growing with the product of the references.
func TestAliasExpansionBounded(t *testing.T) {
	in := "clients: [&c {cidr: 10.0.0.0/8, purposes: &p [" + strings.Repeat("x, ", 399) + "x]}" +
		strings.Repeat(", *c", 399) + "]\n"
	_, err := Parse([]byte(in), "aliases.yaml")
	if err == nil || !strings.Contains(err.Error(), "aliases.yaml:1: clients[") || !strings.Contains(err.Error(), "document too large") {
		t.Errorf("err = %v, want document too large", err)
	}
}

func TestDuration(t *testing.T) {
	var v struct {
		D Duration `yaml:"d"`
	}
	if err := yaml.Unmarshal([]byte("d: 1m30s\n"), &v); err != nil || v.D.Duration() != 90*time.Second {
		t.Errorf("Unmarshal = %v, %v", v.D, err)
	}
	if err := yaml.Unmarshal([]byte("d: 90\n"), &v); err == nil || !strings.Contains(err.Error(), `invalid duration "90"`) {
		t.Errorf("Unmarshal(90) error = %v", err)
	}
	out, err := yaml.Marshal(v)
	if err != nil || string(out) != "d: 1m30s\n" {
		t.Errorf("Marshal = %q, %v", out, err)
	}
}

// Host lists are written as hosts are spelled (IDNA A-labels, lower case,
// no trailing dot) wherever they appear; what cannot be is an error naming
// the key.
func TestHostListsAreNormalised(t *testing.T) {
	cfg, err := Parse([]byte(`egress:
  deny_hosts: ["Bücher.example", "*.bücher.example", "evil.example."]
  allow_hosts: ["*.EXAMPLE.org"]
mitm:
  skip_hosts: ["Pinned.bücher.example"]
upstream:
  no_proxy: ["intranet.corp."]
sites:
  - {hosts: ["*.Bücher.example"], robots: ignore}
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key       string
		got, want []string
	}{
		{"egress.deny_hosts", cfg.Egress.DenyHosts, []string{"xn--bcher-kva.example", "*.xn--bcher-kva.example", "evil.example"}},
		{"egress.allow_hosts", cfg.Egress.AllowHosts, []string{"*.example.org"}},
		{"mitm.skip_hosts", cfg.MITM.SkipHosts, []string{"pinned.xn--bcher-kva.example"}},
		{"upstream.no_proxy", cfg.Upstream.NoProxy, []string{"intranet.corp"}},
		{"sites[0].hosts", cfg.Sites[0].Hosts, []string{"*.xn--bcher-kva.example"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %q, want %q", c.key, c.got, c.want)
		}
	}
	_, err = Parse([]byte("egress:\n  deny_hosts: [\"ok.example\", \"*.bü*.example\"]\n"), "test.yaml")
	if err == nil || !strings.Contains(err.Error(), "egress.deny_hosts[1]") || !strings.Contains(err.Error(), "punycode") {
		t.Errorf("a glob in a non-ASCII label: %v", err)
	}
}
