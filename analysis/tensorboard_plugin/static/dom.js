// Building the page from data: elements, tables and sections.
//
// Everything that comes from a run (op, thread and run names, paths, finding texts) is under
// the user's control. It reaches the page only as text nodes (textContent) or as attribute
// values set one by one, never as markup: nothing here parses HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

// el("td", {class: "num"}, "1.5", child...): an element with attributes and children; strings
// become text nodes, null and undefined are left out.
export function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A figure as text, as the terminal and HTML report write it: "-" for a missing value.
export function fmt(value, digits) {
  if (value === null || value === undefined || Number.isNaN(value)) return "-";
  if (typeof value === "object" && !(value instanceof Node)) return JSON.stringify(value);
  if (typeof value === "number" && digits !== undefined) return value.toFixed(digits);
  if (typeof value === "number" && !Number.isInteger(value)) return String(+value.toPrecision(4));
  return String(value);
}

export function percent(value, digits = 0) {
  return value === null || value === undefined ? "-" : `${(100 * value).toFixed(digits)}%`;
}

// A class name from a value (a severity, a status): reduced to [a-z0-9-].
export function cssClass(value) {
  return String(value).toLowerCase().replace(/[^a-z0-9-]/g, "-");
}

// A table: headers, then rows of cells (a cell is text or {text, num: true} for a figure).
export function table(headers, rows, attrs) {
  const head = el("tr", null, headers.map((h) => el("th", null, h)));
  const body = rows.map((row) =>
    el(
      "tr",
      null,
      row.map((cell) => {
        const numeric = cell !== null && typeof cell === "object" && !(cell instanceof Node);
        return numeric ? el("td", { class: "num" }, cell.text) : el("td", null, cell);
      }),
    ),
  );
  return el("table", attrs, el("thead", null, head), el("tbody", null, body));
}

export function num(value, digits) {
  return { text: fmt(value, digits) };
}

// A table of records whose columns are their keys (the diff's tables), figures right-aligned.
export function recordsTable(records, columns) {
  if (!records || records.length === 0) return note("none");
  const keys = columns || Object.keys(records[0]);
  const rows = records.map((r) =>
    keys.map((k) => (typeof r[k] === "number" ? num(r[k]) : fmt(r[k]))),
  );
  return table(keys, rows);
}

// Pairs (name, value) as a two-column table.
export function kvTable(pairs) {
  const rows = pairs.map(([k, v]) => el("tr", null, el("th", null, k), el("td", null, fmt(v))));
  return el("table", { class: "kv" }, el("tbody", null, rows));
}

export function note(text, kind = "note") {
  return el("p", { class: kind }, text);
}

export function section(id, title, ...body) {
  return el("section", { id }, el("h2", null, title), ...body);
}
