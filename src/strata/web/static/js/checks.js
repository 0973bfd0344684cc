// Data check results: each check with its outcome in words and an icon, what it saw,
// and a few of the rows that broke it.
import { a, count, h, runLink, table, to } from "./dom.js";

const OUTCOMES = {
  passed: ["ok", "✓ passed"],
  warned: ["warn", "⚠ warned"],
  failed: ["bad", "✗ failed"],
};

export function outcomeBadge(outcome) {
  const [cls, words] = OUTCOMES[outcome] || ["", outcome];
  return h("span", { class: `badge ${cls}`, title: `check ${outcome}` }, words);
}

function found(r) {
  const o = r.observed || {};
  if (o.error) return h("span", { class: "bad-text" }, `cannot apply: ${o.error}`);
  const words = Object.entries(o).map(([k, v]) => `${k.replaceAll("_", " ")} ${typeof v === "object" ? JSON.stringify(v) : v}`);
  const head = r.failing ? [`${count(r.failing)} failing`, ...words] : words;
  const sample = (r.samples || []).length
    ? h("details", null, h("summary", null, `${r.samples.length} sample${r.samples.length > 1 ? "s" : ""}`),
      h("pre", { class: "code" }, r.samples.map((s) => JSON.stringify(s)).join("\n")))
    : null;
  return h("span", null, head.join(", "), sample);
}

// ``ns``: the namespace the datasets live in; ``withRun``: add a run column.
export function checksTable(ns, results, { withRun = false } = {}) {
  const rows = results.map((r) => [
    outcomeBadge(r.outcome),
    h("strong", null, r.check),
    [r.side === "input" ? "input " : "output ", a(to.dataset(ns, r.dataset), r.dataset), r.partition ? h("code", null, ` [${r.partition}]`) : null],
    h("code", null, r.expectation),
    r.on_error,
    r.version !== null && r.version !== undefined ? `v${r.version}` : h("span", { class: "quiet" }, "not committed"),
    ...(withRun ? [r.run ? runLink(r.run) : "—"] : []),
    found(r),
  ]);
  const headers = ["Outcome", "Check", "On", "Expectation", "On error", "Version", ...(withRun ? ["Run"] : []), "Found"];
  return table(headers, rows, { cls: "checks-table", empty: "No checks judged this." });
}
