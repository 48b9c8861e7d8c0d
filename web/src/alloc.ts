// The allocsvr status page: per tag the two segment buffers (range,
// position, % used), the dynamic step, the last refill and a live IDs/s
// chart; the snowflake worker, its lease and clock offset; the per-key
// sections this process owns. Refreshed every second.
import { Code, ConnectError, allocClient, seqClient } from "./client";
import { Rate, sparkline, window as chartWindow } from "./chart";
import { ago, dur, fmt, h, loop, replace, setupToken, showError, table, td, token } from "./common";
import type { SegmentStatus, TagStatus } from "./gen/seqsvr/v1/alloc_pb";

const alloc = allocClient(location.origin, { token });
const seq = seqClient(location.origin, { token });
const rates = new Map<string, Rate>();

async function refresh(): Promise<void> {
  const st = await alloc.status({});
  const routing = await Promise.all(
    (st.seq?.spaces ?? []).map((s) => seq.routing({ space: s.space }).catch((e: unknown) => ConnectError.from(e))),
  );
  showError(null);
  // Times from the allocsvr's clock: the served counts and now_ms come
  // from the same answer, so the rate does not depend on network delay.
  const now = Number(st.nowMs) || Date.now();
  document.getElementById("node")!.textContent = st.nodeId;
  document.title = `allocsvr ${st.nodeId} · seqsvr`;

  const tags = st.tags.map((tag) => tagCard(tag, now));
  replace("tags", ...(tags.length ? tags : [h("p", { class: "empty" }, "no tag loaded yet: tags load on their first NextIDs")]));

  const sf = st.snowflake;
  if (sf) {
    const leaseLeft = Number(sf.leaseExpiresMs) - now;
    replace(
      "snowflake",
      kv("state", sf.enabled ? (sf.fenced ? "fenced" : "serving") : "off", sf.enabled && !sf.fenced ? "ok" : "warn"),
      kv("worker_id", sf.enabled ? fmt(sf.workerId) : "—"),
      kv("lease_left", sf.enabled ? dur(leaseLeft) : "—", leaseLeft > 0 ? "" : "warn"),
      kv("clock_offset", sf.enabled ? `${fmt(sf.clockOffsetMs)} ms` : "—"),
      kv("last_timestamp", sf.lastTimestampMs ? ago(now - Number(sf.lastTimestampMs)) : "—"),
      kv("layout", sf.layout ? `${sf.layout.timestampBits}/${sf.layout.workerBits}/${sf.layout.sequenceBits} bits` : "—"),
      ...(sf.reason ? [kv("reason", sf.reason, "warn")] : []),
    );
  }

  const sq = st.seq;
  if (!sq) {
    replace("seq", h("p", { class: "empty" }, "per-key sequences are off on this process"));
    return;
  }
  const spaceRows = sq.spaces.map((s, i) => {
    const r = routing[i];
    let owned = "";
    if (r instanceof ConnectError) owned = `${Code[r.code]}: ${r.rawMessage}`;
    else
      owned = r.sections
        .filter((x) => x.owner === st.nodeId)
        .map((x) => (x.firstSection === x.lastSection ? fmt(x.firstSection) : `${fmt(x.firstSection)}–${fmt(x.lastSection)}`))
        .join(", ");
    return h(
      "tr",
      { "data-space": s.space },
      td("space", s.space, "mono"),
      td("sections_owned", fmt(s.sectionsOwned), "num"),
      td("ranges", owned || "none", "mono"),
      td("sections_loaded", fmt(s.sectionsLoaded), "num"),
      td("keys_in_memory", fmt(s.keysInMemory), "num"),
      td("routing_version", fmt(s.routingVersion), "num"),
    );
  });
  replace(
    "seq",
    h(
      "div",
      { class: "kvs" },
      kv("membership_lease", sq.leaseValid ? dur(Number(sq.leaseLeftMs)) + " left" : "not valid", sq.leaseValid ? "ok" : "warn"),
      kv("forwards", fmt(sq.forwards)),
      kv("max_seq_writes", fmt(sq.maxSeqWrites)),
      ...(sq.reason ? [kv("reason", sq.reason, "warn")] : []),
    ),
    table(["space", "sections owned#", "owned ranges", "loaded#", "keys in memory#", "routing version#"], spaceRows, "no spaces"),
  );
}

