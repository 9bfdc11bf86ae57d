// verify.cjs checks Web Bot Auth signatures robotsgate made, with code
// robotsgate did not write: the npm packages web-bot-auth (the keyid
// thumbprint of each directory key, RFC 7638, and its tag constant) and
// http-message-sig (RFC 9421 verification, including the key parameter of
// "signature-agent";key="..." and the req parameter of "@authority";req),
// at the versions of package-lock.json. e2e/webbotauth_test.go runs it.
//
// Input (the file named by the first argument, JSON):
//   {"directory": <JWK Set robotsgate printed>,
//    "directoryURL": <the URL the key set is published at>,
//    "draft": "typed" | "url" | "string": whose resolution of Signature-Agent
//             to apply (see resolve below),
//    "requests": [{"method", "url", "headers": [[name, value], ...]}],
//    "responses": [{"url": <the URL the directory was fetched from>,
//                   "headers": [[name, value], ...], "body": <the body, as served>}]}
// Output (stdout): one JSON line per request, then one per response,
// {"ok": true} or {"ok": false, "error": "..."}; a request's line also has
// "wba013": what web-bot-auth 0.1.3's own verify() said (it implements the
// pre-working-group bare-string Signature-Agent; see docs/webbotauth.md).
"use strict";

const httpsig = require("http-message-sig");
const wba = require("web-bot-auth");
const wbaCrypto = require("web-bot-auth/crypto");
const { parseDictionary, parseItem } = require("structured-headers");
const nodeCrypto = require("crypto");

const WELL_KNOWN = "/.well-known/http-message-signatures-directory";
const DIRECTORY_TAG = "http-message-signatures-directory";

// resolve returns the URL a verifier following draft fetches the key set of
// the signature labelled label from, or throws why it ignores the member:
//  - typed: draft-ietf-webbotauth-httpsig-protocol-00, Sections 5.2.1 and
//    5.5: the member keyed to the label; its type parameter, "directory"
//    when absent, a value that MUST be the ASCII serialization of an origin
//    (a trailing "/" MAY be accepted) resolved at the well-known path;
//    "jwks_uri" the value itself; any other type is ignored.
//  - url: the working group's editor's copy of 9 October 2026: the member's
//    value is the key set's URL; a member with parameters MUST be ignored.
//  - string: the pre-working-group bare String (a String Item, covered as
//    "signature-agent" without a key), the key set's URL.
function resolve(draft, field, label, covered) {
  if (draft === "string") {
    if (!covered.includes('"signature-agent"')) throw new Error("the signature does not cover Signature-Agent");
    const [value] = parseItem(field);
    if (typeof value !== "string") throw new Error("Signature-Agent is not a String");
    return value;
  }
  if (!covered.includes(`"signature-agent";key="${label}"`)) throw new Error("the signature does not cover its own Signature-Agent member");
  const member = parseDictionary(field).get(label);
  if (!member) throw new Error("no Signature-Agent member " + label);
  const [value, params] = member;
  if (typeof value !== "string") throw new Error("the Signature-Agent member is not a String");
  const u = new URL(value);
  if (u.protocol !== "https:") throw new Error("the Signature-Agent member is not https");
  if (draft === "url") {
    if (params.size > 0) throw new Error("a member with parameters is ignored");
    return value;
  }
  const type = params.has("type") ? String(params.get("type")) : "directory";
  if (type === "jwks_uri") return value;
  if (type !== "directory") throw new Error("unsupported type " + type + ": the member is ignored");
  if (value !== u.origin && value !== u.origin + "/") throw new Error("a directory member that is not an origin is ignored: " + value);
  return u.origin + WELL_KNOWN;
}

async function keysOf(directory) {
  const keys = [];
  for (const jwk of directory.keys) {
    const keyid = await wba.jwkToKeyID(jwk, wba.helpers.WEBCRYPTO_SHA256, wba.helpers.BASE64URL_DECODE);
    keys.push({ jwk, keyid });
  }
  return keys;
}

