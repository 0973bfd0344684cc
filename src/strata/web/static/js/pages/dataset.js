// A dataset: its state and why, current version, schema, versions with what made each,
// and on demand a version's preview, its trace, or the schema change between two.
import { api, enc, maybe, offer } from "../api.js";
import { checksTable } from "../checks.js";
import { deleteButton } from "../deletes.js";
import { about, assertions, otherFacets, tagEditor, tagList } from "../facets.js";
import { chosenBranch, onBranch } from "../header.js";
import {
  a, branchMark, causeList, count, dataState, errorBox, h, query, runLink, runState, section, short, table, to, when,
} from "../dom.js";

export async function dataset([ns, name], params, rerender) {
  const base = `/namespaces/${enc(ns)}/datasets/${enc(name)}`;
  const [d, { builds, access }] = await Promise.all([api(base), offer()]);
  const canEdit = access === "write";
  const lake = Boolean(d.isLake);
  const [state, history, versions, checks] = await Promise.all([
    lake && builds ? maybe(`/strata/status/${enc(name)}${query(onBranch())}`) : null,
    lake ? maybe(`/strata/history/${enc(name)}${query(onBranch())}`) : null,
    api(`${base}/versions?limit=100`),
    lake ? maybe(`/strata/checks/${enc(name)}${query({ version: params.get("checks") || undefined })}`) : null,
  ]);
  const here = (extra) => to.dataset(ns, name, extra);
  return h("div", { class: "page dataset" },
    h("p", { class: "crumbs" }, a(`#/?ns=${enc(ns)}`, ns), " / dataset"),
    h("h1", null, name, lake ? branchMark(chosenBranch()) : null),
    h("p", { class: "actions" },
      a(to.lineage("dataset", ns, name, { depth: 2 }), "Lineage graph"),
      a(to.columns(ns, name), "Column lineage"),
      await deleteButton("dataset", ns, name)),
    state ? stateSection(state) : null,
    currentSection(d),
    about(d, [], { at: base, canEdit, rerender }),
    qualitySection(d, versions.versions),
    checks && checks.results.length ? checksSection(ns, checks) : null,
    section("Schema", schemaTable(d.fields, canEdit ? { base, rerender } : null)),
    await detail(ns, name, params, versions.versions),
    section("Versions", lake && history
      ? historyTable(ns, history.versions, here)
      : marquezVersions(versions.versions)),
    otherFacets(d.facets));
}

// The newest version readers reported data quality assertions on: the current one, or
// one read before a later write (a run that checks its input, then rewrites it).
function qualitySection(d, versions) {
  const current = versions.find((v) => v.version === d.currentVersion) || { facets: d.facets };
  const judged = [current, ...versions].find((v) => v.facets && v.facets.dataQualityAssertions);
  if (!judged) return null;
  return judged === current
    ? assertions(judged.facets)
    : assertions(judged.facets, `Data quality assertions on version ${short(judged.version)}, before the current one`);
}

function stateSection(state) {
  return section("Status",
    h("p", { class: "state-line" }, dataState(state.state), state.transform ? [" · built by ", state.transform] : null),
    causeList(state.causes),
    state.notes && state.notes.length ? causeList(state.notes) : null,
    state.partition_counts ? partitionsPart(state) : null);
}

const SHOWN_PARTITIONS = 100;

// A partitioned output: how many partitions are fresh, and each out-of-date one with why.
function partitionsPart(state) {
  const c = state.partition_counts;
  const stale = state.partitions.filter((p) => p.stale);
  const keyText = (key) => Object.entries(key).map(([k, v]) => `${k}=${v}`).join(", ");
  const rows = stale.slice(0, SHOWN_PARTITIONS).map((p) => [h("code", null, keyText(p.key)), causeList(p.causes)]);
  return h("div", { class: "partitions" },
    h("p", { class: "partition-counts" },
      `Partitions: ${count(c.fresh)} fresh, ${count(c.out_of_date)} out of date`,
      c.never_built ? ` (${count(c.never_built)} never built)` : ""),
    stale.length ? table(["Partition", "Why"], rows, { cls: "partition-table" }) : null,
    stale.length > SHOWN_PARTITIONS ? h("p", { class: "hint" }, `and ${count(stale.length - SHOWN_PARTITIONS)} more; \`strata status ${state.name}\` lists them all.`) : null);
}

