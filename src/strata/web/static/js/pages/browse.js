// The start page (namespaces, their datasets and jobs, recent runs) and search.
import { api, enc } from "../api.js";
import { chosenNamespace, rememberNamespace, showNamespace } from "../header.js";
import { a, count, duration, h, query, runLink, runState, section, table, to, when } from "../dom.js";

export async function browse(_parts, params) {
  const [{ namespaces }, recent] = await Promise.all([
    api("/namespaces"),
    api("/strata/runs?limit=15"),
  ]);
  const chosen = params.get("ns") || pickNamespace(namespaces);
  // Only a namespace the visitor asked for is remembered as switched to; one picked for
  // them is shown, and a later visit picks again.
  if (params.get("ns")) rememberNamespace(chosen);
  else showNamespace(chosen);
  const [datasets, jobs] = chosen
    ? await Promise.all([
        api(`/namespaces/${enc(chosen)}/datasets?limit=200`),
        api(`/namespaces/${enc(chosen)}/jobs?limit=200`),
      ])
    : [{ datasets: [], totalCount: 0 }, { jobs: [], totalCount: 0 }];
  const deleted = params.get("deleted");
  return h("div", { class: "page browse" },
    h("h1", null, "Browse"),
    deleted ? h("p", { class: "notice", role: "status" }, `✓ Deleted ${deleted}: it is hidden until an event names it again.`) : null,
    h("nav", { class: "chips", "aria-label": "Namespaces" },
      namespaces.map((n) => h("a", {
        href: `#/?ns=${enc(n.name)}`, "aria-current": n.name === chosen ? "page" : null,
      }, n.name))),
    h("div", { class: "columns" },
      section(`Datasets in ${chosen || "—"}`, datasetTable(datasets)),
      section(`Jobs in ${chosen || "—"}`, jobTable(jobs))),
    section("Recent runs", runTable(recent.runs)));
}

// The namespace switched to last, else Strata's own, else the first that is not "default".
function pickNamespace(namespaces) {
  const names = namespaces.map((n) => n.name);
  if (names.includes(chosenNamespace())) return chosenNamespace();
  return names.includes("strata") ? "strata" : names.find((n) => n !== "default") || names[0];
}

function datasetTable({ datasets, totalCount }) {
  const rows = datasets.map((d) => [
    a(to.dataset(d.namespace, d.name), d.name),
    d.currentVersion ? (d.commitId ? `v${d.commitId}` : "✓") : "—",
    count(d.fields.length),
    when(d.updatedAt),
  ]);
  return [table(["Name", "Version", "Fields", "Updated"], rows, { empty: "No datasets." }),
    more(datasets.length, totalCount)];
}

function jobTable({ jobs, totalCount }) {
  const rows = jobs.map((j) => [
    a(to.job(j.namespace, j.name), j.name),
    runState(j.latestRun && j.latestRun.state),
    when(j.latestRun ? j.latestRun.updatedAt : j.updatedAt),
  ]);
  return [table(["Name", "Last run", "Updated"], rows, { empty: "No jobs." }),
    more(jobs.length, totalCount)];
}

function more(shown, total) {
  return total > shown ? h("p", { class: "hint" }, `${shown} of ${count(total)} shown; search finds the rest.`) : null;
}

export function runTable(runs) {
  const rows = runs.map((r) => [
    runLink(r.id),
    a(to.job(r.job.namespace, r.job.name), r.job.name),
    runState(r.state),
    when(r.startedAt || r.createdAt),
    duration(r.durationMs),
  ]);
  return table(["Run", "Job", "State", "Started", "Took"], rows, { empty: "No runs yet." });
}

export async function search(_parts, params) {
  const q = params.get("q") || "";
  const found = await api(`/search${query({ q, sort: "RELEVANCE", limit: SEARCH_LIMIT })}`);
  const rows = found.results.map((x) => [
    h("span", { class: `badge ${x.type === "DATASET" ? "quiet" : "busy"}`, "data-type": x.type }, x.type === "DATASET" ? "dataset" : "job"),
    a(x.type === "DATASET" ? to.dataset(x.namespace, x.name) : to.job(x.namespace, x.name), marked(x.name, q)),
    x.namespace,
    matchWords(x.name, q),
    when(x.updatedAt),
  ]);
  return h("div", { class: "page search" },
    h("h1", null, `Search: ${q}`),
    h("p", { class: "hint" }, "Whole names first, then names that start with the words, then names with a part that does."),
    section(`Results (${rows.length}${rows.length === SEARCH_LIMIT ? "+" : ""})`,
      table(["Type", "Name", "Namespace", "Matched", "Updated"], rows, { cls: "search-table", empty: "Nothing matches." })));
}

const SEARCH_LIMIT = 100;

// Marquez's search treats % and _ as wildcards: mark a plain match only.
function marked(name, q) {
  const at = name.toLowerCase().indexOf(q.toLowerCase());
  if (at < 0 || !q) return name;
  return [name.slice(0, at), h("mark", null, name.slice(at, at + q.length)), name.slice(at + q.length)];
}

function matchWords(name, q) {
  const [n, w] = [name.toLowerCase(), q.toLowerCase()];
  if (n === w) return "whole name";
  if (n.startsWith(w)) return "start of name";
  if (["/", ".", "-"].some((sep) => n.includes(sep + w))) return "start of a part";
  return "within name";
}
