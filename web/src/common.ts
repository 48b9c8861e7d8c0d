// What both status pages share: the token field (kept in sessionStorage,
// so it lives as long as the tab), the error banner, element building,
// number formatting and the refresh loop.
import { Code, ConnectError } from "./client";

const tokenKey = "seqsvr.token";

export function token(): string {
  return sessionStorage.getItem(tokenKey) ?? "";
}

// h builds an element: h("td", {class: "num", "data-k": "max_id"}, "12").
export function h(tag: string, attrs: Record<string, string | undefined> = {}, ...kids: (Node | string | null)[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) e.setAttribute(k, v);
  for (const k of kids) if (k !== null) e.append(k);
  return e;
}

export function fmt(n: bigint | number): string {
  return typeof n === "bigint" ? n.toLocaleString("en-US") : n.toLocaleString("en-US", { maximumFractionDigits: 1 });
}

export function ago(ms: number): string {
  if (ms < 0) return "in " + dur(-ms);
  return dur(ms) + " ago";
}

export function dur(ms: number): string {
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60_000) return (ms / 1000).toFixed(1) + " s";
  if (ms < 3_600_000) return Math.floor(ms / 60_000) + " min " + Math.round((ms % 60_000) / 1000) + " s";
  return (ms / 3_600_000).toFixed(1) + " h";
}

// setupToken wires the header's token form; onChange reloads at once.
export function setupToken(onChange: () => void): void {
  const input = document.getElementById("token") as HTMLInputElement;
  const form = document.getElementById("token-form") as HTMLFormElement;
  input.value = token();
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = input.value.trim();
    if (v) sessionStorage.setItem(tokenKey, v);
    else sessionStorage.removeItem(tokenKey);
    onChange();
  });
}

// showError fills the banner (or clears it with null) and marks the token
// field when the server wants a (better) token.
export function showError(err: unknown): void {
  const banner = document.getElementById("error")!;
  const tokenBox = document.getElementById("token")!;
  if (err === null) {
    banner.hidden = true;
    banner.textContent = "";
    tokenBox.classList.remove("bad");
    return;
  }
  const ce = ConnectError.from(err);
  const codeName = Code[ce.code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
  let hint = "";
  if (ce.code === Code.Unauthenticated) hint = " — enter a bearer token above";
  if (ce.code === Code.PermissionDenied) hint = " — this token's roles do not allow it";
  banner.hidden = false;
  banner.dataset.code = codeName;
  banner.textContent = `${codeName}: ${ce.rawMessage}${hint}`;
  tokenBox.classList.toggle("bad", ce.code === Code.Unauthenticated || ce.code === Code.PermissionDenied);
}

// loop runs refresh now and then every periodMs, one at a time; kick()
// runs it again at once.
export function loop(periodMs: number, refresh: () => Promise<void>): { kick: () => void } {
  let timer: number | undefined;
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    window.clearTimeout(timer);
    try {
      await refresh();
      setLive(true);
    } catch (err) {
      showError(err);
      setLive(false);
    } finally {
      running = false;
      timer = window.setTimeout(run, periodMs);
    }
  };
  void run();
  return { kick: () => void run() };
}

function setLive(ok: boolean): void {
  const e = document.getElementById("live")!;
  e.classList.toggle("ok", ok);
  e.textContent = ok ? "live · " + new Date().toLocaleTimeString("en-GB") : "not updating";
}

// replace swaps the children of the element with id for kids.
export function replace(id: string, ...kids: (Node | string)[]): void {
  document.getElementById(id)!.replaceChildren(...kids);
}

// table builds a table; a heading ending in "#" heads a numeric
// (right-aligned) column.
export function table(head: string[], rows: HTMLElement[], empty: string): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  const th = (c: string) => (c.endsWith("#") ? h("th", { class: "num" }, c.slice(0, -1)) : h("th", {}, c));
  return h("table", {}, h("thead", {}, h("tr", {}, ...head.map(th))), h("tbody", {}, ...rows));
}

export function td(k: string, v: string | Node, cls = ""): HTMLElement {
  return h("td", { "data-k": k, class: cls || undefined }, v);
}
