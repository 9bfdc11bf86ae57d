package main

import (
	"bufio"
	"bytes"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the module path; package names below are relative to it, "."
// being the command (package main at the root).
const module = "github.com/robotsgate/robotsgate"

// forbiddenImports is the package structure docs/architecture.md describes
// as imports it rules out: no package matching from may depend
// on a package matching to, directly or through others (non-test code);
// for a direct rule, directly.
// "..." matches every package of the module but those in except. A new
// package or a new rule is one more line.
var forbiddenImports = []struct {
	from, to string
	except   []string
	// direct: only from's own imports are checked, not what they import
	// in turn: a package may be kept from using another itself while a
	// package it uses needs it (policy reaches auditlog through the
	// robots.txt archive, whose fetch log is chained as the audit log is).
	direct bool
	why    string
}{
	{from: "robots", to: "...", except: []string{"internal/editdist"},
		why: "robots is a library of its own: it imports no other package of the module (but a leaf helper of its lint)"},
	{from: "policy", to: "proxy", why: "dependencies point one way: main → proxy → policy → robots"},
	{from: "policy", to: ".", why: "dependencies point one way: main → proxy → policy → robots"},
	{from: "proxy", to: ".", why: "dependencies point one way: main → proxy → policy → robots"},
	{from: "robots", to: "policy", why: "dependencies point one way: main → proxy → policy → robots"},
	{from: "listener", to: "...", why: "listener guards sockets (accept errors, connection caps): a leaf that imports no other package of the module"},
	{from: "wire", to: "...", why: "wire guards the bytes of client connections (framing, sniffing, TLS handshakes, connection wrappers): a leaf below proxy, policy and audit that imports no other package of the module"},
	{from: "...", to: "proxy", except: []string{".", "proxy"},
		why: "only main imports proxy; the evidence commands read the audit log through audit and auditlog"},
	{from: "audit", to: "...", why: "audit is what the proxy and the offline readers share: it imports no other package of the module"},
	{from: "auditlog", to: "...", except: []string{"audit"},
		why: "auditlog writes and chains the audit log for the proxy and the offline readers: it imports only audit (the record it writes)"},
	{from: "policy", to: "auditlog", direct: true, why: "policy names decisions and signals (audit); writing the log, its chain and checkpoints is the proxy's"},
	{from: "admin", to: "auditlog", direct: true, why: "admin renders records and names decisions (audit); writing the log is the proxy's"},
	{from: "rsl", to: "...", except: []string{"robots", "origin", "internal/editdist"},
		why: "rsl parses and judges RSL documents without I/O: it imports only robots (its URL matcher), origin (canonical hosts) and what they import"},
	{from: "botauth", to: "...", why: "botauth signs requests and renders keys: a leaf that imports no other package of the module (config validates with it)"},
	{from: "pac", to: "...", why: "pac writes PAC files: a leaf that imports no other package of the module"},
	{from: "paycrawl", to: "...", why: "paycrawl reads and writes prices: a leaf that imports no other package of the module (config validates with it)"},
	{from: "tdmrep", to: "...", except: []string{"robots", "internal/editdist"},
		why: "tdmrep parses and matches tdmrep.json without I/O (doccache fetches and caches it): it imports only robots (its path matcher) and what it imports"},
	{from: "memlimit", to: "...", why: "memlimit computes and sets the soft memory limit: a leaf that imports no other package of the module"},
	{from: "redisconn", to: "...", why: "redisconn connects to a fleet's Redis: a leaf that imports no other package of the module (pacing and fleet take the connection it makes)"},
	{from: "admin", to: "proxy", why: "the admin listener renders what the proxy gives it through an interface, and keeps the status page's counters the proxy feeds; the proxy imports admin"},
	{from: "upstream", to: "...", except: []string{"audit", "auditlog", "botauth", "config", "egress", "metrics", "paycrawl", "wire"}, direct: true,
		why: "upstream sends what the proxy allowed and records what came back: it knows the egress guard, the parent proxy, signing keys and prices, never a decision (policy) or a way in (proxy)"},
	{from: "admin", to: "metrics", why: "admin serves /metrics through its Source (the proxy's registry) and keeps counters of its own for the status page: it needs no instruments"},
	{from: "witness", to: "...", except: []string{"audit"},
		why: "the witness protocol is shared by serve, verify and the witness command: it imports only audit (the checkpoint it witnesses, its signer's fingerprint)"},
	{from: "statelock", to: "...", why: "statelock locks directories for serve, ca init and the witness: a leaf"},
	{from: "fleetredis", to: "...", except: []string{"config", "fleet", "metrics", "pacing", "redisconn"}, direct: true,
		why: "fleetredis opens a fleet's Redis and the stores on it from the configuration: it knows the stores (fleet, pacing) and their connection, never a decision (policy) or a way in (proxy)"},
	{from: "headscan", to: "...", except: []string{"botauth", "htmlmeta", "policy"}, direct: true,
		why: "headscan reads a response's HTML head for the policy (policy.Head) without consuming it: it knows the tags (htmlmeta) and a client's own signature (botauth), never a way in (proxy)"},
	{from: "limits", to: "...", except: []string{"origin", "robots/resolver"}, direct: true,
		why: "limits counts what one client or origin made robotsgate do, for the proxy to ask: it knows origins and the resolver's cold gate, never a decision (policy) or a way in (proxy)"},
	{from: "evidence", to: "...", except: []string{"archive", "audit", "auditlog", "config", "doccache", "metrics", "robots/resolver", "witness"}, direct: true,
		why: "evidence opens and writes what robotsgate keeps as evidence (the audit log, its witness, the archive of fetched documents): it takes records and answers, never a decision (policy) or a way in (proxy)"},
	{from: "refusal", to: "...", except: []string{"audit", "egress", "origin", "pacing", "policy", "robots/resolver", "tdmrep"}, direct: true,
		why: "refusal describes and renders what robotsgate answers in place of the origin: it reads decisions (policy) and the causes they name, never a way in (proxy), the upstream side or the configuration"},
}

// moduleDeps returns, for every non-test package of the module, the
// packages of the module it depends on: field is go list's Deps
// (transitively) or Imports (its own imports).
func moduleDeps(t *testing.T, field string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .`+field+`}} {{.}}{{end}}`, "./...").Output()
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
	deps, imports := moduleDeps(t, "Deps"), moduleDeps(t, "Imports")
	for _, pkg := range []string{".", "proxy", "policy", "robots"} {
		if _, ok := deps[pkg]; !ok {
			t.Fatalf("go list does not list package %q: the rules would check nothing", pkg)
		}
	}
	for _, rule := range forbiddenImports {
		checked := deps
		if rule.direct {
			checked = imports
		}
		for pkg, ds := range checked {
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
	for _, edge := range [][2]string{{".", "proxy"}, {"proxy", "policy"}, {"policy", "robots"}, {"proxy", "upstream"}} {
		if !slices.Contains(deps[edge[0]], edge[1]) {
			t.Errorf("%s does not depend on %s", edge[0], edge[1])
		}
	}
}

// documentFiles are the files of package doccache that hold one kind of
// document each, by the package that parses it: only they import it.
var documentFiles = map[string]string{"tdmrep": "tdmrep.go", "rsl": "rsl.go"}

// Package doccache holds its generic machinery and the caches of the
// documents fetched beside robots.txt, each kind in a file of its own:
// the machinery knows no document, and one kind's cache not another's.
func TestDocCacheMachineryKnowsNoDocument(t *testing.T) {
	files, err := filepath.Glob("doccache/*.go")
	if err != nil || len(files) < 3 {
		t.Fatalf("doccache/*.go: %d files, %v", len(files), err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			pkg, ok := strings.CutPrefix(path, module+"/")
			if want, isDoc := documentFiles[pkg]; ok && isDoc && filepath.Base(file) != want {
				t.Errorf("%s imports %s: only doccache/%s, its document's cache, may", file, pkg, want)
			}
		}
	}
}

// The evidence commands' packages read files offline: they must not pull in
// the proxy or its network dependencies (goproxy, go-redis, Prometheus),
// which a reviewer's machine has no use for and which would make them move
// with every change of the proxy.
func TestEvidencePackagesDoNotDependOnTheProxy(t *testing.T) {
	forbidden := []string{
		"github.com/robotsgate/robotsgate/proxy",
		"github.com/robotsgate/robotsgate/policy",
		"github.com/robotsgate/robotsgate/pacing",
		"github.com/elazarl/goproxy",
		"github.com/redis/go-redis/v9",
		"github.com/prometheus/client_golang/prometheus",
	}
	for _, pkg := range []string{"./audit", "./auditlog", "./compliance", "./report", "./witness"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed %d packages: %q", pkg, len(deps), deps)
		}
		for _, dep := range deps {
			if slices.Contains(forbidden, dep) {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
