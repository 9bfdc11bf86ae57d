"""A Scrapy spider that fetches the given URLs and prints one JSON line each.

Usage: HTTP_PROXY=... HTTPS_PROXY=... scrapy runspider scrapy_spider.py -a urls=URL,URL...
  (or python3 -m scrapy runspider ...)

Scrapy's HttpProxyMiddleware takes the proxy from HTTP_PROXY/HTTPS_PROXY.
Scrapy's own robots.txt support is off (ROBOTSTXT_OBEY) so that the proxy is
what refuses. Scrapy does not verify TLS certificates by default, so it
accepts the interception certificate without being told about the CA.
"""
import base64
import json

import scrapy


class ClientSpider(scrapy.Spider):
    name = "robotsgate-e2e"
    custom_settings = {
        "ROBOTSTXT_OBEY": False,
        "RETRY_ENABLED": False,
        "REDIRECT_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 30,
        "LOG_LEVEL": "INFO",
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }

    def __init__(self, urls="", **kwargs):
        super().__init__(**kwargs)
        self.urls = [u for u in urls.split(",") if u]

    def start_requests(self):
        for url in self.urls:
            # Every status reaches parse (a 403 included).
            yield scrapy.Request(url, meta={"handle_httpstatus_all": True}, dont_filter=True)

    def parse(self, response):
        print(json.dumps({
            "url": response.url,
            "status": response.status,
            "version": response.protocol or "",
            "decision": (response.headers.get("X-Robotsgate-Decision") or b"").decode(),
            "body_b64": base64.b64encode(response.body).decode(),
        }), flush=True)
