package config

import (
	"math"

	"github.com/robotsgate/robotsgate/internal/editdist"

	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is one problem found in a configuration.
type Error struct {
	File string // the name given to Parse (the path for Load); "" if none
	Line int    // 1-based line in File; 0 if unknown
	Key  string // dotted path such as "pacing.max_wait" or "clients[1].mode"; "" for YAML syntax errors
	Msg  string // what is wrong
}

// Error formats e as "file:line: key: message", leaving out what is unknown.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads and parses the config file at path (see Parse); error messages
// name the file by path.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes a YAML configuration over Default and validates it. name is
// used in error messages ("config.yaml:12: ..."); it may be "". An empty
// document gives Default. On error the returned Config is the zero value and
// the error joins one *Error per problem found, in line order.
func Parse(data []byte, name string) (Config, error) {
	cfg := Default()
	d := &decoder{file: name, lines: map[string]int{}, failed: map[string]bool{}, limit: max(minNodeLimit, len(data))}
	if root, err := readDocument(data, name); err != nil {
		return Config{}, err
	} else if root != nil {
		d.decode(root, reflect.ValueOf(&cfg).Elem(), "")
	}
	cfg.placeInStateDir(func(key string) bool { _, ok := d.lines[key]; return ok })
	v := &validator{file: name, lines: d.lines, skip: d.failed}
	if d.nodes <= d.limit { // else cfg is half decoded: validating it only adds noise
		v.validate(&cfg)
	}
	if errs := append(d.errs, v.errs...); len(errs) > 0 {
		return Config{}, joinErrors(errs)
	}
	return cfg, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// readDocument parses data into a node tree and returns its top-level node,
// or nil for an empty document.
func readDocument(data []byte, name string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	// Decoding into a yaml.Node makes KnownFields moot; the strict checks
	// (unknown keys, types) are done by decoder.decode below, with paths.
	dec.KnownFields(true)
	var doc yaml.Node
	if err := dec.Decode(&doc); err == io.EOF {
		return nil, nil
	} else if err != nil {
		return nil, syntaxError(err, data, name)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, syntaxError(err, data, name)
		}
		return nil, &Error{File: name, Line: extra.Line, Msg: "a config file holds one YAML document; remove this \"---\" and what follows"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if isNull(root) {
		return nil, nil
	}
	return root, nil
}

// syntaxError turns a YAML parse error into an *Error with its line.
func syntaxError(err error, data []byte, name string) error {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{File: name, Msg: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	line, _ := strconv.Atoi(m[1])
	return &Error{File: name, Line: problemLine(data, line, m[2]), Msg: "invalid YAML: " + m[2]}
}

// problemLine refines the line of a YAML parse error. yaml.v3 reports the
// line where the enclosing construct starts (a block mapping's first key),
// not the line of the problem; the problem is on the first line from there
// whose prefix of the document fails with the same message. Large inputs
// keep yaml.v3's line.
func problemLine(data []byte, line int, problem string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > 2000 {
		return line
	}
	for k := max(line, 1); k <= len(lines); k++ {
		var n yaml.Node
		err := yaml.Unmarshal(bytes.Join(lines[:k], nil), &n)
		if err != nil && strings.HasSuffix(err.Error(), ": "+problem) {
			return k
		}
	}
	return line
}

func joinErrors(errs []*Error) error {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		switch {
		case a.Line == b.Line:
			return 0
		case a.Line == 0:
			return 1
		case b.Line == 0:
			return -1
		}
		return a.Line - b.Line
	})
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}

// minNodeLimit is the least number of values one decode may visit. The limit
// is max(minNodeLimit, input size): no document without aliases reaches it,
// while aliases decoded once per reference cannot multiply the work.
const minNodeLimit = 100000

// decoder lays a YAML node tree over a Go value by reflection, strictly,
// recording the line of every key it sets and an *Error for every problem.
type decoder struct {
	file   string
	lines  map[string]int // dotted path -> line of its key (or list item)
	errs   []*Error
	failed map[string]bool // paths with an error: not validated further
	nodes  int             // values visited
	limit  int             // most values to visit
}

func (d *decoder) fail(n *yaml.Node, path, format string, args ...any) {
	d.failed[path] = true
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Key: path, Msg: fmt.Sprintf(format, args...)})
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// decode sets v (addressable) from n. path names v in messages.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.nodes++; d.nodes > d.limit {
		if d.nodes == d.limit+1 {
			d.fail(n, path, "document too large (more than %d values after alias expansion)", d.limit)
		}
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
		if err := v.Addr().Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
			d.fail(n, path, "%s", err.Error())
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.String:
		switch {
		case isNull(n):
			v.SetString("")
		case n.Kind == yaml.ScalarNode:
			v.SetString(n.Value)
		default:
			d.fail(n, path, "expected a string, got %s", describe(n))
		}
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.fail(n, path, "expected true or false, got %s", describe(n))
			return
		}
		v.SetBool(b)
	case reflect.Int:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.fail(n, path, "expected an integer, got %s", describe(n))
			return
		}
		if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
			d.fail(n, path, "integer %s out of range", n.Value)
			return
		}
		v.SetInt(i)
	default:
		panic("config: cannot decode into " + v.Type().String())
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if isNull(n) {
		return // an empty section keeps its defaults
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping (key: value lines), got %s", describe(n))
		return
	}
	fields := structFields(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content) && d.nodes <= d.limit; i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
			if k.ShortTag() == "!!merge" {
				d.fail(k, path, "YAML merge keys (<<) are not supported")
			} else {
				d.fail(k, path, "keys must be plain names, got %s", describe(k))
			}
			continue
		}
		key := join(path, k.Value)
		idx, ok := fields[k.Value]
		if !ok {
			d.fail(k, key, "unknown key%s", suggest(k.Value, fields))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.fail(k, key, "set twice (first at line %d)", line)
			continue
		}
		seen[k.Value] = k.Line
		d.lines[key] = k.Line
		d.decode(val, v.Field(idx), key)
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if isNull(n) {
		v.SetZero()
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "expected a list, got %s", describe(n))
		return
	}
	if len(n.Content) == 0 {
		v.SetZero() // [] is stored as nil, like the defaults' empty lists
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		if d.nodes > d.limit {
			break
		}
		key := fmt.Sprintf("%s[%d]", path, i)
		d.lines[key] = item.Line
		if def, ok := elementDefaults[v.Type().Elem()]; ok {
			s.Index(i).Set(reflect.ValueOf(def()))
		}
		d.decode(item, s.Index(i), key)
	}
	v.Set(s)
}