function checksSection(ns, checks) {
  const failed = checks.results.filter((r) => r.outcome === "failed").length;
  const warned = checks.results.filter((r) => r.outcome === "warned").length;
  const summary = failed ? `${failed} failed` : warned ? `${warned} warned` : "all passed";
  return section(`Checks of v${checks.version} (${summary})`,
    h("p", { class: "hint" }, "Data checks judged on this version by the build that made it or read it; a build a failed check stopped is listed as not committed."),
    checksTable(ns, checks.results, { withRun: true }));
}

function currentSection(d) {
  const rows = [
    ["Namespace", d.namespace],
    ["Current version", d.commitId ? `v${d.commitId}` : short(d.currentVersion)],
    ["Updated", when(d.updatedAt)],
    ["Location", d.physicalName || "—"],
  ];
  return section("Current version", h("dl", { class: "facts" },
    rows.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])));
}

function schemaTable(fields, editing) {
  const tagsOf = (f) => (editing
    ? tagEditor(f.tags || [], { at: `${editing.base}/fields/${enc(f.name)}`, rerender: editing.rerender, label: f.name })
    : (f.tags || []).length ? tagList(f.tags) : "");
  return table(["Field", "Type", "Description", "Tags"],
    (fields || []).map((f) => [h("code", null, f.name), f.type || "—", f.description || "", tagsOf(f)]),
    { empty: "No schema recorded.", cls: "schema-table" });
}

function historyTable(ns, versions, here) {
  const rows = [...versions].reverse().map((v) => [
    h("span", null, `v${v.version}`, retentionBadge(v), branchBadge(v)),
    when(v.committed_at),
    v.type,
    count(v.rows),
    v.run ? h("span", null, runLink(v.run), " ", runState(v.state)) : "ingested",
    v.program ? `v${v.program.ordinal || "?"} (${v.program.fingerprint.slice(0, 10)})` : "—",
    inputsOf(ns, v.inputs),
    (v.warnings || []).length
      ? a(here({ checks: v.version }), h("span", { class: "badge warn", title: "committed although these checks warned" }, `⚠ ${v.warnings.join(", ")}`))
      : "",
    h("span", { class: "row-actions" },
      v.purged ? null : a(here({ preview: v.version }), "Preview"), " ",
      a(here({ trace: v.version }), "Trace"), " ",
      v.version > 1 ? a(here({ diff: `${v.version - 1}..${v.version}` }), "Schema change") : null),
  ]);
  return table(["Version", "Committed", "Type", "Rows", "Run", "Program", "Inputs", "Checks", ""], rows);
}

// A version made on a branch (one merged into main belongs to main from its merge on).
function branchBadge(v) {
  if (!v.branch || v.branch === "main") return null;
  return [" ", h("span", { class: "badge branch", title: `made on branch ${v.branch}: main does not read it unless it is merged` }, `⎇ ${v.branch}`)];
}

// Retention: a purged version keeps its history (run, program, inputs) but not its data;
// a marked one is purged once its grace is over, unless pinned first; an archived one
// reads as before, from the archive.
function retentionBadge(v) {
  if (v.purged) {
    return [" ", h("span", { class: "badge bad", title: `data purged ${v.purged.at.slice(0, 10)} by retention policy ${v.purged.policy}; its history remains` }, "purged")];
  }
  if (v.marked) {
    return [" ", h("span", { class: "badge warn", title: `marked ${v.marked.at.slice(0, 19).replace("T", " ")} by retention policy ${v.marked.policy}; purged after its grace unless pinned (strata pin)` }, "marked")];
  }
  if (v.archived) {
    const some = v.archived.files === v.archived.of ? "its files lie" : `${v.archived.files} of its ${v.archived.of} files lie`;
    return [" ", h("span", { class: "badge cold", title: `${some} in the archive: reads work as before, only slower (strata restore brings them back)` }, "archived")];
  }
  return null;
}

function inputsOf(ns, inputs) {
  const names = Object.entries(inputs || {});
  if (!names.length) return "—";
  return h("span", { class: "inputs" }, names.map(([n, v], i) => [i ? ", " : "", a(to.dataset(ns, n, { trace: v }), `${n}@${v}`)]));
}

