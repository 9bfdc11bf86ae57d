package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/robotsgate/robotsgate/config"
	"github.com/robotsgate/robotsgate/statelock"
)

// stateLocks are the locks serve holds while it runs.
type stateLocks []*statelock.Lock

func (ls stateLocks) release() {
	for _, l := range ls {
		l.Release()
	}
}

// lockState takes the state directory for this process (statelock): a
// second serve on it refuses to start, naming the first's PID, rather
// than append to its audit log. An audit log configured outside the state
// directory is locked too (its name + ".lock"), so that two instances
// with state directories of their own cannot share it either.
func lockState(cfg config.Config, logger *slog.Logger) (stateLocks, error) {
	var locks stateLocks
	take := func(lock func() (*statelock.Lock, error), what string) error {
		l, err := lock()
		switch {
		case inUse(err) != "":
			return fmt.Errorf("%s is in use by %s: one state directory, and one audit log, per instance; "+
				"stop it, or give this instance a state_dir of its own (docs/fleet.md)", what, inUse(err))
		case errors.Is(err, statelock.ErrUnsupported):
			logger.Warn("cannot lock the state directory on this system: make sure no other instance uses it", "state_dir", cfg.StateDir)
			return nil
		case err != nil:
			return err
		}
		locks = append(locks, l)
		return nil
	}
	if err := take(func() (*statelock.Lock, error) { return statelock.Dir(cfg.StateDir) }, "the state directory "+cfg.StateDir); err != nil {
		return nil, err
	}
	if a := cfg.Log.Audit; a != "" && a != "-" && !inside(cfg.StateDir, a) {
		if err := os.MkdirAll(filepath.Dir(a), 0o750); err != nil { // as auditlog.Open makes it
			locks.release()
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if err := take(func() (*statelock.Lock, error) { return statelock.File(a + ".lock") }, "the audit log "+a); err != nil {
			locks.release()
			return nil, err
		}
	}
	return locks, nil
}

// inside reports whether path is in dir (or below it).
func inside(dir, path string) bool {
	d, err1 := filepath.Abs(dir)
	p, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// inUse says who holds a lock, "robotsgate PID 123 (lock DIR/robotsgate.lock)",
// when err is a statelock.HeldError; "" otherwise.
func inUse(err error) string {
	var held *statelock.HeldError
	if !errors.As(err, &held) {
		return ""
	}
	who := "another robotsgate"
	if held.PID > 0 {
		who = fmt.Sprintf("robotsgate PID %d", held.PID)
	}
	return fmt.Sprintf("%s (lock %s)", who, held.Path)
}

// lockForCA holds dir while ca init writes into it, when dir is a state
// directory a serve has locked before (it has a lock file): a serve
// running on it refuses ca init, whose new CA it would not use while
// clients would be told to trust it.
func lockForCA(dir string) (*statelock.Lock, error) {
	path := filepath.Join(dir, statelock.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil, nil // never a state directory: nothing to hold
	}
	l, err := statelock.File(path)
	switch {
	case inUse(err) != "":
		return nil, fmt.Errorf("%s is in use by %s: stop it before creating a CA there", dir, inUse(err))
	case errors.Is(err, statelock.ErrUnsupported):
		return nil, nil
	}
	return l, err
}
