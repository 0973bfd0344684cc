// The lineage graph around a dataset or job (optionally as of a past time), and the
// column lineage of a dataset. Datasets carry their out-of-date state and causes.
import { api, maybe, offer } from "../api.js";
import {
  a, causeList, dataState, dateText, h, parseLocalTime, query, runLink, runState, runWords, stateWords, to,
  when,
} from "../dom.js";
import { drawGraph } from "../graph.js";

const TONES = { fresh: "ok", out_of_date: "warn", missing: "bad", orphaned: "quiet" };
const RUN_TONES = { COMPLETED: "ok", FAILED: "bad", RUNNING: "busy", ABORTED: "warn" };

export async function lineage([kind, ns, name], params) {
  const depth = clampDepth(params.get("depth"));
  const asOf = params.get("asOf") || "";
  const nodeId = `${kind}:${ns}:${name}`;
  const { builds } = await offer();
  const [graph, status] = await Promise.all([
    api(`/lineage${query({ nodeId, depth, asOf: asOf ? new Date(asOf).toISOString() : "" })}`),
    asOf || !builds ? null : maybe("/strata/status"),
  ]);
  const states = statesOf(status);
  const dir = ["up", "down"].includes(params.get("dir")) ? params.get("dir") : "";
  const [nodes, edges] = oneWay(
    graph.graph.map((n) => (n.type === "JOB" ? jobNode(n, asOf) : datasetNode(n, states))),
    graph.graph.flatMap((n) => n.outEdges.map((e) => [e.origin, e.destination])),
    nodeId, dir);
  const panel = h("aside", { class: "panel", id: "node-panel", "aria-live": "polite" },
    h("p", { class: "hint" }, "Select a node (click, or Tab then Enter) to see it here."));
  const open = (node) => panel.replaceChildren(nodePanel(node, states, depth, asOf));
  const stale = nodes.filter((n) => n.state === "out_of_date").length;
  return h("div", { class: "page lineage" },
    h("p", { class: "crumbs" }, a(kind === "job" ? to.job(ns, name) : to.dataset(ns, name), name), " / lineage"),
    h("h1", null, `Lineage of ${name}`),
    controls(kind, ns, name, depth, asOf, dir),
    h("p", { class: "summary" },
      `${nodes.filter((n) => n.kind === "dataset").length} datasets, ${nodes.filter((n) => n.kind === "job").length} jobs, ${edges.length} edges`,
      asOf ? ` as of ${dateText(asOf)} (states are not shown for a past time)` : stale ? ` · ⚠ ${stale} out of date` : ""),
    h("div", { class: "graph-layout" }, drawGraph(nodes, edges, { focus: nodeId, onOpen: open }), panel));
}

// Depth counts jobs away from the node: 1 shows what reads and writes it, at least.
function clampDepth(value) {
  const n = Number.parseInt(value || "2", 10);
  return Number.isFinite(n) ? Math.min(20, Math.max(1, n)) : 2;
}

function statesOf(status) {
  const out = new Map();
  if (!status) return out;
  for (const d of status.datasets) out.set(`dataset:${status.namespace}:${d.name}`, d);
  return out;
}

function datasetNode(n, states) {
  const d = n.data;
  const st = states.get(n.id);
  const causes = st ? st.causes.map((c) => c.text || c.kind) : [];
  return {
    id: n.id, kind: "dataset", label: d.name, ns: d.namespace, data: d,
    state: st ? st.state : null,
    tone: st ? TONES[st.state] || "quiet" : "quiet",
    sub: st ? `${stateWords(st.state)}${d.commitId ? ` · v${d.commitId}` : ""}` : d.commitId ? `v${d.commitId}` : "dataset",
    tip: causes.length ? causes : [d.namespace],
  };
}

// As of a past time the job's latest run is today's, not then's: no state is shown.
function jobNode(n, asOf) {
  const j = n.data;
  const last = asOf ? null : j.latestRun;
  if (asOf) {
    return { id: n.id, kind: "job", label: j.name, ns: j.namespace, data: j, state: null, tone: "quiet", sub: "job", tip: [j.namespace] };
  }
  return {
    id: n.id, kind: "job", label: j.name, ns: j.namespace, data: j,
    state: last ? last.state : null,
    tone: last ? RUN_TONES[last.state] || "quiet" : "quiet",
    sub: `job · ${runWords(last && last.state)}`,
    tip: [j.namespace, last && last.endedAt ? `last run ended ${dateText(last.endedAt)}` : "no runs"],
  };
}

// One field for the time (a datetime-local input is seven Tab stops); anything that is
// not a time is refused on the spot.

