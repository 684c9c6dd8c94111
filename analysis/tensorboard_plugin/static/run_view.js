// One run's tab: the sections of the HTML report, drawn from the run's JSON
// (dashboard.py): core use, a server's requests, findings, pools, concurrency, queue delay,
// steps, breakdown, threads, the run itself.

import { CATEGORY_COLOURS, POOL_COLOURS, REQUEST_COLOURS, colour, lineChart, logBars, stackedBars } from "./charts.js";
import { cssClass, el, fmt, kvTable, note, num, percent, section, table } from "./dom.js";

export function runView(data) {
  return el(
    "div",
    { class: "run", "data-run": data.name },
    coreUse(data),
    requests(data),
    findings(data),
    pools(data),
    concurrency(data),
    queueDelay(data),
    steps(data),
    breakdown(data),
    threads(data),
    runSection(data),
  );
}

function coreUse(data) {
  const [first, ...rest] = data.headline;
  const causes = data.idle_causes;
  return section(
    "core-use",
    "Core use",
    first ? el("p", { class: "headline" }, first) : note("no core-use figures for this run"),
    rest.map((line) => note(line)),
    causes.rows.length ? table(causes.headers, causes.rows.map(([l, s, p]) => [l, num(s), num(p)])) : null,
    data.core_use_notes.map((line) => note(line)),
  );
}

// A server's requests over the analysed window (named): the report's lines and tables,
// requests in flight and completed over time, the latency distribution. None for a loop.
function requests(data) {
  const r = data.requests_view;
  if (!r) return null;
  const [first, ...rest] = r.lines;
  const textCells = (row) => row.map((cell, i) => (i === 0 ? cell : { text: cell }));
  const t = r.over_time;
  const charts = [];
  if (t.t_s.length) {
    const bin = t.bin_s ? ` (bins of ${fmt(t.bin_s * 1e3)} ms)` : "";
    charts.push(
      lineChart("requests-in-flight", `Mean number of requests in flight (started, not yet returned) in each bin of the analysed window${bin}.`, {
        xs: t.t_s,
        series: [{ name: "requests in flight", ys: t.in_flight, fill: REQUEST_COLOURS.inFlight }],
        xLabel: "seconds since the window's start",
        yLabel: "requests in flight",
      }),
      lineChart("requests-completed", `Requests that returned in each bin, per second of the bin${bin}: the throughput over time.`, {
        xs: t.t_s,
        series: [{ name: "requests completed / s", ys: t.completed_per_s, fill: REQUEST_COLOURS.completed }],
        xLabel: "seconds since the window's start",
        yLabel: "requests / s",
      }),
    );
  }
  const byFunction = {};
  for (const b of r.latency_distribution) {
    (byFunction[b.function] = byFunction[b.function] || []).push({ x0: b.lo_ms, x1: b.lo_ms + b.width_ms, y: b.fraction });
  }
  const palette = [REQUEST_COLOURS.inFlight, ...Object.values(POOL_COLOURS)];
  const series = Object.entries(byFunction).map(([name, bars], i) => ({ name, bars, fill: palette[i % palette.length] }));
  if (series.length) {
    charts.push(
      logBars("request-latency", "Share of the requests per latency bin (log-spaced), per function where there are several.", {
        series,
        xLabel: "latency (ms)",
        yLabel: "share of requests",
        multiples: [1, 2, 5], // a latency spans a decade or two: 1, 2, 5, 10 ms ...
      }),
    );
  }
  return section(
    "requests",
    "Requests",
    first ? el("p", { class: "headline" }, first) : null,
    rest.map((line) => note(line)),
    note(r.window_note),
    el("h3", null, r.latency.title),
    table(r.latency.headers, r.latency.rows.map(textCells)),
    el("h3", null, r.breakdown.title),
    table(r.breakdown.headers, r.breakdown.rows.map(textCells)),
    charts,
  );
}

// A finding's verification: what timing its advised setting beside the run's own showed.
function verification(f) {
  if (f.verification) {
    const v = f.verification;
    const speed = `${fmt(v.speedup, 2)}x (${fmt(v.speedup_range[0], 2)}-${fmt(v.speedup_range[1], 2)})`;
    return [v.status, `${v.status}: ${v.reason} Speedup ${speed} over ${v.runs} runs each.`];
  }
  if (f.setting) {
    return ["not verified", "not verified: tftrace analyze --verify RUN times the advised setting beside this one"];
  }
  return ["nothing to verify", "no thread setting to time: the action is not a setting"];
}

function findings(data) {
  const list = data.findings.map((f) => {
    const [status, text] = verification(f);
    const evidence = Object.entries(f.evidence || {}).map(([k, v]) => [k, typeof v === "object" && v !== null ? JSON.stringify(v) : fmt(v)]);
    return el(
      "div",
      { class: `finding sev-${cssClass(f.severity)}`, "data-finding": f.id },
      el("div", null, el("span", { class: "sev" }, f.severity), " ", el("code", null, f.id), f.pool ? ` (${f.pool})` : null),
      el("div", { class: "msg" }, f.message),
      f.consequence_of.length ? el("div", { class: "consequence" }, `a consequence of ${f.consequence_of.join(", ")}`) : null,
      f.action ? el("div", { class: "action" }, "Action: ", f.action) : null,
      el("div", { class: `verified ${cssClass(status)}`, "data-verification": status }, text),
      evidence.length ? el("details", null, el("summary", null, "evidence"), kvTable(evidence)) : null,
    );
  });
  const notChecked = data.not_checked.length
    ? [el("h3", null, "Not checked"), el("ul", null, data.not_checked.map((line) => el("li", null, line)))]
    : [];
  return section("findings", "Findings", list.length ? list : note("No findings.", "none"), notChecked);
}

