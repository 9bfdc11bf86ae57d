-- wrk script of internal/peerbench: absolute-form requests, as a client
-- sends them to an HTTP proxy, and every response checked (status 200 and
-- the origin's exact body length), so that a proxy that refuses is not
-- measured as fast. ORIGIN is the origin's host:port, BODY_BYTES its body's
-- length. done() prints one line that peerbench reads.
local origin = os.getenv("ORIGIN")
local want = tonumber(os.getenv("BODY_BYTES"))
wrk.path = "http://" .. origin .. "/public/bench"
wrk.headers["Host"] = origin
wrk.headers["User-Agent"] = "peerbench/1.0"

-- Per thread (each has its own Lua state); done() adds them up.
ok, bad = 0, 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function response(status, headers, body)
  if status == 200 and #body == want then
    ok = ok + 1
  else
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local o, b = 0, 0
  for _, t in ipairs(threads) do
    o = o + t:get("ok")
    b = b + t:get("bad")
  end
  local e = summary.errors
  io.write(string.format(
    "peerbench-wrk requests=%d ok=%d bad=%d duration_us=%d p50_us=%d p99_us=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, o, b, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect, e.read, e.write, e.status, e.timeout))
end