async function verifierFor(jwk) {
  const key = await crypto.subtle.importKey("jwk", { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, { name: "Ed25519" }, true, ["verify"]);
  return httpsig.webcrypto.verifier(key);
}

async function checkRequest(input, keys, r) {
  const request = () => new Request(r.url, { method: r.method, headers: r.headers });
  await httpsig.verifySignature(request(), {
    policy: {
      algorithms: ["ed25519"],
      requiredComponents: ["@authority"],
      requiredParameters: ["created", "expires", "keyid", "tag"],
      validate(v) {
        if (v.parameters.tag !== wba.HTTP_MESSAGE_SIGNATURE_TAG) throw new Error("tag is not " + wba.HTTP_MESSAGE_SIGNATURE_TAG);
        const covered = v.components.map((c) => httpsig.componentIdentity(c));
        const resolved = resolve(input.draft, request().headers.get(wba.SIGNATURE_AGENT_HEADER) || "", v.label, covered);
        if (resolved !== input.directoryURL) throw new Error("Signature-Agent resolves to " + resolved + ", not " + input.directoryURL);
        return true;
      },
    },
    async resolveVerifier(candidate) {
      const k = keys.find((k) => k.keyid === candidate.parameters.keyid);
      if (!k) throw new Error("keyid " + candidate.parameters.keyid + " is not in the directory");
      return verifierFor(k.jwk);
    },
  });
}

// checkResponse verifies a directory response as Appendix B.1 of
// draft-ietf-webbotauth-httpsig-protocol-00 asks: Content-Digest matches
// the body, and every key the body lists signed "@authority";req and
// content-digest, tagged http-message-signatures-directory, with created,
// expires and its thumbprint as keyid, verified with that key.
async function checkResponse(res) {
  const headers = new Headers(res.headers);
  const body = Buffer.from(res.body, "utf8");
  const digests = parseDictionary(headers.get("content-digest") || "");
  const sha = digests.get("sha-256");
  if (!sha) throw new Error("no sha-256 Content-Digest");
  if (!Buffer.from(sha[0]).equals(nodeCrypto.createHash("sha256").update(body).digest())) throw new Error("Content-Digest does not match the body");
  const directory = JSON.parse(res.body);
  const keys = await keysOf(directory);
  if (keys.length === 0) throw new Error("the directory lists no key");
  const labels = [...parseDictionary(headers.get("signature-input") || "").keys()];
  const message = {
    kind: "response",
    status: 200,
    fields: res.headers.map(([name, value]) => ({ name, value })),
    request: { kind: "request", method: "GET", targetUri: res.url, fields: [] },
  };
  for (const k of keys) {
    let ok = false;
    const errors = [];
    for (const label of labels) {
      try {
        await httpsig.verifySignature(message, {
          label,
          policy: {
            algorithms: ["ed25519"],
            requiredComponents: [httpsig.component("@authority", { req: true }), "content-digest"],
            requiredParameters: ["created", "expires", "keyid", "tag"],
            validate(v) {
              if (v.parameters.tag !== DIRECTORY_TAG) throw new Error("tag is not " + DIRECTORY_TAG);
              if (v.parameters.keyid !== k.keyid) throw new Error("keyid is not the key's thumbprint");
              return true;
            },
          },
          resolveVerifier: () => verifierFor(k.jwk),
        });
        ok = true;
        break;
      } catch (e) {
        errors.push(label + ": " + describe(e));
      }
    }
    if (!ok) throw new Error("key " + k.keyid + " has no valid signature (" + errors.join("; ") + ")");
  }
}

function describe(e) {
  return String(e && e.message) + (e && e.cause ? ": " + e.cause.message : "");
}

async function main() {
  const input = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
  const keys = await keysOf(input.directory || { keys: [] });
  for (const r of input.requests || []) {
    const out = {};
    try {
      await checkRequest(input, keys, r);
      out.ok = true;
    } catch (e) {
      out.ok = false;
      out.error = describe(e);
    }
    try {
      const request = new Request(r.url, { method: r.method, headers: r.headers });
      const keyid = /keyid="([^"]*)"/.exec(request.headers.get("signature-input") || "");
      const k = keyid && keys.find((k) => k.keyid === keyid[1]);
      if (!k) throw new Error("keyid not in the directory");
      await wba.verify(request, await wbaCrypto.verifierFromJWK(k.jwk));
      out.wba013 = "ok";
    } catch (e) {
      out.wba013 = String(e && e.message);
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
  for (const res of input.responses || []) {
    const out = {};
    try {
      await checkResponse(res);
      out.ok = true;
    } catch (e) {
      out.ok = false;
      out.error = describe(e);
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack) + "\n");
  process.exit(1);
});
