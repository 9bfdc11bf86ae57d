// Echo a message through a WebSocket (npm package ws) through the proxy, and
// print one JSON line: the echo, or the status of a refused handshake.
//
// Usage: NODE_EXTRA_CA_CERTS=ca.pem node node_ws.js PROXY URL MESSAGE
//
// ws has no proxy support of its own: an agent from https-proxy-agent opens a
// CONNECT tunnel for wss:// and ws:// alike (for ws://, plain HTTP inside the
// tunnel).
//
// Trap: for a wss:// URL whose host is an IP address, https-proxy-agent
// (7.0.6 and 9.1.0 alike) starts TLS without the host, so Node checks the
// certificate against "localhost" (ERR_TLS_CERT_ALTNAME_INVALID;
// TooTallNate/proxy-agents#365). checkServerIdentity below checks it against
// the URL's host instead: verification stays on, for the right name. Hosts
// given by name are not affected.
'use strict';
const net = require('net');
const tls = require('tls');
const WebSocket = require('ws');
const { HttpsProxyAgent } = require('https-proxy-agent');

const [proxy, url, message] = process.argv.slice(2);
const out = { url };
function done() {
  console.log(JSON.stringify(out));
  process.exit(0);
}
const timer = setTimeout(() => { out.error = 'timeout'; done(); }, 20000);
const opts = { agent: new HttpsProxyAgent(proxy) };
const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
if (net.isIP(host)) {
  opts.checkServerIdentity = (_, cert) => tls.checkServerIdentity(host, cert);
}
const ws = new WebSocket(url, opts);
ws.on('open', () => { out.status = 101; ws.send(message); });
ws.on('message', (data) => { out.echo = data.toString('utf8'); ws.close(); });
ws.on('close', () => { clearTimeout(timer); done(); });
ws.on('unexpected-response', (req, res) => {
  out.status = res.statusCode;
  out.decision = res.headers['x-robotsgate-decision'] || '';
  const chunks = [];
  res.on('data', (c) => chunks.push(c));
  res.on('end', () => { out.body_b64 = Buffer.concat(chunks).toString('base64'); clearTimeout(timer); done(); });
});
ws.on('error', (e) => { out.error = String(e); clearTimeout(timer); done(); });
