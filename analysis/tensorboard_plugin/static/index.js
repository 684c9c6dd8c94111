// The Thread pools tab. TensorBoard loads this module into the tab's iframe and calls render().
//
// The page shows one run at a time (picked from the tftrace runs under the log directory) and,
// when a second run is picked to compare with, the tftrace diff of the two. The choice is kept
// in the iframe's address (#run=NAME&compare=NAME), so a reload keeps it. Data comes from the
// plugin's JSON routes, beside this file; nothing is fetched from anywhere else.

import { diffView } from "./static/diff_view.js";
import { el, note } from "./static/dom.js";
import { runView } from "./static/run_view.js";

const route = (path) => new URL(path, import.meta.url);

async function getJson(path) {
  const response = await fetch(route(path));
  let data;
  try {
    data = await response.json();
  } catch (e) {
    data = { error: `${response.status} ${response.statusText}` };
  }
  return data;
}

function state() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { run: params.get("run"), compare: params.get("compare") };
}

function remember(choice) {
  const params = new URLSearchParams();
  if (choice.run) params.set("run", choice.run);
  if (choice.compare) params.set("compare", choice.compare);
  history.replaceState(null, "", `#${params}`);
}

function picker(id, label, runs, chosen, none) {
  const options = runs.map((r) =>
    el("option", { value: r.name, selected: r.name === chosen ? "" : null }, r.label === r.name ? r.name : `${r.label} (${r.name})`),
  );
  if (none) options.unshift(el("option", { value: "", selected: chosen ? null : "" }, none));
  return el("label", null, label, " ", el("select", { id }, options));
}

export async function render() {
  document.head.append(el("link", { rel: "stylesheet", href: route("static/style.css").href }));
  const page = el("main", { id: "tftrace" }, el("h1", null, "Thread pools"));
  document.body.append(page);
  const listing = await getJson("runs");
  const runs = listing.runs || [];
  if (!runs.length) {
    page.append(
      note(`No tftrace runs under ${listing.logdir || "the log directory"}: record one into it with tftrace record -o DIR/NAME script.py.`, "none"),
    );
    return;
  }
  const choice = state();
  if (!runs.some((r) => r.name === choice.run)) choice.run = runs[0].name;
  if (!runs.some((r) => r.name === choice.compare)) choice.compare = null;
  const controls = el(
    "div",
    { class: "controls" },
    picker("run-picker", "run", runs, choice.run),
    picker("compare-picker", "compare with", runs, choice.compare, "(none)"),
  );
  const content = el("div", { id: "content" });
  page.append(controls, content);

  let shown = 0; // the latest choice wins when answers arrive out of order
  async function show() {
    const ticket = ++shown;
    remember(choice);
    content.replaceChildren(note(`analysing ${choice.run} ...`, "loading"));
    const [data, diff] = await Promise.all([
      getJson(`run?run=${encodeURIComponent(choice.run)}`),
      choice.compare
        ? getJson(`diff?a=${encodeURIComponent(choice.run)}&b=${encodeURIComponent(choice.compare)}`)
        : null,
    ]);
    if (ticket !== shown) return;
    const parts = [];
    if (diff) parts.push(diffView({ a_name: choice.run, b_name: choice.compare, ...diff }));
    parts.push(data.error ? el("p", { class: "error" }, `${data.run}: ${data.error}`) : runView(data));
    content.replaceChildren(...parts);
    document.body.dataset.ready = "true";
  }
  controls.querySelector("#run-picker").addEventListener("change", (e) => {
    choice.run = e.target.value;
    show();
  });
  controls.querySelector("#compare-picker").addEventListener("change", (e) => {
    choice.compare = e.target.value || null;
    show();
  });
  await show();
}