function pools(data) {
  const headers = ["pool", "threads", "configured", "busy", "mean", "peak", "util.", "cores", "class", "busy thread-s"];
  const rows = data.pools.map((p) => [
    p.pool,
    num(p.threads),
    num(p.configured),
    num(p.observed),
    num(p.mean, 2),
    num(p.peak),
    { text: percent(p.utilisation) },
    { text: percent(p.core_share) },
    fmt(p.core_class),
    num(p.busy_thread_s, 4),
  ]);
  const cpu = data.cpu.length
    ? [el("h3", null, "CPU truth"), table(Object.keys(data.cpu[0]), data.cpu.map((r) => Object.values(r).map((v) => (typeof v === "number" ? num(v) : fmt(v)))))]
    : [];
  return section("pools", "Pools", table(headers, rows), cpu, census(data.census_view));
}

// Every thread by pool (TF's, tf.data, BLAS/OpenMP, Python...) against the usable CPUs.
function census(view) {
  if (!view) return [];
  return [el("h3", null, view.title), table(view.headers, view.rows), view.lines.map((line) => note(line))];
}

function concurrency(data) {
  const c = data.concurrency;
  if (!c.t_s.length) return section("concurrency", "Concurrency over time", note("no window to show"));
  const series = Object.entries(c.pools).map(([pool, ys]) => ({ name: pool, ys, fill: colour(pool, POOL_COLOURS) }));
  const reference = c.cores ? { y: c.cores, name: `${c.cores} schedulable CPUs` } : null;
  const chart = lineChart(
    "concurrency",
    "Mean number of busy threads per pool in each bin of the analysed window (busy: owning work, not running on a CPU).",
    { xs: c.t_s, series, xLabel: "seconds since the window's start", yLabel: "busy threads", reference },
  );
  return section("concurrency", "Concurrency over time", chart);
}

function queueDelay(data) {
  const columns = ["pool", "closures", "p50_us", "p90_us", "p99_us", "max_us", "mean_us"];
  const rows = data.queue_delay.map((r) => columns.map((k, i) => (i === 0 ? r[k] : num(r[k], i === 1 ? undefined : 1))));
  const byPool = {};
  for (const b of data.queue_delay_distribution) {
    (byPool[b.pool] = byPool[b.pool] || []).push({ x0: b.lo_us, x1: b.lo_us + b.width_us, y: b.fraction });
  }
  const series = Object.entries(byPool).map(([pool, bars]) => ({ name: pool, bars, fill: colour(pool, POOL_COLOURS) }));
  const chart = series.length
    ? logBars("queue-delay", "Share of each pool's closures by how long they waited between being scheduled and starting (log-spaced bins).", {
        series,
        xLabel: "queue delay (us)",
        yLabel: "share of closures",
      })
    : note("no closures were scheduled in the window");
  return section("queue-delay", "Queue delay", rows.length ? table(columns, rows) : null, chart);
}

function steps(data) {
  const s = data.steps;
  if (!s.points.length) return section("steps", "Steps", note(`no steps in the window (${s.source})`));
  const xs = s.points.map((p) => p.step);
  const binned = s.binned ? ` Each point is the mean of a run of consecutive steps (${s.count} steps, ${s.points.length} points).` : "";
  const duration = lineChart("step-time", `Duration of each step.${binned}`, {
    xs,
    series: [{ name: "step time (ms)", ys: s.points.map((p) => p.duration_ns / 1e6), fill: "#333333" }],
    xLabel: "step",
    yLabel: "ms",
  });
  const stacks = Object.keys(CATEGORY_COLOURS).map((c) => ({ name: c, ys: s.points.map((p) => p[c]), fill: CATEGORY_COLOURS[c] }));
  const shares = stackedBars("step-breakdown", `Each step's wall time by category (shares adding up to 1).${binned}`, {
    xs,
    stacks,
    xLabel: "step",
    yLabel: "share of the step",
  });
  const series = s.pools.map((pool) => ({ name: pool, ys: s.points.map((p) => p[`concurrency/${pool}`]), fill: colour(pool, POOL_COLOURS) }));
  const pools = lineChart("step-concurrency", `Mean number of each pool's threads busy during the step.${binned}`, {
    xs,
    series,
    xLabel: "step",
    yLabel: "busy threads",
  });
  return section("steps", "Steps", s.line ? note(s.line) : null, s.summary.map((line) => note(line)), duration, shares, pools);
}

function breakdown(data) {
  const rows = data.breakdown.map((r) => [r.category, { text: percent(r.share, 1) }, num(r.ns / 1e6, 3)]);
  return section("breakdown", "Where the wall time went", table(["category", "share", "ms"], rows));
}

function threads(data) {
  const headers = ["pool", "tid", "OS name", "TF name", "Python name", "trace line", "events", "evidence"];
  const rows = data.threads.map((t) => [t.pool, num(t.tid), fmt(t.os_name), fmt(t.tf_name), fmt(t.python_name), fmt(t.line_name), num(t.events), t.evidence]);
  return section("threads", "Threads", table(headers, rows, { class: "threads" }));
}

function runSection(data) {
  const pairs = [["path", data.run], ...data.manifest, ["analysed", data.window_line]];
  if (data.warmup_line) pairs.push(["warm-up", data.warmup_line]);
  for (const line of data.notes) pairs.push(["note", line]);
  for (const line of data.missing) pairs.push(["missing", line]);
  pairs.push(["tftrace", data.tftrace_version]);
  return section("run", "Run", kvTable(pairs));
}
