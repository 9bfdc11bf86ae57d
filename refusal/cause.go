package refusal

import (
	"errors"
	"fmt"

	"github.com/robotsgate/robotsgate/egress"
	"github.com/robotsgate/robotsgate/robots/resolver"
)

// A robots.txt that cannot be fetched refuses every request to its
// origin, so its cause must be plain wherever the operator looks: a class
// (resolver.Result.Cause) in the 503's body and Proxy-Status, with what to
// do about it (CauseHint), which the proxy's WARN line says too.

// CauseHint says what an operator can do about a cause, if anything; err,
// the failure itself, names the egress rule that refused.
func CauseHint(cause string, err error) string {
	switch cause {
	case egress.CauseTLSCert:
		return "the origin's certificate is not trusted: if it is signed by a private CA, add that CA to mitm.upstream_ca"
	case egress.CauseDenied:
		return EgressRule(err)
	case resolver.CauseHTTP407:
		return "the parent proxy refused robotsgate's credentials (upstream.proxy)"
	case egress.CauseDNS:
		return "the name does not resolve where robotsgate runs"
	}
	return ""
}

// EgressRule names the egress rule behind err, a refusal of the egress
// guard: for a refused request (check, /explain), a refused fetch (a
// robots.txt or tdmrep.json redirected to a refused host, or its
// address), lint's fetch.
func EgressRule(err error) string {
	var denied *egress.DeniedError
	var port *egress.PortError
	if errors.As(err, &port) {
		return fmt.Sprintf("port %d is not in egress.allow_ports", port.Port)
	}
	if !errors.As(err, &denied) {
		return "the egress guard refused the destination (see egress: allow_networks, allow_hosts, deny_hosts, deny_hosts_files)"
	}
	switch denied.Class {
	case egress.ListedHost:
		return fmt.Sprintf("the host is on the deny list %s (line %d)", denied.Listed.File, denied.Listed.Line)
	case egress.DeniedHost:
		return "egress.deny_hosts lists the host"
	case egress.NotAllowedHost:
		return "egress.allow_hosts does not list the host"
	case egress.SelfAddress:
		return "the address is robotsgate's own"
	case egress.Unparseable:
		return "the address is not a valid one"
	}
	return "the egress guard refused the address (egress.allow_networks would allow it)"
}

// causeText is how a refusal's body names a cause.
var causeText = map[string]string{
	egress.CauseDenied:             "the egress guard refused the address",
	egress.CauseDNS:                "the name could not be resolved",
	egress.CauseRefused:            "the connection was refused",
	egress.CauseTimeout:            "no answer in time",
	egress.CauseTLSCert:            "the origin's TLS certificate is not trusted",
	egress.CauseTLS:                "TLS failed",
	egress.CauseUnreachable:        "the origin could not be reached",
	resolver.CauseHTTP429:          "the origin answered 429 Too Many Requests",
	resolver.CauseHTTP5xx:          "the origin answered with a server error",
	resolver.CauseHTTP407:          "the parent proxy refused robotsgate's credentials",
	resolver.CauseHTTP1xx:          "the origin answered without a final status",
	resolver.CauseTooManyRedirects: "too many redirects",
}

// robotsProxyError is the Proxy-Status error type of an unreachable
// robots.txt refusal: the RFC 9209 name of a network cause;
// proxy_configuration_error when the parent proxy refused robotsgate's
// credentials (as a forwarded request's 502 says: the fault is robotsgate's
// configuration, not the origin's); else http_request_denied (the proxy
// refuses; the origin did answer).
func robotsProxyError(cause string) string {
	switch cause {
	case egress.CauseDenied, egress.CauseDNS, egress.CauseRefused, egress.CauseTimeout,
		egress.CauseTLSCert, egress.CauseTLS, egress.CauseUnreachable:
		return cause
	case resolver.CauseHTTP407:
		return "proxy_configuration_error"
	}
	return "http_request_denied"
}
