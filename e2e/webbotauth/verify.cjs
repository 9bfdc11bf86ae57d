// verify.cjs checks Web Bot Auth signatures of requests robotsgate sent,
// with code robotsgate did not write: the npm packages web-bot-auth (the
// keyid thumbprint of each directory key, RFC 7638, and its tag constant)
// and http-message-sig (RFC 9421 verification, including the key
// parameter of "signature-agent";key="..."), at the versions of
// package-lock.json. e2e/webbotauth_test.go runs it.
//
// Input (the file named by the first argument, JSON): {"directory": <JWK Set robotsgate printed>,
// "agent": <the Signature-Agent URL expected>, "requests": [{"method",
// "url", "headers": [[name, value], ...]}]}.
// Output (stdout): one JSON line per request, {"ok": true} or {"ok": false,
// "error": "..."}, each with "wba013": what web-bot-auth 0.1.3's own
// verify() said (it implements the pre-working-group form of
// Signature-Agent, a bare string; see docs/webbotauth.md).
"use strict";

const httpsig = require("http-message-sig");
const wba = require("web-bot-auth");
const wbaCrypto = require("web-bot-auth/crypto");
const { parseDictionary } = require("structured-headers");

async function main() {
  const input = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
  const keys = [];
  for (const jwk of input.directory.keys) {
    const keyid = await wba.jwkToKeyID(jwk, wba.helpers.WEBCRYPTO_SHA256, wba.helpers.BASE64URL_DECODE);
    keys.push({ jwk, keyid });
  }
  for (const r of input.requests) {
    const out = {};
    const request = () => new Request(r.url, { method: r.method, headers: r.headers });
    try {
      await httpsig.verifySignature(request(), {
        policy: {
          algorithms: ["ed25519"],
          requiredComponents: ["@authority"],
          requiredParameters: ["created", "expires", "keyid", "tag"],
          validate(v) {
            if (v.parameters.tag !== wba.HTTP_MESSAGE_SIGNATURE_TAG) throw new Error("tag is not " + wba.HTTP_MESSAGE_SIGNATURE_TAG);
            const own = v.components.find((c) => httpsig.componentIdentity(c) === httpsig.componentIdentity(httpsig.component(wba.SIGNATURE_AGENT_HEADER, { key: v.label })));
            if (!own) throw new Error("the signature does not cover its own Signature-Agent member");
            const agents = parseDictionary(request().headers.get(wba.SIGNATURE_AGENT_HEADER) || "");
            const member = agents.get(v.label);
            if (!member || member[0] !== input.agent) throw new Error("Signature-Agent member " + v.label + " is not " + input.agent);
            return true;
          },
        },
        async resolveVerifier(candidate) {
          const k = keys.find((k) => k.keyid === candidate.parameters.keyid);
          if (!k) throw new Error("keyid " + candidate.parameters.keyid + " is not in the directory");
          const key = await crypto.subtle.importKey("jwk", { kty: k.jwk.kty, crv: k.jwk.crv, x: k.jwk.x }, { name: "Ed25519" }, true, ["verify"]);
          return httpsig.webcrypto.verifier(key);
        },
      });
      out.ok = true;
    } catch (e) {
      out.ok = false;
      out.error = String(e && e.message) + (e && e.cause ? ": " + e.cause.message : "");
    }
    try {
      const keyid = /keyid="([^"]*)"/.exec(request().headers.get("signature-input") || "");
      const k = keyid && keys.find((k) => k.keyid === keyid[1]);
      if (!k) throw new Error("keyid not in the directory");
      await wba.verify(request(), await wbaCrypto.verifierFromJWK(k.jwk));
      out.wba013 = "ok";
    } catch (e) {
      out.wba013 = String(e && e.message);
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack) + "\n");
  process.exit(1);
});
