// What changed between two times (the last 24 hours unless asked), in one namespace or
// all: the datasets that got new versions, the runs that failed, and what is out of date
// now and why. The page to open in the morning.
import { api, maybe, offer } from "../api.js";
import {
  a, causeList, count, dataState, dateText, h, parseLocalTime, query, runLink, section, table, timeRangeForm, to,
  when,
} from "../dom.js";

export async function changes(_parts, params) {
  const since = parseLocalTime(params.get("since") || "") || "";
  const until = parseLocalTime(params.get("until") || "") || "";
  const iso = (local) => (local ? new Date(local).toISOString() : "");
  const namespace = params.get("namespace") || "";
  const { builds } = await offer();
  const [found, status, { namespaces }] = await Promise.all([
    api(`/strata/changes${query({ since: iso(since), until: iso(until), namespace })}`),
    builds ? maybe("/strata/status") : null,
    api("/namespaces?limit=1000"),
  ]);
  const changed = new Set(found.versions.map((v) => `${v.namespace}\u0000${v.name}`));
  // A foreign dataset (its job is not Strata's) is named with its namespace, as status does.
  const nsOf = (d) => d.namespace || status.namespace;
  const stale = status
    ? status.datasets.filter((d) => d.state === "out_of_date" && (!namespace || nsOf(d) === namespace)) : [];
  const failed = found.runs.states.FAILED || 0;
  const go = (picked) => { location.hash = `#/changes${query(picked)}`; };
  return h("div", { class: "page changes" },
    h("h1", null, namespace ? `What changed in ${namespace}` : "What changed"),
    timeRangeForm(["since", "until"], [since, until], (picked) => go({ ...picked, namespace })),
    namespaceChoice(namespaces.map((n) => n.name), namespace, (picked) => go({ since, until, namespace: picked })),
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
        const ns = nsOf(d);
        return [dataState(d.state), a(to.dataset(ns, d.name), d.namespace ? `${d.namespace}:${d.name}` : d.name), causeList(d.causes),
          causedHere(d, ns, changed) ? "⚠ an input changed in this range" : "—"];
      }), { cls: "changes-stale", empty: "✓ Everything is fresh." })) : null);
}

// The namespace the page shows, or all of them.
function namespaceChoice(names, chosen, go) {
  const options = [h("option", { value: "" }, "All namespaces"),
    ...names.map((n) => h("option", { value: n, selected: n === chosen }, n))];
  const select = h("select", { id: "namespace", name: "namespace" }, options);
  select.addEventListener("change", () => go(select.value));
  return h("p", { class: "inline controls" }, h("label", { for: "namespace" }, "Namespace "), select);
}

// Whether one of a dataset's causes names an input that got a version in the range.
function causedHere(d, ns, changed) {
  return (d.causes || []).some((c) => [c.input, c.via].some((x) => x && changed.has(`${ns}\u0000${x}`)));
}
