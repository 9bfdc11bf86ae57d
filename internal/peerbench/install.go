package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// sbinDirs are where Debian puts daemons, which a non-root PATH lacks.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// findBinary returns name's path on PATH or in sbinDirs, "" if none.
func findBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range sbinDirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// ensurePackages installs the Debian packages of the tools wanted that are
// missing (binary → package), with apt-get as root; otherwise it says what
// to install.
func ensurePackages(wanted map[string]string, logf func(string, ...any)) error {
	var missing []string
	for bin, pkg := range wanted {
		if findBinary(bin) == "" {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("missing Debian packages %s: install them (apt-get install %s) or run as root", strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	logf("installing %s (apt-get)", strings.Join(missing, " "))
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{
		{"update", "-qq"},
		append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...),
	} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for bin, pkg := range wanted {
		if findBinary(bin) == "" {
			return fmt.Errorf("%s still missing after installing %s", bin, pkg)
		}
	}
	return nil
}

// squidBuild is the Squid binary to run and whether it can ssl-bump.
type squidBuild struct {
	bin     string // squid
	libDir  string // its helpers (security_file_certgen, log_file_daemon)
	bump    bool
	version string // "5.7", from squid -v
	how     string // where it came from, for the report
}

// findSquid returns a Squid that can ssl-bump when one can be had. Debian
// builds squid with GnuTLS, which cannot bump; squid-openssl can, but the
// two packages conflict, and the system's squid (which make deps installs
// for the parent-proxy tests) must stay. So when the installed squid
// cannot bump, squid-openssl's .deb of the same release is fetched with
// apt-get download and unpacked into dir: its binary runs from there,
// with the configuration and error pages of the installed squid-common.
func findSquid(dir string, logf func(string, ...any)) (squidBuild, error) {
	bin := findBinary("squid")
	if bin == "" {
		return squidBuild{}, errors.New("squid not found")
	}
	sys, err := describeSquid(bin, filepath.Join(filepath.Dir(filepath.Dir(bin)), "lib", "squid"))
	if err != nil {
		return squidBuild{}, err
	}
	if sys.bump {
		sys.how = "the installed " + bin + " (built with OpenSSL)"
		return sys, nil
	}
	unpacked, err := unpackSquidOpenSSL(dir)
	if err != nil {
		logf("squid-openssl unavailable, no ssl-bump rows: %v", err)
		sys.how = "the installed " + bin + " (GnuTLS: no ssl-bump)"
		return sys, nil
	}
	b, err := describeSquid(filepath.Join(unpacked, "usr", "sbin", "squid"), filepath.Join(unpacked, "usr", "lib", "squid"))
	if err != nil || !b.bump {
		logf("the unpacked squid-openssl cannot bump (%v); no ssl-bump rows", err)
		sys.how = "the installed " + bin + " (GnuTLS: no ssl-bump)"
		return sys, nil
	}
	b.how = "Debian's squid-openssl package, unpacked into the run's temporary directory (it conflicts with the installed squid)"
	return b, nil
}

// describeSquid reads a squid binary's version and build options.
func describeSquid(bin, libDir string) (squidBuild, error) {
	out, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		return squidBuild{}, fmt.Errorf("%s -v: %v\n%s", bin, err, out)
	}
	b := squidBuild{bin: bin, libDir: libDir, bump: bytes.Contains(out, []byte("--with-openssl"))}
	first, _, _ := strings.Cut(string(out), "\n")
	if _, v, ok := strings.Cut(first, "Version "); ok {
		b.version = strings.TrimSpace(v)
	}
	if b.bump {
		if _, err := os.Stat(filepath.Join(libDir, "security_file_certgen")); err != nil {
			return b, fmt.Errorf("squid built with OpenSSL but no helper: %w", err)
		}
	}
	return b, nil
}

// unpackSquidOpenSSL downloads squid-openssl's .deb into dir and unpacks
// it there, returning the root of the unpacked tree.
func unpackSquidOpenSSL(dir string) (string, error) {
	deb := filepath.Join(dir, "deb")
	// apt-get download runs as _apt when it can: the directory must be
	// writable by it, or apt warns and downloads as root anyway.
	if err := os.MkdirAll(deb, 0o777); err != nil {
		return "", err
	}
	os.Chmod(deb, 0o777)
	cmd := exec.Command("apt-get", "download", "-qq", "squid-openssl")
	cmd.Dir = deb
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download squid-openssl: %v\n%s", err, out)
	}
	debs, _ := filepath.Glob(filepath.Join(deb, "squid-openssl_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download squid-openssl left %d .deb files", len(debs))
	}
	root := filepath.Join(dir, "squid-openssl")
	if out, err := exec.Command("dpkg-deb", "-x", debs[0], root).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x: %v\n%s", err, out)
	}
	return root, nil
}

// firstLine runs a command and returns the first line of its output that
// contains want, or "".
func firstLine(want string, name string, args ...string) string {
	out, _ := exec.Command(name, args...).CombinedOutput()
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, want) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
