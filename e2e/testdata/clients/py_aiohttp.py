"""aiohttp through a proxy: GETs and WebSocket echoes, one JSON line each.

Usage: python3 py_aiohttp.py PROXY CA get URL...
       python3 py_aiohttp.py PROXY CA ws URL MESSAGE

The proxy is passed explicitly (proxy=...): aiohttp reads HTTP_PROXY and
HTTPS_PROXY only with ClientSession(trust_env=True), and for ws:// and
wss:// URLs it then looks for WS_PROXY and WSS_PROXY, not HTTP(S)_PROXY.
"""
import asyncio
import base64
import json
import ssl
import sys

import aiohttp


async def get(session, proxy, ctx, urls):
    for url in urls:
        async with session.get(url, proxy=proxy, ssl=ctx, allow_redirects=False) as r:
            body = await r.read()
            print(json.dumps({
                "url": url,
                "status": r.status,
                "version": "HTTP/%d.%d" % (r.version.major, r.version.minor),
                "decision": r.headers.get("X-Robotsgate-Decision", ""),
                "body_b64": base64.b64encode(body).decode(),
            }), flush=True)


async def ws(session, proxy, ctx, url, message):
    out = {"url": url}
    try:
        async with session.ws_connect(url, proxy=proxy, ssl=ctx) as conn:
            out["status"] = 101
            await conn.send_str(message)
            msg = await conn.receive(timeout=20)
            if msg.type == aiohttp.WSMsgType.TEXT:
                out["echo"] = msg.data
            else:
                out["error"] = "received %s instead of the echo" % msg.type
    except aiohttp.WSServerHandshakeError as e:
        out["status"] = e.status
        out["error"] = str(e)
    print(json.dumps(out), flush=True)


async def main():
    proxy, ca, mode, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    ctx = ssl.create_default_context(cafile=ca)
    timeout = aiohttp.ClientTimeout(total=20)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        if mode == "get":
            await get(session, proxy, ctx, args)
        else:
            await ws(session, proxy, ctx, args[0], args[1])


if __name__ == "__main__":
    asyncio.run(main())
