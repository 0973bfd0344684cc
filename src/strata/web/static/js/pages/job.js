// A job: its runs, its parent and child jobs, and for a Strata transform its program
// versions with their source and the diff between two.
import { api, enc, maybe, offer } from "../api.js";
import { deleteButton } from "../deletes.js";
import { about, otherFacets } from "../facets.js";
import {
  a, count, duration, h, parentRunState, runLink, runState, s, section, short, table, to, when,
} from "../dom.js";

export async function job([ns, name], params, rerender) {
  const at = `/namespaces/${enc(ns)}/jobs/${enc(name)}`;
  const [j, { access }] = await Promise.all([api(at), offer()]);
  // A parent job's run may be known only from its children: ask them how it went.
  const last = j.latestRun && (j.childJobs || []).length ? await maybe(`/strata/runs/${enc(j.latestRun.id)}`) : null;
  const runs = await api(`/namespaces/${enc(ns)}/jobs/${enc(name)}/runs?limit=50`);
  const output = j.outputs.length ? j.outputs[0].name : null;
  // Only a transform Strata builds has program versions in the build catalog.
  const built = output && j.facets && j.facets.strata_program;
  const history = built ? await maybe(`/strata/history/${enc(output)}`) : null;
  return h("div", { class: "page job" },
    h("p", { class: "crumbs" }, a(`#/?ns=${enc(ns)}`, ns), " / job"),
    h("h1", null, name),
    h("p", { class: "actions" }, a(to.lineage("job", ns, name, { depth: 2 }), "Lineage graph"), await deleteButton("job", ns, name)),
    facts(j, last, { at, canEdit: access === "write", rerender }),
    family(j),
    section(`Runs (${count(runs.totalCount)})`, durationChart(runs), runTable(runs, programsByRun(history))),
    history && history.versions.some((v) => v.program)
      ? await programs(ns, name, output, history.versions, params)
      : await jobVersions(ns, name),
    otherFacets(j.facets));
}

// A job Strata does not build: each program its events named is a version.
async function jobVersions(ns, name) {
  const found = await api(`/namespaces/${enc(ns)}/jobs/${enc(name)}/versions?limit=50`);
  const from = (v) => (v.programFacets == null ? "—" : v.programFacets.join(", ") || "inputs and outputs only");
  const rows = found.versions.map((v) => [
    h("code", null, short(v.version)),
    from(v),
    h("code", null, (v.fingerprint || "").slice(0, 10)),
    when(v.createdAt),
    v.latestRun ? h("span", null, runState(v.latestRun.state), " ", runLink(v.latestRun.id)) : "—",
  ]);
  return section(`Versions (${count(found.totalCount)})`,
    h("p", { class: "hint" }, "A new version each time the program its events name (sourceCode, sql, sourceCodeLocation) or what it reads and writes changes."),
    table(["Version", "Program from", "Fingerprint", "Created", "Latest run"], rows, { empty: "No versions." }));
}

function facts(j, last, tags) {
  // A dataset in another namespace than the job's is named with its namespace.
  const named = (d) => (d.namespace === j.namespace ? d.name : `${d.namespace}:${d.name}`);
  const io = (list) => (list.length ? list.map((d, i) => [i ? ", " : "", a(to.dataset(d.namespace, d.name), named(d))]) : "—");
  return about(j, [
    ["Last run", j.latestRun ? h("span", { class: "last-run" }, last ? parentRunState(last) : runState(j.latestRun.state), " ", runLink(j.latestRun.id)) : "never run"],
    ["Type", j.type || "—"],
    ["Reads", io(j.inputs)],
    ["Writes", io(j.outputs)],
    ["Location", j.location || "—"],
  ], tags);
}

function family(j) {
  const children = j.childJobs || [];
  if (!j.parentJobName && !children.length) return null;
  return section("Parent and child jobs",
    h("dl", { class: "facts" },
      h("dt", null, "Parent"),
      h("dd", null, j.parentJobName ? a(to.job(j.namespace, j.parentJobName), j.parentJobName) : "—"),
      h("dt", null, "Children"),
      h("dd", { class: "children" }, children.length ? children.map((c, i) => [i ? ", " : "", a(to.job(c.namespace, c.name), c.name)]) : "—")));
}

const CHART_RUNS = 30;
const RUN_TONES = { COMPLETED: "ok", FAILED: "bad", ABORTED: "warn", RUNNING: "busy" };

// The last runs' durations, oldest on the left, as Marquez's job page draws them; each
// bar names its run, state and time for pointers and screen readers.
function durationChart({ runs, totalCount }) {
  const timed = runs.map((r, i) => ({ ...r, number: totalCount - i })).filter((r) => r.durationMs != null).slice(0, CHART_RUNS).reverse();
  if (timed.length < 2) return null;
  const [w, hgt, gap] = [Math.max(240, timed.length * 18), 90, 4];
  const longest = Math.max(...timed.map((r) => r.durationMs), 1);
  const bar = (w - gap * timed.length) / timed.length;
  const bars = timed.map((r, i) => {
    const height = Math.max(2, (r.durationMs / longest) * (hgt - 14));
    const words = `#${r.number} ${(r.state || "").toLowerCase()}, ${duration(r.durationMs)}`;
    return s("a", { href: to.run(r.id), "aria-label": words },
      s("rect", { class: `bar ${RUN_TONES[r.state] || "quiet"}`, x: i * (bar + gap), y: hgt - height, width: bar, height, "data-run": r.id },
        s("title", null, words)));
  });
  return h("figure", { class: "durations" },
    s("svg", { viewBox: `0 0 ${w} ${hgt}`, width: w, height: hgt, role: "group", "aria-label": `Durations of the last ${timed.length} runs` }, bars),
    h("figcaption", { class: "hint" }, `Durations of the last ${timed.length} timed runs, oldest first; the longest took ${duration(longest)}.`));
}

