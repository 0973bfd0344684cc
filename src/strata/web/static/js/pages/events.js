// Every OpenLineage event the server took, in a time range, newest first, each with its
// JSON to unfold: Marquez's events page.
import { api } from "../api.js";
import {
  a, count, dateText, h, json, parseLocalTime, query, runLink, section, table, timeRangeForm, to, when,
} from "../dom.js";

const PAGE = 50;
const TONES = { START: "busy", RUNNING: "busy", COMPLETE: "ok", FAIL: "bad", ABORT: "warn" };

export async function events(_parts, params) {
  const after = parseLocalTime(params.get("after") || "") || "";
  const before = parseLocalTime(params.get("before") || "") || "";
  const offset = Math.max(0, Number.parseInt(params.get("offset") || "0", 10) || 0);
  const iso = (local) => (local ? new Date(local).toISOString() : "");
  const found = await api(`/events/lineage${query({ after: iso(after), before: iso(before), limit: PAGE, offset })}`);
  const rows = found.events.map((e) => [
    when(e.eventTime),
    h("span", { class: `badge ${TONES[e.eventType] || "quiet"}` }, e.eventType || "—"),
    e.job ? a(to.job(e.job.namespace, e.job.name), e.job.name) : "—",
    e.run ? runLink(e.run.runId) : "—",
    `${count((e.inputs || []).length)} in, ${count((e.outputs || []).length)} out`,
    h("details", { class: "event-json" }, h("summary", null, "JSON"), json(e)),
  ]);
  const here = (extra) => to.events({ after, before, ...extra });
  const range = [after ? `after ${dateText(after)}` : null, before ? `before ${dateText(before)}` : null].filter(Boolean);
  return h("div", { class: "page events" },
    h("h1", null, "Events"),
    timeRangeForm(["after", "before"], [after, before], (picked) => { location.hash = to.events(picked); }),
    h("p", { class: "summary" }, `${count(found.totalCount)} events${range.length ? ` ${range.join(" and ")}` : ""}`,
      found.totalCount ? `; ${offset + 1}–${offset + found.events.length} shown, newest first.` : "."),
    section("Events", table(["Time", "Type", "Job", "Run", "Datasets", ""], rows, { cls: "events-table", empty: "No events in this range." })),
    h("p", { class: "actions pager" },
      offset > 0 ? a(here({ offset: Math.max(0, offset - PAGE) || null }), "← Newer") : null,
      offset + PAGE < found.totalCount ? a(here({ offset: offset + PAGE }), "Older →") : null));
}
