// Small DOM helpers. Every value from the API goes in as text, never as HTML.
import { enc } from "./api.js";

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.setAttribute("class", v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function s(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

// On a phone each row becomes a card whose cells carry their column's name (CSS reads
// data-label), so no column is cut off; a `wide` table (data, diffs) scrolls instead.
export function table(headers, rows, { caption, empty = "Nothing yet.", cls, wide = false } = {}) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  const names = headers.map((x) => (typeof x === "string" ? x : x.textContent || ""));
  return h(
    "div",
    { class: `table-wrap${wide ? " wide" : ""}` },
    h(
      "table",
      { class: [cls, wide ? null : "stack"].filter(Boolean).join(" ") },
      caption ? h("caption", null, caption) : null,
      h("thead", null, h("tr", null, headers.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", null, rows.map((r) => h("tr", null, r.map((c, i) => h("td", { "data-label": names[i] || null }, c))))),
    ),
  );
}

// A table wider than its box says so, and can be scrolled from the keyboard.
export function markScrolling(root) {
  for (const wrap of root.querySelectorAll(".table-wrap")) {
    const table = wrap.querySelector("table");
    const scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
    const hint = wrap.previousElementSibling && wrap.previousElementSibling.classList.contains("scroll-hint")
      ? wrap.previousElementSibling : null;
    if (!scrolls) {
      if (hint) hint.remove();
      wrap.removeAttribute("tabindex");
      continue;
    }
    const columns = table ? table.querySelectorAll("thead th").length : 0;
    wrap.setAttribute("tabindex", "0");
    wrap.setAttribute("role", "region");
    wrap.setAttribute("aria-label", `Table of ${columns} columns; scrolls sideways`);
    if (!hint) wrap.before(h("p", { class: "scroll-hint hint" }, `Scroll sideways for all ${columns} columns →`));
  }
}

export function section(title, ...children) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return h("section", { "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

// Every date on every page in one format: "28 Nov, 14:05:09" (the year when not this one).
export function dateText(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const thisYear = d.getFullYear() === new Date().getFullYear();
  return d.toLocaleString(undefined, {
    year: thisYear ? undefined : "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
  });
}

// A local time as a person types it, "2024-05-01 10:00" or "2024-05-01T10:00:30" (the day
// alone is its midnight): the same text in the address's form, or null if it is not one.
const LOCAL_TIME = /^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2})?))?$/;

export function parseLocalTime(text) {
  const m = String(text).trim().match(LOCAL_TIME);
  if (!m) return null;
  const value = `${m[1]}T${m[2] || "00:00"}`;
  return Number.isNaN(new Date(value).getTime()) ? null : value;
}

export function when(iso) {
  if (!iso) return "—";
  return h("time", { datetime: iso, title: iso }, dateText(iso));
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  const sec = ms / 1000;
  if (sec < 60) return `${sec.toFixed(1)} s`;
  const min = Math.floor(sec / 60);
  return `${min} min ${Math.round(sec - min * 60)} s`;
}

// The row count a producer reported for a run's input or output version, or null.
export function rowCountOf(facets) {
  const stats = facets && (facets.outputStatistics || facets.inputStatistics || facets.dataQualityMetrics);
  return stats && stats.rowCount !== undefined ? Number(stats.rowCount) : null;
}

export function count(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString();
}

// The end of an id: a UUIDv7 starts with its time, so runs made the same minute share
// their first characters, never their last.
export function short(id, n = 8) {
  return id ? `…${String(id).slice(-n)}` : "—";
}

// A link to a run that tells it apart: its number in its job (when known) and its id's end.
export function runLink(id, number) {
  if (!id) return "—";
  return h("a", { href: to.run(id), title: id, class: "run-id" }, number ? `#${number} ` : "", short(id));
}

// Run states and dataset states: an icon and a word, never colour alone.
const RUN_STATES = {
  COMPLETED: ["✓", "completed", "ok"],
  FAILED: ["✗", "failed", "bad"],
  RUNNING: ["◔", "running", "busy"],
  ABORTED: ["⊘", "aborted", "warn"],
  NEW: ["○", "new", "quiet"],
  QUEUED: ["○", "queued", "quiet"],
};

export function runState(state) {
  const [icon, word, tone] = RUN_STATES[state] || ["?", String(state || "no runs").toLowerCase(), "quiet"];
  return h("span", { class: `badge ${tone}`, "data-state": state || "" }, h("span", { "aria-hidden": "true" }, icon), ` ${word}`);
}

// A parent run no event was about (known from its children's parent facets) keeps its
// first child event's state, as Marquez does: "running" for good. Its children tell more.
export function parentRunState(r) {
  const kids = r.childRuns || {};
  const n = Object.values(kids).reduce((x, y) => x + y, 0);
  if (r.reportedBy !== "children" || !n) return runState(r.state);
  const has = (s) => (kids[s] || 0) > 0;
  const state = has("RUNNING") || has("NEW") || has("QUEUED") ? "RUNNING"
    : has("FAILED") ? "FAILED" : has("ABORTED") ? "ABORTED" : "COMPLETED";
  return h("span", { class: "from-children", "data-state": state },
    runState(state), h("span", { class: "hint" }, ` from its ${n} child run${n === 1 ? "" : "s"}`));
}

const DATA_STATES = {
  fresh: ["✓", "fresh", "ok"],
  out_of_date: ["⚠", "out of date", "warn"],
  missing: ["?", "missing", "bad"],
  orphaned: ["⊘", "orphaned", "quiet"],
};

export function dataState(state) {
  const [icon, word, tone] = DATA_STATES[state] || ["·", String(state), "quiet"];
  return h("span", { class: `badge ${tone}`, "data-state": state }, h("span", { "aria-hidden": "true" }, icon), ` ${word}`);
}

export function stateWords(state) {
  const [icon, word] = DATA_STATES[state] || ["·", String(state)];
  return `${icon} ${word}`;
}

export function runWords(state) {
  const [icon, word] = RUN_STATES[state] || ["?", String(state || "no runs").toLowerCase()];
  return `${icon} ${word}`;
}

// Where each thing lives in the pages.
export const to = {
  dataset: (ns, name, params) => `#/datasets/${enc(ns)}/${enc(name)}${query(params)}`,
  job: (ns, name, params) => `#/jobs/${enc(ns)}/${enc(name)}${query(params)}`,
  run: (id) => `#/runs/${enc(id)}`,
  lineage: (kind, ns, name, params) => `#/lineage/${kind}/${enc(ns)}/${enc(name)}${query(params)}`,
  columns: (ns, name) => `#/columns/${enc(ns)}/${enc(name)}`,
  status: () => "#/status",
  events: (params) => `#/events${query(params)}`,
  branches: (params) => `#/branches${query(params)}`,
};

// The branch a page reads, next to its title: nothing on main.
export function branchMark(branch) {
  return branch === "main" ? null : h("span", { class: "badge on-branch" }, `⎇ ${branch}`);
}

export function query(params) {
  if (!params) return "";
  const kept = Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== "");
  return kept.length ? `?${new URLSearchParams(kept).toString()}` : "";
}

