// Command peerbench measures the real robotsgate binary side by side with
// the proxies it is compared with: Privoxy, Squid (plain, and with
// ssl-bump for HTTPS) and a tuned goproxy v1.9.2 (internal/wrkbench), and
// prints a markdown table for docs/benchmarks.md ("Against the peers").
// `make bench-peers` runs it; it is a benchmark tool, never part of
// robotsgate, and no test runs it.
//
// Each proxy runs as its own process pinned to one CPU (-proxy-cpu); the
// load generators and the loopback origin share the other (-load-cpu):
// wrk for plain HTTP (keep-alive over -conns connections, and over one
// connection), a Go client for intercepted HTTPS (CONNECT, then TLS to the
// proxy's interception, keep-alive, and a new connection per request).
// Every response is checked (status 200 and the origin's body length),
// and the origin's own count must cover every response (no cache answered
// it; signed exactly when the setup signs), so a proxy that refuses or
// caches is not measured as fast. Rounds interleave the setups; each run
// records the client's requests/s and p50/p99 latency and the proxy's CPU
// over the run (utime + stime of its process tree, /proc/PID/stat), and
// the proxy's peak RSS (VmHWM) is printed after each round and in the
// table. The machine's load average is printed around each round: the
// figures are only comparable within one run.
//
// Missing Debian packages (wrk, privoxy, squid) are installed with
// apt-get when running as root. Everything the run writes (configuration,
// CAs, state directories, logs, the binaries it builds) is under one
// temporary directory, removed at the end unless -keep; every process it
// started is stopped by its process group on every way out (the end, an
// error, SIGINT/SIGTERM/SIGHUP), and killed by the kernel if this program
// itself is killed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pinnedEnv marks the process as already pinned to the load CPUs.
const pinnedEnv = "PEERBENCH_PINNED"

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(2)
	}
	if os.Getenv(pinnedEnv) != cfg.loadCPU {
		// The load client runs in this process: pin all of it, from the
		// start, to the load CPUs (taskset execs this program again, the
		// same PID).
		if err := pin(cfg.loadCPU); err != nil {
			fmt.Fprintln(os.Stderr, "peerbench:", err)
			os.Exit(1)
		}
	}
	os.Exit(run(cfg))
}

