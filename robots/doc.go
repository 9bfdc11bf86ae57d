// Package robots parses robots.txt files and judges URLs by them, following
// RFC 9309 and, where the two differ, Google's open-source C++ robotstxt
// library, which implements it.
//
// Parse reads a body (never failing; only the first MaxFileSize bytes) into a
// File, which is immutable and safe for concurrent use. File.Allowed is
// Google's RobotsMatcher::OneAgentAllowedByRobots: the same lenient line
// reading (LF, CR or CR LF line ends, a UTF-8 BOM skipped, '#' comments, the
// accepted key typos, a missing colon), the same group selection (product
// tokens compared whole and ignoring case, groups naming the same agent
// merged, "*" only when none names it), the same precedence (the longest
// matching pattern in octets wins, allow on a tie) and the same '*' and '$'.
//
// For a proxy's per-request path, pick the group once and decide:
//
//	g := f.GroupForUserAgent(req.Header.Get("User-Agent"))
//	d := g.Decide(req.URL.RequestURI()) // the deciding rule and its line
//
// Neither allocates. Matching costs time linear in pattern and path length:
// there is no backtracking for an attacker's "/a*a*a*a*$" to exploit. Rules
// are tried one by one, as Google's library tries them, so a hostile file
// of thousands of wildcard rules could still make each of them search the
// whole path; a decision that would examine more than MaxMatchWork octets
// stops and disallows instead (Decision.TooCostly), which no real file comes
// near.
//
// Beyond RFC 9309 the package records Crawl-delay and Request-rate per group
// (Group.Interval), Visit-time windows per group (Group.VisitTimes), Content-Usage preferences per group and path (IETF
// aipref), and per file the Sitemap, Host, Content-Signal and License (RSL)
// lines. Lint
// reports what a robots.txt checker should say about a file.
//
// The package does no I/O: fetching and caching robots.txt files is the
// resolver's job.
package robots
