// The header on every page: a namespace switch, a branch switch, and search that
// suggests as you type (the ARIA combobox pattern: arrows move through the suggestions,
// Enter opens one, Escape closes them).
import { api, enc, maybe } from "./api.js";
import { h, to } from "./dom.js";

const SUGGESTIONS = 8;
const WAIT_MS = 150;
const NS_KEY = "strata.namespace";
const BRANCH_KEY = "strata.branch";
const MAIN = "main";

// The branch the pages read Strata's routes on: the address's `branch=` when it names
// one (an address to share), else the one picked last in this tab, else main.
export function chosenBranch() {
  return sessionStorage.getItem(BRANCH_KEY) || MAIN;
}

// `{ branch }` for a Strata route's query: nothing on main, whose routes need none.
export function onBranch() {
  const b = chosenBranch();
  return b === MAIN ? {} : { branch: b };
}

export function rememberBranch(name) {
  if (!name || name === MAIN) sessionStorage.removeItem(BRANCH_KEY);
  else sessionStorage.setItem(BRANCH_KEY, name);
  const select = document.getElementById("branch-pick");
  if (select) select.value = chosenBranch();
}

// Filled with the live branches once a token can read them; the switch stays hidden
// while main is the only one. A branch picked that is gone falls back to main.
export async function fillBranches() {
  const select = document.getElementById("branch-pick");
  const found = await maybe("/strata/branches").catch(() => null);
  if (!found) return;
  const names = found.branches.map((b) => b.name);
  if (!names.includes(chosenBranch())) rememberBranch(MAIN);
  const current = [...select.options].map((o) => o.value);
  if (current.join("\n") !== names.join("\n")) {
    select.replaceChildren(...names.map((n) => h("option", { value: n }, `⎇ ${n}`)));
  }
  select.value = chosenBranch();
  select.hidden = names.length < 2;
}

export function chosenNamespace() {
  return sessionStorage.getItem(NS_KEY) || "";
}

export function rememberNamespace(ns) {
  if (ns) sessionStorage.setItem(NS_KEY, ns);
  showNamespace(ns);
}

// The switch shows ``ns`` without making it the visitor's choice.
export function showNamespace(ns) {
  const select = document.getElementById("ns-switch");
  if (select && ns && [...select.options].some((o) => o.value === ns)) select.value = ns;
}

// Filled once a token can read the namespaces; a 401 leaves it empty until then.
export async function fillNamespaces() {
  const select = document.getElementById("ns-switch");
  if (select.options.length > 1) return;
  let found;
  try {
    found = await api("/namespaces?limit=1000");
  } catch {
    return;
  }
  select.replaceChildren(h("option", { value: "" }, "Namespace…"), ...found.namespaces.map((n) => h("option", { value: n.name }, n.name)));
  rememberNamespace(chosenNamespace());
}

export function wireHeader(rerender) {
  const select = document.getElementById("ns-switch");
  select.addEventListener("change", () => {
    if (!select.value) return;
    rememberNamespace(select.value);
    location.hash = `#/?ns=${enc(select.value)}`;
  });
  const branch = document.getElementById("branch-pick");
  branch.addEventListener("change", () => {
    rememberBranch(branch.value);
    // The address follows the switch, so it can be shared; drawn again either way.
    const [path, q = ""] = location.hash.replace(/^#/, "").split("?");
    const params = new URLSearchParams(q);
    if (params.has("branch")) {
      params.delete("branch");
      if (branch.value !== MAIN) params.set("branch", branch.value);
      const rest = params.toString();
      location.hash = `#${path || "/"}${rest ? `?${rest}` : ""}`;
    } else {
      rerender();
    }
  });
  wireSuggestions(document.getElementById("q"), document.getElementById("suggestions"));
}

function wireSuggestions(input, list) {
  let timer = null;
  let asked = 0;
  let active = -1;
  const items = () => [...list.querySelectorAll("[role=option]")];
  const close = () => {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  };
  const mark = (i) => {
    const all = items();
    active = (i + all.length) % all.length;
    all.forEach((el, j) => el.setAttribute("aria-selected", String(j === active)));
    input.setAttribute("aria-activedescendant", all[active].id);
  };
  const suggest = async () => {
    const q = input.value.trim();
    const ticket = ++asked;
    if (q.length < 2) return close();
    let found;
    try {
      found = await api(`/search?q=${enc(q)}&sort=RELEVANCE&limit=${SUGGESTIONS}`);
    } catch {
      return close();
    }
    if (ticket !== asked) return undefined; // an older answer after a newer question
    if (!found.results.length) return close();
    list.replaceChildren(...found.results.map((x, i) => h("li", {
      id: `suggestion-${i}`, role: "option", "aria-selected": "false", "data-href": x.type === "DATASET" ? to.dataset(x.namespace, x.name) : to.job(x.namespace, x.name),
      onmousedown: (event) => { event.preventDefault(); go(event.currentTarget); },
    }, h("span", { class: "kind" }, x.type === "DATASET" ? "dataset" : "job"), " ", x.name, h("span", { class: "ns" }, ` ${x.namespace}`))));
    list.dataset.answers = q; // which question the list shows, while a newer one waits
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    active = -1;
    return undefined;
  };
  const go = (el) => {
    close();
    location.hash = el.dataset.href;
  };
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(suggest, WAIT_MS);
  });
  input.addEventListener("keydown", (event) => {
    if (list.hidden) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      mark(active + (event.key === "ArrowDown" ? 1 : -1));
    } else if (event.key === "Enter" && active >= 0) {
      event.preventDefault();
      go(items()[active]);
    } else if (event.key === "Escape") {
      close();
    }
  });
  input.addEventListener("blur", () => setTimeout(close, 100));
}
