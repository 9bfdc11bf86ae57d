package certs

import (
	"fmt"
	"path/filepath"
	"strings"
)

// TrustInstructions returns a short multi-line text, for a terminal, telling
// a user how to make clients trust the CA certificate at certPath: per
// command (curl --cacert), per process (SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
// NODE_EXTRA_CA_CERTS) and system-wide on Debian/Ubuntu. The path is made
// absolute when possible and shell-quoted when needed, so the commands can be
// pasted as they are.
func TrustInstructions(certPath string) string {
	p := certPath
	if abs, err := filepath.Abs(certPath); err == nil {
		p = abs
	}
	q := shellQuote(p)
	var b strings.Builder
	fmt.Fprintf(&b, "robotsgate intercepts HTTPS with its own CA: %s\n", p)
	b.WriteString("Clients must trust it (only clients you route through robotsgate need to):\n")
	fmt.Fprintf(&b, "  curl:            curl --cacert %s ...\n", q)
	fmt.Fprintf(&b, "  OpenSSL, Go...:  export SSL_CERT_FILE=%s   (replaces the default roots for that process)\n", q)
	fmt.Fprintf(&b, "  Python requests: export REQUESTS_CA_BUNDLE=%s\n", q)
	fmt.Fprintf(&b, "  Node.js:         export NODE_EXTRA_CA_CERTS=%s\n", q)
	fmt.Fprintf(&b, "  Debian/Ubuntu system store (as root):\n")
	fmt.Fprintf(&b, "    cp %s /usr/local/share/ca-certificates/robotsgate.crt && update-ca-certificates\n", q)
	b.WriteString("Keep the key next to it private: whoever has it can impersonate any site to these clients.\n")
	return b.String()
}

// shellQuote returns s unchanged when it is safe in a POSIX shell word, else
// single-quoted.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !isShellSafe(r) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isShellSafe reports whether r needs no quoting in a shell word.
func isShellSafe(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("/._-+,:@%=", r)
}
