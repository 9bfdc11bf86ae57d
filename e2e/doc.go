// Package e2e holds robotsgate's end-to-end tests: they build the real
// binary, start it as a separate process per test and drive it with real
// clients (curl, wget, Python, Node.js, headless Chromium, Go's http.Client,
// raw TCP) against origins served on loopback, a real redis-server and a
// real squid. The package has no code of its own.
package e2e
