package pacing

import (
	"os"
	"testing"

	"github.com/robotsgate/robotsgate/internal/redistest"
)

// startRedis starts a real redis-server for tb (see redistest).
func startRedis(tb testing.TB) *redistest.Server { return redistest.Start(tb) }

// TestMain silences go-redis' own log: the tests provoke dial failures on
// purpose and check the errors themselves.
func TestMain(m *testing.M) {
	redistest.Quiet()
	os.Exit(m.Run())
}
