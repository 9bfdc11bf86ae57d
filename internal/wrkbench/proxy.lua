-- wrk script: absolute-form requests, as a client sends them to an HTTP proxy.
-- Usage: wrk -s internal/wrkbench/proxy.lua http://PROXY (origin from ORIGIN, default 127.0.0.2:18081)
local origin = os.getenv("ORIGIN") or "127.0.0.2:18081"
wrk.path = "http://" .. origin .. "/public/bench"
wrk.headers["Host"] = origin
wrk.headers["User-Agent"] = "wrk-bench/1.0"
