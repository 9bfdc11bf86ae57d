"""GET each URL with httpx (HTTP/2 enabled) and print one JSON line per URL.

Usage: HTTP_PROXY=... HTTPS_PROXY=... SSL_CERT_FILE=ca.pem python3 py_httpx.py URL...

httpx takes the proxy and SSL_CERT_FILE from the environment (trust_env,
its default). With http2=True it offers h2 by ALPN inside the CONNECT
tunnel of an https:// URL; http:// URLs go to the proxy as HTTP/1.1.
"""
import base64
import json
import sys

import httpx


def main():
    with httpx.Client(http2=True, timeout=20) as c:
        for url in sys.argv[1:]:
            r = c.get(url)
            print(json.dumps({
                "url": url,
                "status": r.status_code,
                "version": r.http_version,
                "decision": r.headers.get("X-Robotsgate-Decision", ""),
                "body_b64": base64.b64encode(r.content).decode(),
            }), flush=True)


if __name__ == "__main__":
    main()
