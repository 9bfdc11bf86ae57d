package listener

// The descriptor budget: every connection a listener accepts holds a
// descriptor, and most hold a second one for their upstream side (a
// proxied request, a tunnel). When the caps of every listener together
// could take more descriptors than the process may open (RLIMIT_NOFILE),
// one client could still exhaust them; Fit lowers the caps until they fit.

// Reserve is the number of descriptors the budget leaves to the rest of
// the process: its files (audit log, archive, state directory), the idle
// upstream connections kept for reuse, robots.txt fetches, Redis, DNS.
const Reserve = 128

// PerConn is the number of descriptors the budget counts per accepted
// connection: the client's and its upstream side.
const PerConn = 2

// Caps are the connection caps of each listener (Options.MaxConns and
// Options.MaxPerClient).
type Caps struct {
	PerListener, PerClient int
}

// Fit returns the caps that keep n listeners within limit descriptors
// (Reserve kept, PerConn per connection): want when they fit (or limit is
// 0, unknown), else a cap per listener of what fits (at least 1) and a
// cap per client of at most a quarter of it, so that one client never
// holds a whole listener. A cap of 0 (none) is kept: the operator chose
// to have none. fitted reports whether the caps were lowered.
func Fit(want Caps, n int, limit uint64) (caps Caps, fitted bool) {
	if limit == 0 || n <= 0 || want.PerListener == 0 {
		return want, false
	}
	avail := int64(limit) - Reserve
	perListener := max(avail/int64(n*PerConn), 1)
	if int64(want.PerListener) <= perListener {
		return want, false
	}
	caps = Caps{PerListener: int(perListener), PerClient: want.PerClient}
	if quarter := max(caps.PerListener/4, 1); caps.PerClient == 0 || caps.PerClient > quarter {
		caps.PerClient = quarter
	}
	return caps, true
}
