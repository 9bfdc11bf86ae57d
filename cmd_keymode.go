package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/robotsgate/robotsgate/config"
)

// privateKeys are the private key files the configuration names, by the
// key that names them: the CA's, the evidence key, the Web Bot Auth keys.
func privateKeys(cfg config.Config) [][2]string {
	keys := [][2]string{{"log.evidence_key", cfg.Log.EvidenceKey}, {"bot_auth.key", cfg.BotAuth.Key}}
	if cfg.MITM.Enabled {
		keys = append([][2]string{{"mitm.ca_key", cfg.MITM.CAKey}}, keys...)
	}
	for i, c := range cfg.Clients {
		keys = append(keys, [2]string{fmt.Sprintf("clients[%d].sign_key", i), cfg.SignKeyPath(c)})
	}
	return keys
}

// checkKeyModes looks at the private key files that exist (those created
// later are created with mode 0600): one that group or others may read or
// write is named with its mode, in a warning, or, with key_permissions:
// refuse, in the error that stops serve.
func checkKeyModes(cfg config.Config, logger *slog.Logger) error {
	var open []string
	for _, k := range privateKeys(cfg) {
		path := k[1]
		if path == "" {
			continue
		}
		st, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k[0], err)
		}
		mode := st.Mode().Perm()
		if mode&0o077 == 0 {
			continue
		}
		msg := fmt.Sprintf("%s %s has mode %04o: %s (chmod 600 %s)", k[0], path, mode, who(mode), path)
		open = append(open, msg)
		if cfg.KeyPermissions != config.KeyPermissionsRefuse {
			logger.Warn("a private key is not private: "+msg, "file", path, "mode", fmt.Sprintf("%04o", mode))
		}
	}
	if len(open) > 0 && cfg.KeyPermissions == config.KeyPermissionsRefuse {
		return fmt.Errorf("private keys that others may use, and key_permissions: refuse: %s", strings.Join(open, "; "))
	}
	return nil
}

// who says who besides the owner the mode lets read or write a file.
func who(mode fs.FileMode) string {
	var out []string
	for _, c := range []struct {
		bit  fs.FileMode
		what string
	}{{0o040, "its group may read it"}, {0o020, "its group may write it"}, {0o004, "anyone may read it"}, {0o002, "anyone may write it"}} {
		if mode&c.bit != 0 {
			out = append(out, c.what)
		}
	}
	if len(out) == 0 {
		return "its group or others"
	}
	return strings.Join(out, ", ")
}
