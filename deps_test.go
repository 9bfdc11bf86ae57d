package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The evidence commands' packages read files offline: they must not pull in
// the proxy or its network dependencies (goproxy, go-redis, Prometheus),
// which a reviewer's machine has no use for and which would make them move
// with every change of the proxy.
func TestEvidencePackagesDoNotDependOnTheProxy(t *testing.T) {
	forbidden := []string{
		"github.com/robotsgate/robotsgate/proxy",
		"github.com/robotsgate/robotsgate/policy",
		"github.com/robotsgate/robotsgate/pacing",
		"github.com/elazarl/goproxy",
		"github.com/redis/go-redis/v9",
		"github.com/prometheus/client_golang/prometheus",
	}
	for _, pkg := range []string{"./audit", "./compliance", "./report"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed %d packages: %q", pkg, len(deps), deps)
		}
		for _, dep := range deps {
			for _, f := range forbidden {
				if dep == f {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
