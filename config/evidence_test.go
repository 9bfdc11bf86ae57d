package config

import (
	"strings"
	"testing"
)

// log.witness and key_permissions: valid settings parse; each invalid one
// is an error naming the key and its line.
func TestWitnessAndKeyPermissions(t *testing.T) {
	const key = "MCowBQYDK2VwAyEAa7bsa2eI7T6w9osdY3JEnlc4" // not 32 bytes
	const good = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
	for _, tc := range []struct {
		name, yaml, want string // want: "" for valid
	}{
		{"a witness", "log:\n  witness:\n    url: https://witness.example:8443/\n    key: " + good + "\n", ""},
		{"refuse", "key_permissions: refuse\n", ""},
		{"key_permissions unknown", "key_permissions: maybe\n", "cfg.yaml:1: key_permissions:"},
		{"http witness", "log:\n  witness:\n    url: http://witness.example/\n    key: " + good + "\n",
			`cfg.yaml:3: log.witness.url: want an https:// URL of the witness, got "http://witness.example/"`},
		{"credentials in the URL", "log:\n  witness:\n    url: https://u:p@witness.example/\n    key: " + good + "\n",
			"cfg.yaml:3: log.witness.url: want a base URL without credentials"},
		{"no key", "log:\n  witness:\n    url: https://witness.example/\n", "cfg.yaml:2: log.witness.key: want the witness's public key"},
		{"a key that is not one", "log:\n  witness:\n    url: https://witness.example/\n    key: " + key + "\n",
			"cfg.yaml:4: log.witness.key: want the witness's public key"},
		{"a key without a URL", "log:\n  witness:\n    key: " + good + "\n", "log.witness.url: required with log.witness.key"},
		{"no audit log", "log:\n  audit: \"\"\n  witness:\n    url: https://witness.example/\n    key: " + good + "\n",
			"log.witness.url: needs an audit log"},
	} {
		_, err := Parse([]byte(tc.yaml), "cfg.yaml")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
