// The browser half of web/browser_test.go: drives the system Chromium
// with playwright-core against a real running cluster and prints what the
// pages showed and what the cross-origin calls answered, as one JSON line
// "RESULT {...}". The Go test started the cluster, knows the truth, and
// judges. Config comes in SEQSVR_WEB_TEST (see browser_test.go).
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const cfg = JSON.parse(process.env.SEQSVR_WEB_TEST);
const out = {};
const waitMs = 20000;

const profile = mkdtempSync(join(tmpdir(), "seqsvr-chromium-"));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: cfg.chromium,
  headless: true,
  viewport: { width: 1280, height: 860 },
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
    // Trust exactly the cluster's certificate key (pinned by its SPKI hash)
    // rather than ignoring certificate errors altogether.
    "--ignore-certificate-errors-spki-list=" + cfg.spki,
  ],
});
const consoleErrors = [];
// Requests that failed below HTTP (reset, refused, timed out): each one
// is a defect the Go test reports.
const requestFailures = [];
ctx.on("requestfailed", (req) => requestFailures.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText}`));
// Chromium logs every non-2xx answer as a console error; the refusals
// the test provokes on purpose are checked where they happen instead.
ctx.on("console", (m) => {
  if (m.type() === "error" && !/^Failed to load resource: the server responded with a status of (400|401|403|404)\b/.test(m.text())) consoleErrors.push(m.text());
});

try {
  if (cfg.phase === "store") {
    out.store = await storePage(cfg.stores[0]);
  } else if (cfg.phase === "alloc") {
    out.allocs = {};
    for (const [name, url] of Object.entries(cfg.allocs)) out.allocs[name] = await allocPage(name, url);
  } else {
    out.cross = await crossOrigin();
  }
} finally {
  out.consoleErrors = consoleErrors;
  out.requestFailures = requestFailures;
  await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log("RESULT " + JSON.stringify(out));

async function setToken(page, token) {
  await page.fill("#token", token);
  await page.click("#token-form button");
}

async function storePage(url) {
  const page = await ctx.newPage();
  const r = {};
  await page.goto(url + "/");
  // No token: the page says what is wrong and marks the token field.
  await page.waitForSelector("#error:not([hidden])", { timeout: waitMs });
  r.noTokenError = await page.getAttribute("#error", "data-code");
  r.noTokenFieldMarked = await page.$eval("#token", (e) => e.classList.contains("bad"));

  // A client token: members, tags and spaces; routing needs role alloc.
  await setToken(page, cfg.tokens.client);
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("#members tr[data-member]")];
    return rows.length === 3 && rows.every((tr) => tr.querySelector("[data-k=term]").textContent !== "—")
      && document.querySelector("#error").hidden && document.querySelector("[data-routing]");
  }, null, { timeout: waitMs });
  r.withClient = await page.evaluate(readStore);

  // An alloc token: the section routing too.
  await setToken(page, cfg.tokens.alloc);
  await page.waitForSelector("[data-routing] tr[data-section]", { timeout: waitMs });
  r.withAlloc = await page.evaluate(readStore);
  r.sessionToken = await page.evaluate(() => sessionStorage.getItem("seqsvr.token"));
  // The token outlives a reload (session storage), not the tab.
  await page.reload();
  await page.waitForSelector("[data-routing] tr[data-section]", { timeout: waitMs });
  r.tokenAfterReload = await page.inputValue("#token");
  if (cfg.shots) await page.screenshot({ path: join(cfg.shots, "status-store.png"), fullPage: true });
  await page.close();
  // Every other member serves the page too (session storage is per
  // origin: each one needs the token typed again).
  r.others = [];
  for (const url of cfg.stores.slice(1)) {
    const p = await ctx.newPage();
    await p.goto(url + "/");
    await setToken(p, cfg.tokens.client);
    await p.waitForFunction(() => document.querySelectorAll("#members tr[data-member]").length === 3 && document.querySelector("#error").hidden, null, { timeout: waitMs });
    r.others.push(await p.evaluate(readStore));
    await p.close();
  }
  return r;
}

// readStore runs in the page: what it shows, as data.
function readStore() {
  const text = (e, k) => e.querySelector(`[data-k=${k}]`)?.textContent ?? null;
  const num = (s) => (s === null ? null : s.replace(/,/g, ""));
  return {
    node: document.getElementById("node").textContent,
    cards: Object.fromEntries([...document.querySelectorAll("[data-card]")].map((c) => [c.dataset.card, num(c.querySelector(".value").textContent)])),
    leaderRow: document.querySelector("#members tr.leader")?.dataset.member ?? null,
    members: [...document.querySelectorAll("#members tr[data-member]")].map((tr) => ({
      id: tr.dataset.member, role: text(tr, "role"), suffrage: text(tr, "suffrage"),
      term: num(text(tr, "term")), commit: num(text(tr, "commit_index")), applied: num(text(tr, "applied_index")),
      httpAddr: text(tr, "http_addr"),
    })),
    tags: [...document.querySelectorAll("#tags tr[data-tag]")].map((tr) => ({
      tag: tr.dataset.tag, maxId: num(text(tr, "max_id")), step: num(text(tr, "step")), description: text(tr, "description"),
    })),
    spaces: [...document.querySelectorAll("#spaces tr[data-space]")].map((tr) => ({
      space: tr.dataset.space, keyCount: num(text(tr, "key_count")), sectionSize: num(text(tr, "section_size")), sections: num(text(tr, "section_count")),
    })),
    routing: [...document.querySelectorAll("[data-routing]")].map((d) => ({
      space: d.dataset.routing,
      note: d.querySelector("p.note")?.textContent ?? "",
      sections: [...d.querySelectorAll("tr[data-section]")].map((tr) => ({ range: tr.dataset.section, owner: text(tr, "owner"), lease: text(tr, "lease") })),
    })),
  };
}

async function allocPage(name, url) {
  const page = await ctx.newPage();
  const r = {};
  await page.goto(url + "/");
  await setToken(page, cfg.tokens.client);
  await page.waitForSelector(`[data-tag="${cfg.tag}"] [data-buffer=current][data-first]`, { timeout: waitMs });
  await page.waitForFunction(() => document.querySelector("[data-k=worker_id] .value")?.textContent !== "—", null, { timeout: waitMs });
  r.shown = await page.evaluate(readAlloc);
  // Traffic from the page itself (same origin, Connect JSON POST): the
  // IDs/s figure and the chart must follow.
  const served = await page.evaluate(async ({ tag, token }) => {
    let n = 0;
    const start = Date.now();
    const until = start + 4000;
    while (Date.now() < until) {
      let res;
      try {
        res = await fetch("/seqsvr.v1.AllocService/NextIDs", {
          method: "POST",
          headers: { "Content-Type": "application/json", Authorization: "Bearer " + token },
          body: JSON.stringify({ tag, count: 100 }),
        });
      } catch {
        continue; // recorded by requestfailed, reported by the Go test
      }
      // 503 is unavailable, retryable by contract (an election).
      if (res.status === 503) continue;
      if (!res.ok) throw new Error("NextIDs " + res.status + " " + (await res.text()));
      n += (await res.json()).ids.length;
      // A varying pace, so the chart has a shape to show.
      await new Promise((r) => setTimeout(r, 10 + 40 * Math.abs(Math.sin((Date.now() - start) / 900))));
    }
    return n;
  }, { tag: cfg.tag, token: cfg.tokens.client });
  r.served = served;
  // Wait for a refresh that saw all of it, and for a non-zero rate.
  const least = Number(r.shown.tags[0].served) + served;
  await page.waitForFunction(({ tag, least }) => {
    const sec = document.querySelector(`[data-tag="${tag}"]`);
    return Number(sec.querySelector("[data-k=served]").textContent.replace(/,/g, "")) >= least
      && /^[1-9][\d,.]* IDs\/s$/.test(sec.querySelector("[data-k=rate]").textContent);
  }, { tag: cfg.tag, least }, { timeout: waitMs });
  r.afterTraffic = await page.evaluate(readAlloc);
  r.chartPoints = await page.$eval(`[data-tag="${cfg.tag}"] svg.spark polyline`, (e) => e.getAttribute("points").split(" ").length);
  if (cfg.shots && name === cfg.shotAlloc) await page.screenshot({ path: join(cfg.shots, "status-alloc.png"), fullPage: true });
  await page.close();
  return r;
}

function readAlloc() {
  const text = (e, k) => e.querySelector(`[data-k=${k}]`)?.textContent ?? null;
  const kv = (k) => document.querySelector(`#snowflake [data-k=${k}] .value, #seq [data-k=${k}] .value`)?.textContent ?? null;
  const buf = (sec, name) => {
    const b = sec.querySelector(`[data-buffer=${name}]`);
    if (!b || !b.dataset.first) return null;
    return { first: b.dataset.first, last: b.dataset.last, remaining: b.dataset.remaining, pct: text(b, "pct") };
  };
  return {
    node: document.getElementById("node").textContent,
    error: document.querySelector("#error").hidden ? "" : document.querySelector("#error").textContent,
    tags: [...document.querySelectorAll("section.tag")].map((s) => ({
      tag: s.dataset.tag, current: buf(s, "current"), next: buf(s, "next"),
      position: text(s, "position")?.replace(/,/g, ""), step: text(s, "step")?.replace(/,/g, ""),
      served: text(s, "served")?.replace(/,/g, ""), rate: text(s, "rate"), lastRefill: text(s, "last_refill"),
    })),
    snowflake: { state: kv("state"), workerId: kv("worker_id"), leaseLeft: kv("lease_left"), clockOffset: kv("clock_offset") },
    seq: {
      lease: kv("membership_lease"),
      spaces: [...document.querySelectorAll("#seq tr[data-space]")].map((tr) => ({
        space: tr.dataset.space, owned: text(tr, "sections_owned"), ranges: text(tr, "ranges"),
      })),
    },
  };
}

