package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func clearEnv(t *testing.T) {
	for _, k := range []string{"PEERBENCH_ROUNDS", "PEERBENCH_DURATION", "PEERBENCH_WARMUP", "PEERBENCH_SETUPS", "PEERBENCH_MODES", "PEERBENCH_QUICK"} {
		t.Setenv(k, "")
	}
}

func TestParseFlagsDefaultsMatchTheIssue(t *testing.T) {
	clearEnv(t)
	cfg, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.rounds != 2 || cfg.duration != 8*time.Second || cfg.conns != 50 {
		t.Errorf("defaults: %d rounds of %v, %d connections; want 2 of 8s, 50", cfg.rounds, cfg.duration, cfg.conns)
	}
	want := []string{"privoxy", "squid", "goproxy", "nethttp", "robotsgate", "robotsgate-noaudit", "robotsgate-botauth"}
	if !slices.Equal(cfg.setups, want) {
		t.Errorf("setups = %v, want %v", cfg.setups, want)
	}
	if len(cfg.modes) != len(modes) {
		t.Errorf("modes = %v", cfg.modes)
	}
}

func TestParseFlagsQuickAndEnv(t *testing.T) {
	clearEnv(t)
	cfg, err := parseFlags([]string{"-quick"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.rounds != 1 || cfg.duration != 2*time.Second || cfg.warmup != 0 {
		t.Errorf("-quick: %d rounds of %v, warm-up %v", cfg.rounds, cfg.duration, cfg.warmup)
	}
	t.Setenv("PEERBENCH_ROUNDS", "3")
	t.Setenv("PEERBENCH_SETUPS", "robotsgate,privoxy")
	t.Setenv("PEERBENCH_MODES", "https-newconn,http-keepalive")
	cfg, err = parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The table's order, whatever the order given.
	if cfg.rounds != 3 || !slices.Equal(cfg.setups, []string{"privoxy", "robotsgate"}) ||
		cfg.modes[0].name != "http-keepalive" || cfg.modes[1].name != "https-newconn" {
		t.Errorf("from the environment: %d rounds, setups %v, modes %v", cfg.rounds, cfg.setups, cfg.modes)
	}
	cfg, err = parseFlags([]string{"-setups", "all"})
	if err != nil || !slices.Contains(cfg.setups, "squid-log") {
		t.Errorf("-setups all: %v, %v", cfg.setups, err)
	}
}

func TestParseFlagsRejectsBadValues(t *testing.T) {
	clearEnv(t)
	for _, args := range [][]string{
		{"-setups", "nginx"},
		{"-modes", "h3"},
		{"-duration", "1500ms"},
		{"-rounds", "0"},
		{"-conns", "0"},
		{"-proxy-cpu", "1", "-load-cpu", "1"},
		{"extra"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%s): no error", strings.Join(args, " "))
		}
	}
}
