// A run: its state history, what it read and wrote (exact versions), its facets, and
// for a failed run the error and its stack trace.
import { api, enc, maybe } from "../api.js";
import { checksTable } from "../checks.js";
import { assertions, otherFacets } from "../facets.js";
import {
  a, count, duration, errorBox, h, parentRunState, rowCountOf, runLink, runState, section, short, table, to,
  when,
} from "../dom.js";

export async function run([id]) {
  const [r, checks] = await Promise.all([api(`/strata/runs/${enc(id)}`), maybe(`/strata/runs/${enc(id)}/checks`)]);
  const error = r.facets && r.facets.errorMessage;
  return h("div", { class: "page run" },
    h("p", { class: "crumbs" }, a(to.job(r.job.namespace, r.job.name), r.job.name), " / run"),
    h("h1", null, `Run #${r.number} of ${r.job.name}`),
    h("p", { class: "state-line" }, parentRunState(r), " ", h("code", null, r.id)),
    error ? section("Error",
      errorBox(error.message || "the run failed"),
      error.stackTrace ? h("details", { open: true }, h("summary", null, "Stack trace"), h("pre", { class: "code trace" }, error.stackTrace)) : null) : null,
    facts(r),
    checks && checks.results.length ? section("Checks", checksTable(r.job.namespace, checks.results)) : null,
    section("State history", table(["State", "At"], r.states.map((x) => [runState(x.state), when(x.transitionedAt)]), { empty: "No state recorded." })),
    section("Inputs", versions(r.inputDatasetVersions, r.commitIds)),
    (r.inputDatasetVersions || []).map(({ datasetVersionId: v, facets }) => assertions(facets, `Assertions on ${v.name}`)),
    section("Outputs", versions(r.outputDatasetVersions, r.commitIds)),
    otherFacets(r.facets) || section("Facets", h("p", { class: "empty" }, "No facets.")));
}

function facts(r) {
  const rows = [
    ["Job", a(to.job(r.job.namespace, r.job.name), `${r.job.namespace} / ${r.job.name}`)],
    ["Started", when(r.startedAt)],
    ["Ended", when(r.endedAt)],
    ["Took", duration(r.durationMs)],
    ["Parent run", r.parentRunId ? runLink(r.parentRunId) : "—"],
    ["Job version", r.jobVersion ? h("code", null, short(r.jobVersion.version)) : "—"],
  ];
  return section("About", h("dl", { class: "facts" }, rows.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])));
}

function versions(list, commits) {
  const rows = (list || []).map(({ datasetVersionId: v, facets }) => {
    const commit = commits[v.version];
    return [
      a(to.dataset(v.namespace, v.name), v.name),
      v.namespace,
      commit ? a(to.dataset(v.namespace, v.name, { trace: commit }), `v${commit}`) : h("code", { title: v.version }, short(v.version)),
      count(rowCountOf(facets)),
    ];
  });
  return table(["Dataset", "Namespace", "Version", "Rows"], rows, { empty: "None." });
}

