// Package wire guards the bytes of client connections before net/http's
// servers parse them, and wraps connections the proxy hands on: the framing
// guard (ambiguous request framing refused, request heads bounded, a
// connection closed after a framing it cannot follow), what a tunnel's
// client speaks told from its first bytes, the proxy port's listener that
// terminates TLS for clients given an https:// proxy URL, the recording of a
// client's TLS handshake and the classification of its failure, and the
// connection wrappers (bytes already read replayed, idle peers cut off,
// hijacked bytes counted).
//
// It knows nothing of decisions, policy or the audit log: what the proxy
// does with a refusal or a failed handshake it passes in as a callback.
package wire
