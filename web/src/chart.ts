// A small live line chart drawn as SVG by hand: IDs per second over the
// last 30 refreshes (30 s), no charting library.
const NS = "http://www.w3.org/2000/svg";

export const window = 30;

export class Rate {
  private samples: { t: number; v: number }[] = [];
  private last?: { t: number; n: number };

  // add takes the counter's value n at time t (ms) and returns the rate
  // since the previous value, per second (null for the first value). A
  // counter that went down (the process restarted) starts over.
  add(t: number, n: number): number | null {
    const prev = this.last;
    this.last = { t, n };
    if (!prev || n < prev.n || t <= prev.t) return null;
    const v = ((n - prev.n) * 1000) / (t - prev.t);
    this.samples.push({ t, v });
    while (this.samples.length > window) this.samples.shift();
    return v;
  }

  get values(): number[] {
    return this.samples.map((s) => s.v);
  }
}

export function sparkline(values: number[], width = 240, height = 48): SVGSVGElement {
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  const max = Math.max(1, ...values);
  svg.setAttribute("aria-label", `IDs per second, peak ${Math.round(max)}`);
  const base = document.createElementNS(NS, "line");
  base.setAttribute("x1", "0");
  base.setAttribute("x2", String(width));
  base.setAttribute("y1", String(height - 0.5));
  base.setAttribute("y2", String(height - 0.5));
  base.setAttribute("class", "axis");
  svg.append(base);
  if (values.length < 2) return svg;
  const step = width / (window - 1);
  const x0 = width - step * (values.length - 1);
  const pts = values.map((v, i) => `${(x0 + i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 6)).toFixed(1)}`);
  const area = document.createElementNS(NS, "polygon");
  area.setAttribute("points", `${x0.toFixed(1)},${height} ${pts.join(" ")} ${width},${height}`);
  area.setAttribute("class", "area");
  const line = document.createElementNS(NS, "polyline");
  line.setAttribute("points", pts.join(" "));
  line.setAttribute("class", "line");
  svg.append(area, line);
  return svg;
}
