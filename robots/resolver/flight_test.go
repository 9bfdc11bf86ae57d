package resolver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A refresh of an entry that went stale while the call that stored it is
// still finishing runs a call of its own: joining that call would refresh
// nothing, and the entry, flagged as being refreshed, would stay stale.
// (TestRevalidationKeepsTheFileOn304 hung on a loaded machine so.)
func TestRefreshNeverJoinsACallUnderWay(t *testing.T) {
	var f Flight[int]
	release, running := make(chan struct{}), make(chan struct{})
	waited := make(chan int)
	go func() {
		v, _ := f.Wait(context.Background(), "k", func() int { close(running); <-release; return 1 })
		waited <- v
	}()
	<-running
	refreshed := make(chan struct{})
	var started atomic.Bool
	f.Refresh(&started, "k", func() int { close(refreshed); return 2 })
	select {
	case <-refreshed:
	case <-time.After(30 * time.Second): // only a failing test waits this long
		t.Error("the refresh joined the call under way instead of running its own")
	}
	close(release)
	if v := <-waited; v != 1 {
		t.Errorf("the waiting caller got %d, want its own call's 1", v)
	}
	f.Close()
	f.Refresh(&started, "k", func() int { t.Error("a second refresh of a flagged entry"); return 3 })
	f.Close()
}
