// The page's router: the part of the address after '#' names the page, so every view
// has an address to share and the browser's back button works.
import { ApiError, offer } from "./api.js";
import { errorBox, h, markScrolling } from "./dom.js";
import { chosenBranch, fillBranches, fillNamespaces, rememberBranch, wireHeader } from "./header.js";
import { branches } from "./pages/branches.js";
import { browse, search } from "./pages/browse.js";
import { changes } from "./pages/changes.js";
import { compare } from "./pages/compare.js";
import { dashboard } from "./pages/dashboard.js";
import { dataset } from "./pages/dataset.js";
import { events } from "./pages/events.js";
import { job } from "./pages/job.js";
import { columns, lineage } from "./pages/lineage.js";
import { run } from "./pages/run.js";
import { status } from "./pages/status.js";
import { tokenForm } from "./pages/token.js";

// The pages that read Strata's routes on the branch picked; the others show main's
// lineage, and say so while another branch is picked.
const ON_BRANCH = new Set([status, dataset, branches]);

const ROUTES = [
  [/^\/?$/, browse],
  [/^\/search$/, search],
  [/^\/datasets\/([^/]+)\/([^/]+)$/, dataset],
  [/^\/jobs\/([^/]+)\/([^/]+)$/, job],
  [/^\/runs\/([^/]+)$/, run],
  [/^\/lineage\/(dataset|job)\/([^/]+)\/([^/]+)$/, lineage],
  [/^\/columns\/([^/]+)\/([^/]+)$/, columns],
  [/^\/status$/, status],
  [/^\/events$/, events],
  [/^\/branches$/, branches],
  [/^\/dashboard$/, dashboard],
  [/^\/changes$/, changes],
  [/^\/compare$/, compare],
  [/^\/token$/, tokenForm],
];

const main = document.getElementById("main");
let shown = 0; // a slower, older page must not replace a newer one

function parse() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, q = ""] = raw.split("?");
  return { path, params: new URLSearchParams(q) };
}

async function render() {
  const ticket = ++shown;
  const { path, params } = parse();
  const match = ROUTES.map(([re, page]) => [path.match(re), page]).find(([m]) => m);
  main.setAttribute("aria-busy", "true");
  const offered = await offer();
  document.getElementById("nav-status").hidden = !offered.builds;
  fillNamespaces(); // not awaited: the page need not wait for the switch
  if (params.has("branch") && path !== "/branches") rememberBranch(params.get("branch"));
  fillBranches();
  document.getElementById("q").value = path === "/search" ? params.get("q") || "" : "";
  let node;
  try {
    if (!match) throw new Error(`no page at ${path}: go back to the start`);
    const [m, page] = match;
    node = await page(m.slice(1).map(decodeURIComponent), params, render);
  } catch (e) {
    node = failure(e);
  }
  if (ticket !== shown) return;
  noteBranch(match ? match[1] : null);
  main.replaceChildren(node);
  markScrolling(main);
  main.removeAttribute("aria-busy");
  main.setAttribute("data-shown", location.hash || "#/"); // which page is drawn, for tests
  const title = main.querySelector("h1");
  document.title = title ? `${title.textContent} · Strata` : "Strata";
  main.focus({ preventScroll: true });
  const asked = main.querySelector("[data-focus]");
  if (asked) asked.scrollIntoView({ block: "start" });
  else window.scrollTo(0, 0);
}

function noteBranch(page) {
  const note = document.getElementById("branch-note");
  const branch = chosenBranch();
  note.hidden = branch === "main" || ON_BRANCH.has(page);
  note.textContent = note.hidden ? "" : `⎇ ${branch} is picked, but this page shows main: lineage, jobs and runs follow main. `
    + "Status and each dataset's page follow the branch.";
}

function failure(e) {
  if (e instanceof ApiError && e.status === 401) return tokenForm([], new URLSearchParams(), render, e.message);
  const what = e instanceof ApiError ? `${e.message} (HTTP ${e.status})` : e.message;
  return h("div", null, h("h1", null, "Something went wrong"), errorBox(what));
}

document.getElementById("search").addEventListener("submit", (event) => {
  event.preventDefault();
  const q = document.getElementById("q").value.trim();
  if (q) location.hash = `#/search?${new URLSearchParams({ q })}`;
});
// The address after '#' is the page's route: the skip link moves focus, not the route.
document.getElementById("skip").addEventListener("click", (event) => {
  event.preventDefault();
  main.focus();
});
document.getElementById("token-button").addEventListener("click", () => {
  location.hash = "#/token";
});
wireHeader(render);
window.addEventListener("hashchange", render);
window.addEventListener("resize", () => markScrolling(main));
render();
