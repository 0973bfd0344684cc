// The start page (namespaces, their datasets and jobs, recent runs) and search.
import { api, enc } from "../api.js";
import { a, count, duration, h, runState, section, table, to, when } from "../dom.js";

export async function browse(_parts, params) {
  const [{ namespaces }, recent] = await Promise.all([
    api("/namespaces"),
    api("/strata/runs?limit=15"),
  ]);
  const chosen = params.get("ns") || pickNamespace(namespaces);
  const [datasets, jobs] = chosen
    ? await Promise.all([
        api(`/namespaces/${enc(chosen)}/datasets?limit=200`),
        api(`/namespaces/${enc(chosen)}/jobs?limit=200`),
      ])
    : [{ datasets: [], totalCount: 0 }, { jobs: [], totalCount: 0 }];
  return h("div", { class: "page browse" },
    h("h1", null, "Browse"),
    h("nav", { class: "chips", "aria-label": "Namespaces" },
      namespaces.map((n) => h("a", {
        href: `#/?ns=${enc(n.name)}`, "aria-current": n.name === chosen ? "page" : null,
      }, n.name))),
    h("div", { class: "columns" },
      section(`Datasets in ${chosen || "—"}`, datasetTable(datasets)),
      section(`Jobs in ${chosen || "—"}`, jobTable(jobs))),
    section("Recent runs", runTable(recent.runs)));
}

function pickNamespace(namespaces) {
  const names = namespaces.map((n) => n.name);
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
    a(to.run(r.id), r.id.slice(0, 8)),
    a(to.job(r.job.namespace, r.job.name), r.job.name),
    runState(r.state),
    when(r.startedAt || r.createdAt),
    duration(r.durationMs),
  ]);
  return table(["Run", "Job", "State", "Started", "Took"], rows, { empty: "No runs yet." });
}

export async function search(_parts, params) {
  const q = params.get("q") || "";
  document.getElementById("q").value = q;
  const [datasets, jobs] = await Promise.all([
    api(`/api/v2beta/search/datasets?q=${enc(q)}`),
    api(`/api/v2beta/search/jobs?q=${enc(q)}`),
  ]);
  const dsRows = unique(datasets.hits).map((d) => [a(to.dataset(d.namespace, d.name), d.name), d.namespace]);
  const jobRows = unique(jobs.hits).map((j) => [a(to.job(j.namespace, j.name), j.name), j.namespace]);
  return h("div", { class: "page search" },
    h("h1", null, `Search: ${q}`),
    h("div", { class: "columns" },
      section(`Datasets (${dsRows.length})`, table(["Name", "Namespace"], dsRows, { empty: "No dataset matches." })),
      section(`Jobs (${jobRows.length})`, table(["Name", "Namespace"], jobRows, { empty: "No job matches." }))));
}

function unique(hits) {
  const seen = new Set();
  return hits.filter((x) => {
    const key = `${x.namespace}\u0000${x.name}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
