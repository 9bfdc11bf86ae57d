// Package upstream is robotsgate's side of its connections to origins: the
// transport that sends the requests the proxy allowed (a transparent
// request's pinned to where its client connected), the one dial every
// upstream connection and blind tunnel goes through (the egress guard, or
// the parent proxy of upstream.proxy, which the egress guard's rules are
// checked for before anything is sent to it), Web Bot Auth signing of
// outbound requests and of robotsgate's own fetches, the operator's
// identification on them (identify, and the facts of the signature agent
// card), pay per crawl, the failures of an exchange told by their RFC 9209
// type (never by their text, which names internal addresses), and
// robotsgate's own connections, known so that a transparent listener can
// refuse them coming back.
//
// It judges nothing: the proxy gives it requests it allowed, each with an
// Exchange (where it goes, how it is signed and paid for), which it fills
// with what the origin answered, for the request's audit record.
package upstream
