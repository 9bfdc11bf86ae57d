package botauth

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/dunglas/httpsfv"
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

// parseCovered parses a Signature-Input Dictionary (RFC 9651, with
// github.com/dunglas/httpsfv) and returns the union of its members'
// component names: each member must be an Inner List of Strings.
func parseCovered(s string) ([]string, error) {
	if len(s) > MaxSignatureInput {
		return nil, errTooLarge
	}
	dict, err := httpsfv.UnmarshalDictionary([]string{s})
	if err != nil {
		return nil, fmt.Errorf("botauth: Signature-Input: %w", err)
	}
	if len(dict.Names()) == 0 {
		return nil, errors.New("botauth: empty Signature-Input")
	}
	if len(dict.Names()) > maxSignatures {
		return nil, errTooLarge
	}
	names := []string{}
	for _, label := range dict.Names() {
		m, _ := dict.Get(label)
		list, ok := m.(httpsfv.InnerList)
		if !ok {
			return nil, fmt.Errorf("botauth: Signature-Input: signature %q is not an inner list", label)
		}
		for _, it := range list.Items {
			c, ok := it.Value.(string)
			if !ok {
				return nil, fmt.Errorf("botauth: Signature-Input: signature %q covers a component that is not a string", label)
			}
			// Component names are lower-case (RFC 9421 §2.1); a client that
			// wrote "User-Agent" still covers that field.
			if c = strings.ToLower(c); !slices.Contains(names, c) {
				if len(names) == maxComponents {
					return nil, errTooLarge
				}
				names = append(names, c)
			}
		}
	}
	return names, nil
}
