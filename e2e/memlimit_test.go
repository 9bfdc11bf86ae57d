package e2e

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The soft memory limit the binary runs with, as its runtime reports it
// (go_gc_gomemlimit_bytes), and its start-up log line: from the caches'
// bounds by default (484 MiB for the defaults), from memory_limit when
// set, from GOMEMLIMIT over both; none with memory_limit: off. Under a
// limit the collector's percentage is 400 (go_gc_gogc_percent), unless
// GOGC says otherwise; without one it stays Go's 100.
func TestE2EMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "default.yaml"), "log:\n  audit: \"\"\n")
	writeFile(t, filepath.Join(dir, "1g.yaml"), "memory_limit: 1GiB\nlog:\n  audit: \"\"\n")
	writeFile(t, filepath.Join(dir, "big.yaml"), "memory_limit: auto\nrobots:\n  cache_bytes: 1GiB\nlog:\n  audit: \"\"\n")
	writeFile(t, filepath.Join(dir, "off.yaml"), "memory_limit: off\nlog:\n  audit: \"\"\n")
	noLimit := slices.DeleteFunc(binEnv(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GOGC=")
	})
	for _, tc := range []struct {
		name, config string
		env          []string
		want         float64
		gogc         float64
		log          string
	}{
		{"defaults", "default.yaml", nil, 484 << 20, 400, `msg="soft memory limit" limit=484MiB source=auto caches=336MiB`},
		{"larger robots.txt cache", "big.yaml", nil, (1<<30+80<<20)*5/4 + 64<<20, 400, `msg="soft memory limit" limit=1444MiB source=auto caches=1104MiB`},
		{"memory_limit", "1g.yaml", nil, 1 << 30, 400, `msg="soft memory limit" limit=1024MiB source=memory_limit`},
		{"GOMEMLIMIT over auto", "default.yaml", []string{"GOMEMLIMIT=700MiB"}, 700 << 20, 400, `msg="soft memory limit" limit=700MiB source=GOMEMLIMIT`},
		{"GOMEMLIMIT over memory_limit", "1g.yaml", []string{"GOMEMLIMIT=700MiB"}, 700 << 20, 400, `limit=700MiB source=GOMEMLIMIT`},
		{"GOGC over the raised percentage", "default.yaml", []string{"GOGC=150"}, 484 << 20, 150, `gc_percent=150`},
		{"off", "off.yaml", nil, 1<<63 - 1, 100, `msg="no soft memory limit (memory_limit: off): the heap may grow to twice what is live" source="memory_limit: off"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tryStartServeEnv(t, nil, append(slices.Clone(noLimit), tc.env...), t.TempDir(), "-config", filepath.Join(dir, tc.config),
				"-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			admin := adminOf(t, p)
			if got := metricValue(t, admin, "go_gc_gomemlimit_bytes"); got != tc.want {
				t.Errorf("go_gc_gomemlimit_bytes %.0f, want %.0f", got, tc.want)
			}
			if got := metricValue(t, admin, "go_gc_gogc_percent"); got != tc.gogc {
				t.Errorf("go_gc_gogc_percent %.0f, want %.0f", got, tc.gogc)
			}
			if !strings.Contains(p.out.String(), tc.log) {
				t.Errorf("no %q in the start-up log:\n%s", tc.log, p.out)
			}
		})
	}
}
