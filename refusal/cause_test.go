package refusal

import (
	"fmt"
	"testing"

	"github.com/robotsgate/robotsgate/egress"
)

func TestEgressHintNamesTheRuleThatRefused(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&egress.DeniedError{Host: "x.test", Class: egress.ListedHost, Listed: egress.DenyMatch{File: "lists/pirates.txt", Line: 7}},
			"the host is on the deny list lists/pirates.txt (line 7)"},
		{fmt.Errorf("fetch: %w", &egress.DeniedError{Host: "x.test", Class: egress.DeniedHost}), "egress.deny_hosts lists the host"},
		{&egress.DeniedError{Host: "x.test", Class: egress.NotAllowedHost}, "egress.allow_hosts does not list the host"},
		{&egress.DeniedError{Host: "x.test", Class: egress.Loopback}, "the egress guard refused the address (egress.allow_networks would allow it)"},
		{nil, "the egress guard refused the destination (see egress: allow_networks, allow_hosts, deny_hosts, deny_hosts_files)"},
	}
	for _, tt := range tests {
		if got := CauseHint(egress.CauseDenied, tt.err); got != tt.want {
			t.Errorf("CauseHint(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
