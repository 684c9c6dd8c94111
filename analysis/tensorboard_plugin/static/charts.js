// Charts drawn as inline SVG: lines over time or steps, stacked shares, log-binned bars.
// Every number drawn comes from the run's data as the plugin sent it; nothing is computed here
// but the mapping to pixels. Names (pools, categories) are text nodes, as everywhere.

import { el, svg } from "./dom.js";

// As in the report's figures (render/plots.py).
export const POOL_COLOURS = {
  "inter-op": "#1f77b4",
  "intra-op": "#ff7f0e",
  "tf.data": "#2ca02c",
  "python-main": "#9467bd",
};
export const CATEGORY_COLOURS = {
  "intra-op parallel": "#2ca02c",
  "op, intra idle": "#1f77b4",
  "waiting for a thread": "#d62728",
  "dispatch & executor": "#ff7f0e",
  "python / host": "#9467bd",
  idle: "#d9d9d9",
};
// A server's requests (render/plots.py's request figures).
export const REQUEST_COLOURS = { inFlight: "#1f77b4", completed: "#2ca02c" };
const W = 760;
const H = 230;
const M = { left: 56, right: 16, top: 12, bottom: 40 };

export function colour(name, table) {
  return table[name] || "#555555";
}

function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw) || raw;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
  return ticks;
}

// Powers of ten, each times every multiple given ([1]: 1, 10, 100; [1, 2, 5]: 1, 2, 5, 10, ...).
function logTicks(lo, hi, multiples = [1]) {
  const ticks = [];
  for (let p = Math.floor(Math.log10(lo)); p <= Math.ceil(Math.log10(hi)); p++) {
    for (const m of multiples) ticks.push(m === 1 ? 10 ** p : +(m * 10 ** p).toPrecision(12));
  }
  return ticks;
}

// A scale from data to pixels, with its ticks: linear, or log10 (for positive data; ticks at
// the powers of ten times ``multiples``).
function scale(lo, hi, from, to, log, multiples) {
  if (log) {
    const [a, b] = [Math.log10(lo), Math.log10(hi)];
    const f = (v) => from + ((Math.log10(v) - a) / (b - a || 1)) * (to - from);
    f.ticks = logTicks(lo, hi, multiples).filter((t) => t >= lo / 1.0001 && t <= hi * 1.0001);
    return f;
  }
  const f = (v) => from + ((v - lo) / (hi - lo || 1)) * (to - from);
  f.ticks = niceTicks(lo, hi);
  return f;
}

function label(value) {
  return Math.abs(value) >= 1e4 || (value !== 0 && Math.abs(value) < 1e-3)
    ? value.toExponential(0)
    : String(+value.toPrecision(4));
}

// The frame of a chart: axes, ticks, grid and axis titles; returns the svg and its scales.
function frame(kind, x, y, xLabel, yLabel) {
  if (xLabel === "step") x.ticks = x.ticks.filter(Number.isInteger); // steps are whole
  const root = svg("svg", {
    class: "chart",
    "data-chart": kind,
    viewBox: `0 0 ${W} ${H}`,
    width: W,
    height: H,
    role: "img",
  });
  const [bottom, right] = [H - M.bottom, W - M.right];
  for (const t of y.ticks) {
    root.append(svg("line", { class: "grid", x1: M.left, x2: right, y1: y(t), y2: y(t) }));
    root.append(svg("text", { x: M.left - 6, y: y(t) + 4, "text-anchor": "end" }, label(t)));
  }
  for (const t of x.ticks) {
    root.append(svg("line", { class: "tick", x1: x(t), x2: x(t), y1: bottom, y2: bottom + 4 }));
    root.append(svg("text", { x: x(t), y: bottom + 16, "text-anchor": "middle" }, label(t)));
  }
  root.append(svg("line", { class: "axis", x1: M.left, x2: right, y1: bottom, y2: bottom }));
  root.append(svg("line", { class: "axis", x1: M.left, x2: M.left, y1: M.top, y2: bottom }));
  root.append(svg("text", { x: (M.left + right) / 2, y: H - 6, "text-anchor": "middle" }, xLabel));
  root.append(
    svg("text", { transform: `translate(12 ${(M.top + bottom) / 2}) rotate(-90)`, "text-anchor": "middle" }, yLabel),
  );
  return root;
}

