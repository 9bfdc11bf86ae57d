package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is what the flags (and PEERBENCH_* variables) ask for.
type config struct {
	rounds           int
	duration, warmup time.Duration
	conns            int
	setups           []string
	modes            []mode
	proxyCPU         string
	loadCPU          string
	robotsgate       string
	keep, install    bool
}

func envOr(key, dflt string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return dflt
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("peerbench", flag.ContinueOnError)
	var cfg config
	var setups, modeNames string
	var quick bool
	durDefault, err := time.ParseDuration(envOr("PEERBENCH_DURATION", "8s"))
	if err != nil {
		return cfg, fmt.Errorf("PEERBENCH_DURATION: %w", err)
	}
	warmDefault, err := time.ParseDuration(envOr("PEERBENCH_WARMUP", "1s"))
	if err != nil {
		return cfg, fmt.Errorf("PEERBENCH_WARMUP: %w", err)
	}
	roundsDefault, err := strconv.Atoi(envOr("PEERBENCH_ROUNDS", "2"))
	if err != nil {
		return cfg, fmt.Errorf("PEERBENCH_ROUNDS: %w", err)
	}
	var defaultSetups, allSetups, allModes []string
	for _, k := range setupKinds {
		allSetups = append(allSetups, k.name)
		if k.dflt {
			defaultSetups = append(defaultSetups, k.name)
		}
	}
	for _, m := range modes {
		allModes = append(allModes, m.name)
	}
	fs.IntVar(&cfg.rounds, "rounds", roundsDefault, "rounds; each runs every setup in every mode (env PEERBENCH_ROUNDS)")
	fs.DurationVar(&cfg.duration, "duration", durDefault, "length of one run, whole seconds (env PEERBENCH_DURATION)")
	fs.DurationVar(&cfg.warmup, "warmup", warmDefault, "an unrecorded run of this length per setup and mode before the first round; 0 none (env PEERBENCH_WARMUP)")
	fs.BoolVar(&quick, "quick", os.Getenv("PEERBENCH_QUICK") != "", "validate the harness: 1 round of 2 s, no warm-up (env PEERBENCH_QUICK=1)")
	fs.IntVar(&cfg.conns, "conns", 50, "connections of the keep-alive and new-connection modes")
	fs.StringVar(&setups, "setups", envOr("PEERBENCH_SETUPS", strings.Join(defaultSetups, ",")),
		"columns, comma-separated, or \"all\"; of "+strings.Join(allSetups, ", ")+" (env PEERBENCH_SETUPS)")
	fs.StringVar(&modeNames, "modes", envOr("PEERBENCH_MODES", strings.Join(allModes, ",")),
		"rows, comma-separated, of "+strings.Join(allModes, ", ")+" (env PEERBENCH_MODES)")
	fs.StringVar(&cfg.proxyCPU, "proxy-cpu", "0", "CPU list (taskset) every proxy is pinned to")
	fs.StringVar(&cfg.loadCPU, "load-cpu", "1", "CPU list of the load generators, the origin and this program")
	fs.StringVar(&cfg.robotsgate, "robotsgate", "", "robotsgate binary to measure (default: built from this tree)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (configurations, logs) and print its path")
	fs.BoolVar(&cfg.install, "install", true, "install missing Debian packages with apt-get (as root)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: peerbench [flags]\n\nSetups:\n")
		for _, k := range setupKinds {
			fmt.Fprintf(fs.Output(), "  %s: %s\n", k.name, k.summary)
		}
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if quick {
		cfg.rounds, cfg.duration, cfg.warmup = 1, 2*time.Second, 0
	}
	if cfg.rounds < 1 || cfg.rounds > 100 {
		return cfg, fmt.Errorf("-rounds %d: want 1 to 100", cfg.rounds)
	}
	if cfg.duration < time.Second || cfg.duration%time.Second != 0 || cfg.duration > time.Hour {
		return cfg, fmt.Errorf("-duration %v: want whole seconds, 1s to 1h (wrk's unit)", cfg.duration)
	}
	if cfg.warmup < 0 || cfg.warmup%time.Second != 0 || cfg.warmup > time.Hour {
		return cfg, fmt.Errorf("-warmup %v: want whole seconds, at most 1h", cfg.warmup)
	}
	if cfg.conns < 1 || cfg.conns > 10000 {
		return cfg, fmt.Errorf("-conns %d: want 1 to 10000", cfg.conns)
	}
	if setups == "all" {
		setups = strings.Join(allSetups, ",")
	}
	for _, s := range strings.Split(setups, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allSetups, s) {
			return cfg, fmt.Errorf("-setups: unknown %q (known: %s)", s, strings.Join(allSetups, ", "))
		}
		if !slices.Contains(cfg.setups, s) {
			cfg.setups = append(cfg.setups, s)
		}
	}
	// The table's order, whatever the flag's.
	slices.SortFunc(cfg.setups, func(a, b string) int { return slices.Index(allSetups, a) - slices.Index(allSetups, b) })
	for _, name := range strings.Split(modeNames, ",") {
		i := slices.IndexFunc(modes, func(m mode) bool { return m.name == strings.TrimSpace(name) })
		if i < 0 {
			return cfg, fmt.Errorf("-modes: unknown %q (known: %s)", name, strings.Join(allModes, ", "))
		}
		if !slices.ContainsFunc(cfg.modes, func(m mode) bool { return m.name == modes[i].name }) {
			cfg.modes = append(cfg.modes, modes[i])
		}
	}
	slices.SortFunc(cfg.modes, func(a, b mode) int {
		return slices.IndexFunc(modes, func(m mode) bool { return m.name == a.name }) -
			slices.IndexFunc(modes, func(m mode) bool { return m.name == b.name })
	})
	if cfg.proxyCPU == cfg.loadCPU {
		return cfg, errors.New("-proxy-cpu and -load-cpu must differ: the proxy gets a CPU of its own")
	}
	return cfg, nil
}