function tagCard(tag: TagStatus, now: number): HTMLElement {
  let rate = rates.get(tag.tag);
  if (!rate) rates.set(tag.tag, (rate = new Rate()));
  const r = rate.add(now, Number(tag.idsServed));
  const refill = tag.lastLoadTime ? now - (Number(tag.lastLoadTime.seconds) * 1000 + Math.floor(tag.lastLoadTime.nanos / 1e6)) : -1;
  return h(
    "section",
    { class: "tag", "data-tag": tag.tag },
    h(
      "header",
      {},
      h("h3", { class: "mono" }, tag.tag),
      h("span", { class: "rate", "data-k": "rate" }, r === null ? "— IDs/s" : `${fmt(r)} IDs/s`),
    ),
    h(
      "div",
      { class: "tag-body" },
      h(
        "div",
        { class: "buffers" },
        buffer("current", tag.current, tag.position),
        buffer("next", tag.next, undefined, tag.loading ? "loading…" : tag.nextReady ? "" : "not loaded"),
      ),
      h(
        "div",
        { class: "chart" },
        sparkline(rate.values),
        h("div", { class: "caption" }, `IDs/s, last ${chartWindow} s, peak ${fmt(Math.max(0, ...rate.values))}`),
        h(
          "dl",
          {},
          dd("position", tag.current ? fmt(tag.position) : "—"),
          dd("step", fmt(tag.step)),
          dd("base_step", fmt(tag.baseStep)),
          dd("served", fmt(tag.idsServed)),
          dd("last_refill", refill >= 0 ? `${ago(refill)} (${fmt(tag.lastLoadDurationMs)} ms)` : "never"),
        ),
      ),
    ),
    tag.lastLoadError ? h("p", { class: "note warn", "data-k": "last_load_error" }, tag.lastLoadError) : null,
  );
}

// buffer draws one segment: its range, how much is used, a bar.
function buffer(name: string, s: SegmentStatus | undefined, position?: bigint, note = ""): HTMLElement {
  if (!s) return h("div", { class: "buffer empty", "data-buffer": name }, h("div", { class: "label" }, name), h("div", { class: "range" }, note || "empty"));
  const size = s.last - s.first + 1n;
  const used = size - s.remaining;
  const pct = size > 0n ? Number((used * 1000n) / size) / 10 : 0;
  // Set through the CSSOM: the page's CSP allows no inline style attribute.
  const fill = h("div", { class: "fill" });
  fill.style.width = `${pct}%`;
  return h(
    "div",
    { class: "buffer", "data-buffer": name, "data-first": String(s.first), "data-last": String(s.last), "data-remaining": String(s.remaining) },
    h("div", { class: "label" }, name, h("span", { class: "pct", "data-k": "pct" }, `${pct.toFixed(1)}% used`)),
    h("div", { class: "range mono" }, `${fmt(s.first)} – ${fmt(s.last)}`),
    h("div", { class: "bar" }, fill),
    h("div", { class: "sub" }, `${fmt(s.remaining)} left` + (position !== undefined ? ` · next ${fmt(position)}` : "")),
  );
}

function kv(k: string, v: string, cls = ""): HTMLElement {
  return h("div", { class: "kv " + cls, "data-k": k }, h("div", { class: "label" }, k.replace(/_/g, " ")), h("div", { class: "value" }, v));
}

function dd(k: string, v: string): DocumentFragment {
  const f = document.createDocumentFragment();
  f.append(h("dt", {}, k.replace(/_/g, " ")), h("dd", { "data-k": k }, v));
  return f;
}

const l = loop(1000, refresh);
setupToken(l.kick);
