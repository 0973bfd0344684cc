"""Page loads in a real browser: how long a person waits for each page.

Two stores, each served by a real uvicorn server and opened in headless Chromium (the
same browser and helpers as the UI tests):

- ``graph``: the lineage benchmark's store (``bench/lineage_graph.py``: 100,000 jobs,
  200,000 datasets), the lineage page of datasets halfway down their pipelines at depth
  20 (about 200 nodes). Target: the graph is drawn within 2 s of asking for the page.
- ``demo``: the demo's store (``strata demo --hours 2``), each kind of page once per round.

Each page is a whole load (from ``about:blank``): the HTML, scripts (revalidated, 304),
API requests, layout and drawing, until the page marks ``main[data-shown]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from _common import parser, print_table, scratch_dir, summary, write_json

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE.parent / "tests" / "ui")]

TARGET_S = 2.0


def _load(driver: Any, url: str, route: str) -> float:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")  # a whole page load each time, not a move inside the page
    t0 = time.perf_counter()
    driver.get(f"{url}/{route}")

    def drawn(d: Any) -> bool:
        main = d.find_element("id", "main")
        return main.get_attribute("aria-busy") is None and main.get_attribute("data-shown") == route

    WebDriverWait(driver, 60, poll_frequency=0.02).until(drawn)
    return time.perf_counter() - t0


def _api_ms(driver: Any, path: str) -> float:
    """How long the page's request to ``path`` took, from the browser's resource timing."""
    script = (
        "const e = performance.getEntriesByType('resource')"
        ".filter(x => x.name.includes(arguments[0]));"
        "return e.length ? e[e.length - 1].duration : -1;"
    )
    return float(driver.execute_script(script, path))


def _browser() -> Any:
    import tempfile

    from ui_site import WIDE, set_viewport, start_chromium

    driver = start_chromium(Path(tempfile.mkdtemp(prefix="strata-bench-chromium-")))
    set_viewport(driver, WIDE)
    return driver


def graph_store(backend: str, jobs: int, datasets: int, pages: int) -> dict[str, Any]:
    from lineage_graph import NS, node_ids, populate
    from live_server import serving
    from runs_list import open_store
    from strata.api import create_app
    from strata.settings import Settings

    with open_store(backend) as (engine, url):
        print(f"loading {jobs:,} jobs and {datasets:,} datasets on {backend} ...", flush=True)
        lay = populate(engine, jobs, datasets, seed=7)
        starts = [n.split(":", 2)[2] for n in node_ids(lay, pages + 3, seed=7)]
        app = create_app(Settings(database_url=url, lineage_fold="thread"), engine)
        driver = _browser()
        try:
            with serving(app) as base:
                totals, apis, nodes = [], [], []
                for i, name in enumerate(starts):
                    route = f"#/lineage/dataset/{NS}/{quote(name, safe='')}?depth=20"
                    seconds = _load(driver, base, route)
                    if i < 3:  # warm-up: the first pages pay for cold caches
                        continue
                    totals.append(seconds)
                    apis.append(_api_ms(driver, "/api/v1/lineage"))
                    nodes.append(len(driver.find_elements("css selector", "svg.graph g.node")))
        finally:
            driver.quit()
    return {
        "backend": backend,
        "jobs": jobs,
        "datasets": datasets,
        "nodes": summary([float(n) for n in nodes]),
        "page_s": summary(totals),
        "lineage_api_ms": summary(apis),
    }


def demo_store(backend: str, rounds: int) -> dict[str, Any]:
    import dataclasses

    from typer.testing import CliRunner

    from live_server import serving
    from strata.api import create_app
    from strata.cli.main import app as cli
    from strata.settings import Settings

    with scratch_dir("ui-demo") as home:
        settings = Settings(
            home=home / ".strata",
            database_url=f"sqlite:///{home / 'meta.db'}",
            lake_uri=(home / "lake").as_uri(),
            lineage_fold="thread",
        )
        where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
        print("running the demo (about a minute) ...", flush=True)
        result = CliRunner().invoke(
            cli, [*where, "--home", str(settings.home), "demo", "--hours", "2"]
        )
        if result.exit_code != 0:
            raise SystemExit(result.stdout + result.stderr)
        pipelines = (str(settings.home / "demo" / "pipelines"),)
        app = create_app(dataclasses.replace(settings, pipelines=pipelines))
        pages = {
            "browse": "#/",
            "search": "#/search?q=experiment",
            "dataset": f"#/datasets/strata/{quote('metrics/experiment_daily', safe='')}",
            "preview": f"#/datasets/strata/{quote('clean/clicks', safe='')}?preview=2",
            "trace": f"#/datasets/strata/{quote('metrics/experiment_cumulative', safe='')}?trace=1",
            "job": "#/jobs/strata/hourly.customer_hourly",
            "lineage": f"#/lineage/dataset/strata/{quote('raw/clicks', safe='')}?depth=20",
            "status": "#/status",
            "dashboard": "#/dashboard",
            "what changed": "#/changes",
            "events": "#/events",
        }
        driver = _browser()
        times: dict[str, list[float]] = {k: [] for k in pages}
        try:
            with serving(app) as base:
                for r in range(rounds + 1):
                    for kind, route in pages.items():
                        seconds = _load(driver, base, route)
                        if r:  # round 0 warms up the server's and the browser's caches
                            times[kind].append(seconds)
        finally:
            driver.quit()
            app.state.engine.dispose()
    return {"backend": "sqlite", "pages": {k: summary(v) for k, v in times.items()}}


def main() -> None:
    p = parser(__doc__ or "", backend=False)
    p.add_argument("--store", choices=["graph", "demo", "both"], default="both")
    p.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--datasets", type=int, default=200_000)
    p.add_argument("--pages", type=int, default=20, help="graph pages timed (default 20)")
    p.add_argument("--rounds", type=int, default=5, help="rounds of demo pages (default 5)")
    a = p.parse_args()
    out: dict[str, Any] = {}
    if a.store in ("graph", "both"):
        g = out["graph"] = graph_store(a.backend, a.jobs, a.datasets, a.pages)
        print_table(
            f"lineage page, {a.backend}, {a.jobs:,} jobs / {a.datasets:,} datasets, depth 20; "
            f"nodes drawn p50 {g['nodes']['p50']:.0f} / max {g['nodes']['max']:.0f}",
            ["measured", "n", "p50", "p95", "max"],
            [
                [
                    "page drawn (s)",
                    int(g["page_s"]["n"]),
                    *(g["page_s"][k] for k in ("p50", "p95", "max")),
                ],
                [
                    "lineage API (ms)",
                    int(g["lineage_api_ms"]["n"]),
                    *(g["lineage_api_ms"][k] for k in ("p50", "p95", "max")),
                ],
            ],
        )
        g["target_s"] = TARGET_S
        g["target_met"] = g["page_s"]["max"] <= TARGET_S
        verdict = "met" if g["target_met"] else "MISSED"
        print(f"target: every graph page drawn within {TARGET_S} s: {verdict}")
    if a.store in ("demo", "both"):
        d = out["demo"] = demo_store(a.backend, a.rounds)
        print_table(
            "demo store pages, sqlite; seconds from asking to drawn",
            ["page", "n", "p50", "p95", "max"],
            [[k, int(v["n"]), v["p50"], v["p95"], v["max"]] for k, v in d["pages"].items()],
        )
    write_json("ui_pages", a.json, vars(a), out)


if __name__ == "__main__":
    main()
