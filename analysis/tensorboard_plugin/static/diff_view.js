// Two runs compared: the tftrace diff result (RunDiff.to_json), B against A.

import { el, fmt, kvTable, note, recordsTable, section } from "./dom.js";

function side(label, s) {
  return [`${label} steps`, `${fmt(s.steps)}: median ${fmt(s.median_ms, 3)} ms, IQR ${fmt(s.iqr_ms, 3)} ms, p10-p90 ${fmt(s.p10_ms, 3)}-${fmt(s.p90_ms, 3)} ms`];
}

function factor(name, f) {
  const p = f.p_value === null ? "" : `, p = ${f.p_value.toExponential(1)}`;
  return [name, `${fmt(f.a_median, 3)} -> ${fmt(f.b_median, 3)} (x${fmt(f.ratio, 3)}${p}${f.significant ? ", significant" : ""})`];
}

export function diffView(data) {
  if (data.error) {
    return section("compare", "Compare", el("p", { class: "error" }, `${data.a_name} against ${data.b_name}: ${data.error}`));
  }
  const t = data.step_time;
  const pairs = [
    ["A (baseline)", `${data.a_name}: ${data.a.run}`],
    ["B", `${data.b_name}: ${data.b.run}`],
    side("A", t.a),
    side("B", t.b),
    ["speedup", t.speedup === null ? "-" : `${fmt(t.speedup, 3)}x (median A / median B)`],
    ["interval", t.interval ? `${fmt(t.interval[0], 3)}-${fmt(t.interval[1], 3)}` : "-"],
    factor("threads busy per step", data.factors.parallelism),
    factor("busy thread-time per step (ms)", data.factors.busy_time),
    ["A window", data.a.window],
    ["B window", data.b.window],
  ];
  return section(
    "compare",
    `Compare: ${data.a_name} -> ${data.b_name}`,
    el("p", { class: "verdict", "data-verdict": t.verdict }, `verdict: ${t.reason}`),
    kvTable(pairs),
    el("h3", null, "Pools"),
    recordsTable(data.pools),
    el("h3", null, "Where the wall time went"),
    recordsTable(data.breakdown),
    el("h3", null, "Op types that changed most"),
    recordsTable(data.ops),
    el("h3", null, "Findings"),
    recordsTable(data.findings),
    el("h3", null, "What differs in how they ran"),
    recordsTable(data.manifest),
    data.notes.map((line) => note(line)),
  );
}
