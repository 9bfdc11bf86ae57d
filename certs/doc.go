// Package certs manages robotsgate's interception certificate authority and
// the leaf certificates it mints for intercepted HTTPS (MITM) connections.
//
// The CA is an ECDSA P-256 key and a self-signed certificate, written as two
// PEM files by CreateCA (the key with mode 0600, never readable by others, not
// even briefly) and read back by LoadCA, which also accepts CAs made with
// other tools (PKCS#8, SEC 1 "EC PRIVATE KEY" or PKCS#1 RSA keys). EnsureCA is
// serve's first start: it loads the CA, or creates it when neither file
// exists. TrustInstructions tells a user how to make clients trust it.
//
// A Minter signs short-lived leaf certificates on demand, one per host, and
// keeps them in a bounded LRU cache; a cached certificate costs a map lookup,
// a new one a CA signature (all leaves share one in-memory key). For
// goproxy's ConnectAction.TLSConfig, use Minter.TLSConfigFor:
//
//	action := &goproxy.ConnectAction{
//		Action: goproxy.ConnectMitm,
//		TLSConfig: func(host string, _ *goproxy.ProxyCtx) (*tls.Config, error) {
//			return minter.TLSConfigFor(host), nil
//		},
//	}
//
// The config offers only HTTP/1.1 in ALPN; keep goproxy's AllowHTTP2 off, or
// goproxy adds "h2" to the clone it makes.
//
// The package knows nothing of requests or policy, and must never write the
// CA key where others can read it or keep leaf certificates unbounded.
package certs
