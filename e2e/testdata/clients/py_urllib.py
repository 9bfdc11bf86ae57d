"""GET each URL with Python's urllib (no proxy setting) and print one JSON line per URL.

Usage: SSL_CERT_FILE=ca.pem python3 py_urllib.py URL...

urllib verifies HTTPS against OpenSSL's default trust store, which
SSL_CERT_FILE replaces. A URL that fails (e.g. a certificate Python does
not trust) prints its error instead; the script exits 0 either way.
"""
import base64
import json
import sys
import urllib.error
import urllib.request


def main():
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for url in sys.argv[1:]:
        try:
            with opener.open(url, timeout=20) as r:
                status, headers, body = r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            status, headers, body = e.code, e.headers, e.read()
        except (urllib.error.URLError, OSError) as e:
            print(json.dumps({"url": url, "error": str(e)}), flush=True)
            continue
        print(json.dumps({
            "url": url,
            "status": status,
            "decision": headers.get("X-Robotsgate-Decision", ""),
            "body_b64": base64.b64encode(body).decode(),
        }), flush=True)


if __name__ == "__main__":
    main()
