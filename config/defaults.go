package config

import (
	"github.com/robotsgate/robotsgate/botauth"
	"path/filepath"
	"strings"
	"time"
)

// This file holds every default value; nowhere else sets one.

// ProjectURL is where robotsgate is described: the URL of its own fetches'
// default User-Agent.
const ProjectURL = "https://github.com/robotsgate/robotsgate"

// DefaultFetchUserAgent is robots.fetch_user_agent's default: the product
// token and the project's URL, as the crawler best-practices draft's
// example has it.
const DefaultFetchUserAgent = "robotsgate/1.0 (+" + ProjectURL + ")"

// Default returns the built-in configuration: what robotsgate runs with when
// there is no config file, and what a file's keys are laid over. It is valid.
// Empty lists are nil.
func Default() Config {
	c := Config{
		StateDir:       DefaultStateDir,
		Listen:         "127.0.0.1:8080",
		AdminListen:    "127.0.0.1:9090",
		KeyPermissions: KeyPermissionsWarn,
		Robots: Robots{
			FetchUserAgent:       DefaultFetchUserAgent,
			FetchTimeout:         Duration(10 * time.Second),
			CacheEntries:         100000,
			CacheBytes:           256 << 20,
			ColdFetchesPerClient: 16,
			MinTTL:               Duration(time.Minute),
			MaxTTL:               Duration(24 * time.Hour),
			RetryMin:             Duration(10 * time.Second),
			RetryMax:             Duration(10 * time.Minute),
			StrictPaths:          true,
		},
		Egress: Egress{
			BlockPrivateNetworks: true,
			TunnelPorts:          []int{443},
		},
		MITM: MITM{
			Enabled: true,
		},
		Pacing: Pacing{
			MaxWait:      Duration(60 * time.Second),
			OverMaxDelay: OverMaxDelayClamp,
			Key:          KeyOriginGroup,
			Store:        StoreMemory,
			Redis:        Redis{Addr: "127.0.0.1:6379", KeyPrefix: "robotsgate:", ReplicaAcks: 1},
			OnStoreError: OnStoreErrorRefuse,
			Backoff: Backoff{
				Enabled:  true,
				Statuses: []int{429, 503},
				Failures: Failures{Statuses: []int{500, 502, 504}, Timeouts: true, InARow: 3},
				Initial:  Duration(5 * time.Second),
				Factor:   2,
				Max:      Duration(time.Hour),
				// An origin's own Retry-After is obeyed in full up to a day.
				RetryAfterMax: Duration(24 * time.Hour),
			},
			Adaptive: Adaptive{Max: Duration(30 * time.Second)},
		},
		Auth: Auth{
			Realm:        "robotsgate",
			FailureLimit: 10,
		},
		BotAuth:        BotAuth{SignatureAgentForm: string(botauth.FormTyped)},
		ClientsDefault: ClientsAllow,
		Usage: Usage{
			ScanHTML:        false, // it delays the first byte of HTML pages
			OnUnknown:       UsageUnknownRefuse,
			OnLicenseServer: UsageUnknownRefuse,
			// A use an RSL licence does not permit is not licensed.
			RSLUnstatedUsage: RSLUnstatedRefuse,
			CacheBytes:       64 << 20,
		},
		Trap: Trap{
			Enabled:             false,
			MaxURLLength:        2048,
			MaxRepeatedSegments: 3,
			BudgetWindow:        Duration(time.Hour),
		},
		Timeouts: Timeouts{
			ClientHeader: Duration(30 * time.Second),
			ClientIdle:   Duration(90 * time.Second),
			ClientBody:   Duration(60 * time.Second),
		},
		Connections: Connections{MaxPerListener: 4096, MaxPerClient: 256},
		Log: Log{
			Level:             LevelInfo,
			AuditOnError:      AuditContinue,
			CheckpointEvery:   Duration(time.Minute),
			CheckpointRecords: 10000,
		},
	}
	// A site names one or two licences; these bound what a page naming
	// many URLs on another site can make robotsgate send.
	c.Usage.LicenseFetchesPerResponse, c.Usage.LicenseFetchesPerOrigin = 4, 10
	c.placeInStateDir(func(string) bool { return false })
	return c
}

// DefaultStateDir is state_dir's default, in the working directory.
const DefaultStateDir = "robotsgate-state"

// stateFiles are the keys whose default path is in state_dir, and the
// name each has there.
var stateFiles = []struct {
	key  string
	name string
	path func(*Config) *string
}{
	{"mitm.ca_cert", "ca.pem", func(c *Config) *string { return &c.MITM.CACert }},
	{"mitm.ca_key", "ca-key.pem", func(c *Config) *string { return &c.MITM.CAKey }},
	{"archive.dir", "archive", func(c *Config) *string { return &c.Archive.Dir }},
	{"log.audit", "audit.log", func(c *Config) *string { return &c.Log.Audit }},
	{"log.evidence_key", "evidence-key.pem", func(c *Config) *string { return &c.Log.EvidenceKey }},
	{"bot_auth.key", "bot-auth-key.pem", func(c *Config) *string { return &c.BotAuth.Key }},
}

// placeInStateDir sets every key of stateFiles that set reports the file
// did not set to its default path in c.StateDir.
func (c *Config) placeInStateDir(set func(key string) bool) {
	for _, f := range stateFiles {
		if !set(f.key) {
			*f.path(c) = filepath.Join(c.StateDir, f.name)
		}
	}
}

// SignKeyPath is where clients entry c's sign_key is: a bare file name is
// in state_dir.
func (c *Config) SignKeyPath(cl Client) string {
	if cl.SignKey == "" || strings.ContainsRune(cl.SignKey, filepath.Separator) {
		return cl.SignKey
	}
	return filepath.Join(c.StateDir, cl.SignKey)
}

// InStateDir reports whether path is the default of key in c.StateDir
// (the key was not set elsewhere).
func (c *Config) InStateDir(key, path string) bool {
	for _, f := range stateFiles {
		if f.key == key {
			return path == filepath.Join(c.StateDir, f.name)
		}
	}
	return false
}

// DefaultClient returns the defaults of a clients entry: the keys an entry
// does not set keep these values.
func DefaultClient() Client {
	return Client{Mode: ModeEnforce}
}

// DefaultSite returns the defaults of a sites entry.
func DefaultSite() Site {
	return Site{Robots: RobotsObey}
}
