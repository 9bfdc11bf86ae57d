package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/auditlog"
	"github.com/robotsgate/robotsgate/config"
)

// evidenceKeyCommand is `robotsgate evidence-key [-config FILE]`.
var evidenceKeyCommand = &command{
	name:     "evidence-key",
	synopsis: "[-config FILE]",
	summary:  "print the public key that signs the audit log's checkpoints, for a reviewer to pin",
	details: "Prints the public half of the evidence key (log.evidence_key, in the state directory by\n" +
		"default; serve creates it on first start): its fingerprint and the key itself in base64,\n" +
		"which `robotsgate verify -key` and `robotsgate report -key` take, alone or with the\n" +
		"fingerprint line, as printed: robotsgate verify -key \"$(robotsgate evidence-key)\".\n" +
		"A reviewer who pins it knows that a checkpoint that verifies was signed by this\n" +
		"proxy's key.\n\n" +
		"Exit status: 0 printed, 2 the key could not be read (none yet: start serve once), 3 usage error.",
	usageExit: exitCheckUsage,
	setup: func(fs *flag.FlagSet) runFunc {
		configPath := fs.String("config", "", "configuration `FILE` (YAML) naming log.evidence_key; the built-in defaults without one")
		return func(args []string, s stdio) (int, error) {
			if len(args) > 0 {
				return 0, usageError(fmt.Sprintf("unexpected argument %q", args[0]))
			}
			cfg, err := loadConfig(*configPath, "", "")
			if err != nil {
				return exitCheckUsage, err
			}
			pub, err := evidencePublicKey(cfg)
			if err != nil {
				return 2, err
			}
			fmt.Fprintf(s.out, "fingerprint %s\npublic key  %s\n", audit.KeyFingerprint(pub), base64.StdEncoding.EncodeToString(pub))
			return 0, nil
		}
	},
}

// evidencePublicKey reads the public half of the configuration's evidence
// key.
func evidencePublicKey(cfg config.Config) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(cfg.Log.EvidenceKey)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no evidence key at %s yet: robotsgate serve creates it on first start", cfg.Log.EvidenceKey)
	}
	if err != nil {
		return nil, fmt.Errorf("evidence key: %w", err)
	}
	key, err := auditlog.ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("evidence key %s: %w", cfg.Log.EvidenceKey, err)
	}
	return key.Public().(ed25519.PublicKey), nil
}

// parsePublicKey reads a key as evidence-key prints it: the base64 key
// alone, or evidence-key's whole output (its fingerprint line and its
// "public key" line), so that `verify -key "$(robotsgate evidence-key)"`
// works. A fingerprint given with the key must be the key's.
func parsePublicKey(text string) (ed25519.PublicKey, error) {
	keyText, fingerprint := strings.TrimSpace(text), ""
	if strings.ContainsAny(keyText, " \t\n") {
		keyText = ""
		for _, line := range strings.Split(text, "\n") {
			name, value, _ := strings.Cut(strings.TrimSpace(line), " ")
			switch value = strings.TrimSpace(value); {
			case name == "fingerprint":
				fingerprint = value
			case name == "public" && strings.HasPrefix(value, "key "):
				keyText = strings.TrimSpace(strings.TrimPrefix(value, "key "))
			}
		}
	}
	raw, err := base64.StdEncoding.DecodeString(keyText)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("-key %q: want the base64 public key robotsgate evidence-key prints (or its whole output)", text)
	}
	key := ed25519.PublicKey(raw)
	if fingerprint != "" && fingerprint != audit.KeyFingerprint(key) {
		return nil, fmt.Errorf("-key: the fingerprint %s is not the key's (%s)", fingerprint, audit.KeyFingerprint(key))
	}
	return key, nil
}
