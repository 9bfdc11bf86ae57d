package rsl

import (
	"strings"
)

// MaxLicenses bounds the licences one response or page may name that are
// read (the first ones): each is a document to fetch before the response
// is passed on.
const MaxLicenses = 8

// maxLinkValue bounds a Link field value that is read: a longer one is
// read up to the bound (a link cut there is dropped), as no licence
// reference needs more.
const maxLinkValue = 16 << 10

// LinkLicenses returns the URI references of the RSL licences that Link
// header field values name (RFC 8288): the links whose rel parameter lists
// "license" and whose type parameter is MediaType (ignoring case), in
// order, at most MaxLicenses. A reference is returned as written, to be
// resolved against the response's URL. Malformed link-values are skipped;
// commas and semicolons inside quoted strings and inside <…> are read as
// RFC 8288 says.
func LinkLicenses(values []string) []string {
	var out []string
	for _, v := range values {
		if len(v) > maxLinkValue {
			v = v[:maxLinkValue]
		}
		for len(v) > 0 && len(out) < MaxLicenses {
			var ref string
			var params []string
			var ok bool
			ref, params, v, ok = nextLink(v)
			if ok && IsLicenseLink(param(params, "rel"), param(params, "type")) {
				out = append(out, ref)
			}
		}
	}
	return out
}

// IsLicenseLink reports whether a link's rel and type (a Link header's
// parameters, an HTML <link>'s attributes) name an RSL licence: rel lists
// "license" among its space-separated tokens and type is MediaType, both
// ignoring ASCII case. A rel=license link of another or no type (a Creative
// Commons page, say) is not an RSL document.
func IsLicenseLink(rel, typ string) bool {
	mt, _, _ := strings.Cut(typ, ";")
	if !strings.EqualFold(strings.TrimSpace(mt), MediaType) {
		return false
	}
	for _, r := range strings.Fields(rel) {
		if strings.EqualFold(r, "license") {
			return true
		}
	}
	return false
}

// nextLink reads one link-value from the start of v: "<ref>" then
// ";"-separated parameters, up to the next top-level comma. ok is false
// for a link-value that does not start with '<' or whose '>' is missing;
// rest is what follows its comma either way.
func nextLink(v string) (ref string, params []string, rest string, ok bool) {
	v = strings.TrimLeft(v, " \t,")
	if v == "" {
		return "", nil, "", false
	}
	if v[0] != '<' {
		return "", nil, skipValue(v), false
	}
	end := strings.IndexByte(v, '>')
	if end < 0 {
		return "", nil, "", false
	}
	ref, v = strings.TrimSpace(v[1:end]), v[end+1:]
	// Parameters up to the next comma outside a quoted string.
	var cur strings.Builder
	quoted, escaped := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
			cur.WriteByte(c)
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
			cur.WriteByte(c)
		case !quoted && c == ';':
			params = append(params, cur.String())
			cur.Reset()
		case !quoted && c == ',':
			params = append(params, cur.String())
			return ref, params, v[i+1:], ref != ""
		default:
			cur.WriteByte(c)
		}
		if len(params) > 32 {
			return "", nil, skipValue(v[i:]), false
		}
	}
	params = append(params, cur.String())
	return ref, params, "", ref != "" && !quoted
}

// skipValue returns what follows the next top-level comma of v.
func skipValue(v string) string {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '"':
			quoted = !quoted
		case v[i] == '\\' && quoted:
			i++
		case v[i] == ',' && !quoted:
			return v[i+1:]
		}
	}
	return ""
}

// param returns the value of the first parameter named name (ignoring
// case), unquoted; "" when absent.
func param(params []string, name string) string {
	for _, p := range params {
		k, val, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(k), name) {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		return val
	}
	return ""
}