// crossOrigin loads a page from another origin (the Go test's own server)
// that calls the cluster through connect-web (web/dist/ui/client.js) over
// each protocol, and watches the network for the CORS preflights.
async function crossOrigin() {
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("Network.enable");
  const requests = new Map();
  cdp.on("Network.requestWillBeSent", (e) => {
    requests.set(e.requestId, { url: e.request.url, method: e.request.method, type: e.type ?? "", headers: lower(e.request.headers) });
  });
  cdp.on("Network.responseReceived", (e) => {
    const r = requests.get(e.requestId);
    if (r) Object.assign(r, { status: e.response.status, responseHeaders: lower(e.response.headers) });
  });
  await page.goto(cfg.origin + "/");
  await page.waitForFunction(() => typeof window.seqsvr === "object", null, { timeout: waitMs });
  const calls = await page.evaluate(async (cfg) => {
    const { allocClient, storeClient, ConnectError, Code, protocols } = window.seqsvr;
    const codeName = (e) => (e instanceof ConnectError ? Code[e.code] : "not a ConnectError: " + e);
    // attempt retries what a real client retries: unavailable (the
    // contract's retryable code: an election, a store still loading the
    // tag) and a request the browser itself dropped (fetch failed, e.g.
    // ERR_NETWORK_CHANGED when another test on the machine makes network
    // namespaces; the Go test checks every such drop was that). Each
    // retry is counted and reported.
    let retries = 0;
    const attempt = async (f) => {
      for (let i = 0; ; i++) {
        try {
          return { ok: await f(), retries: i };
        } catch (e) {
          const dropped = e instanceof ConnectError && (e.cause instanceof TypeError || /Failed to fetch/.test(e.rawMessage));
          const retry = e instanceof ConnectError && (e.code === Code.Unavailable || dropped);
          if (retry && i < 8) {
            retries++;
            await new Promise((r) => setTimeout(r, 250 * (i + 1)));
            continue;
          }
          return { code: codeName(e), message: e.rawMessage ?? String(e), retries: i };
        }
      }
    };
    const res = [];
    for (const protocol of protocols) {
      for (const [alloc, url] of Object.entries(cfg.allocs)) {
        const c = allocClient(url, { protocol, token: cfg.tokens.client });
        const anon = allocClient(url, { protocol });
        res.push({ protocol, target: alloc, call: "NextIDs", ...(await attempt(async () => (await c.nextIDs({ tag: cfg.tag, count: 5 })).ids.map(String))) });
        res.push({ protocol, target: alloc, call: "NextSnowflakeIDs", ...(await attempt(async () => (await c.nextSnowflakeIDs({ count: 3 })).ids.map(String))) });
        res.push({ protocol, target: alloc, call: "Status", ...(await attempt(async () => (await c.status({})).nodeId)) });
        res.push({ protocol, target: alloc, call: "NextIDs no token", ...(await attempt(() => anon.nextIDs({ tag: cfg.tag }))) });
        res.push({ protocol, target: alloc, call: "NextIDs bad tag", ...(await attempt(() => c.nextIDs({ tag: "no spaces allowed", count: 1 }))) });
        res.push({ protocol, target: alloc, call: "NextIDs unknown tag", ...(await attempt(() => c.nextIDs({ tag: "never-created", count: 1 }))) });
        res.push({ protocol, target: alloc, call: "NextIDs count too big", ...(await attempt(() => c.nextIDs({ tag: cfg.tag, count: 10001 }))) });
      }
      const s = storeClient(cfg.stores[0], { protocol, token: cfg.tokens.client });
      res.push({ protocol, target: "s1", call: "GetTag", ...(await attempt(async () => String((await s.getTag({ tag: cfg.tag })).maxId))) });
      res.push({ protocol, target: "s1", call: "GetTag unknown", ...(await attempt(() => s.getTag({ tag: "never-created" }))) });
      res.push({ protocol, target: "s1", call: "CreateTag as client", ...(await attempt(() => s.createTag({ tag: "from-browser" }))) });
      res.push({ protocol, target: "s1", call: "GetTag wrong token", ...(await attempt(() => storeClient(cfg.stores[0], { protocol, token: "not-a-token" }).getTag({ tag: cfg.tag }))) });
    }
    // connect-web's GET with no token and no deadline header is a simple
    // request (DecodeSnowflake: nothing else calls it, so its requests
    // are told apart): no preflight, and the error is readable.
    const bare = allocClient(cfg.allocs.a2, { timeoutMs: 0 });
    res.push({ protocol: "connect-json", target: "a2", call: "DecodeSnowflake no token no deadline", ...(await attempt(() => bare.decodeSnowflake({ id: 1n }))) });
    // So is a plain fetch of a Connect GET URL.
    const simple = await fetch(cfg.allocs.a2 + "/seqsvr.v1.AllocService/Status?connect=v1&encoding=json&message=%7B%20%7D");
    return { res, retries, simple: { status: simple.status, body: await simple.json() } };
  }, { allocs: cfg.allocs, stores: cfg.stores, tokens: cfg.tokens, tag: cfg.tag });
  await page.close();
  return { ...calls, origin: cfg.origin, network: [...requests.values()].filter((r) => !r.url.startsWith(cfg.origin)) };
}

function lower(h) {
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));
}