// elementDefaults gives the starting value of list items that have defaults.
var elementDefaults = map[reflect.Type]func() any{
	reflect.TypeFor[Client](): func() any { return DefaultClient() },
	reflect.TypeFor[Site]():   func() any { return DefaultSite() },
}

// structFields maps the YAML names of t's fields to their indexes.
func structFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.IsExported() && name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

// suggest returns " (did you mean x?)" for a near miss, else the valid keys.
func suggest(key string, fields map[string]int) string {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return fields[a] - fields[b] })
	lower := strings.ToLower(key)
	best, bestDist := "", 3
	for _, name := range names {
		dist := editdist.Distance(lower, name)
		if strings.HasPrefix(lower, name) || strings.HasPrefix(name, lower) {
			dist = min(dist, 1)
		}
		if dist < bestDist {
			best, bestDist = name, dist
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	return " (valid keys here: " + strings.Join(names, ", ") + ")"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node holds, for messages.
func describe(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 60 {
		v = v[:57] + "..."
	}
	return strconv.Quote(v)
}

// UnmarshalYAML reads a size such as 256MiB, 512 KiB or 1048576.
func (s *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return fmt.Errorf("expected a size such as 256MiB, got %s", describe(n))
	}
	v, err := parseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("invalid size %s (want a number of bytes, or one with a unit: 512KiB, 256MiB, 1GiB)", describe(n))
	}
	*s = v
	return nil
}

func parseByteSize(text string) (ByteSize, error) {
	t := strings.TrimSpace(text)
	mult := int64(1)
	for _, u := range byteUnits {
		short := u.name[:1] + "B" // KB, MB, GB
		if rest, ok := strings.CutSuffix(t, u.name); ok {
			t, mult = strings.TrimSpace(rest), u.n
			break
		}
		if rest, ok := strings.CutSuffix(t, short); ok {
			t, mult = strings.TrimSpace(rest), u.n
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q", text)
	}
	return ByteSize(n * mult), nil
}

// MarshalYAML writes s with its unit.
func (s ByteSize) MarshalYAML() (any, error) { return s.String(), nil }

// UnmarshalYAML reads "auto", "off" or a size such as 1GiB.
func (m *MemoryLimit) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return fmt.Errorf("expected auto, off or a size such as 1GiB, got %s", describe(n))
	}
	switch strings.TrimSpace(n.Value) {
	case "auto":
		*m = MemoryLimitAuto
		return nil
	case "off":
		*m = MemoryLimitOff
		return nil
	}
	v, err := parseByteSize(n.Value)
	if err != nil || v == 0 {
		return fmt.Errorf("invalid memory limit %s (want auto, off, or a size: 512MiB, 1GiB)", describe(n))
	}
	*m = MemoryLimit(v)
	return nil
}

// MarshalYAML writes m as "auto", "off" or a size.
func (m MemoryLimit) MarshalYAML() (any, error) { return m.String(), nil }

// UnmarshalYAML reads a Go duration string such as "1.5s" or "10m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return fmt.Errorf("expected a duration such as 1.5s or 10m, got %s", describe(n))
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return fmt.Errorf("invalid duration %s (want a Go duration such as 1.5s, 10m or 24h)", describe(n))
	}
	*d = Duration(v)
	return nil
}

// UnmarshalYAML reads a factor: a finite number >= 0, integer or decimal.
func (f *Factor) UnmarshalYAML(n *yaml.Node) error {
	var v float64
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&v) != nil ||
		math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("expected a number >= 0 such as 2 or 1.5, got %s", describe(n))
	}
	*f = Factor(v)
	return nil
}

// MarshalYAML writes d as a Go duration string.
func (d Duration) MarshalYAML() (any, error) {
	return d.String(), nil
}
