package proxy

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/robotsgate/robotsgate/egress"
)

// denyListPoll is how often the files of egress.deny_hosts_files are
// checked for changes (their size, modification time and inode: a stat
// each, nothing is read unless one changed).
const denyListPoll = 2 * time.Second

// denyLists returns the lists of egress.deny_hosts_files for a new
// configuration: the running ones when the configuration names the same
// files, re-read where they changed (so that a reload does not read a
// million lines again for nothing), else the files read anew. A file that
// does not load is an error naming the key.
func (s *Server) denyLists(files []string) (*egress.DenyLists, error) {
	if len(files) == 0 {
		return nil, nil
	}
	if old := s.settings(); old != nil && old.guard.DenyLists != nil && slices.Equal(old.guard.DenyLists.Paths(), files) {
		changes, err := old.guard.DenyLists.Refresh()
		s.logDenyListChanges(changes)
		if err != nil {
			return nil, fmt.Errorf("proxy: egress.deny_hosts_files: %w", err)
		}
		return old.guard.DenyLists, nil
	}
	lists, err := egress.LoadDenyLists(files)
	if err != nil {
		return nil, fmt.Errorf("proxy: egress.deny_hosts_files: %w", err)
	}
	return lists, nil
}

// watchDenyLists re-reads the deny lists' files when they change, every
// denyListPoll, until stop is closed. A file that no longer loads keeps its
// previous entries, and the error is logged once per change.
func (s *Server) watchDenyLists(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(denyListPoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			changes, _ := s.settings().guard.DenyLists.Refresh()
			s.logDenyListChanges(changes)
		}
	}
}

func (s *Server) logDenyListChanges(changes []egress.DenyChange) {
	for _, c := range changes {
		if c.Err != nil {
			s.log.Error("deny list not reloaded; keeping its previous entries", "key", "egress.deny_hosts_files", "file", c.File, "err", c.Err)
			continue
		}
		s.log.Info("deny list reloaded", "file", c.File, "entries", c.Entries)
	}
}

// denyListWatch runs watchDenyLists from New to Shutdown.
type denyListWatch struct {
	stop, done chan struct{}
	once       sync.Once
}

func (s *Server) startDenyListWatch() {
	s.denyWatch = &denyListWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go s.watchDenyLists(s.denyWatch.stop, s.denyWatch.done)
}

func (w *denyListWatch) close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
