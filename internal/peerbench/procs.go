package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture (the kernel converts to it whatever
// its own HZ).
const clockTicks = 100

// procs is every process this run started. Each runs in a process group of
// its own (its PID), so that stopping it also stops what it started
// (Squid's helpers), and a Ctrl-C at the terminal reaches only this
// program, which then stops them. Each also gets SIGKILL when this program
// dies without stopping them (SIGKILL, a crash): the kernel sends a
// child's parent-death signal when the thread that started it exits, so
// every child is started from one thread that never exits.
type procs struct {
	mu    sync.Mutex
	list  []*proc
	spawn chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func newProcs() *procs {
	ps := &procs{spawn: make(chan spawnReq)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the program
		for r := range ps.spawn {
			r.done <- r.cmd.Start()
		}
	}()
	return ps
}

// proc is one started process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string        // its stdout and stderr
	exited chan struct{} // closed once it has exited and been waited for
}

// start runs argv pinned to cpus (taskset, which execs argv: the PID is
// argv's), its output in logFile, as the user cred when not nil (set before
// the parent-death signal, which a later change of user would clear).
func (ps *procs) start(name, cpus, logFile string, cred *syscall.Credential, argv ...string) (*proc, error) {
	out, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command("taskset", append([]string{"-c", cpus}, argv...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	done := make(chan error, 1)
	ps.spawn <- spawnReq{cmd, done}
	if err := <-done; err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logFile, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	ps.list = append(ps.list, p)
	return p, nil
}

// run runs cmd to its end like cmd.Run, started from the spawning thread
// with the parent-death signal set, so that it does not outlive this
// program either (go build).
func (ps *procs) run(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	ps.spawn <- spawnReq{cmd, done}
	if err := <-done; err != nil {
		return err
	}
	return cmd.Wait()
}

// pid is the process's ID.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// alive reports whether the process has not exited.
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail is the end of the process's log, for an error message.
func (p *proc) tail() string {
	data, _ := os.ReadFile(p.log)
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return fmt.Sprintf("--- %s (%s):\n%s", p.name, p.log, data)
}

// stopAll stops every process started, each by its process group: SIGTERM,
// then SIGKILL after grace. It waits for each to exit.
func (ps *procs) stopAll(grace time.Duration) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	signalGroups := func(sig syscall.Signal) {
		for _, p := range ps.list {
			// A process group's ID is its leader's PID, which the
			// kernel does not give another process while the group has
			// members: signalling the group is safe while the leader
			// lives or members are left (helpers that outlived it).
			if p.alive() || groupHasMembers(p.pid()) {
				syscall.Kill(-p.pid(), sig)
			}
		}
	}
	signalGroups(syscall.SIGTERM)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !ps.anyLeft() {
			break
		}
	}
	signalGroups(syscall.SIGKILL)
	for _, p := range ps.list {
		<-p.exited
	}
	ps.list = nil
}

func (ps *procs) anyLeft() bool {
	for _, p := range ps.list {
		if p.alive() || groupHasMembers(p.pid()) {
			return true
		}
	}
	return false
}

// groupHasMembers reports whether a process is in process group pgid.
func groupHasMembers(pgid int) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := readStat(p); err == nil && s.pgrp == pgid {
			return true
		}
	}
	return false
}

// waitListening polls addr until it accepts a connection (there is no
// other readiness signal common to the peers), failing when p exits or
// timeout passes.
func waitListening(p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if !p.alive() {
			return fmt.Errorf("%s exited at start\n%s", p.name, p.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not accept on %s after %v\n%s", p.name, addr, timeout, p.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freeAddr returns host:port on ip where nothing listens now.
func freeAddr(ip string) (string, error) {
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// procStat is what /proc/PID/stat says of one process.
type procStat struct {
	ppid, pgrp                   int
	utime, stime, cutime, cstime int64 // clock ticks
}

// parseStat parses the content of /proc/PID/stat. The command name, field
// 2, is in parentheses and may itself contain spaces and parentheses: the
// fields after it are counted from its last ')'.
func parseStat(data string) (procStat, error) {
	i := strings.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, errors.New("no ')' in stat")
	}
	f := strings.Fields(data[i+1:])
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 17-3+1 {
		return procStat{}, fmt.Errorf("stat has %d fields after the name", len(f))
	}
	var s procStat
	var err error
	num := func(n int) int64 {
		v, e := strconv.ParseInt(f[n-3], 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("stat field %d: %w", n, e)
		}
		return v
	}
	s.ppid, s.pgrp = int(num(4)), int(num(5))
	s.utime, s.stime, s.cutime, s.cstime = num(14), num(15), num(16), num(17)
	return s, err
}

// treeCPUTicks returns the CPU time (user + system, in clock ticks) of pid
// and of its live descendants, plus the CPU time of the children pid has
// reaped (cutime + cstime): all the CPU a proxy spends, Squid's helpers
// included.
func treeCPUTicks(pid int) (int64, error) {
	root, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	children := map[int][]int{}
	stats := map[int]procStat{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s, err := readStat(p)
		if err != nil {
			continue // exited meanwhile
		}
		stats[p] = s
		children[s.ppid] = append(children[s.ppid], p)
	}
	total := root.utime + root.stime + root.cutime + root.cstime
	queue := append([]int(nil), children[pid]...)
	for len(queue) > 0 && len(queue) < 100000 {
		p := queue[0]
		queue = queue[1:]
		total += stats[p].utime + stats[p].stime
		queue = append(queue, children[p]...)
	}
	return total, nil
}

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(string(data))
}

// statusKiB returns a "key: N kB" field of /proc/PID/status (VmHWM: peak
// resident set size), in KiB.
func statusKiB(pid int, key string) (int64, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	return parseStatusKiB(string(data), key)
}

func parseStatusKiB(data, key string) (int64, error) {
	for line := range strings.Lines(data) {
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: unexpected %q", key, strings.TrimSpace(rest))
		}
		return strconv.ParseInt(f[0], 10, 64)
	}
	return 0, fmt.Errorf("no %s in status", key)
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
