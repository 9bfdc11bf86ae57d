"""GET each URL with Python requests and print one JSON line per URL.

Usage: HTTP_PROXY=... HTTPS_PROXY=... REQUESTS_CA_BUNDLE=ca.pem python3 py_requests.py URL...

requests takes the proxy and the CA bundle from the environment (its
default, trust_env), as a user's program would.
"""
import base64
import json
import sys

import requests


def main():
    with requests.Session() as s:
        for url in sys.argv[1:]:
            r = s.get(url, timeout=20, allow_redirects=False)
            print(json.dumps({
                "url": url,
                "status": r.status_code,
                "version": {10: "HTTP/1.0", 11: "HTTP/1.1"}.get(r.raw.version, str(r.raw.version)),
                "decision": r.headers.get("X-Robotsgate-Decision", ""),
                "body_b64": base64.b64encode(r.content).decode(),
            }), flush=True)


if __name__ == "__main__":
    main()
