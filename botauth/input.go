package botauth

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Bounds of a client's Signature-Input that CoveredFields reads: a longer
// or larger one is an error, and the caller then changes nothing.
const (
	MaxSignatureInput = 8 << 10 // bytes, all field lines together
	maxSignatures     = 16
	maxComponents     = 64
)

var errTooLarge = errors.New("botauth: Signature-Input too large")

// CoveredFields returns the names of the components the signatures of a
// request's Signature-Input cover (RFC 9421 §4.1: a Dictionary of Inner
// Lists of component identifiers), lower-case, each once: header field
// names and derived components ("@authority"). Its field lines are joined
// as one Dictionary (RFC 8941 §3.2). A value that does not parse as that
// structure, or that goes beyond the bounds above, is an error: the caller
// must then assume every field is covered.
func CoveredFields(h http.Header) ([]string, error) {
	lines := h.Values(HeaderSignatureInput)
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	if n > MaxSignatureInput {
		return nil, errTooLarge
	}
	return parseCovered(strings.Join(lines, ","))
}

// parseCovered parses a Signature-Input Dictionary and returns the union
// of its members' component names.
func parseCovered(s string) ([]string, error) {
	if len(s) > MaxSignatureInput {
		return nil, errTooLarge
	}
	p := sfParser{s: s}
	var names []string
	p.skipSP()
	if p.done() {
		return nil, errors.New("botauth: empty Signature-Input")
	}
	for members := 0; ; members++ {
		if members == maxSignatures {
			return nil, errTooLarge
		}
		if _, err := p.key(); err != nil {
			return nil, err
		}
		if !p.eat('=') {
			return nil, p.errorf("a signature must be an inner list")
		}
		comps, err := p.innerList()
		if err != nil {
			return nil, err
		}
		for _, c := range comps {
			if !slices.Contains(names, c) {
				if len(names) == maxComponents {
					return nil, errTooLarge
				}
				names = append(names, c)
			}
		}
		p.skipOWS()
		if p.done() {
			return names, nil
		}
		if !p.eat(',') {
			return nil, p.errorf("expected ','")
		}
		p.skipOWS()
		if p.done() {
			return nil, p.errorf("trailing ','")
		}
	}
}

// sfParser reads the subset of RFC 8941 a Signature-Input is made of.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *sfParser) eat(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

func (p *sfParser) skipSP() {
	for p.peek() == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for c := p.peek(); c == ' ' || c == '\t'; c = p.peek() {
		p.i++
	}
}

func (p *sfParser) errorf(format string, args ...any) error {
	return fmt.Errorf("botauth: Signature-Input at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// key reads an sf key: (lcalpha / "*") *(lcalpha / DIGIT / "_" / "-" / "." / "*").
func (p *sfParser) key() (string, error) {
	start := p.i
	if c := p.peek(); !(c >= 'a' && c <= 'z' || c == '*') {
		return "", p.errorf("expected a key")
	}
	p.i++
	for c := p.peek(); c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*'; c = p.peek() {
		p.i++
	}
	return p.s[start:p.i], nil
}

// innerList reads "(" sf-string params ... ")" params and returns the
// strings, lower-cased.
func (p *sfParser) innerList() ([]string, error) {
	if !p.eat('(') {
		return nil, p.errorf("a signature must be an inner list")
	}
	var out []string
	for {
		p.skipSP()
		if p.eat(')') {
			return out, p.params()
		}
		if len(out) == maxComponents {
			return nil, errTooLarge
		}
		if p.peek() != '"' {
			return nil, p.errorf("a component identifier must be a string")
		}
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		out = append(out, strings.ToLower(name))
		if err := p.params(); err != nil {
			return nil, err
		}
		if c := p.peek(); c != ' ' && c != ')' {
			return nil, p.errorf("expected ' ' or ')'")
		}
	}
}

// params reads *( ";" *SP key [ "=" bare-item ] ).
func (p *sfParser) params() error {
	for p.eat(';') {
		p.skipSP()
		if _, err := p.key(); err != nil {
			return err
		}
		if p.eat('=') {
			if err := p.bareItem(); err != nil {
				return err
			}
		}
	}
	return nil
}

// bareItem skips an integer, decimal, string, token, byte sequence or
// boolean.
func (p *sfParser) bareItem() error {
	switch c := p.peek(); {
	case c == '"':
		_, err := p.str()
		return err
	case c == '-' || c >= '0' && c <= '9':
		p.eat('-')
		digits, dot := 0, false
		for c := p.peek(); c >= '0' && c <= '9' || c == '.' && !dot; c = p.peek() {
			if c == '.' {
				dot = true
			} else {
				digits++
			}
			p.i++
		}
		if digits == 0 || digits > 15 || p.s[p.i-1] == '.' {
			return p.errorf("bad number")
		}
		return nil
	case c == ':':
		p.i++
		for c := p.peek(); c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='; c = p.peek() {
			p.i++
		}
		if !p.eat(':') {
			return p.errorf("unterminated byte sequence")
		}
		return nil
	case c == '?':
		p.i++
		if !p.eat('0') && !p.eat('1') {
			return p.errorf("bad boolean")
		}
		return nil
	case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '*':
		p.i++
		for c := p.peek(); c > 0x20 && c < 0x7f && !strings.ContainsRune("\"(),;<=>?@[\\]{} ", rune(c)) || c == ':' || c == '/'; c = p.peek() {
			p.i++
		}
		return nil
	}
	return p.errorf("expected a value")
}

// str reads an sf-string (the opening quote is next).
func (p *sfParser) str() (string, error) {
	p.i++ // '"'
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String(), nil
		case c == '\\':
			if p.done() || p.s[p.i] != '"' && p.s[p.i] != '\\' {
				return "", p.errorf("bad escape")
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c < 0x20 || c > 0x7e:
			return "", p.errorf("a string holds printable ASCII only")
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("unterminated string")
}