// Which program version (v1, v2, …) each run of a Strata transform built with.
function programsByRun(history) {
  const found = new Map();
  for (const v of (history && history.versions) || []) {
    if (v.run && v.program) found.set(v.run, `v${v.program.ordinal}`);
  }
  return found;
}

// Newest first, as the API lists them: the first row is run number `totalCount`.
function runTable({ runs, totalCount }, programOf) {
  const rows = runs.map((r, i) => [
    runLink(r.id, totalCount - i),
    runState(r.state),
    partitionOf(r),
    when(r.startedAt || r.createdAt),
    duration(r.durationMs),
    programOf.get(r.id) || (r.jobVersion ? h("code", { title: r.jobVersion.version }, short(r.jobVersion.version)) : "—"),
    runs[i + 1] ? a(`#/compare?a=${enc(runs[i + 1].id)}&b=${enc(r.id)}`, `Compare with #${totalCount - i - 1}`) : "",
  ]);
  return table(["Run", "State", "Partition", "Started", "Took", "Program", ""], rows, { empty: "No runs.", cls: "runs-table" });
}

function partitionOf(r) {
  const p = r.facets && r.facets.strata_partition;
  return p && p.key ? Object.entries(p.key).map(([k, v]) => `${k}=${v}`).join(", ") : "—";
}

async function programs(ns, name, output, versions, params) {
  const seen = new Map(); // ordinal -> first dataset version it built
  for (const v of versions) {
    if (v.program && !seen.has(v.program.ordinal)) seen.set(v.program.ordinal, { ...v.program, built: v.version, at: v.committed_at });
  }
  const list = [...seen.values()].reverse();
  if (!list.length) return null;
  const here = (extra) => to.job(ns, name, extra);
  const rows = list.map((p, i) => [
    `v${p.ordinal}`,
    h("code", null, p.fingerprint.slice(0, 10)),
    when(p.at),
    `${output}@${p.built}`,
    h("span", { class: "row-actions" },
      a(here({ program: p.ordinal }), "Source"), " ",
      list[i + 1] ? a(here({ diff: `${list[i + 1].ordinal}..${p.ordinal}` }), "Diff with previous") : null),
  ]);
  const byOrdinal = new Map(list.map((p) => [String(p.ordinal), p]));
  const part = await programDetail(output, byOrdinal, params);
  if (part) part.setAttribute("data-focus", "");
  return [section("Program versions", table(["Program", "Fingerprint", "First built", "First output", ""], rows)), part];
}

async function source(output, p) {
  return api(`/strata/programs/${enc(output)}?version=${p.built}`);
}

async function programDetail(output, byOrdinal, params) {
  if (params.has("program")) {
    const p = byOrdinal.get(params.get("program"));
    if (!p) return null;
    const prog = await source(output, p);
    return section(`Source of program v${p.ordinal}`,
      h("p", { class: "hint" }, `${prog.entry.pipeline}.${prog.entry.transform} in ${prog.entry.pipeline_file}, line ${prog.entry.line}`),
      Object.entries(prog.files).map(([file, text]) => h("details", { open: file === prog.entry.pipeline_file || file === prog.entry.module },
        h("summary", null, file), h("pre", { class: "code" }, text))));
  }
  if (params.has("diff")) {
    const [from, to_] = params.get("diff").split("..").map((x) => byOrdinal.get(x));
    if (!from || !to_) return null;
    const [before, after] = await Promise.all([source(output, from), source(output, to_)]);
    const files = [...new Set([...Object.keys(before.files), ...Object.keys(after.files)])].sort();
    return section(`Program v${from.ordinal} → v${to_.ordinal}`,
      files.map((f) => fileDiff(f, before.files[f] || "", after.files[f] || "")));
  }
  return null;
}

// A unified diff with three lines of context, as `git diff` shows it.
export function fileDiff(file, before, after) {
  if (before === after) return h("p", { class: "hint" }, `${file}: unchanged`);
  const patch = window.Diff.structuredPatch(file, file, before, after, "", "", { context: 3 });
  const lines = [];
  for (const hunk of patch.hunks) {
    lines.push(h("span", { class: "line hunk" }, `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`));
    for (const line of hunk.lines) {
      const [mark, text] = [line[0], line.slice(1)];
      const kind = { "+": ["add", "added"], "-": ["del", "removed"] }[mark] || ["same", null];
      lines.push(h("span", { class: `line ${kind[0]}` },
        h("span", { class: "mark", "aria-label": kind[1] }, mark === "-" ? "−" : mark), text));
    }
  }
  return h("details", { open: true }, h("summary", null, file), h("pre", { class: "code diff" }, lines));
}
