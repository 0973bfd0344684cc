// Two runs side by side: when and how long, the exact versions each read and wrote with
// their row counts, the program each ran, and for a Strata transform the program diff.
import { api, enc, maybe } from "../api.js";
import { a, count, duration, h, rowCountOf, runLink, runState, section, short, table, to, when } from "../dom.js";
import { fileDiff } from "./job.js";

export async function compare(_parts, params) {
  const ids = [params.get("a"), params.get("b")];
  if (!ids[0] || !ids[1]) throw new Error("name two runs to compare: #/compare?a=RUN&b=RUN");
  const [older, newer] = await Promise.all(ids.map((id) => api(`/strata/runs/${enc(id)}`)));
  const differs = (f) => (f(older) !== f(newer) ? "differs" : null);
  const line = (label, f, show = f) => h("tr", { class: differs(f) },
    h("th", { scope: "row" }, label), h("td", null, show(older)), h("td", null, show(newer)));
  return h("div", { class: "page compare" },
    h("h1", null, `Runs #${older.number} and #${newer.number} of ${older.job.name}`),
    older.job.name !== newer.job.name || older.job.namespace !== newer.job.namespace
      ? h("p", { class: "hint" }, `These runs are of two jobs: ${older.job.name} and ${newer.job.name}.`) : null,
    section("Side by side", h("div", { class: "table-wrap" }, h("table", { class: "compare-table" },
      h("thead", null, h("tr", null, h("th", null, ""), h("th", { scope: "col" }, runLink(older.id, older.number)), h("th", { scope: "col" }, runLink(newer.id, newer.number)))),
      h("tbody", null,
        line("State", (r) => r.state, (r) => runState(r.state)),
        line("Started", (r) => r.startedAt || r.createdAt, (r) => when(r.startedAt || r.createdAt)),
        line("Took", (r) => r.durationMs, (r) => duration(r.durationMs)),
        line("Job version", (r) => (r.jobVersion ? r.jobVersion.version : ""), (r) => (r.jobVersion ? h("code", { title: r.jobVersion.version }, short(r.jobVersion.version)) : "—")),
        line("Read", (r) => versionsKey(r, "inputDatasetVersions"), (r) => versionList(r, "inputDatasetVersions")),
        line("Wrote", (r) => versionsKey(r, "outputDatasetVersions"), (r) => versionList(r, "outputDatasetVersions")))))),
    await programDiff(older, newer));
}

function versionsKey(r, which) {
  return (r[which] || []).map(({ datasetVersionId: v }) => `${v.namespace}:${v.name}@${v.version}`).sort().join(" ");
}

function rowsOf(facets) {
  const n = rowCountOf(facets);
  return n === null ? "" : ` · ${count(n)} rows`;
}

function versionList(r, which) {
  const list = r[which] || [];
  if (!list.length) return "—";
  return h("ul", { class: "plain" }, list.map(({ datasetVersionId: v, facets }) => {
    const commit = r.commitIds[v.version];
    return h("li", null, a(to.dataset(v.namespace, v.name, commit ? { trace: commit } : null), v.name),
      commit ? ` v${commit}` : h("code", { title: v.version }, ` ${short(v.version)}`), rowsOf(facets));
  }));
}

// A Strata transform's two runs: the diff of the programs they ran, when they differ.
async function programDiff(older, newer) {
  const output = (newer.outputDatasetVersions || [])[0];
  if (!output) return null;
  const name = output.datasetVersionId.name;
  const history = await maybe(`/strata/history/${enc(name)}`);
  if (!history) return null;
  const programOf = (run) => (history.versions.find((v) => v.run === run.id) || {}).version;
  const [before, after] = [programOf(older), programOf(newer)];
  if (!before || !after) return null;
  const [p, q] = await Promise.all([before, after].map((v) => api(`/strata/programs/${enc(name)}?version=${v}`)));
  if (p.fingerprint === q.fingerprint) return section("Program", h("p", null, `Both ran the same program (${p.fingerprint.slice(0, 10)}).`));
  const files = [...new Set([...Object.keys(p.files), ...Object.keys(q.files)])].sort();
  return section(`Program ${p.fingerprint.slice(0, 10)} → ${q.fingerprint.slice(0, 10)}`,
    files.map((f) => fileDiff(f, p.files[f] || "", q.files[f] || "")));
}
