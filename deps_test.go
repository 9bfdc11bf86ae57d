package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path; package names below are relative to it, "."
// being the command (package main at the root).
const module = "github.com/robotsgate/robotsgate"

// forbiddenImports is the package structure the README describes
// (Packages), as imports it rules out: no package matching from may depend
// on a package matching to, directly or through others (non-test code).
// "..." matches every package of the module but those in except. A new
// package or a new rule is one more line.
var forbiddenImports = []struct {
	from, to string
	except   []string
	why      string
}{
	{from: "robots", to: "...", except: []string{"internal/editdist"},
		why: "robots is a library of its own: it imports no other package of the module (but a leaf helper of its lint)"},
	{from: "policy", to: "proxy", why: "dependencies point one way: main → proxy → policy → robots"},
	{from: "policy", to: ".", why: "dependencies point one way: main → proxy → policy → robots"},
	{from: "proxy", to: ".", why: "dependencies point one way: main → proxy → policy → robots"},
	{from: "robots", to: "policy", why: "dependencies point one way: main → proxy → policy → robots"},
	{from: "...", to: "proxy", except: []string{".", "proxy", "compliance", "report"},
		why: "only main and the packages of its evidence commands import proxy"},
}

// moduleDeps returns, for every non-test package of the module, the
// packages of the module it depends on (go list's Deps: transitively).
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	deps := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg, _ := rel(fields[0])
		deps[pkg] = []string{}
		for _, d := range fields[1:] {
			if r, ok := rel(d); ok {
				deps[pkg] = append(deps[pkg], r)
			}
		}
	}
	return deps
}

// matches reports whether pkg is pattern, or pattern is "..." and pkg is
// not in except.
func matches(pattern, pkg string, except []string) bool {
	return pattern == pkg || pattern == "..." && !slices.Contains(except, pkg)
}

// TestPackageDependenciesPointOneWay checks forbiddenImports against the
// module's packages as go list sees them.
func TestPackageDependenciesPointOneWay(t *testing.T) {
	deps := moduleDeps(t)
	for _, pkg := range []string{".", "proxy", "policy", "robots"} {
		if _, ok := deps[pkg]; !ok {
			t.Fatalf("go list does not list package %q: the rules would check nothing", pkg)
		}
	}
	for _, rule := range forbiddenImports {
		for pkg, ds := range deps {
			if !matches(rule.from, pkg, rule.except) {
				continue
			}
			for _, d := range ds {
				if matches(rule.to, d, rule.except) && d != pkg {
					t.Errorf("%s depends on %s: %s", pkg, d, rule.why)
				}
			}
		}
	}
	// The direction the rules guard exists: main → proxy → policy → robots.
	for _, edge := range [][2]string{{".", "proxy"}, {"proxy", "policy"}, {"policy", "robots"}} {
		if !slices.Contains(deps[edge[0]], edge[1]) {
			t.Errorf("%s does not depend on %s", edge[0], edge[1])
		}
	}
}
