// Other producers' metadata as people read it: a description, owners, tags, the SQL
// (highlighted), data quality assertions; every other facet as JSON to unfold.
import { api, enc } from "./api.js";
import { h, json, section, table } from "./dom.js";

// Facets a page draws in words; the rest are listed as JSON.
const WORDED = new Set(["documentation", "ownership", "sql", "dataSource", "dataQualityAssertions", "schema"]);

// `tags`: where the subject's tags are written (`{ at: API path, canEdit, rerender }`),
// to add and remove them in place; without it they are only listed.
export function about(subject, extraRows = [], tags = null) {
  const facets = subject.facets || {};
  const description = subject.description || (facets.documentation && facets.documentation.description);
  const owners = ((facets.ownership && facets.ownership.owners) || []).map((o) => (o.type ? `${o.name} (${o.type})` : o.name));
  const source = facets.dataSource;
  const rows = [
    ...extraRows,
    description ? ["Description", h("span", { class: "description" }, description)] : null,
    owners.length ? ["Owners", h("span", { class: "owners" }, owners.join(", "))] : null,
    tags && tags.canEdit ? ["Tags", tagEditor(subject.tags || [], tags)]
      : (subject.tags || []).length ? ["Tags", tagList(subject.tags)] : null,
    source ? ["Source", [source.name || "", source.uri ? h("code", null, ` ${source.uri}`) : null]] : null,
  ].filter(Boolean);
  const sql = facets.sql && typeof facets.sql.query === "string" ? facets.sql.query : null;
  if (sql) rows.push(["SQL", h("pre", { class: "code sql" }, highlightSql(sql))]);
  if (!rows.length) return null;
  return section("About", h("dl", { class: "facts" }, rows.map(([k, v]) => [h("dt", null, k), h("dd", null, v)])));
}

export function tagList(tags) {
  return h("span", { class: "tags" }, tags.map((t) => h("span", { class: "tag" }, t)));
}

// Tags with a remove button each and a field to add one (a write token's), as Marquez's
// tag editor; `at` is the dataset's, field's or job's API path.
export function tagEditor(tags, { at, rerender, label = "" }) {
  const problem = h("span", { class: "problem", "aria-live": "polite" });
  const send = async (method, tag) => {
    try {
      await api(`${at}/tags/${enc(tag)}`, { method });
    } catch (e) {
      problem.textContent = `${method === "POST" ? "Not added" : "Not removed"}: ${e.message}`;
      return;
    }
    await rerender();
  };
  const input = h("input", { type: "text", size: 10, class: "tag-input", "aria-label": `New tag${label ? ` for ${label}` : ""}`, placeholder: "tag" });
  const form = h("form", { class: "tag-add" }, input, h("button", { type: "submit", class: "quiet" }, "Add"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const tag = input.value.trim();
    if (tag) send("POST", tag);
  });
  return h("span", { class: "tags editable" },
    tags.map((t) => h("span", { class: "tag", "data-tag": t }, t,
      h("button", { type: "button", class: "tag-remove", "aria-label": `Remove tag ${t}${label ? ` from ${label}` : ""}`, onclick: () => send("DELETE", t) }, "×"))),
    form, problem);
}

// Data quality assertions (OpenLineage's dataQualityAssertions facet), each with its result.
export function assertions(facets, title = "Data quality assertions") {
  const found = facets && facets.dataQualityAssertions && facets.dataQualityAssertions.assertions;
  if (!Array.isArray(found) || !found.length) return null;
  const passed = found.filter((x) => x.success).length;
  const rows = found.map((x) => [
    h("span", { class: `badge ${x.success ? "ok" : "bad"}` }, x.success ? "✓ passed" : "✗ failed"),
    h("code", null, String(x.assertion)),
    x.column || "—",
  ]);
  return section(`${title} (${passed} of ${found.length} passed)`,
    table(["Result", "Assertion", "Column"], rows, { cls: "assertions-table" }));
}

// Every facet not drawn in words, as Marquez shows them: a name to unfold into its JSON.
export function otherFacets(facets, title = "Facets") {
  const rest = Object.entries(facets || {}).filter(([k]) => !WORDED.has(k));
  if (!rest.length) return null;
  return section(`${title} (${rest.length})`,
    h("div", { class: "facet-list" }, rest.map(([k, v]) => h("details", { class: "facet", "data-facet": k }, h("summary", null, k), json(v)))));
}

const SQL_WORDS = new Set(`select from where join left right inner outer full cross on and or not as
  group by order having limit offset union all distinct insert into values update set delete create
  table view with case when then else end is null in exists between like over partition merge using
  asc desc cast interval true false`.split(/\s+/));
const SQL_TOKEN = /(--[^\n]*|\/\*[\s\S]*?\*\/)|('(?:[^']|'')*')|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)|([\s\S])/g;

// SQL as text nodes in spans: keywords, strings, numbers and comments told apart.
export function highlightSql(sql) {
  const out = [];
  let plain = "";
  const flush = () => { if (plain) out.push(plain); plain = ""; };
  for (const [, comment, str, num, word, other] of sql.matchAll(SQL_TOKEN)) {
    const kind = comment ? "comment" : str ? "string" : num ? "number" : word && SQL_WORDS.has(word.toLowerCase()) ? "keyword" : null;
    if (!kind) {
      plain += word || other;
      continue;
    }
    flush();
    out.push(h("span", { class: `sql-${kind}` }, comment || str || num || word));
  }
  flush();
  return out;
}
