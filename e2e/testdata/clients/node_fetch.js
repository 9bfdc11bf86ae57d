// GET each URL with Node's built-in fetch (no proxy: Node's fetch ignores
// HTTP_PROXY) and print one JSON line per URL.
//
// Usage: NODE_EXTRA_CA_CERTS=ca.pem node node_fetch.js URL...
//
// A URL that fails (e.g. a certificate Node does not trust) prints its
// error instead; the script exits 0 either way.

async function main() {
  for (const url of process.argv.slice(2)) {
    try {
      const r = await fetch(url, {redirect: 'manual'});
      const body = Buffer.from(await r.arrayBuffer());
      console.log(JSON.stringify({
        url,
        status: r.status,
        decision: r.headers.get('x-robotsgate-decision') || '',
        body_b64: body.toString('base64'),
      }));
    } catch (e) {
      console.log(JSON.stringify({url, error: String((e && e.cause) || e)}));
    }
  }
}

main();