export function a(href, ...children) {
  return h("a", { href }, ...children);
}

export function causeList(causes) {
  if (!causes || !causes.length) return null;
  return h("ul", { class: "causes" }, causes.map((c) => h("li", null, c.text || c.kind)));
}

export function errorBox(message, detail) {
  return h("div", { class: "error", role: "alert" }, h("strong", null, "✗ "), message, detail ? h("pre", null, detail) : null);
}

export function json(value) {
  return h("pre", { class: "json" }, JSON.stringify(value, null, 2));
}

// Two local times typed in text fields ("From … to …"); nonsense is refused on the spot,
// else `go` gets both (either may be "") in the address's form.
export function timeRangeForm([first, second], [from, until], go) {
  const problem = h("span", { id: `${first}-problem`, class: "problem", "aria-live": "polite" });
  const field = (id, label, value) => [
    h("label", { for: id }, label),
    h("input", { id, name: id, type: "text", size: 17, placeholder: "YYYY-MM-DD hh:mm", value: value.replace("T", " "), "aria-describedby": `${first}-problem` }),
  ];
  const form = h("form", { class: "inline controls" }, field(first, "From ", from), field(second, " to ", until),
    h("button", { type: "submit" }, "Show"), problem);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const picked = {};
    for (const name of [first, second]) {
      const typed = form.elements[name].value.trim();
      picked[name] = typed ? parseLocalTime(typed) : "";
      if (picked[name] === null) {
        problem.textContent = `“${typed}” is not a time: write it as 2024-05-01 10:00`;
        return;
      }
    }
    if (picked[first] && picked[second] && picked[first] >= picked[second]) {
      problem.textContent = "The range ends before it starts: put the earlier time first.";
      return;
    }
    go(picked);
  });
  return form;
}
