package main

// Tests that keep the documentation (README.md and docs/*.md) true to the
// repository: links resolve, every configuration key, decision value, audit
// field and metric is documented.

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/robotsgate/robotsgate/audit"
	"github.com/robotsgate/robotsgate/config"
)

// docFiles are the documents the tests read: the README and every page of
// docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md pages (%v)", err)
	}
	return append([]string{"README.md"}, pages...)
}

// readText returns a file's contents, failing the test when it cannot be read.
func readText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var (
	fenceRE     = regexp.MustCompile("(?ms)^```.*?^```[ \t]*$")
	codeSpanRE  = regexp.MustCompile("`[^`\n]*`")
	linkRE      = regexp.MustCompile(`\[[^\]\n]*\]\(([^)\s]+)\)`)
	schemeRE    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	headingRE   = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$`)
	inlineURLRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// prose is a markdown document without its fenced code blocks, where
// neither links nor headings are what they look like.
func prose(doc string) string { return fenceRE.ReplaceAllString(doc, "") }

// anchors are the fragment identifiers GitHub gives a document's headings:
// the heading's text in lower case, without markup and punctuation (letters,
// digits, spaces, '-' and '_' kept), spaces turned into '-', a repeated
// anchor suffixed -1, -2...
func anchors(doc string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(prose(doc), -1) {
		text := inlineURLRE.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

// Every relative link of the README and the docs pages names a file that
// exists, and a #fragment names a heading of the markdown file it points to.
func TestDocsRelativeLinksResolve(t *testing.T) {
	links := 0
	for _, file := range docFiles(t) {
		doc := readText(t, file)
		text := codeSpanRE.ReplaceAllString(prose(doc), "")
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if schemeRE.MatchString(target) {
				continue // https:, mailto:...: not checked (no internet in tests)
			}
			links++
			path, fragment, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s: link %q: %v", file, target, err)
					continue
				}
			}
			if fragment == "" {
				continue
			}
			if !strings.HasSuffix(resolved, ".md") {
				t.Errorf("%s: link %q: a fragment into a file that is not markdown", file, target)
				continue
			}
			if !anchors(readText(t, resolved))[fragment] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", file, target, resolved, fragment)
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative links found: the link pattern no longer matches the documents")
	}
}

// The anchors follow GitHub's rules for the headings these documents use.
func TestDocsAnchorsFollowGitHubRules(t *testing.T) {
	doc := "# Running robotsgate\n## /explain\n## Evidence: archive and audit\n## The `robots` package\n" +
		"```sh\n# not a heading\n```\n## Clients\n## Clients\n"
	got := anchors(doc)
	for _, want := range []string{"running-robotsgate", "explain", "evidence-archive-and-audit",
		"the-robots-package", "clients", "clients-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block was taken for a heading")
	}
}

// configKeys lists the keys of config.yaml as dotted paths
// ("pacing.redis.addr"), and the keys of list entries, which config.yaml
// shows in comments only, as "clients[].cidr" (the config package's own
// error notation, without the index). Dotted paths, not leaf names: a leaf
// name alone is ambiguous (enabled is under mitm and trap, robots is a
// section and a key of sites entries).
func configKeys(t *testing.T) []string {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(readText(t, "config.yaml")), &root); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind == yaml.DocumentNode {
			walk(n.Content[0], prefix)
			return
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := prefix + n.Content[i].Value
			keys = append(keys, key)
			walk(n.Content[i+1], key+".")
		}
	}
	walk(&root, "")
	ct := reflect.TypeFor[config.Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		list, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		et := f.Type.Elem()
		for j := range et.NumField() {
			if name, _, _ := strings.Cut(et.Field(j).Tag.Get("yaml"), ","); name != "" && name != "-" {
				keys = append(keys, list+"[]."+name)
			}
		}
	}
	return keys
}

// Every key of config.yaml, and every key of a clients or sites entry, is
// named in docs/configuration.md as code: `pacing.max_wait`, or a longer
// path starting with it (`robots` is named by `robots.min_ttl`).
func TestDocsConfigurationNamesEveryConfigKey(t *testing.T) {
	doc := readText(t, "docs/configuration.md")
	keys := configKeys(t)
	for _, want := range []string{"listen", "pacing.redis.addr", "clients", "clients[].purposes", "sites[].delay"} {
		if !slices.Contains(keys, want) {
			t.Fatalf("config keys %q lack %q: the walk of config.yaml is broken", keys, want)
		}
	}
	for _, key := range keys {
		if !regexp.MustCompile("`" + regexp.QuoteMeta(key) + "[`.\\[: ]").MatchString(doc) {
			t.Errorf("docs/configuration.md does not name the key %s", key)
		}
	}
}

// The decision values of docs/decisions.md's table are exactly the
// decisions the code makes (audit.Decisions), in its order, each with its
// status code.
func TestDocsListEveryDecision(t *testing.T) {
	doc := readText(t, "docs/decisions.md")
	const marker = "<!-- decisions: a test keeps this table equal to audit.Decisions() -->"
	_, table, ok := strings.Cut(doc, marker)
	if !ok {
		t.Fatalf("docs/decisions.md lacks the marker %q", marker)
	}
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n")
	status := map[string]string{}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| ([^|]+) \\|").FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
		status[m[1]] = m[2]
	}
	var code []string
	for _, d := range audit.Decisions() {
		code = append(code, d.Name)
		cell, ok := status[d.Name]
		switch {
		case !ok:
		case d.Status == 0 && cell != "none" && cell != "the origin's":
			t.Errorf("decision %s sends no status of its own, the table says %q", d.Name, cell)
		case d.Status != 0 && !strings.Contains(cell, strconv.Itoa(d.Status)):
			t.Errorf("decision %s sends %d, the table says %q", d.Name, d.Status, cell)
		}
	}
	code = slices.Compact(code) // trap-denied covers two verdicts
	if !slices.Equal(documented, code) {
		t.Errorf("docs/decisions.md decisions %q,\nthe code's %q", documented, code)
	}
}

// docs/operations.md names every field of the audit log (audit.Record)
// and every metric the code registers (the "robotsgate_..." names in its
// non-test sources).
func TestDocsOperationsNameEveryAuditFieldAndMetric(t *testing.T) {
	doc := readText(t, "docs/operations.md")
	rt := reflect.TypeFor[audit.Record]()
	fields := 0
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		fields++
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/operations.md does not name the audit field %s", name)
		}
	}
	metricRE := regexp.MustCompile(`"(robotsgate_[a-z0-9_]+)"`)
	var metrics []string
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && path != "." && strings.HasPrefix(e.Name(), ".") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range metricRE.FindAllStringSubmatch(string(data), -1) {
			metrics = append(metrics, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fields == 0 || len(metrics) == 0 {
		t.Fatalf("found %d audit fields and %d metrics: the lookup is broken", fields, len(metrics))
	}
	for _, name := range metrics {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/operations.md does not name the metric %s", name)
		}
	}
}

// The YAML examples of docs/configuration.md are valid configurations.
func TestDocsConfigurationRecipesParse(t *testing.T) {
	doc := readText(t, "docs/configuration.md")
	blocks := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```").FindAllStringSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("no yaml blocks in docs/configuration.md")
	}
	for i, b := range blocks {
		if _, err := config.Parse([]byte(b[1]), "recipe "+strconv.Itoa(i+1)); err != nil {
			t.Errorf("recipe %d does not parse: %v\n%s", i+1, err, b[1])
		}
	}
}
