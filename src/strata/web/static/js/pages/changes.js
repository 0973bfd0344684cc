// What changed between two times (the last 24 hours unless asked): the datasets that got
// new versions, the runs that failed, and what is out of date now and why. The page to
// open in the morning.
import { api, maybe, offer } from "../api.js";
import {
  a, causeList, count, dataState, dateText, h, parseLocalTime, query, runLink, section, table, timeRangeForm, to,
  when,
} from "../dom.js";

export async function changes(_parts, params) {
  const since = parseLocalTime(params.get("since") || "") || "";
  const until = parseLocalTime(params.get("until") || "") || "";
  const iso = (local) => (local ? new Date(local).toISOString() : "");
  const { builds } = await offer();
  const [found, status] = await Promise.all([
    api(`/strata/changes${query({ since: iso(since), until: iso(until) })}`),
    builds ? maybe("/strata/status") : null,
  ]);
  const changed = new Set(found.versions.map((v) => `${v.namespace}\u0000${v.name}`));
  const stale = status ? status.datasets.filter((d) => d.state === "out_of_date") : [];
  const failed = found.runs.states.FAILED || 0;
  return h("div", { class: "page changes" },
    h("h1", null, "What changed"),
    timeRangeForm(["since", "until"], [since, until], (picked) => { location.hash = `#/changes${query(picked)}`; }),
    h("p", { class: "summary" },
      `From ${dateText(found.since)} to ${dateText(found.until)}: `,
      `${count(found.versions.length)} datasets got new versions; ${count(found.runs.total)} runs of ${count(found.runs.jobs)} jobs, ${count(failed)} failed`,
      status ? `; ${count(stale.length)} datasets out of date now.` : "."),
    section(`New versions (${count(found.versions.length)})`, table(["Dataset", "Namespace", "New versions", "Latest"],
      found.versions.map((v) => [
        a(to.dataset(v.namespace, v.name), v.name), v.namespace, count(v.count),
        h("span", null, v.latestCommitId ? `v${v.latestCommitId} · ` : "", when(v.latestAt)),
      ]), { cls: "changes-versions", empty: "No dataset got a new version." })),
    section(`Failed runs (${count(failed)})`, table(["Job", "Run", "Ended"],
      found.runs.failed.map((f) => [a(to.job(f.job.namespace, f.job.name), `${f.job.namespace} / ${f.job.name}`), runLink(f.run), when(f.at)]),
      { cls: "changes-failed", empty: "✓ No run failed." })),
    status ? section(`Out of date now (${count(stale.length)})`, table(["State", "Dataset", "Why", "Changed here"],
      stale.map((d) => {
        // A foreign dataset (its job is not Strata's) is named with its namespace, as status does.
        const ns = d.namespace || status.namespace;
        return [dataState(d.state), a(to.dataset(ns, d.name), d.namespace ? `${d.namespace}:${d.name}` : d.name), causeList(d.causes),
          causedHere(d, ns, changed) ? "⚠ an input changed in this range" : "—"];
      }), { cls: "changes-stale", empty: "✓ Everything is fresh." })) : null);
}

// Whether one of a dataset's causes names an input that got a version in the range.
function causedHere(d, ns, changed) {
  return (d.causes || []).some((c) => [c.input, c.via].some((x) => x && changed.has(`${ns}\u0000${x}`)));
}
