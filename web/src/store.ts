// The storesvr status page: the Raft members as each one sees itself
// (role, term, commit and applied index), the leader, the tags, the
// per-key spaces and their section routing, refreshed every second.
import { Code, ConnectError, storeClient, type StoreClient } from "./client";
import { ago, dur, fmt, h, loop, replace, setupToken, showError, table, td, token } from "./common";
import type { ClusterStatusResponse, Member, Space, Tag } from "./gen/seqsvr/v1/store_pb";

const self = storeClient(location.origin, { token });
const peers = new Map<string, StoreClient>();

function peer(httpAddr: string): StoreClient {
  let c = peers.get(httpAddr);
  if (!c) {
    c = storeClient(`${location.protocol}//${httpAddr}`, { token, timeoutMs: 2000 });
    peers.set(httpAddr, c);
  }
  return c;
}

async function allTags(): Promise<Tag[]> {
  const out: Tag[] = [];
  let pageToken = "";
  do {
    const r = await self.listTags({ pageSize: 500, pageToken });
    out.push(...r.tags);
    pageToken = r.nextPageToken;
  } while (pageToken && out.length < 5000);
  return out;
}

async function allSpaces(): Promise<Space[]> {
  const out: Space[] = [];
  let pageToken = "";
  do {
    const r = await self.listSpaces({ pageSize: 500, pageToken });
    out.push(...r.spaces);
    pageToken = r.nextPageToken;
  } while (pageToken && out.length < 5000);
  return out;
}

// memberView asks a member for its own status; an error is shown in its
// row rather than failing the page.
async function memberView(m: Member, st: ClusterStatusResponse): Promise<ClusterStatusResponse | ConnectError> {
  if (m.id === st.nodeId) return st;
  try {
    return await peer(m.httpAddr).clusterStatus({});
  } catch (e) {
    return ConnectError.from(e);
  }
}

async function refresh(): Promise<void> {
  const st = await self.clusterStatus({});
  const [views, tags, spaces] = await Promise.all([
    Promise.all(st.members.map((m) => memberView(m, st))),
    allTags(),
    allSpaces(),
  ]);
  const routing = await Promise.all(
    spaces.map((s) => self.getRouting({ space: s.space }).catch((e: unknown) => ConnectError.from(e))),
  );
  showError(null);
  document.getElementById("node")!.textContent = st.nodeId;
  document.title = `storesvr ${st.nodeId} · seqsvr`;

  replace(
    "summary",
    card("leader", st.leaderId || "none", st.leaderId ? "" : "warn"),
    card("term", fmt(st.term)),
    card("commit index", fmt(st.commitIndex)),
    card("applied index", fmt(st.appliedIndex)),
    card("members", String(st.members.length)),
  );

  const memberRows = st.members.map((m, i) => {
    const v = views[i];
    const err = v instanceof ConnectError;
    const role = err ? "unreachable" : memberRole(v, m);
    return h(
      "tr",
      { "data-member": m.id, class: m.id === st.leaderId ? "leader" : undefined },
      td("id", h("span", {}, m.id, m.id === st.nodeId ? h("small", {}, " (this page)") : null)),
      td("role", h("span", { class: "pill " + role }, role)),
      td("suffrage", m.suffrage),
      td("term", err ? "—" : fmt(v.term), "num"),
      td("commit_index", err ? "—" : fmt(v.commitIndex), "num"),
      td("applied_index", err ? "—" : fmt(v.appliedIndex), "num"),
      td("http_addr", m.httpAddr, "mono"),
      td("raft_addr", m.raftAddr, "mono"),
      td("note", err ? `${Code[v.code]}: ${v.rawMessage}` : "", "note"),
    );
  });
  replace("members", table(["member", "role", "suffrage", "term#", "commit#", "applied#", "HTTP", "Raft", ""], memberRows, "no members"));

  const tagRows = tags.map((t) =>
    h(
      "tr",
      { "data-tag": t.tag },
      td("tag", t.tag, "mono"),
      td("max_id", fmt(t.maxId), "num"),
      td("step", fmt(t.step), "num"),
      td("description", t.description),
      td("update_time", t.updateTime ? ago(Date.now() - Number(t.updateTime.seconds) * 1000) : ""),
    ),
  );
  replace("tags", table(["tag", "max_id#", "step#", "description", "updated"], tagRows, "no tags yet"));

  const spaceRows = spaces.map((s) =>
    h(
      "tr",
      { "data-space": s.space },
      td("space", s.space, "mono"),
      td("key_count", fmt(s.keyCount), "num"),
      td("section_size", fmt(s.sectionSize), "num"),
      td("section_count", fmt(s.sectionCount), "num"),
      td("step", fmt(s.step), "num"),
      td("description", s.description),
    ),
  );
  replace("spaces", table(["space", "keys#", "section size#", "sections#", "step#", "description"], spaceRows, "no spaces"));

  const now = Number(st.nowMs) || Date.now();
  const routes = spaces.map((s, i) => {
    const r = routing[i];
    if (r instanceof ConnectError) {
      return h("div", { class: "routing", "data-routing": s.space }, h("h3", {}, s.space), h("p", { class: "note" }, `routing not shown: ${Code[r.code]}: ${r.rawMessage}`));
    }
    const rows = r.sections.map((sec) =>
      h(
        "tr",
        { "data-section": `${sec.firstSection}-${sec.lastSection}` },
        td("sections", `${fmt(sec.firstSection)}–${fmt(sec.lastSection)}`, "num"),
        td("owner", sec.owner || "unassigned", sec.owner ? "mono" : "warn"),
        td("lease", sec.leaseExpiresMs ? dur(Number(sec.leaseExpiresMs) - now) + " left" : ""),
        td("next_owner", sec.nextOwner, "mono"),
      ),
    );
    return h(
      "div",
      { class: "routing", "data-routing": s.space },
      h("h3", {}, s.space, h("small", {}, ` routing version ${fmt(r.routingVersion)}`)),
      table(["sections#", "owner", "lease", "moving to"], rows, "no sections assigned yet"),
    );
  });
  replace("routing", ...(routes.length ? routes : [h("p", { class: "empty" }, "no spaces")]));
}

function memberRole(v: ClusterStatusResponse, m: Member): string {
  const me = v.members.find((x) => x.id === m.id);
  return me?.state || "unknown";
}

function card(label: string, value: string, cls = ""): HTMLElement {
  return h("div", { class: "card " + cls, "data-card": label }, h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}

const l = loop(1000, refresh);
setupToken(l.kick);
