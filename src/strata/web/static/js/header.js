// The header on every page: a namespace switch, and search that suggests as you type
// (the ARIA combobox pattern: arrows move through the suggestions, Enter opens one,
// Escape closes them).
import { api, enc } from "./api.js";
import { h, to } from "./dom.js";

const SUGGESTIONS = 8;
const WAIT_MS = 150;
const NS_KEY = "strata.namespace";

export function chosenNamespace() {
  return sessionStorage.getItem(NS_KEY) || "";
}

export function rememberNamespace(ns) {
  if (ns) sessionStorage.setItem(NS_KEY, ns);
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

export function wireHeader() {
  const select = document.getElementById("ns-switch");
  select.addEventListener("change", () => {
    if (!select.value) return;
    rememberNamespace(select.value);
    location.hash = `#/?ns=${enc(select.value)}`;
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
