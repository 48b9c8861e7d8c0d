// Builds dist/ from src/: the two status pages (their HTML, one bundle
// each, the shared CSS) and client.js, the client as a browser global
// (window.seqsvr) for pages that load it with a plain script tag. dist/
// is committed and embedded by the Go binaries (embed.go), so building
// the Go code never needs Node. Deterministic: same sources, same bytes.
import { build } from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";

const dist = new URL("./dist/", import.meta.url).pathname;
rmSync(dist, { recursive: true, force: true });
mkdirSync(dist + "ui", { recursive: true });

const common = { bundle: true, minify: true, target: "es2022", legalComments: "none", logLevel: "warning" };
// The two pages share one chunk (the client and the descriptors).
await build({ ...common, entryPoints: ["src/store.ts", "src/alloc.ts"], outdir: dist + "ui", format: "esm", splitting: true, chunkNames: "chunk-[hash]" });
await build({ ...common, entryPoints: ["src/client.ts"], outfile: dist + "ui/client.js", format: "iife", globalName: "seqsvr" });
for (const f of ["store.html", "alloc.html"]) copyFileSync("src/" + f, dist + f);
copyFileSync("src/style.css", dist + "ui/style.css");
