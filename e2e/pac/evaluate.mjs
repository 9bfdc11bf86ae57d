// evaluate.mjs runs robotsgate's PAC file with a PAC evaluator robotsgate
// did not write: the npm package pac-resolver (the PAC runtime of
// proxy-agent, in a QuickJS sandbox: quickjs-wasi), at the versions of
// package-lock.json. e2e/pac_test.go runs it.
//
// Usage: node evaluate.mjs MODULES PAC-FILE URL...
//   MODULES is the node_modules directory make deps installed these
//   packages into (outside the repository).
// Output (stdout): one line per URL, what FindProxyForURL returned.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, pacFile, ...urls] = process.argv.slice(2);
const require = createRequire(join(modules, "resolve-from-here.js"));
const { createPacResolver } = await import(pathToFileURL(require.resolve("pac-resolver")).href);
const { QuickJS } = await import(pathToFileURL(require.resolve("quickjs-wasi")).href);
const qjs = await QuickJS.create({ wasm: await readFile(require.resolve("quickjs-wasi/quickjs.wasm")) });
const findProxyForURL = createPacResolver(qjs, await readFile(pacFile, "utf8"));
for (const url of urls) {
  console.log(await findProxyForURL(url));
}
