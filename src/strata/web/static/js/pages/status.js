// Everything the pipelines make, fresh or out of date with every cause, and a button
// that builds one dataset (a write token where tokens are set) with its progress.
import { api, ApiError, enc, maybe, offer } from "../api.js";
import { a, branchMark, causeList, dataState, errorBox, h, query, runLink, section, table, to, when } from "../dom.js";
import { chosenBranch, onBranch } from "../header.js";

const POLL_MS = 700;

export async function status(_parts, params, rerender) {
  const offered = await offer();
  if (!offered.builds) return noPipelines();
  const [result, planned, retention] = await Promise.all([
    api(`/strata/status${query(onBranch())}`), maybe("/strata/schedules"), maybe("/strata/retention?passes=50"),
  ]);
  const branch = chosenBranch();
  // The server builds with its own pipelines on main; a branch builds from its checkout.
  const canBuild = offered.access === "write" && branch === "main";
  const onlyStale = params.get("only") === "stale";
  const shown = result.datasets.filter((d) => !onlyStale || d.state !== "fresh");
  const stale = result.datasets.filter((d) => d.state === "out_of_date").length;
  const progress = h("div", { id: "build-progress", "aria-live": "polite" });
  const rows = shown.map((d) => [
    dataState(d.state),
    d.namespace // a foreign dataset: its job is not Strata's to run
      ? a(to.dataset(d.namespace, d.name), `${d.namespace}:${d.name}`)
      : a(to.dataset(result.namespace, d.name), d.name),
    d.kind,
    d.version ? `v${d.version}` : "—",
    causeList(d.causes) || (d.state === "fresh" ? "—" : ""),
    d.kind === "derived" ? buildButton(d.name, progress, rerender, canBuild) : "",
  ]);
  const filter = h("a", { href: onlyStale ? "#/status" : "#/status?only=stale" },
    onlyStale ? "Show every dataset" : "Show only what is not fresh");
  return h("div", { class: "page status" },
    h("h1", null, "Status", branchMark(branch)),
    h("p", { class: "summary" }, `${stale} of ${result.datasets.length} datasets out of date`,
      branch === "main" ? ". " : ` on ${branch}, with causes relative to it. `, filter),
    canBuild ? null : buildHint(branch),
    progress,
    planned && planned.schedules.length ? schedulesSection(planned.schedules) : null,
    retention ? retentionSection(retention, result.namespace) : null,
    retention && retention.archive ? archiveSection(retention) : null,
    section("Datasets", table(["State", "Dataset", "Kind", "Version", "Why", ""], rows, {
      cls: "status-table", empty: onlyStale ? "✓ Everything is fresh." : "No datasets: the pipelines declare none.",
    })));
}

function buildHint(branch) {
  if (branch !== "main") {
    return h("p", { class: "hint", id: "build-hint" }, `Build on ${branch} from its checkout of the code: `,
      h("code", null, `strata build --branch ${branch} --pipeline <checkout>`), ", or a worker: ",
      h("code", null, `strata worker --branch ${branch}`), ".");
  }
  return h("p", { class: "hint", id: "build-hint" },
    "Building needs a write token; this one may only read. ", a("#/token", "Enter a write token"), ".");
}

// Each schedule: when it fires next, and how its last firing went.
function schedulesSection(schedules) {
  const outcome = (last) => {
    if (!last) return h("span", { class: "quiet" }, "never fired");
    const cls = { COMPLETED: "ok", NOTHING: "ok", FAILED: "bad", ABORTED: "warn" }[last.outcome] || "busy";
    const words = { COMPLETED: "✓ built", NOTHING: "✓ all fresh", FAILED: "✗ failed", ABORTED: "■ stopped" }[last.outcome] || "running";
    return h("span", null, h("span", { class: `badge ${cls}`, title: last.error || "" }, words), " ", when(last.due_at));
  };
  const rows = schedules.map((s) => [
    h("strong", null, s.name), s.branch,
    h("code", null, s.cron), s.timezone,
    s.build.join(", "),
    h("span", { class: "next-firing" }, when(s.next_due_at)),
    outcome(s.last),
  ]);
  return section("Schedules", table(["Schedule", "Branch", "Cron", "Time zone", "Builds", "Next firing", "Last firing"], rows, { cls: "schedules-table" }));
}

// Retention: the policies, what waits for its purge, what is pinned, and the last pass.
function retentionSection(r, ns) {
  const lineage = lineageSummary(r);
  if (!r.policies.length && !r.passes.length && !r.marks.length && !r.pins.length && !lineage) return null;
  const keeps = (p) => [p.keep_versions && `newest ${p.keep_versions}`, p.keep_days !== null && `${p.keep_days} days`]
    .filter(Boolean).join(" or ");
  const policies = r.policies.map((p) => [
    h("strong", null, p.name), p.datasets.join(", "), keeps(p), span(p.grace_seconds),
    p.protect_inputs ? "yes" : "no",
  ]);
  const last = r.passes.find((p) => p.kind === "retention");
  const summary = h("p", { class: "summary retention-summary" },
    last ? ["Last pass ", when(last.ended_at), ` (${last.trigger}): purged ${last.purged} version(s), `,
      `${last.files} file(s), ${bytes(last.bytes)} freed. `] : "No pass has run yet. ",
    `${r.marks.length} version(s) marked for purging, ${r.pins.length} pinned.`);
  const marks = r.marks.map((m) => [
    a(to.dataset(ns, m.dataset, { trace: m.version }), `${m.dataset}@${m.version}`), m.policy, when(m.marked_at), bytes(m.bytes),
  ]);
  return section("Retention", summary, lineage,
    policies.length ? table(["Policy", "Datasets", "Keeps", "Grace", "Keeps inputs"], policies, { cls: "retention-policies" }) : null,
    marks.length ? table(["Marked", "Policy", "Since", "Frees"], marks, { cls: "retention-marks" }) : null);
}