// pin executes this program again under taskset -c cpus.
func pin(cpus string) error {
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("%d CPU: the proxy needs one of its own and the load another", runtime.NumCPU())
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return fmt.Errorf("taskset (Debian: util-linux): %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	env := append(os.Environ(), pinnedEnv+"="+cpus)
	return syscall.Exec(taskset, append([]string{"taskset", "-c", cpus, self}, os.Args[1:]...), env)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// run measures and prints the report; its status is 0 when every run
// passed its checks.
func run(cfg config) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	dir, err := os.MkdirTemp("", "peerbench-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	ps := newProcs()
	defer func() {
		ps.stopAll(10 * time.Second)
		if cfg.keep {
			logf("kept %s", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	// Squid runs as its own user: it must reach its files under dir.
	if err := os.Chmod(dir, 0o755); err != nil {
		logf("%v", err)
		return 1
	}
	rep, err := bench(ctx, cfg, dir, ps)
	if err != nil {
		if ctx.Err() != nil {
			logf("interrupted")
		} else {
			logf("%v", err)
		}
		return 1
	}
	rep.write(os.Stdout)
	for _, s := range rep.samples {
		if s.fail != "" {
			logf("some runs failed their checks (FAILED in the table)")
			return 1
		}
	}
	return 0
}

// bench sets everything up, runs the rounds and returns the report.
func bench(ctx context.Context, cfg config, dir string, ps *procs) (*report, error) {
	e := &env{dir: dir, ps: ps, proxyCPU: cfg.proxyCPU, loadCPU: cfg.loadCPU, logf: logf}
	if err := e.prepare(ctx, cfg); err != nil {
		return nil, err
	}
	rep := &report{modes: cfg.modes}
	var setups []*setup
	for _, k := range setupKinds {
		if !slices.Contains(cfg.setups, k.name) {
			continue
		}
		logf("starting %s", k.name)
		s, err := k.start(e, k.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.name, err)
		}
		for _, m := range cfg.modes {
			if m.tls && s.tls == nil {
				continue
			}
			if err := e.checkOnce(ctx, s, m); err != nil {
				return nil, err
			}
		}
		setups = append(setups, s)
		rep.columns = append(rep.columns, column{name: s.name, title: s.title})
	}
	rep.header = e.header(cfg, setups)
	if cfg.warmup > 0 {
		logf("warm-up: %v per setup and mode", cfg.warmup)
		for _, m := range cfg.modes {
			for _, s := range setups {
				if _, err := e.measure(ctx, s, m, cfg, cfg.warmup, 0); err != nil {
					return nil, err
				}
			}
		}
	}
	for n := 1; n <= cfg.rounds; n++ {
		rd := round{n: n, loadBefore: loadAvg()}
		logf("round %d of %d: load average %s", n, cfg.rounds, rd.loadBefore)
		for _, m := range cfg.modes {
			// Each round starts with another setup, so none is always
			// measured first or last.
			for i := range setups {
				s := setups[(i+n-1)%len(setups)]
				smp, err := e.measure(ctx, s, m, cfg, cfg.duration, n)
				if err != nil {
					return nil, err
				}
				if smp == nil {
					continue // not measured in this mode
				}
				rep.samples = append(rep.samples, *smp)
			}
		}
		rd.loadAfter = loadAvg()
		rep.rounds = append(rep.rounds, rd)
		var rss []string
		for _, s := range setups {
			kib, _ := statusKiB(s.proc.pid(), "VmHWM")
			rss = append(rss, fmt.Sprintf("%s %.1f MiB", s.name, float64(kib)/1024))
		}
		logf("round %d done: load average %s; peak RSS: %s", n, rd.loadAfter, strings.Join(rss, ", "))
	}
	for i, s := range setups {
		rep.columns[i].rssKiB, _ = statusKiB(s.proc.pid(), "VmHWM")
	}
	return rep, nil
}

// measure runs one load of d in mode m through s and checks it. It
// returns nil, nil when s is not measured in m, and an error only when the
// run cannot go on (interrupted, the origin gone).
func (e *env) measure(ctx context.Context, s *setup, m mode, cfg config, d time.Duration, n int) (*sample, error) {
	if m.tls && s.tls == nil {
		return nil, nil
	}
	conns := cfg.conns
	if m.oneConn {
		conns = 1
	}
	smp := &sample{round: n, setup: s.name, mode: m.name}
	before, err := e.settledStats(ctx)
	if err != nil {
		return nil, err
	}
	t0, err := treeCPUTicks(s.proc.pid())
	if err != nil {
		return nil, fmt.Errorf("%s's CPU: %w", s.name, err)
	}
	if m.tls {
		smp.res, err = e.runGo(ctx, s, m.keepAlive, conns, d)
	} else {
		smp.res, err = e.runWrk(ctx, s, conns, d, fmt.Sprintf("%s-%s-%d", s.name, m.name, n))
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	t1, cpuErr := treeCPUTicks(s.proc.pid())
	smp.cpuTicks = t1 - t0
	after, statsErr := e.settledStats(ctx)
	if statsErr != nil {
		return nil, statsErr
	}
	switch {
	case err != nil:
		smp.fail = err.Error()
	case !s.proc.alive():
		smp.fail = s.name + " exited\n" + s.proc.tail()
	case cpuErr != nil:
		smp.fail = cpuErr.Error()
	case smp.res.ok == 0:
		smp.fail = "no request succeeded"
	case smp.res.bad > 0:
		smp.fail = smp.res.errs
	default:
		if err := checkOrigin(s, before, after, smp.res); err != nil {
			smp.fail = err.Error()
		}
	}
	status := "ok"
	if smp.fail != "" {
		status = "FAILED: " + smp.fail
	}
	what := fmt.Sprintf("round %d", n)
	if n == 0 {
		what = "warm-up"
	}
	cpu := "?"
	if smp.res.ok > 0 {
		cpu = strconv.FormatInt((time.Duration(smp.cpuTicks) * (time.Second / clockTicks) / time.Duration(smp.res.ok)).Microseconds(), 10)
	}
	logf("%s %-16s %-19s %8s req/s  p50 %s ms  p99 %s ms  CPU %s µs/req  %s",
		what, m.name, s.name, thousands(smp.res.rate()), ms(smp.res.p50), ms(smp.res.p99), cpu, status)
	return smp, nil
}

// prepare installs what is missing, builds the binaries and starts the
// origin.
func (e *env) prepare(ctx context.Context, cfg config) error {
	wanted := map[string]string{"wrk": "wrk", "taskset": "util-linux"}
	for _, k := range setupKinds {
		if slices.Contains(cfg.setups, k.name) {
			for bin, pkg := range k.tools {
				wanted[bin] = pkg
			}
		}
	}
	if cfg.install {
		if err := ensurePackages(wanted, logf); err != nil {
			return err
		}
	}
	for bin := range wanted {
		if findBinary(bin) == "" {
			return fmt.Errorf("%s not found (Debian package %s)", bin, wanted[bin])
		}
	}
	if slices.Contains(cfg.setups, "squid") || slices.Contains(cfg.setups, "squid-log") {
		var err error
		if e.squid, err = findSquid(e.dir, logf); err != nil {
			return err
		}
		if e.proxyUser, err = squidUser(); err != nil {
			return err
		}
	}
	goTool := envOr("GO", "go")
	gomod, err := exec.CommandContext(ctx, goTool, "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return fmt.Errorf("run from the robotsgate module (go env GOMOD: %v)", err)
	}
	e.root = filepath.Dir(strings.TrimSpace(string(gomod)))
	bin := filepath.Join(e.dir, "bin")
	build := func(out, pkg string) error {
		logf("building %s", pkg)
		var b strings.Builder
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", out, pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = e.root, &b, &b
		if err := e.ps.run(cmd); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b.String())
		}
		return nil
	}
	e.wrkbench = filepath.Join(bin, "wrkbench")
	if err := build(e.wrkbench, "./internal/wrkbench"); err != nil {
		return err
	}
	e.robotsgate = cfg.robotsgate
	if e.robotsgate == "" {
		e.robotsgate = filepath.Join(bin, "robotsgate")
		if err := build(e.robotsgate, "."); err != nil {
			return err
		}
	}
	odir, err := e.mkdir("origin")
	if err != nil {
		return err
	}
	certFile, keyFile, _, err := newCA(odir)
	if err != nil {
		return err
	}
	e.originCA = certFile
	// The origin's CA certificate must be readable by Squid's user; its
	// key stays the origin's.
	os.Chmod(filepath.Dir(certFile), 0o755)
	if e.origin, err = freeAddr("127.0.0.2"); err != nil {
		return err
	}
	if e.originTLS, err = freeAddr("127.0.0.2"); err != nil {
		return err
	}
	p, err := e.ps.start("origin", e.loadCPU, filepath.Join(odir, "origin.out"), nil, e.wrkbench,
		"-origin", e.origin, "-origin-tls", e.originTLS, "-origin-ca-cert", certFile, "-origin-ca-key", keyFile, "-goproxy", "")
	if err != nil {
		return err
	}
	for _, a := range []string{e.origin, e.originTLS} {
		if err := waitListening(p, a, 20*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// onlineCPUs counts the machine's CPUs (runtime.NumCPU counts those this
// process may use: after pinning, one).
func onlineCPUs() int {
	data, _ := os.ReadFile("/proc/cpuinfo")
	n := 0
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, "processor") {
			n++
		}
	}
	return n
}

// header describes the run: when, what, on what, how.
func (e *env) header(cfg config, setups []*setup) []string {
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = e.root
		out, _ := cmd.Output()
		return strings.TrimSpace(string(out))
	}
	commit := git("rev-parse", "--short", "HEAD")
	if git("status", "--porcelain", "--untracked-files=no") != "" {
		commit += " with uncommitted changes"
	}
	robotsgate := "robotsgate built from the tree at commit " + commit
	if cfg.robotsgate != "" {
		robotsgate = "robotsgate binary " + cfg.robotsgate
	}
	cpu := strings.TrimSpace(strings.TrimPrefix(firstLine("model name", "cat", "/proc/cpuinfo"), "model name"))
	cpu = strings.TrimSpace(strings.TrimPrefix(cpu, ":"))
	kernel := strings.TrimSpace(firstLine("", "uname", "-r"))
	wrk := firstLine("wrk ", "wrk", "-v")
	if f := strings.Fields(wrk); len(f) >= 2 {
		wrk = "wrk " + f[1]
	}
	h := []string{
		fmt.Sprintf("Measured on %s by `make bench-peers` (%d round(s) of %v, %d connections; %s), %s.",
			time.Now().Format("2006-01-02 15:04 MST"), cfg.rounds, cfg.duration, cfg.conns, runtime.Version(), robotsgate),
		fmt.Sprintf("Machine: %s, %d CPUs, Linux %s. Each proxy pinned to CPU %s; %s, the Go client and the origin on CPU %s. Load average at the start: %s.",
			cpu, onlineCPUs(), kernel, cfg.proxyCPU, wrk, cfg.loadCPU, loadAvg()),
	}
	for _, s := range setups {
		if strings.HasPrefix(s.name, "squid") {
			h = append(h, "Squid: "+e.squid.how+".")
			break
		}
	}
	return h
}