function controls(kind, ns, name, depth, asOf, dir) {
  const problem = h("span", { id: "as-of-problem", class: "problem", "aria-live": "polite" });
  const form = h("form", { class: "inline controls" },
    h("label", { for: "depth" }, "Depth "),
    h("input", { id: "depth", name: "depth", type: "number", min: 1, max: 20, value: depth }),
    h("label", { for: "dir" }, " Show "),
    h("select", { id: "dir", name: "dir" },
      [["", "upstream and downstream"], ["up", "upstream only"], ["down", "downstream only"]].map(([v, words]) =>
        h("option", { value: v, selected: v === dir }, words))),
    h("label", { for: "as-of" }, " As of "),
    h("input", {
      id: "as-of", name: "asOf", type: "text", inputmode: "numeric", size: 19,
      placeholder: "YYYY-MM-DD hh:mm", value: asOf.replace("T", " "), "aria-describedby": "as-of-problem",
    }),
    h("button", { type: "submit" }, "Show"),
    asOf ? a(to.lineage(kind, ns, name, { depth, dir }), "Now") : null,
    problem);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const typed = form.elements.asOf.value.trim();
    const when = typed ? parseLocalTime(typed) : "";
    if (when === null) {
      problem.textContent = `“${typed}” is not a time: write it as 2024-05-01 10:00`;
      return;
    }
    location.hash = to.lineage(kind, ns, name, { depth: form.elements.depth.value, dir: form.elements.dir.value, asOf: when });
  });
  return form;
}

// The part of the graph upstream (what it was made from) or downstream (what is made from
// it) of the chosen node, as Marquez's views of one direction.
function oneWay(nodes, edges, from, dir) {
  if (!dir) return [nodes, edges];
  const next = new Map();
  for (const [src, dst] of edges) {
    const [a_, b_] = dir === "up" ? [dst, src] : [src, dst];
    if (!next.has(a_)) next.set(a_, []);
    next.get(a_).push(b_);
  }
  const kept = new Set([from]);
  const todo = [from];
  while (todo.length) for (const n of next.get(todo.pop()) || []) if (!kept.has(n)) { kept.add(n); todo.push(n); }
  return [nodes.filter((n) => kept.has(n.id)), edges.filter(([x, y]) => kept.has(x) && kept.has(y))];
}

function nodePanel(node, states, depth, asOf) {
  if (node.kind === "job") {
    const last = node.data.latestRun;
    return h("div", null,
      h("h2", null, node.label),
      h("p", null, "Job in ", node.ns),
      asOf ? h("p", { class: "hint" }, "Its runs then are on the job page.")
        : h("p", null, "Last run: ", runState(last && last.state), last ? [" ", runLink(last.id), " ", when(last.endedAt)] : null),
      h("p", { class: "actions" },
        a(to.job(node.ns, node.label), "Open job"),
        a(to.lineage("job", node.ns, node.label, { depth, asOf }), "Centre the graph here")));
  }
  const st = states.get(node.id);
  return h("div", null,
    h("h2", null, node.label),
    h("p", null, "Dataset in ", node.ns, node.data.commitId ? ` · current version v${node.data.commitId}` : ""),
    st ? h("p", null, dataState(st.state)) : null,
    st ? causeList(st.causes) : null,
    h("p", null, `${node.data.fields.length} fields · updated `, when(node.data.updatedAt)),
    h("p", { class: "actions" },
      a(to.dataset(node.ns, node.label), "Open dataset"),
      a(to.lineage("dataset", node.ns, node.label, { depth, asOf }), "Centre the graph here"),
      a(to.columns(node.ns, node.label), "Column lineage")));
}

export async function columns([ns, name], params) {
  const depth = clampDepth(params.get("depth"));
  const graph = await api(`/column-lineage${query({ nodeId: `dataset:${ns}:${name}`, depth, withDownstream: true })}`);
  const nodes = graph.graph.map((n) => ({
    id: n.id, kind: "field", label: n.data.field, ns: n.data.namespace, data: n.data, state: null,
    tone: n.data.dataset === name ? "focus-set" : "quiet",
    sub: `${n.data.dataset}${n.data.fieldType ? ` · ${n.data.fieldType}` : ""}`,
    tip: [n.data.transformationDescription || n.data.transformationType || `${n.data.namespace}`],
  }));
  const edges = graph.graph.flatMap((n) => n.outEdges.map((e) => [e.origin, e.destination]));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const usedBy = (id) => edges.filter(([from]) => from === id).map(([, to]) => byId.get(to)).filter(Boolean);
  const panel = h("aside", { class: "panel", id: "node-panel" }, h("p", { class: "hint" }, "Select a column to see where it comes from and what uses it."));
  const open = (node) => panel.replaceChildren(h("div", null,
    h("h2", null, node.label),
    h("p", null, "Column of ", a(to.dataset(node.ns, node.data.dataset), node.data.dataset)),
    h("p", null, "Type: ", node.data.fieldType || "—"),
    h("p", null, "Derived from: ", node.data.inputFields.length
      ? node.data.inputFields.map((f, i) => [i ? ", " : "", `${f.dataset}.${f.field}`]) : "nothing recorded"),
    h("p", null, "Used by: ", usedBy(node.id).length
      ? usedBy(node.id).map((n, i) => [i ? ", " : "", `${n.data.dataset}.${n.data.field}`]) : "nothing recorded")));
  return h("div", { class: "page columns-page" },
    h("p", { class: "crumbs" }, a(to.dataset(ns, name), name), " / columns"),
    h("h1", null, `Column lineage of ${name}`),
    h("p", { class: "summary" }, `${nodes.length} columns, ${edges.length} edges (depth ${depth}, with downstream)`),
    nodes.length ? h("div", { class: "graph-layout" }, drawGraph(nodes, edges, { focus: null, onOpen: open }), panel)
      : h("p", { class: "empty" }, "No column lineage recorded for this dataset."));
}