// Lineage retention: how long runs are kept, and what the last pass deleted.
function lineageSummary(r) {
  const days = r.lineage && r.lineage.days;
  const last = r.passes.find((p) => p.kind === "lineage");
  if (!days && !last) return null;
  const d = last && last.details;
  return h("p", { class: "summary lineage-summary" },
    days ? `Lineage runs and events are kept ${days} days (a run that made a lake version, and each job's newest run, always). ` : "",
    last ? ["Last lineage pass ", when(last.ended_at), ` (${last.trigger}): deleted ${d.runs} run(s) and ${d.events} event(s).`] : "No lineage pass has run yet.");
}

// The archive tier: its policies, what lies in each archive, and the last pass.
function archiveSection(r) {
  const arc = r.archive;
  if (!arc.policies.length && !arc.archives.length) return null;
  const last = r.passes.find((p) => p.kind === "archive");
  const summary = h("p", { class: "summary archive-summary" },
    last ? ["Last pass ", when(last.ended_at), ` (${last.trigger}): moved ${last.files} file(s), ${bytes(last.bytes)}. `]
      : "No archive pass has run yet. ",
    `${arc.archives.reduce((n, x) => n + x.files, 0)} file(s) archived; archived versions read as before, only slower.`);
  const policies = arc.policies.map((p) => [h("strong", null, p.name), p.datasets.join(", "), span(p.older_than_seconds), p.uri]);
  const places = arc.archives.map((x) => [x.uri, x.files, bytes(x.bytes)]);
  return section("Archive", summary,
    policies.length ? table(["Policy", "Datasets", "Older than", "Archive"], policies, { cls: "archive-policies" }) : null,
    places.length ? table(["Archive", "Files", "Size"], places, { cls: "archive-places" }) : null);
}

function span(seconds) {
  if (seconds >= 86400 && seconds % 86400 === 0) return `${seconds / 86400} d`;
  if (seconds >= 3600 && seconds % 3600 === 0) return `${seconds / 3600} h`;
  return `${seconds} s`;
}

function bytes(n) {
  const units = ["bytes", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i += 1; }
  return i ? `${n.toFixed(1)} ${units[i]}` : `${n} bytes`;
}

// A server with no pipelines has nothing to build or judge: say so, and how to start one.
function noPipelines() {
  return h("div", { class: "page status" },
    h("h1", null, "Status"),
    h("p", { class: "empty", id: "no-pipelines" },
      "This server builds nothing: no pipelines are configured. Start it with ",
      h("code", null, "strata serve --pipeline PATH"), ", or set ", h("code", null, "pipelines"),
      " in strata.toml, to see what is out of date and build it here."));
}

function buildButton(name, progress, rerender, canBuild) {
  return h("button", {
    type: "button", class: "build", "data-dataset": name,
    "aria-label": `Build ${name}`,
    disabled: !canBuild,
    "aria-describedby": canBuild ? null : "build-hint",
    title: canBuild ? null : "Building needs a write token",
    onclick: (event) => startBuild(name, progress, event.currentTarget, rerender),
  }, "Build");
}

async function startBuild(name, progress, button, rerender) {
  button.disabled = true;
  progress.replaceChildren(h("p", null, `Starting a build of ${name}…`));
  let task;
  try {
    task = await api("/strata/builds", { method: "POST", body: { dataset: name } });
  } catch (e) {
    button.disabled = false;
    const tokenHint = e instanceof ApiError && (e.status === 401 || e.status === 403)
      ? h("p", null, "Building needs a write token: ", a("#/token", "enter one"), ".") : null;
    progress.replaceChildren(errorBox(`The build of ${name} was refused: ${e.message}`), tokenHint);
    return;
  }
  await follow(task, progress, rerender);
  button.disabled = false;
}

async function follow(task, progress, rerender) {
  while (true) {
    progress.replaceChildren(drawTask(task));
    if (task.state === "COMPLETED" || task.state === "FAILED") break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    task = await api(`/strata/builds/${enc(task.id)}`);
  }
  // The statuses changed: show them, and the outcome stays on the page.
  const outcome = drawTask(task);
  await rerender();
  const again = document.getElementById("build-progress");
  if (again) again.replaceChildren(outcome);
}

const MARKS = { built: "✓ built", fresh: "= fresh", failed: "✗ failed", skipped: "- skipped" };

function drawTask(task) {
  const planned = task.planned.length || 1;
  const steps = task.transforms.map((s) => [s.transform, MARKS[s.outcome] || s.outcome, s.reason || "", s.run ? runLink(s.run) : "—"]);
  const words = {
    QUEUED: "queued", RUNNING: "running", COMPLETED: "✓ done", FAILED: "✗ failed",
  }[task.state];
  return section(`Build of ${task.dataset}: ${words}`,
    h("progress", { max: planned, value: task.done, "aria-label": "transforms done" }),
    h("p", { class: "build-state", "data-state": task.state },
      `${task.done} of ${task.planned.length} transforms done`,
      task.running.length ? ` · running ${task.running.join(", ")}` : "",
      task.sparkStarting ? " · starting Spark (a server's first build waits for it, about half a minute)" : "",
      task.waitingFor ? ` · waiting for ${task.waitingFor}` : ""),
    task.error ? errorBox(task.error) : null,
    table(["Transform", "Outcome", "Why", "Run"], steps, { empty: "Nothing finished yet." }));
}
