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

export function table(headers, rows, { caption, empty = "Nothing yet.", cls } = {}) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: cls },
      caption ? h("caption", null, caption) : null,
      h("thead", null, h("tr", null, headers.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", null, rows.map((r) => h("tr", null, r.map((c) => h("td", null, c))))),
    ),
  );
}

export function section(title, ...children) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return h("section", { "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const thisYear = d.getFullYear() === new Date().getFullYear();
  const text = d.toLocaleString(undefined, {
    year: thisYear ? undefined : "numeric", month: "short", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
  });
  return h("time", { datetime: iso, title: iso }, text);
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  const sec = ms / 1000;
  if (sec < 60) return `${sec.toFixed(1)} s`;
  const min = Math.floor(sec / 60);
  return `${min} min ${Math.round(sec - min * 60)} s`;
}

export function count(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString();
}

export function short(id, n = 8) {
  return id ? String(id).slice(0, n) : "—";
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
};

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
