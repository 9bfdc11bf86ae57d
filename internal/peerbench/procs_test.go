package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStatReadsFieldsAfterAnAwkwardName(t *testing.T) {
	// The name may hold spaces and parentheses: fields count from the last ')'.
	line := "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 12345 1000 200\n"
	s, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{ppid: 17, pgrp: 4242, utime: 7, stime: 3, cutime: 2, cstime: 1}
	if s != want {
		t.Errorf("parseStat = %+v, want %+v", s, want)
	}
}

func TestParseStatRejectsTruncatedOrNameless(t *testing.T) {
	for _, line := range []string{"", "4242 (x) S 1 2 3", "4242 x S 1 4242 4242 0 -1 0 0 0 0 0 7 3 2 1"} {
		if _, err := parseStat(line); err == nil {
			t.Errorf("parseStat(%q): no error", line)
		}
	}
}

func TestParseStatusKiB(t *testing.T) {
	status := "Name:\tsquid\nVmPeak:\t  120000 kB\nVmHWM:\t   45056 kB\nVmRSS:\t   40000 kB\n"
	if got, err := parseStatusKiB(status, "VmHWM"); err != nil || got != 45056 {
		t.Errorf("VmHWM = %d, %v; want 45056", got, err)
	}
	if _, err := parseStatusKiB(status, "VmSwap"); err == nil {
		t.Error("a missing key gave no error")
	}
	if _, err := parseStatusKiB("VmHWM:\t 12 MB\n", "VmHWM"); err == nil {
		t.Error("a unit other than kB gave no error")
	}
}

// allowedCPUs is the CPU list this test may use, for taskset.
func allowedCPUs(t *testing.T) string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Skip("no Cpus_allowed_list")
	return ""
}

// gone reports whether pid has exited (no such process, or a zombie
// waiting for a parent that is not us).
func gone(pid int) bool {
	s, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(s), ')')
	return i > 0 && strings.HasPrefix(strings.TrimSpace(string(s[i+1:])), "Z")
}

// TestStopAllLeavesNoProcessBehind: a started process and the child it
// started (as Squid starts helpers) are both stopped, even when the
// leader ignores SIGTERM and its child outlives it.
func TestStopAllLeavesNoProcessBehind(t *testing.T) {
	if findBinary("taskset") == "" {
		t.Skip("taskset (util-linux) not installed")
	}
	dir := t.TempDir()
	ps := newProcs()
	pidFile := filepath.Join(dir, "child.pid")
	// The leader ignores SIGTERM; its child (a shell loop, so that no
	// exec replaces it) ignores it too and would outlive it.
	script := `trap '' TERM; (trap '' TERM; while :; do sleep 0.05; done) & echo $! > ` + pidFile + `; while :; do sleep 0.05; done`
	p, err := ps.start("test", allowedCPUs(t), filepath.Join(dir, "out"), nil, "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	for deadline := time.Now().Add(10 * time.Second); child == 0; time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(data), "\n") {
			child, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the child's PID never appeared")
		}
	}
	leader := p.pid()
	t.Cleanup(func() {
		// Should stopAll fail, the test still leaves nothing behind.
		if groupHasMembers(leader) {
			syscall.Kill(-leader, syscall.SIGKILL)
		}
	})
	start := time.Now()
	ps.stopAll(300 * time.Millisecond)
	if !gone(leader) || p.alive() {
		t.Errorf("leader %d still running", leader)
	}
	for deadline := time.Now().Add(5 * time.Second); !gone(child) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if !gone(child) {
		t.Errorf("child %d still running", child)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("stopAll took %v with a grace of 300ms", el)
	}
	if len(ps.list) != 0 {
		t.Errorf("%d processes still listed", len(ps.list))
	}
}

func TestTreeCPUTicksCountsThisProcess(t *testing.T) {
	before, err := treeCPUTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until this process has used more CPU than it had: a bounded
	// loop (at most 10 s of wall time).
	x := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		for i := range 1_000_000 {
			x += i
		}
		if now, _ := treeCPUTicks(os.Getpid()); now > before {
			return
		}
	}
	t.Errorf("CPU ticks did not grow after 10 s of spinning (%d)", x)
}
