// Package pacing holds requests so that an origin sees them no faster than
// its robots.txt asks (Crawl-delay, Request-rate), in one process or across
// a fleet of proxies sharing Redis. It hands out slots and holds; it must
// not decide whether a request is allowed or what interval applies (package
// policy does), and must never let two requests of one key start closer
// than their interval.
//
// # Slots
//
// Every pacing key (an origin, or an origin and the robots.txt group that
// judged the request) has a time next, the earliest start of the next
// request. A request with interval d reserves
//
//	slot = max(now, next); next = slot + d
//
// and is held until its slot. Reservations are atomic and served in the
// order they reach the store, so slots are handed out first come, first
// served. A request whose slot lies more than maxWait ahead is refused at
// once and reserves nothing: the schedule is exactly as if it had never
// come. A key whose next lies in the past holds no information (the next
// request gets slot = now either way), so stores forget such keys: memory
// stays proportional to the keys paced in the last moments, not to every
// origin ever seen.
//
// # Retry-After
//
// A refused request is told when a new request would be granted a slot
// within maxWait, assuming nobody reserves in between: at now + RetryAfter
// with RetryAfter = (slot - now) - maxWait. The HTTP header carries it in
// whole seconds rounded up ([RetryAfterSeconds]), so a client that waits
// exactly that long is not refused again for the same reason.
//
// # Padding
//
// [Pacer] reserves interval + Padding (default [DefaultPadding]) per
// request. Timers never fire early, but they fire late on a loaded machine,
// and with Redis a reply reaches each proxy a little after the script ran.
// Padding absorbs that lateness: two consecutive requests start at least
// interval apart as long as the first one's lateness exceeds the second
// one's by less than the padding.
//
// # Cancellation
//
// A client that hangs up while held makes [Pacer.Acquire] return promptly
// with the context's error (the hold is a timer in a select with the
// context; nothing keeps running afterwards). Its slot is given back only
// when that is provably harmless: [Store.Cancel] rolls next back to the
// cancelled slot if and only if next is still what this reservation set,
// that is, no later reservation was made on top of it (or all later ones
// were rolled back too). Every request held before the cancelled one
// started at least an interval before the cancelled slot, so the next
// request may take that slot. A cancelled slot with reservations behind it
// stays consumed as a gap: the later requests are already waiting for
// fixed slots, and moving them would need to reach into other goroutines
// or other proxies. So cancelling never lets two requests start closer
// than the interval; at worst it costs one interval of capacity.
//
// # Stores
//
// [Memory] keeps the schedule in this process (0 allocations, well under a
// microsecond per reservation). [Redis] shares it through Redis with one
// Lua script per reservation on Redis' own clock, keys expiring when idle;
// it trusts no key it reads: one further ahead than any interval a pacer
// declared ([Options.LongestInterval]), or not a number, is reset as if
// absent and counted ([Redis.Corrupted]), so another writer of the same
// Redis cannot hold or refuse an origin's requests for longer than its
// longest interval.
// [Fallback] wraps a shared store with the pacing.on_store_error policy:
// refuse ([UnavailableError], a 503 for the proxy) or local (pace in this
// process) while Redis fails, and goes back to Redis by itself.
//
// # Pauses and adaptive pacing
//
// The [Governor] holds what origins answer: one that answers 429 or 503
// is paused (pause.go) and [Pacer.Acquire] holds every request of it
// until the pause ends, or refuses it ([PausedError]); after the pause
// one request goes first and the others wait for its answer (probe.go,
// [Permit.Answered]). Its response times give the adaptive interval.
// With Redis a fleet shares both
// ([Redis.GovernorShared], [Redis.Follow]), and pacing.max_concurrency's
// permits ([ConcurrencyStore], concurrency.go).
package pacing
