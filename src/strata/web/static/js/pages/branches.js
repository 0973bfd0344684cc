// Branches: each one with its parent and the datasets it wrote; a branch picked in the
// switcher shows the datasets as it reads them and what merging it would do, and a
// write token may merge it.
import { api, enc, offer } from "../api.js";
import { a, count, errorBox, h, query, section, table, to, when } from "../dom.js";

const OUTCOMES = {
  "fast-forward": ["ok", "fast-forward"],
  "up-to-date": ["quiet", "up to date"],
  conflict: ["bad", "conflict"],
  "failed-checks": ["bad", "failed checks"],
};

export async function branches(_parts, params, rerender) {
  const [{ branches: all }, { access }] = await Promise.all([api("/strata/branches"), offer()]);
  const picked = all.find((b) => b.name === params.get("branch") && b.parent) || null;
  const rows = all.map((b) => [
    b.parent ? a(to.branches({ branch: b.name }), b.name) : h("strong", null, b.name),
    b.parent || "—",
    b.datasets === null ? "—" : count(b.datasets),
    when(b.created_at),
  ]);
  return h("div", { class: "page branches" },
    h("h1", null, "Branches"),
    h("p", { class: "summary" },
      "A branch reads every dataset it has not written from its parent, and merges as a fast-forward: ",
      h("code", null, "strata branch create dev"), ", ", h("code", null, "strata ingest … --branch dev"), ", ",
      h("code", null, "strata merge dev"), "."),
    switcher(all, picked),
    section("All branches", table(["Branch", "From", "Datasets written", "Created"], rows, { cls: "branch-table" })),
    picked ? await branchPart(picked, access === "write", rerender) : null);
}

function switcher(all, picked) {
  const select = h("select", { id: "branch-switch", "aria-label": "Branch" },
    h("option", { value: "" }, "Pick a branch…"),
    ...all.filter((b) => b.parent).map((b) => h("option", { value: b.name, selected: picked && b.name === picked.name }, b.name)));
  select.addEventListener("change", () => { location.hash = to.branches({ branch: select.value || null }); });
  return h("p", { class: "actions" }, h("label", { for: "branch-switch" }, "Branch "), select);
}

async function branchPart(b, canWrite, rerender) {
  const [seen, plan] = await Promise.all([
    api(`/strata/branches/${enc(b.name)}/datasets`),
    api(`/strata/branches/${enc(b.name)}/merge`),
  ]);
  const steps = new Map(plan.datasets.map((s) => [s.dataset, s]));
  const datasets = seen.datasets.map((d) => [
    d.name,
    `v${d.latestVersion}`,
    count(d.rows),
    when(d.updatedAt),
    steps.has(d.name) ? `written on ${b.name}` : `from ${b.parent}`,
  ]);
  const merges = plan.datasets.map((s) => {
    const [tone, words] = OUTCOMES[s.outcome] || ["quiet", s.outcome];
    return [
      s.dataset,
      h("span", { class: `badge ${tone}` }, words),
      s.target_version === null ? "—" : `v${s.target_version}`,
      s.fork_version === null ? "—" : `v${s.fork_version}`,
      `v${s.branch_version}`,
    ];
  });
  const blocked = plan.datasets.some((s) => s.outcome === "conflict" || s.outcome === "failed-checks");
  return h("div", null,
    section(`Datasets on ${b.name}`, table(["Dataset", "Version", "Rows", "Updated", "Read"], datasets, { cls: "branch-datasets" })),
    section(`Merge ${b.name} into ${plan.target}`,
      table(["Dataset", "Outcome", `${plan.target} has`, "Forked at", `${b.name} has`], merges, { cls: "merge-table", empty: `${b.name} wrote nothing yet.` }),
      blocked
        ? h("p", { class: "hint" }, `Nothing merges while a dataset conflicts: rebuild it on ${b.name} (a SNAPSHOT forks again from ${plan.target}), then merge.`)
        : mergeButton(b, plan, canWrite, rerender)));
}

function mergeButton(b, plan, canWrite, rerender) {
  if (!plan.merged) return null;
  const problem = h("div", { "aria-live": "polite" });
  const button = h("button", {
    type: "button", id: "merge-button", disabled: !canWrite,
    title: canWrite ? null : "Merging needs a write token",
  }, `Merge ${count(plan.merged)} dataset(s) into ${plan.target}`);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await api(`/strata/branches/${enc(b.name)}/merge${query({ into: plan.target })}`, { method: "POST" });
    } catch (e) {
      button.disabled = false;
      problem.replaceChildren(errorBox(`Nothing merged: ${e.message}`));
      return;
    }
    rerender();
  });
  return h("p", { class: "actions" }, button, problem);
}
