// The store at a glance, as Marquez's dashboard: the runs of the last day or week by
// state, the latest failures, how many datasets, jobs and sources there are, and the
// lineage events per hour or day by type.
import { api } from "../api.js";
import { a, count, dateText, h, runLink, s, section, table, to, when } from "../dom.js";

const WINDOWS = { day: [24, "DAY", "the last 24 hours"], week: [24 * 7, "WEEK", "the last 7 days"] };
const STATES = [
  ["COMPLETED", "✓ completed", "ok"], ["FAILED", "✗ failed", "bad"], ["RUNNING", "◔ running", "busy"],
  ["ABORTED", "⊘ aborted", "warn"], ["NEW", "○ new", "quiet"],
];
const TYPES = [["complete", "ok"], ["fail", "bad"], ["start", "busy"], ["abort", "warn"]];

export async function dashboard(_parts, params) {
  const key = params.get("window") === "week" ? "week" : "day";
  const [hours, period, words] = WINDOWS[key];
  const [summary, eventStats, datasets, jobs, sources] = await Promise.all([
    api(`/strata/summary?hours=${hours}`),
    api(`/stats/lineage-events?period=${period}`),
    api(`/stats/datasets?period=${period}`),
    api(`/stats/jobs?period=${period}`),
    api(`/stats/sources?period=${period}`),
  ]);
  const last = (series) => (series.length ? series[series.length - 1].count : 0);
  return h("div", { class: "page dashboard" },
    h("h1", null, "Dashboard"),
    h("nav", { class: "chips", "aria-label": "Time window" },
      Object.entries(WINDOWS).map(([k, [, , w]]) => h("a", { href: `#/dashboard?window=${k}`, "aria-current": k === key ? "page" : null }, w))),
    h("div", { class: "tiles" },
      tile("Runs", summary.runs, `in ${words}`),
      tile("Jobs that ran", summary.jobs, `in ${words}`),
      tile("Datasets", last(datasets), "now"),
      tile("Jobs", last(jobs), "now"),
      tile("Sources", last(sources), "now")),
    section(`Runs in ${words} by state`, h("ul", { class: "state-counts" },
      STATES.map(([state, label, tone]) => h("li", { "data-state": state },
        h("span", { class: `badge ${tone}` }, label), " ", h("strong", null, count(summary.states[state] || 0)))))),
    section("Latest failed runs", table(["Job", "Run", "Ended"],
      summary.failed.map((f) => [a(to.job(f.job.namespace, f.job.name), `${f.job.namespace} / ${f.job.name}`), runLink(f.run), when(f.at)]),
      { cls: "failed-table", empty: `✓ No run failed in ${words}.` })),
    section(`Lineage events in ${words}`, eventChart(eventStats, period)));
}

function tile(title, value, note) {
  return h("div", { class: "tile" }, h("span", { class: "tile-title" }, title), h("strong", null, count(value)), h("span", { class: "hint" }, note));
}

// Stacked bars, one per hour (DAY) or day (WEEK); each bar's title gives its counts.
function eventChart(buckets, period) {
  const total = (b) => TYPES.reduce((n, [t]) => n + (b[t] || 0), 0);
  const most = Math.max(1, ...buckets.map(total));
  const [w, hgt] = [Math.max(300, buckets.length * 22), 120];
  const step = w / Math.max(1, buckets.length);
  const bars = buckets.map((b, i) => {
    let y = hgt;
    const label = `${dateText(b.startInterval)}: ${TYPES.map(([t]) => `${b[t] || 0} ${t}`).join(", ")}`;
    const parts = TYPES.map(([t, tone]) => {
      const height = ((b[t] || 0) / most) * (hgt - 10);
      y -= height;
      return height ? s("rect", { class: `bar ${tone}`, x: i * step + 2, y, width: step - 4, height }) : null;
    });
    return s("g", { class: "bucket", "data-total": total(b) }, s("title", null, label), parts);
  });
  const sum = buckets.reduce((n, b) => n + total(b), 0);
  return h("figure", { class: "events-chart" },
    s("svg", { viewBox: `0 0 ${w} ${hgt}`, width: "100%", height: hgt, role: "img", "aria-label": `${sum} lineage events, per ${period === "DAY" ? "hour" : "day"}` }, bars),
    h("figcaption", { class: "hint" }, `${count(sum)} events, per ${period === "DAY" ? "hour" : "day"}: `,
      TYPES.map(([t, tone]) => h("span", { class: `badge ${tone}` }, t)), " ", a(to.events(), "Every event")));
}