function marquezVersions(versions) {
  const rows = versions.map((v) => [
    short(v.version),
    when(v.createdAt),
    v.createdByRun ? h("span", null, runLink(v.createdByRun.id), " ", runState(v.createdByRun.state)) : "—",
    count((v.fields || []).length),
  ]);
  return table(["Version", "Created", "Run", "Fields"], rows);
}

async function detail(ns, name, params, versions) {
  let part = null;
  if (params.has("preview")) part = await preview(name, params.get("preview"));
  else if (params.has("trace")) part = await trace(ns, name, params.get("trace"));
  else if (params.has("diff")) part = schemaDiff(ns, name, params.get("diff"), versions);
  if (part) part.setAttribute("data-focus", "");
  return part;
}

async function preview(name, version) {
  const p = await api(`/strata/preview/${enc(name)}${query({ version, rows: 100, ...onBranch() })}`);
  const head = p.columns.map((c) => h("span", null, c.name, h("small", null, ` ${c.type}`)));
  const rows = p.rows.map((r) => r.map((x) => (x === null ? h("span", { class: "null" }, "null") : String(x))));
  return section(`Preview of v${p.version}`,
    h("p", { class: "hint" }, `First ${count(p.rows.length)} of ${count(p.totalRows)} rows, read straight from the lake files.`),
    table(head, rows, { cls: "preview", wide: true, empty: "This version has no rows." }));
}

async function trace(ns, name, version) {
  const t = await api(`/strata/trace/${enc(name)}${query({ version, ...onBranch() })}`);
  return section(`Trace of v${t.version}`,
    h("p", { class: "hint" }, "What made this version, down to the raw data: exact versions at each level."),
    h("ul", { class: "tree" }, traceNode(ns, t)));
}

function traceNode(ns, n) {
  const label = h("span", { class: "trace-node" },
    a(to.dataset(ns, n.dataset, { trace: n.version }), `${n.dataset}@${n.version}`), " ",
    n.run ? [runLink(n.run), " ", runState(n.state)] : h("span", { class: "quiet" }, "raw"),
    n.program ? h("span", { class: "quiet" }, ` ${n.program.transform} v${n.program.ordinal || "?"}`) : null,
    n.mode ? h("span", { class: "quiet" }, ` · ${n.mode}`) : null,
    retentionBadge(n));
  const kids = n.inputs && n.inputs.length ? h("ul", null, n.inputs.map((c) => traceNode(ns, c))) : null;
  return h("li", null, label, kids);
}

function schemaDiff(ns, name, range, versions) {
  const [from, to_] = range.split("..");
  const byId = new Map(versions.map((v) => [String(v.commitId || v.version), v]));
  const ids = [...byId.keys()];
  const picker = (id, value) => h("select", { id, name: id },
    ids.map((v) => h("option", { value: v, selected: v === value }, v.length > 12 ? short(v) : `v${v}`)));
  const form = h("form", { class: "inline" },
    h("label", { for: "diff-from" }, "From "), picker("diff-from", from),
    h("label", { for: "diff-to" }, " to "), picker("diff-to", to_),
    h("button", { type: "submit" }, "Compare"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = to.dataset(ns, name, { diff: `${form.elements["diff-from"].value}..${form.elements["diff-to"].value}` });
  });
  const before = byId.get(from);
  const after = byId.get(to_);
  const body = before && after ? diffTable(before.fields || [], after.fields || [])
    : errorBox(`version ${before ? to_ : from} is not among the last ${versions.length} versions`);
  return section("Schema change", form, body);
}

function diffTable(before, after) {
  const old = new Map(before.map((f) => [f.name, f.type]));
  const now = new Map(after.map((f) => [f.name, f.type]));
  const rows = [];
  for (const [n, t] of now) {
    if (!old.has(n)) rows.push([h("code", null, n), "—", t, h("span", { class: "badge ok" }, "+ added")]);
    else if (old.get(n) !== t) rows.push([h("code", null, n), old.get(n), t, h("span", { class: "badge warn" }, "~ type changed")]);
  }
  for (const [n, t] of old) {
    if (!now.has(n)) rows.push([h("code", null, n), t, "—", h("span", { class: "badge bad" }, "− removed")]);
  }
  return table(["Field", "Before", "After", "Change"], rows, { empty: "Same schema: no field added, removed or retyped." });
}