function legend(entries) {
  return el(
    "div",
    { class: "legend" },
    entries.map(([name, fill]) =>
      el("span", null, el("i", { style: `background:${fill}` }), name),
    ),
  );
}

function figure(kind, caption, chart, entries) {
  return el("figure", { "data-figure": kind }, chart, entries ? legend(entries) : null, el("figcaption", null, caption));
}

function extent(values, floor) {
  const finite = values.filter((v) => v !== null && Number.isFinite(v));
  const hi = finite.length ? Math.max(...finite) : 1;
  return [floor === undefined ? Math.min(...finite, 0) : floor, hi > 0 ? hi : 1];
}

// Lines over a shared x: series [{name, ys, fill}], an optional reference line {y, name}.
export function lineChart(kind, caption, { xs, series, xLabel, yLabel, reference }) {
  const ys = series.flatMap((s) => s.ys).concat(reference ? [reference.y] : []);
  const [lo, hi] = extent(ys, 0);
  const x = scale(Math.min(...xs), Math.max(...xs), M.left, W - M.right);
  const y = scale(lo, hi * 1.05, H - M.bottom, M.top);
  const root = frame(kind, x, y, xLabel, yLabel);
  if (reference) {
    root.append(svg("line", { class: "reference", x1: M.left, x2: W - M.right, y1: y(reference.y), y2: y(reference.y) }));
  }
  for (const s of series) {
    const points = xs
      .map((xv, i) => [xv, s.ys[i]])
      .filter(([, v]) => v !== null && Number.isFinite(v))
      .map(([xv, v]) => `${x(xv).toFixed(1)},${y(v).toFixed(1)}`);
    const line = svg("polyline", { class: "series", points: points.join(" "), stroke: s.fill, "data-series": s.name });
    line.append(svg("title", null, s.name));
    root.append(line);
  }
  const entries = series.map((s) => [s.name, s.fill]);
  if (reference) entries.push([reference.name, "#444444"]);
  return figure(kind, caption, root, entries);
}

// Stacked bars, one per x (a step), each the shares of its stacks [{name, ys, fill}].
export function stackedBars(kind, caption, { xs, stacks, xLabel, yLabel }) {
  const span = xs.length > 1 ? (Math.max(...xs) - Math.min(...xs)) / (xs.length - 1) : 1;
  const x = scale(Math.min(...xs) - span / 2, Math.max(...xs) + span / 2, M.left, W - M.right);
  const y = scale(0, 1, H - M.bottom, M.top);
  const root = frame(kind, x, y, xLabel, yLabel);
  const width = Math.max(x(span) - x(0), 0.5);
  xs.forEach((xv, i) => {
    let base = 0;
    for (const s of stacks) {
      const share = s.ys[i] || 0;
      if (share > 0) {
        const rect = svg("rect", {
          x: (x(xv) - width / 2).toFixed(2),
          y: y(base + share).toFixed(2),
          width: width.toFixed(2),
          height: (y(base) - y(base + share)).toFixed(2),
          fill: s.fill,
          "data-series": s.name,
        });
        root.append(rect);
      }
      base += share;
    }
  });
  return figure(kind, caption, root, stacks.map((s) => [s.name, s.fill]));
}

// Bars on a log x axis: series [{name, fill, bars: [{x0, x1, y}]}], drawn over each other;
// ticks at the powers of ten times ``multiples`` (default [1]).
export function logBars(kind, caption, { series, xLabel, yLabel, multiples }) {
  const bars = series.flatMap((s) => s.bars);
  const lo = Math.min(...bars.map((b) => b.x0));
  const hi = Math.max(...bars.map((b) => b.x1));
  const x = scale(lo, hi, M.left, W - M.right, true, multiples);
  const y = scale(0, extent(bars.map((b) => b.y), 0)[1] * 1.05, H - M.bottom, M.top);
  const root = frame(kind, x, y, xLabel, yLabel);
  for (const s of series) {
    for (const b of s.bars) {
      root.append(
        svg("rect", {
          class: "bar",
          x: x(b.x0).toFixed(2),
          y: y(b.y).toFixed(2),
          width: Math.max(x(b.x1) - x(b.x0) - 1, 0.5).toFixed(2),
          height: (y(0) - y(b.y)).toFixed(2),
          fill: s.fill,
          "data-series": s.name,
        }),
      );
    }
  }
  return figure(kind, caption, root, series.map((s) => [s.name, s.fill]));
}
