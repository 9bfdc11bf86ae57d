package config

import "time"

// This file holds every default value; nowhere else sets one.

// Default returns the built-in configuration: what robotsgate runs with when
// there is no config file, and what a file's keys are laid over. It is valid.
// Empty lists are nil.
func Default() Config {
	return Config{
		Listen:      "127.0.0.1:8080",
		AdminListen: "127.0.0.1:9090",
		Robots: Robots{
			FetchUserAgent:       "robotsgate/1.0",
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
			CACert:  "certs/ca.pem",
			CAKey:   "certs/ca-key.pem",
		},
		Pacing: Pacing{
			MaxWait:      Duration(60 * time.Second),
			OverMaxDelay: OverMaxDelayClamp,
			Key:          KeyOriginGroup,
			Store:        StoreMemory,
			Redis:        Redis{Addr: "127.0.0.1:6379"},
			OnStoreError: OnStoreErrorRefuse,
			Backoff: Backoff{
				Enabled:  true,
				Statuses: []int{429, 503},
				Initial:  Duration(5 * time.Second),
				Factor:   2,
				Max:      Duration(time.Hour),
			},
			Adaptive: Adaptive{Max: Duration(30 * time.Second)},
		},
		Auth: Auth{
			Realm:        "robotsgate",
			FailureLimit: 10,
		},
		ClientsDefault: ClientsAllow,
		Usage: Usage{
			ScanHTML:   false, // it delays the first byte of HTML pages
			OnUnknown:  UsageUnknownRefuse,
			CacheBytes: 64 << 20,
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
		Archive: Archive{Dir: "robots-archive"},
		Log: Log{
			Level:        LevelInfo,
			AuditOnError: AuditContinue,
		},
	}
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
