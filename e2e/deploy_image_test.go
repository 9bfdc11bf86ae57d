//go:build linux

package e2e

// The deployment kit's container image, built without a daemon by
// deploy/build-image.sh (Debian's buildah) and run with Debian's podman:
// there is no Docker engine here, and deploy/Dockerfile itself is not
// built (its build stage starts from the golang image of Docker Hub, which
// this machine cannot reach); the script builds the same image from the
// same files, and this test checks that the Dockerfile says what the
// image has.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// podmanRun is how podman runs a container on this machine: runc (crun
// refuses the cgroup v1 and v2 hybrid this virtual machine has), the
// limits of this process rather than podman's larger defaults (the
// sandbox does not let them be raised), and the host's network, so that
// the proxy and the origin are on loopback.
func podmanRun(t *testing.T) []string {
	t.Helper()
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	return []string{"run", "--rm", "--runtime", "runc", "--network", "host",
		"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile.Cur, nofile.Cur), "--ulimit", "nproc=1024:1024"}
}

// TestContainerImageProxiesARequest: deploy/build-image.sh builds the
// image from scratch (the static binary, the CA certificates, the user
// robotsgate 65532, the state directory as a volume) as the Dockerfile
// describes it; podman runs it: it proxies a request (200) and refuses a
// disallowed one (403), as the non-root user, writing its CA and keys
// into the volume; the image has no shell; SIGTERM stops it.
func TestContainerImageProxiesARequest(t *testing.T) {
	t.Parallel()
	tools := map[string]string{}
	for _, name := range []string{"buildah", "podman", "runc"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s is not installed (make deps installs Debian's buildah, podman and runc): %v", name, err)
		}
		tools[name] = path
	}
	dir := t.TempDir()
	// podman wants a runroot of at most 50 characters: t.TempDir's are
	// longer.
	short, err := os.MkdirTemp("", "rgpm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	storage := []string{"--root", filepath.Join(short, "storage"), "--runroot", filepath.Join(short, "run"), "--storage-driver", "vfs"}
	const tag = "localhost/robotsgate:e2e"
	script, err := filepath.Abs(filepath.Join("..", "deploy", "build-image.sh"))
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "robotsgate.oci.tar")
	env := cleanEnv("BUILDAH_STORAGE="+strings.Join(storage, " "), "OCI_ARCHIVE="+archive)
	if out, errOut, code := runProgramFor(t, 5*time.Minute, dir, env, "/bin/sh", script, tag); code != 0 {
		t.Fatalf("build-image.sh: exit %d\n%s%s", code, out, errOut)
	}
	if fi, err := os.Stat(archive); err != nil || fi.Size() < 1<<20 {
		t.Errorf("the OCI archive: %v", err)
	}

	// The image is what the Dockerfile says.
	out, errOut, code := runProgram(t, dir, cleanEnv(), tools["podman"], append(storage, "image", "inspect", tag)...)
	var images []struct {
		Config struct {
			User         string
			WorkingDir   string
			Entrypoint   []string
			Cmd          []string
			Volumes      map[string]any
			ExposedPorts map[string]any
		}
		RootFS struct{ Layers []string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &images) != nil || len(images) != 1 {
		t.Fatalf("podman image inspect: exit %d\n%s%s", code, out, errOut)
	}
	img := images[0].Config
	dockerfile := readText(t, filepath.Join("..", "deploy", "Dockerfile"))
	for _, c := range []struct{ got, line string }{
		{img.User, "USER " + img.User},
		{img.WorkingDir, "WORKDIR " + img.WorkingDir},
		{fmt.Sprint(img.Entrypoint), `ENTRYPOINT ["` + strings.Join(img.Entrypoint, `", "`) + `"]`},
		{fmt.Sprint(img.Cmd), `CMD ["` + strings.Join(img.Cmd, `", "`) + `"]`},
		{fmt.Sprint(img.Volumes), "VOLUME /var/lib/robotsgate"},
		{fmt.Sprint(img.ExposedPorts), "EXPOSE 8080 9090"},
		{"", "FROM scratch"},
	} {
		if !strings.Contains(dockerfile, "\n"+c.line+"\n") {
			t.Errorf("deploy/Dockerfile lacks %q (the image has %s)", c.line, c.got)
		}
	}
	if img.User != "65532:65532" || len(img.Volumes) != 1 || img.Volumes["/var/lib/robotsgate"] == nil {
		t.Errorf("image config %+v: want user 65532:65532 and the volume /var/lib/robotsgate", img)
	}

	// Its files: the CA certificates, the user, the state directory.
	mnt, errOut, code := runProgram(t, dir, cleanEnv(), tools["podman"], append(storage, "image", "mount", tag)...)
	if code != 0 {
		t.Fatalf("podman image mount: exit %d: %s", code, errOut)
	}
	root := strings.TrimSpace(mnt)
	if certs, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt")); err != nil || strings.Count(string(certs), "BEGIN CERTIFICATE") < 50 {
		t.Errorf("the image's CA certificates: %v (%d certificates)", err, strings.Count(string(certs), "BEGIN CERTIFICATE"))
	}
	if passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd")); err != nil || !strings.Contains(string(passwd), "\nrobotsgate:x:65532:65532:") {
		t.Errorf("the image's /etc/passwd: %v %q", err, passwd)
	}
	if fi, err := os.Stat(filepath.Join(root, "var/lib/robotsgate")); err != nil || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != 65532 {
		t.Errorf("the image's /var/lib/robotsgate: %v, want a directory of 65532, mode 0700", err)
	}
	runProgram(t, dir, cleanEnv(), tools["podman"], append(storage, "image", "unmount", tag)...)

	// No shell: the image is the binary and its files.
	if _, _, code := runProgram(t, dir, cleanEnv(), tools["podman"], append(append(storage, podmanRun(t)...),
		"--entrypoint", "/bin/sh", tag, "-c", "true")...); code == 0 {
		t.Error("the image has /bin/sh: it is not built from scratch")
	}

	// It runs as 65532, its state in the volume (a directory of the test
	// here, owned by that user as a volume of the image would be), with a
	// configuration that lets it reach the loopback origin.
	state := filepath.Join(dir, "state")
	etc := filepath.Join(dir, "etc")
	for _, d := range []string{state, etc} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(state, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	os.Chmod(etc, 0o755)
	writeFile(t, filepath.Join(etc, "config.yaml"),
		"state_dir: /var/lib/robotsgate\nlisten: 127.0.0.1:0\nadmin_listen: \"\"\negress:\n  allow_networks: [127.0.0.1/32]\n")
	os.Chmod(filepath.Join(etc, "config.yaml"), 0o644)
	cidFile := filepath.Join(dir, "container.id")
	args := append(append(storage, podmanRun(t)...), "--cidfile", cidFile, "-v", etc+":/etc/robotsgate:ro", "-v", state+":/var/lib/robotsgate", tag)
	cmd := exec.Command(tools["podman"], args...)
	logs := newLogBuffer()
	cmd.Stdout, cmd.Stderr, cmd.Env = logs, logs, cleanEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	// SIGTERM goes to the container's process through the runtime (podman
	// kill), not through podman run's signal proxy: under load, podman run
	// once exited on its SIGTERM and left the container running.
	stopContainer := func(signal string) {
		if cid, err := os.ReadFile(cidFile); err == nil {
			runProgram(t, dir, cleanEnv(), tools["podman"], append(storage, "kill", "--signal", signal, strings.TrimSpace(string(cid)))...)
		}
	}
	t.Cleanup(func() {
		stopContainer("TERM")
		select {
		case <-done:
		case <-time.After(stopTimeout):
			stopContainer("KILL")
			cmd.Process.Kill()
			<-done
		}
	})
	var addr string
	if !logs.waitFor(2*startTimeout, done, func(s string) bool {
		if m := proxyOnRE.FindStringSubmatch(s); m != nil {
			addr = m[1]
		}
		return addr != ""
	}) {
		t.Fatalf("the container did not start its proxy:\n%s", logs)
	}
	o := startOrigin(t, false)
	c := dialProxy(t, addr)
	if r := c.get(o.URL + "/public"); r.status != 200 || r.body != "hello from origin: /public" {
		t.Errorf("through the container: %d %q, want the origin's page", r.status, r.body)
	}
	if r := c.get(o.URL + "/private/x"); r.status != 403 || r.header.Get("X-Robotsgate-Decision") != "disallow" {
		t.Errorf("a disallowed path through the container: %d %q, want 403 disallow", r.status, r.header.Get("X-Robotsgate-Decision"))
	}
	for name, mode := range map[string]os.FileMode{"ca.pem": 0o644, "ca-key.pem": 0o600, "evidence-key.pem": 0o600} {
		fi, err := os.Stat(filepath.Join(state, name))
		if err != nil {
			t.Errorf("the volume lacks %s: %v", name, err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != 65532 || fi.Mode().Perm() != mode {
			t.Errorf("%s: owner %d, mode %v; want 65532 and %v", name, st.Uid, fi.Mode().Perm(), mode)
		}
	}
	stopContainer("TERM")
	select {
	case <-done:
	case <-time.After(2 * stopTimeout):
		t.Fatalf("the container did not stop on SIGTERM:\n%s", logs)
	}
	// serve exits 0 only once it has drained; podman run passes the code on.
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the container exited %d on SIGTERM, want 0 (drained and stopped):\n%s", code, lastLines(logs.String(), 5))
	}
}

// runProgramFor is runProgram with a timeout of its own (a build).
func runProgramFor(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		if err != nil {
			code = -1
			if exit, ok := err.(*exec.ExitError); ok {
				code = exit.ExitCode()
			}
		}
		return out.String(), errOut.String(), code
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s %s: still running after %v", name, strings.Join(args, " "), timeout)
		return "", "", -1
	}
}
