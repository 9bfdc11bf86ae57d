// GET each URL with undici's fetch through undici's ProxyAgent and print one
// JSON line per URL.
//
// Usage: NODE_EXTRA_CA_CERTS=ca.pem node node_undici.js PROXY URL...
//        HTTP_PROXY=… HTTPS_PROXY=… node node_undici.js env URL...
//
// PROXY "env" uses EnvHttpProxyAgent, which reads HTTP_PROXY, HTTPS_PROXY
// and NO_PROXY as most clients do.
//
// Node's global fetch (its bundled undici) ignores HTTP_PROXY/HTTPS_PROXY
// (Node 20 has no way to make it use them): a dispatcher is needed, here the
// npm package's ProxyAgent. It reaches https:// URLs through a CONNECT
// tunnel, and http:// URLs too (proxyTunnel, on by default in undici 7):
// plain HTTP inside the tunnel.
'use strict';
const { fetch, ProxyAgent, EnvHttpProxyAgent } = require('undici');

async function main() {
  const [proxy, ...urls] = process.argv.slice(2);
  const dispatcher = proxy === 'env' ? new EnvHttpProxyAgent() : new ProxyAgent(proxy);
  for (const url of urls) {
    const r = await fetch(url, { dispatcher, redirect: 'manual', signal: AbortSignal.timeout(20000) });
    const body = Buffer.from(await r.arrayBuffer());
    console.log(JSON.stringify({
      url,
      status: r.status,
      decision: r.headers.get('x-robotsgate-decision') || '',
      body_b64: body.toString('base64'),
    }));
  }
  await dispatcher.close();
}

main().catch((e) => { console.error(e); process.exit(1); });
