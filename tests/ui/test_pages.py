"""Click through the demo's store in Chromium, on each backend: what the pages show is
checked against the store and the build service, not against fixed strings."""

from __future__ import annotations

import difflib
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import sqlalchemy as sa
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select
from ui_site import NARROW, READ, WIDE, WRITE, Site, css, one, section, set_viewport

from strata.builds.state.schedules import LAPSED
from strata.store.schema import check_results, jobs, runs, schedule_firings

pytestmark = pytest.mark.spark

STALE = "metrics/experiment_cumulative"  # reads raw/experiments, which has a version 2


def ds(name: str, query: str = "") -> str:
    return f"#/datasets/strata/{quote(name, safe='')}{query}"


def test_pages_ask_for_a_token_and_show_nothing_without_one(site: Site) -> None:
    site.go("#/", token=None)
    assert one(site, "main h1").text == "This server needs a token"
    assert "metrics/" not in one(site, "main").text
    one(site, "#token").send_keys("not-a-token", Keys.ENTER)
    site.wait(lambda d: "not valid" in one(site, "main").text)
    field = one(site, "#token")
    field.clear()
    field.send_keys(READ, Keys.ENTER)
    site.wait(lambda d: one(site, "main h1").text == "Browse")
    names = {a.text for a in css(site, "main section a[href^='#/datasets/']")}
    assert {d.name for d in site.lake().datasets()} <= names
    site.shot("browse")


def test_search_finds_a_dataset_and_opens_its_page(site: Site) -> None:
    site.go("#/")
    box = one(site, "#q")
    box.send_keys("experiment_daily", Keys.ENTER)
    site.wait_shown("#/search?q=experiment_daily")
    hits = [a.text for a in css(site, "main a[href^='#/datasets/']")]
    assert "metrics/experiment_daily" in hits
    site.shot("search")
    site.driver.find_element(By.LINK_TEXT, "metrics/experiment_daily").click()
    site.wait_shown(ds("metrics/experiment_daily"))
    assert one(site, "main h1").text == "metrics/experiment_daily"
    history = site.service.history("metrics/experiment_daily")["versions"]
    rows = section(site, "Versions").find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.find_element(By.CSS_SELECTOR, "td").text for r in rows] == [
        f"v{v['version']}" + (" purged" if v["purged"] else "") for v in reversed(history)
    ]
    fields = section(site, "Schema").find_elements(By.CSS_SELECTOR, "tbody tr code")
    schema = site.lake().read_arrow("metrics/experiment_daily").schema
    assert [f.text for f in fields] == schema.names
    status = site.service.dataset_status("metrics/experiment_daily")
    shown = section(site, "Status")
    assert shown.find_element(By.CSS_SELECTOR, ".badge").get_attribute("data-state") == (
        status.status.value
    )
    assert [li.text for li in shown.find_elements(By.CSS_SELECTOR, ".causes li")] == [
        c.describe() for c in status.causes
    ]
    site.shot("dataset")


def test_preview_shows_the_first_rows_read_from_the_lake(site: Site) -> None:
    site.go(ds("clean/clicks"))
    first = section(site, "Versions").find_element(By.LINK_TEXT, "Preview")
    first.click()
    current = site.lake().version("clean/clicks").commit_id
    site.wait_shown(ds("clean/clicks", f"?preview={current}"))
    preview = section(site, "Preview of")
    header = [th.text.split(" ")[0] for th in preview.find_elements(By.CSS_SELECTOR, "th")]
    _, expected = site.lake().head("clean/clicks", 100, current)
    assert header == expected.schema.names
    cells = preview.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(cells) == min(100, site.lake().version("clean/clicks").row_count)
    first_row = [td.text for td in cells[0].find_elements(By.CSS_SELECTOR, "td")]
    assert first_row[0] == str(expected.column(0)[0].as_py())
    site.shot("preview")


def test_trace_of_a_version_links_down_to_the_raw_versions(site: Site) -> None:
    site.go(ds(STALE, "?trace=1"))
    tree = section(site, "Trace of v1")
    labels = [a.text for a in tree.find_elements(By.CSS_SELECTOR, ".trace-node > a:first-child")]

    def walk(node: dict[str, object]) -> list[str]:
        kids = node.get("inputs") or []
        assert isinstance(kids, list)
        return [f"{node['dataset']}@{node['version']}", *(x for k in kids for x in walk(k))]

    assert labels == walk(site.service.trace(STALE, 1))
    assert any(label.startswith("raw/clicks@") for label in labels)
    site.shot("trace")
    tree.find_element(By.LINK_TEXT, "raw/experiments@1").click()
    site.wait_shown(ds("raw/experiments", "?trace=1"))
    assert one(site, "main h1").text == "raw/experiments"


def api(site: Site, path: str, **params: Any) -> Any:
    """What a client reads from the API: the reference the pages are checked against."""
    headers = {"Authorization": f"Bearer {READ}"}
    response = httpx.get(f"{site.url}/api/v1{path}", params=params, headers=headers)
    response.raise_for_status()
    return response.json()


def _graph_counts(site: Site, name: str, depth: int) -> tuple[int, int]:
    """Nodes and edges of the graph the API answers."""
    graph = api(site, "/lineage", nodeId=f"dataset:strata:{name}", depth=depth)["graph"]
    return len(graph), sum(len(n["outEdges"]) for n in graph)


def test_lineage_graph_draws_every_node_and_edge_with_causes_on_hover(site: Site) -> None:
    site.go(f"#/lineage/dataset/strata/{quote(STALE, safe='')}?depth=3")
    nodes, edges = _graph_counts(site, STALE, 3)
    assert len(css(site, "svg.graph g.node")) == nodes
    assert len(css(site, "svg.graph path.edge")) == edges
    stale = one(site, f"g.node[data-id='dataset:strata:{STALE}']")
    assert stale.get_attribute("data-state") == "out_of_date"
    assert "out of date" in stale.find_element(By.CSS_SELECTOR, "text.sub").text
    ActionChains(site.driver).move_to_element(stale).perform()
    tip = one(site, "#tooltip")
    site.wait(lambda d: tip.is_displayed())
    causes = site.service.dataset_status(STALE).causes
    assert causes, "the fixture made this dataset out of date"
    for cause in causes:
        assert cause.describe() in tip.text
    assert "raw/experiments" in tip.text
    graph = api(site, "/lineage", nodeId=f"dataset:strata:{STALE}", depth=3)["graph"]
    last_runs = {n["id"]: n["data"]["latestRun"]["state"] for n in graph if n["type"] == "JOB"}
    drawn = {j.get_attribute("data-id"): j for j in css(site, "g.node.job")}
    assert last_runs and drawn.keys() == last_runs.keys()
    for job_id, state in last_runs.items():
        assert drawn[job_id].get_attribute("data-state") == state
        assert state.lower() in drawn[job_id].get_attribute("textContent")
    site.shot("lineage")
    stale.click()
    panel = one(site, "#node-panel")
    site.wait(lambda d: "Open dataset" in panel.text)
    assert causes[0].describe() in panel.text


def test_the_graph_is_keyboard_navigable(site: Site) -> None:
    site.go(f"#/lineage/dataset/strata/{quote(STALE, safe='')}?depth=1")
    one(site, "svg.graph").send_keys(Keys.TAB)
    focused = site.driver.switch_to.active_element
    assert focused.get_attribute("data-id") is not None
    label = focused.get_attribute("aria-label")
    focused.send_keys(Keys.ENTER)
    panel = one(site, "#node-panel")
    site.wait(lambda d: panel.find_elements(By.CSS_SELECTOR, "h2"))
    assert panel.find_element(By.CSS_SELECTOR, "h2").text in label


def test_time_travel_shows_the_graph_as_it_was(site: Site) -> None:
    route = f"#/lineage/dataset/strata/{quote('raw/clicks', safe='')}?depth=20"
    site.go(route)
    now = {n.get_attribute("data-id") for n in css(site, "svg.graph g.node")}
    # Just after the first daily build: the regional pipeline came chapters later.
    daily = site.lake().versions("metrics/experiment_cumulative")[0].committed_at
    when = (daily + timedelta(seconds=1)).astimezone().strftime("%Y-%m-%dT%H:%M:%S")
    site.go(f"{route}&asOf={quote(when)}")
    then = {n.get_attribute("data-id") for n in css(site, "svg.graph g.node")}
    assert "dataset:strata:metrics/experiment_cumulative" in then
    assert "job:strata:regions.hourly" in now - then
    assert then < now
    assert "as of" in one(site, "main p.summary").text
    # Today's run states are not those of then: no job shows one.
    jobs_then = css(site, "svg.graph g.node.job")
    assert jobs_then and all(j.get_attribute("data-state") == "" for j in jobs_then)
    assert not any("completed" in j.get_attribute("textContent") for j in jobs_then)
    site.shot("time-travel")
    # The time is one field, typed as a person writes it; nonsense is refused on the spot.
    site.go(route)
    field = one(site, "#as-of")
    field.send_keys("yesterday", Keys.ENTER)
    site.wait(lambda d: "is not a time" in one(site, "#as-of-problem").text)
    assert "asOf" not in site.driver.current_url
    field.clear()
    field.send_keys(when.replace("T", " "), Keys.ENTER)
    site.wait_shown(f"{route}&asOf={quote(when)}")
    assert {n.get_attribute("data-id") for n in css(site, "svg.graph g.node")} == then


SCREEN_TEXT = r"""
const svg = document.querySelector("svg.graph");
const box = svg.getBoundingClientRect();
const move = svg.querySelector("g.viewport").getAttribute("transform");
const k = Number(/scale\(([^)]+)\)/.exec(move)[1]);
const shown = [...svg.querySelectorAll("text")]
  .filter((t) => getComputedStyle(t).display !== "none");
const px = Math.min(...shown.map((t) => parseFloat(getComputedStyle(t).fontSize) * k));
const inside = (r) => r.left >= box.left - 1 && r.right <= box.right + 1
  && r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
const nodes = [...svg.querySelectorAll("g.node")]
  .map((n) => [n.dataset.id, inside(n.getBoundingClientRect())]);
return { k, px, nodes, compact: svg.classList.contains("compact") };
"""


def _screen_text(site: Site) -> dict[str, Any]:
    """The graph's scale, the smallest label on screen, and each node's place on screen."""
    result: dict[str, Any] = site.driver.execute_script(SCREEN_TEXT)
    return result


def test_the_graph_opens_readable_and_brings_a_tabbed_node_into_view(site: Site) -> None:
    site.go(f"#/lineage/dataset/strata/{quote('raw/clicks', safe='')}?depth=20")
    site.wait(lambda d: _screen_text(site)["nodes"])
    opened = _screen_text(site)
    assert opened["px"] >= 11, opened
    # Either all of it fits at a readable size, or it opens at 100 % on the chosen node.
    assert all(inside for _, inside in opened["nodes"]) or opened["k"] == 1
    focus = one(site, "g.node[data-id='dataset:strata:raw/clicks']")
    assert dict(opened["nodes"])["dataset:strata:raw/clicks"], "the chosen node is on screen"
    one(site, "svg.graph").send_keys(Keys.TAB)
    for _ in range(len(opened["nodes"])):  # every node, reached by Tab, is on screen
        active = site.driver.switch_to.active_element
        node_id = active.get_attribute("data-id")
        assert node_id, "Tab stays among the nodes"
        assert dict(_screen_text(site)["nodes"])[node_id], f"{node_id} is off-screen"
        active.send_keys(Keys.TAB)
    assert focus.is_displayed()
    one(site, ".graph-tools button:nth-child(3)").click()  # Fit: compact nodes, text still 11 px
    fitted = _screen_text(site)
    assert all(inside for _, inside in fitted["nodes"])
    assert fitted["px"] >= 11 and (fitted["compact"] or fitted["k"] >= 11 / 11.5), fitted
    site.shot("lineage-fitted")


def _one_way(graph: list[dict[str, Any]], start: str, upstream: bool) -> set[str]:
    step: dict[str, set[str]] = {}
    for n in graph:
        for e in n["outEdges"]:
            a, b = (e["destination"], e["origin"]) if upstream else (e["origin"], e["destination"])
            step.setdefault(a, set()).add(b)
    seen, todo = {start}, [start]
    while todo:
        for nxt in step.get(todo.pop(), set()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_upstream_and_downstream_only_views(site: Site) -> None:
    name = "metrics/customer_daily"
    node = f"dataset:strata:{name}"
    graph = api(site, "/lineage", nodeId=node, depth=20)["graph"]
    for way, upstream in (("up", True), ("down", False)):
        site.go(f"#/lineage/dataset/strata/{quote(name, safe='')}?depth=20&dir={way}")
        drawn = {n.get_attribute("data-id") for n in css(site, "svg.graph g.node")}
        assert drawn == _one_way(graph, node, upstream)
        assert 1 < len(drawn) < len(graph)
    assert "dataset:strata:raw/clicks" in _one_way(graph, node, True)


def _rgb(value: str) -> tuple[float, ...]:
    parts = value[value.index("(") + 1 : value.index(")")].split(",")
    return tuple(float(x) / 255 for x in parts[:3])


def _contrast(a: str, b: str) -> float:
    def lum(c: tuple[float, ...]) -> float:
        f = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2]

    high, low = sorted((lum(_rgb(a)), lum(_rgb(b))), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_a_skip_link_and_focus_rings_and_edges_that_can_be_seen(site: Site) -> None:
    site.go(f"#/lineage/dataset/strata/{quote(STALE, safe='')}?depth=1")
    # The first stop of the page, before the header's links.
    site.driver.execute_script("document.querySelector('.top .brand').focus()")
    ActionChains(site.driver).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    skip = site.driver.switch_to.active_element
    assert skip.get_attribute("id") == "skip" and skip.is_displayed()
    skip.send_keys(Keys.ENTER)
    assert site.driver.switch_to.active_element.get_attribute("id") == "main"
    style = "return getComputedStyle(arguments[0])[arguments[1]]"
    link = one(site, "main .crumbs a")
    site.driver.execute_script("arguments[0].focus()", link)
    ring = site.driver.execute_script(style, link, "outlineColor")
    page = site.driver.execute_script(style, one(site, "body"), "backgroundColor")
    assert _contrast(ring, page) >= 3, (ring, page)
    edge = site.driver.execute_script(style, one(site, "svg.graph path.edge"), "stroke")
    box = site.driver.execute_script(style, one(site, ".graph-box"), "backgroundColor")
    assert _contrast(edge, box) >= 3, (edge, box)


def test_a_failed_run_shows_its_error_and_stack_trace(site: Site) -> None:
    site.go("#/jobs/strata/daily.customer_daily")
    failed = section(site, "Runs").find_element(
        By.XPATH, ".//tr[.//span[@data-state='FAILED']]//a[starts-with(@href, '#/runs/')]"
    )
    run_id = failed.get_attribute("href").rsplit("/", 1)[1]
    failed.click()
    site.wait_shown(f"#/runs/{run_id}")
    with site.service.lake.engine.connect() as conn:
        facets = conn.execute(sa.select(runs.c.facets).where(runs.c.uuid == run_id)).scalar_one()
    error = facets["errorMessage"]
    box = section(site, "Error")
    assert error["message"][:80] in box.text
    assert "Traceback" in box.find_element(By.CSS_SELECTOR, "pre.trace").text
    history = section(site, "State history").find_elements(By.CSS_SELECTOR, ".badge")
    states = [b.get_attribute("data-state") for b in history]
    assert states[-1] == "FAILED" and "RUNNING" in states
    site.shot("failed-run")


def test_program_versions_show_their_source_and_diff(site: Site) -> None:
    site.go("#/jobs/strata/hourly.customer_hourly")
    programs = section(site, "Program versions")
    assert [
        r.find_element(By.CSS_SELECTOR, "td").text
        for r in programs.find_elements(By.CSS_SELECTOR, "tbody tr")
    ] == ["v2", "v1"]
    programs.find_element(By.LINK_TEXT, "Diff with previous").click()
    site.wait_shown("#/jobs/strata/hourly.customer_hourly?diff=1..2")
    history = site.service.history("metrics/customer_hourly")["versions"]
    built = {v["program"]["ordinal"]: v["version"] for v in reversed(history)}
    old, new = (
        api(site, f"/strata/programs/{quote('metrics/customer_hourly', safe='')}", version=v)
        for v in (built[1], built[2])
    )
    added = {
        line[1:]
        for f in new["files"]
        for line in difflib.ndiff(
            old["files"].get(f, "").splitlines(), new["files"][f].splitlines()
        )
        if line.startswith("+ ") and line[2:].strip()
    }
    shown = {e.text.lstrip("+").strip() for e in css(site, "pre.diff .add")}
    assert added and {a.strip() for a in added} <= shown
    assert css(site, "pre.diff .del")
    site.shot("program-diff")


def test_schema_change_between_two_versions(site: Site) -> None:
    site.go(ds("raw/experiments", "?diff=1..2"))
    change = section(site, "Schema change")
    assert "Same schema" in change.text  # the fixture's second version kept the columns


def test_build_button_needs_a_write_token_then_builds_with_progress(site: Site) -> None:
    def run_count() -> int:
        with site.service.lake.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(runs)).scalar_one())

    before = run_count()
    site.go("#/status?only=stale")
    assert STALE in one(site, "main").text
    buttons = css(site, "button.build")
    # Each button is named for what it builds, and with a read token none can be pressed.
    names = [b.get_attribute("aria-label") for b in buttons]
    assert f"Build {STALE}" in names and len(set(names)) == len(names)
    assert all(not b.is_enabled() for b in buttons)
    assert all(b.get_attribute("aria-describedby") == "build-hint" for b in buttons)
    assert "needs a write token" in one(site, "#build-hint").text
    site.driver.execute_script(
        "arguments[0].click()", one(site, f"button.build[data-dataset='{STALE}']")
    )
    assert run_count() == before  # nothing ran, nothing was recorded
    assert site.service.state.build_requests(10) == []
    site.shot("build-refused")

    site.go("#/status?only=stale", token=WRITE)
    one(site, f"button.build[data-dataset='{STALE}']").click()
    site.wait(lambda d: "Build of" in one(site, "#build-progress").text)
    site.wait(lambda d: "✓ done" in one(site, "#build-progress").text, timeout=240)
    assert not site.service.dataset_status(STALE).stale
    [request] = site.service.state.build_requests(10)
    assert (request.dataset, request.state) == (STALE, "COMPLETED")
    expected = [t["transform"] for t in request.progress["transforms"]]

    def steps_shown(d: WebDriver) -> bool:
        # The page may redraw the finished table once more: the wait reads it again then.
        rows = css(site, "#build-progress tbody tr")
        return [r.find_element(By.CSS_SELECTOR, "td").text for r in rows] == expected

    site.wait(steps_shown)
    assert run_count() > before
    site.shot("build-done")
    with site.service.lake.engine.connect() as conn:
        job_names = set(conn.execute(sa.select(jobs.c.name)).scalars())
    assert "daily.experiment_cumulative" in job_names


def test_status_page_lists_every_dataset_with_causes(site: Site) -> None:
    site.go("#/status")
    rows = css(site, "table.status-table tbody tr")
    status = site.service.status()
    assert len(rows) == len(status)
    for row in rows:
        name = row.find_elements(By.CSS_SELECTOR, "td")[1].text
        state = row.find_element(By.CSS_SELECTOR, ".badge").get_attribute("data-state")
        assert state == status[name].status.value
    site.shot("status")


def test_status_says_which_columns_a_program_change_touches(site: Site) -> None:
    """A transform edited and planned (POST /strata/plans): its status row names the
    column whose inputs changed. The edit is undone after, so nothing else sees it."""
    hourly = site.settings.home / "demo" / "pipelines" / "hourly.py"
    before = hourly.read_text()
    edited = before.replace('F.count("latency_ms")', 'F.count("event_id")', 1)
    assert edited != before
    try:
        hourly.write_text(edited)
        planned = httpx.post(
            f"{site.url}/api/v1/strata/plans",
            params={"dataset": "metrics/customer_hourly"},
            headers={"Authorization": f"Bearer {WRITE}"},
            timeout=120,
        )
        assert planned.status_code == 200, planned.text
        [cause] = [
            c for c in planned.json()["datasets"][0]["causes"] if c["kind"] == "program_changed"
        ]
        assert cause["columns"]["changed"] == ["timed_clicks"]
        site.go("#/status")
        row = site.wait(
            lambda d: d.find_element(By.XPATH, "//tr[.//a[.='metrics/customer_hourly']]"),
            timeout=10,
        )
        assert isinstance(row, WebElement)
        assert "program changed" in row.text and "columns changed: timed_clicks" in row.text
    finally:
        hourly.write_text(before)
    site.service.reload()
    assert all(
        c.kind.value != "program_changed"
        for c in site.service.dataset_status("metrics/customer_hourly").causes
    )


def test_column_lineage_page_draws_the_columns(site: Site) -> None:
    site.go(f"#/columns/strata/{quote('metrics/experiment_daily', safe='')}")
    columns = css(site, "svg.graph g.node")
    schema = site.lake().read_arrow("metrics/experiment_daily").schema.names
    # Zoomed out, a label is clipped to its node: the whole name is kept beside it.
    labels = [c.find_element(By.CSS_SELECTOR, "text.label") for c in columns]
    drawn = {x.get_attribute("data-full") for x in labels}
    assert set(schema) <= drawn
    for x in labels:
        shown = x.text.removesuffix("…")
        assert x.get_attribute("data-full").startswith(shown) and shown
    # Builds record where each column came from: the page draws those edges.
    edges = css(site, "svg.graph path.edge")
    summary = site.driver.find_element(By.CSS_SELECTOR, ".columns-page .summary").text
    assert edges and f"{len(edges)} edges" in summary, summary
    upstream = {e.get_attribute("data-from") for e in edges} | {
        e.get_attribute("data-to") for e in edges
    }
    assert any(":metrics/customer_daily:" in n for n in upstream), upstream
    # The panel reads both ways: what a column is derived from and what uses it.
    one(site, "g.node[data-id='datasetField:strata:metrics/customer_daily:customer_id']").click()
    panel = one(site, "#node-panel").text
    derived, _, used = panel.partition("Used by: ")
    assert "metrics/experiment_daily.clicks_per_customer" in used, panel
    assert "Derived from: " in derived and "metrics/customer_hourly.customer_id" in derived, panel


@pytest.mark.parametrize("route", ["#/", ds("metrics/customer_hourly"), "#/status"])
def test_pages_fit_a_narrow_window(site: Site, route: str) -> None:
    set_viewport(site.driver, NARROW)
    try:
        site.go(route)
        overflow = site.driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"{route} scrolls sideways on a narrow window by {overflow}px"
        if route == "#/":
            site.shot("narrow-browse")
    finally:
        set_viewport(site.driver, WIDE)


def _cut_off(site: Site, cells: list[WebElement]) -> list[str]:
    """The cells not wholly inside the window's width, or not shown."""
    width = site.driver.execute_script("return document.documentElement.clientWidth")
    return [
        c.text
        for c in cells
        if not c.is_displayed() or c.rect["x"] < 0 or c.rect["x"] + c.rect["width"] > width + 1
    ]


def test_a_phone_sees_every_key_column_and_is_told_when_a_table_scrolls(site: Site) -> None:
    set_viewport(site.driver, NARROW)
    try:
        site.go("#/status")
        rows = css(site, "table.status-table tbody tr")
        assert len(rows) == len(site.service.status())
        why = [r.find_elements(By.CSS_SELECTOR, "td")[4] for r in rows]
        buttons = css(site, "table.status-table button.build")
        assert buttons and _cut_off(site, why + buttons) == []
        assert all(
            "Why"
            in site.driver.execute_script(
                "return getComputedStyle(arguments[0], '::before').content", c
            )
            for c in why
        )
        site.shot("narrow-status")
        site.go("#/")
        updated = [
            r.find_elements(By.CSS_SELECTOR, "td")[3]
            for r in css(site, "main section:nth-of-type(1) tbody tr")
        ]
        assert updated and _cut_off(site, updated) == []
        current = site.lake().version("clean/clicks").commit_id
        site.go(ds("clean/clicks", f"?preview={current}"))
        preview = section(site, "Preview of")
        columns = len(preview.find_elements(By.CSS_SELECTOR, "thead th"))
        hint = preview.find_element(By.CSS_SELECTOR, ".scroll-hint")
        assert hint.is_displayed() and f"all {columns} columns" in hint.text
        wrap = preview.find_element(By.CSS_SELECTOR, ".table-wrap")
        assert wrap.get_attribute("tabindex") == "0"  # scrolled from the keyboard too
        site.shot("narrow-preview")
    finally:
        set_viewport(site.driver, WIDE)
    # On a wide screen the same preview fits: no hint.
    site.go(ds("clean/clicks", f"?preview={current}"))
    assert not css(site, ".scroll-hint") or site.driver.execute_script(
        "const w = document.querySelector('.table-wrap.wide'); return w.scrollWidth > w.clientWidth"
    )


def test_a_partitioned_dataset_shows_its_partitions(site: Site) -> None:
    site.go(ds("regions/hourly"))
    status = site.service.dataset_status("regions/hourly")
    counts = status.partition_counts()
    assert counts is not None and counts["fresh"] > 0
    shown = one(site, ".partition-counts").text
    assert shown.startswith(
        f"Partitions: {counts['fresh']:,} fresh, {counts['out_of_date']:,} out of date"
    )
    stale = [p for p in status.partitions or [] if p.stale]
    assert len(stale) == 1  # the fixture's late UK click
    [row] = css(site, "table.partition-table tbody tr")
    key, why = row.find_elements(By.CSS_SELECTOR, "td")
    assert "region=UK" in key.text
    assert why.text == "\n".join(c.describe() for c in stale[0].causes)
    site.shot("partitions")


def test_purged_versions_show_as_such_with_their_history(site: Site) -> None:
    """The demo's retention chapter purged old daily versions: the versions table marks
    each one the API says is purged, offers no preview of it, and its trace says so."""
    name = "metrics/customer_daily"
    history = api(site, f"/strata/history/{quote(name, safe='')}")["versions"]
    purged = {v["version"] for v in history if v["purged"]}
    assert purged, "the demo's retention chapter purged nothing"
    site.go(ds(name))
    rows = section(site, "Versions").find_elements(By.CSS_SELECTOR, "tbody tr")
    shown: set[int] = set()
    for row in rows:
        cells = row.find_elements(By.CSS_SELECTOR, "td")
        version = int(cells[0].text.split()[0].removeprefix("v"))
        badges = [b.text for b in cells[0].find_elements(By.CSS_SELECTOR, ".badge")]
        if badges == ["purged"]:
            shown.add(version)
            assert not row.find_elements(By.LINK_TEXT, "Preview")
            assert row.find_elements(By.LINK_TEXT, "Trace")
        else:
            assert badges == [] and row.find_elements(By.LINK_TEXT, "Preview")
    assert shown == purged
    oldest = min(purged)
    site.go(ds(name, f"?trace={oldest}"))
    node = one(site, ".trace-node")
    assert node.text.startswith(f"{name}@{oldest}")
    [badge] = [b for b in node.find_elements(By.CSS_SELECTOR, ".badge") if b.text == "purged"]
    assert "retention policy metrics/*_daily" in (badge.get_attribute("title") or "")
    site.shot("purged-versions")


def test_archived_versions_show_as_such_and_still_preview(site: Site) -> None:
    """The demo's archive chapter moved old raw/clicks files: the versions table marks
    each version the API says is archived, and its preview reads from the archive."""
    name = "raw/clicks"
    history = api(site, f"/strata/history/{quote(name, safe='')}")["versions"]
    archived = {v["version"] for v in history if v["archived"]}
    assert archived, "the demo's archive chapter moved nothing"
    site.go(ds(name))
    shown: set[int] = set()
    for row in section(site, "Versions").find_elements(By.CSS_SELECTOR, "tbody tr"):
        first = row.find_elements(By.CSS_SELECTOR, "td")[0]
        badges = first.find_elements(By.CSS_SELECTOR, ".badge")
        if [b.text for b in badges] == ["archived"]:
            shown.add(int(first.text.split()[0].removeprefix("v")))
            assert "in the archive" in (badges[0].get_attribute("title") or "")
    assert shown == archived
    oldest = min(archived)
    site.go(ds(name, f"?preview={oldest}"))
    preview = section(site, "Preview of")
    assert preview.find_elements(By.CSS_SELECTOR, "tbody tr")  # read from the archive
    site.go(ds(name))
    site.driver.execute_script("arguments[0].scrollIntoView()", section(site, "Versions"))
    site.shot("archived-versions")


def test_the_status_page_shows_the_archive(site: Site) -> None:
    found = api(site, "/strata/retention?passes=50")
    last = next(p for p in found["passes"] if p["kind"] == "archive")  # the demo's
    site.go("#/status")
    summary = one(site, ".archive-summary").text
    assert f"({last['trigger']}): moved {last['files']} file(s)" in summary
    files = sum(x["files"] for x in found["archive"]["archives"])
    assert f"{files} file(s) archived" in summary
    [place] = css(site, "table.archive-places tbody tr")
    assert found["archive"]["archives"][0]["uri"] in place.text


def test_the_status_page_says_how_long_lineage_is_kept_and_what_the_last_pass_did(
    site: Site,
) -> None:
    passed = httpx.post(
        f"{site.url}/api/v1/strata/retention",
        params={"lineage": "true"},
        headers={"Authorization": f"Bearer {WRITE}"},
    )
    assert passed.status_code == 200, passed.text
    deleted = passed.json()["runs"]  # the demo's runs are recent: none is ten years old
    site.go("#/status")
    summary = one(site, ".lineage-summary").text
    assert "Lineage runs and events are kept 3650 days" in summary
    assert f"deleted {deleted} run(s) and {passed.json()['events']} event(s)" in summary


def test_the_status_page_says_how_the_last_retention_pass_went(site: Site) -> None:
    found = api(site, "/strata/retention?passes=50")
    last = next(p for p in found["passes"] if p["kind"] == "retention")  # the demo's
    site.go("#/status")
    summary = one(site, ".retention-summary").text
    assert (
        f"({last['trigger']}): purged {last['purged']} version(s), {last['files']} file(s)"
        in summary
    )
    assert (
        f"{len(found['marks'])} version(s) marked for purging, {len(found['pins'])} pinned"
        in summary
    )


def test_a_pipeline_job_links_its_children_and_they_link_back(site: Site) -> None:
    site.go("#/jobs/strata/hourly")
    family = section(site, "Parent and child jobs")
    children = [a.text for a in family.find_elements(By.CSS_SELECTOR, "dd.children a")]
    pipelines = site.service.pipelines.transforms
    assert children == sorted(k for k in pipelines if k.startswith("hourly."))
    family.find_element(By.LINK_TEXT, "hourly.clean_clicks").click()
    site.wait_shown("#/jobs/strata/hourly.clean_clicks")
    parent = section(site, "Parent and child jobs").find_element(By.CSS_SELECTOR, "dd a")
    assert parent.text == "hourly"


def test_checks_show_on_the_dataset_and_on_the_run_they_stopped(site: Site) -> None:
    site.go(ds("clean/clicks"))
    checks = section(site, "Checks of v")
    rows = checks.find_elements(By.CSS_SELECTOR, "tbody tr")
    names = {r.find_elements(By.TAG_NAME, "td")[1].text: r for r in rows}
    assert "every click names its customer" in names and "one row per event" in names
    passed = names["one row per event"].find_element(By.CSS_SELECTOR, ".badge")
    assert passed.text == "✓ passed" and "ok" in passed.get_attribute("class")
    # The demo's bad batch: the version of raw/clicks a check refused, and its run.
    with site.lake().engine.connect() as conn:
        refused = conn.execute(
            sa.select(check_results.c.commit_id).where(check_results.c.outcome == "failed")
        ).scalar_one()
    site.go(ds("raw/clicks", f"?checks={refused}"))
    box = section(site, f"Checks of v{refused}")
    stopped = next(r for r in box.find_elements(By.CSS_SELECTOR, "tbody tr") if "✗" in r.text)
    assert "every click names its customer" in stopped.text and "failing" in stopped.text
    stopped.find_element(By.CSS_SELECTOR, "a[href^='#/runs/']").click()
    site.wait(lambda d: "/runs/" in d.current_url and "Checks" in one(site, "main").text)
    assert "customer_id is not null" in section(site, "Checks").text
    assert "CheckFailed" in section(site, "Error").text
    site.shot("checks")


def test_status_shows_when_each_schedule_fires_next(site: Site) -> None:
    site.go("#/status")
    box = section(site, "Schedules")
    row = box.find_element(By.XPATH, ".//tr[.//strong[.='daily.experiment_cumulative']]")
    assert "30 0 * * *" in row.text and "metrics/experiment_cumulative" in row.text
    shown = row.find_element(By.CSS_SELECTOR, ".next-firing time")
    assert shown.get_attribute("datetime").endswith("00:30:00+00:00") and shown.text.strip()
    assert "never fired" in row.text


def test_a_firing_its_worker_stopped_reads_as_stopped_not_running(site: Site) -> None:
    name, due = "daily.experiment_cumulative", datetime(2026, 11, 28, 0, 30, tzinfo=UTC)
    state = site.service.state

    def badge() -> Any:
        site.go("#/status")
        row = section(site, "Schedules").find_element(By.XPATH, f".//tr[.//strong[.='{name}']]")
        return row.find_element(By.CSS_SELECTOR, ".badge")

    # Taken by a worker that never renewed its hold (killed at once): stopped, not running,
    # before any worker records it.
    assert state.take_firing("main", name, due, "worker-x", hold=0.0)
    firings = schedule_firings.c
    try:
        shown = badge()
        assert shown.text == "■ stopped" and "warn" in shown.get_attribute("class")
        assert shown.get_attribute("title") == LAPSED
        state.finish_firing("main", name, due, "ABORTED", None, "the worker stopped")
        shown = badge()
        assert shown.text == "■ stopped" and "warn" in shown.get_attribute("class")
        assert shown.get_attribute("title") == "the worker stopped"
    finally:
        with site.lake().engine.begin() as conn:
            conn.execute(schedule_firings.delete().where(firings.schedule == name))


def _foreign_run(site: Site, query: str, hour: int, end: str = "COMPLETE") -> str:
    """One run of a dbt-like job in namespace ``shop`` with this SQL, ending ``end``."""
    run_id = str(uuid.uuid4())
    event = {
        "eventType": end,
        "eventTime": f"2026-11-20T{hour:02d}:00:00Z",
        "run": {"runId": run_id},
        "job": {
            "namespace": "shop",
            "name": "marts.orders",
            "facets": {
                "sql": {
                    "_producer": "https://example.com/t",
                    "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json",
                    "query": query,
                }
            },
        },
        "inputs": [{"namespace": "shop", "name": "raw.orders"}],
        "outputs": [{"namespace": "shop", "name": "marts.orders"}],
        "producer": "https://example.com/t",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }
    sent = httpx.post(
        f"{site.url}/api/v1/lineage", json=event, headers={"Authorization": f"Bearer {WRITE}"}
    )
    assert sent.status_code in (200, 201), sent.text
    return run_id


def test_a_foreign_job_lists_a_version_per_query(site: Site) -> None:
    first = _foreign_run(site, "select id from raw.orders", 6)
    second = _foreign_run(site, "select id, amount from raw.orders", 7)
    versions_url = f"{site.url}/api/v1/namespaces/shop/jobs/marts.orders/versions"
    headers = {"Authorization": f"Bearer {READ}"}
    for _ in range(100):  # the fold runs beside the server
        got = httpx.get(versions_url, headers=headers).json()
        if got.get("totalCount") == 2 and all(v["latestRun"] for v in got["versions"]):
            break
        time.sleep(0.1)
    site.go("#/jobs/shop/marts.orders")
    box = section(site, "Versions (2)")
    rows = box.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == ["sql", "sql"]
    links = [r.find_element(By.CSS_SELECTOR, "a[href^='#/runs/']") for r in rows]
    assert [x.get_attribute("href").rsplit("/", 1)[1] for x in links] == [second, first]
    assert section(site, "About").find_element(By.CSS_SELECTOR, "pre").text == (
        "select id, amount from raw.orders"  # the latest run's query
    )
    assert site.errors() == []
    site.shot("job-versions")

    # A third query whose run failed: the table lags its job's program.
    _foreign_run(site, "select id, amount, currency from raw.orders", 8, end="FAIL")
    for _ in range(100):  # until the fold has taken the failed run
        found = httpx.get(f"{site.url}/api/v1/strata/status", headers=headers).json()
        if any(d["kind"] == "foreign" for d in found["datasets"]):
            break
        time.sleep(0.1)
    site.go("#/status")
    row = site.wait(
        lambda d: d.find_element(By.XPATH, "//tr[.//a[.='shop:marts.orders']]"), timeout=10
    )
    assert isinstance(row, WebElement)
    assert "foreign" in row.text and "program changed: job shop:marts.orders" in row.text
    assert "FAILED" in row.text and not row.find_elements(By.CSS_SELECTOR, "button.build")


def test_what_changed_in_the_last_day_names_versions_failures_and_why(site: Site) -> None:
    found = api(site, "/strata/changes")
    site.go("#/changes")
    shown = {
        r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[2].text
        for r in css(site, "table.changes-versions tbody tr")
    }
    assert shown == {v["name"]: str(v["count"]) for v in found["versions"]}
    assert "raw/experiments" in shown  # the fixture's second version, minutes ago
    failures = css(site, "table.changes-failed a.run-id")
    assert [x.get_attribute("title") for x in failures] == [
        f["run"] for f in found["runs"]["failed"]
    ]
    rows = {
        r.find_elements(By.TAG_NAME, "td")[1].text: r
        for r in css(site, "table.changes-stale tbody tr")
    }
    status = site.service.status()
    stale = {n for n, s in status.items() if s.status.value == "out_of_date"}
    assert set(rows) == stale
    # Marked where a cause names a dataset that got a version in the range.
    changed = {v["name"] for v in found["versions"]}
    marked = {n for n in stale if any(c.dependency in changed for c in status[n].causes)}
    assert marked, "the fixture's new raw versions put something out of date"
    for name, row in rows.items():
        assert ("an input changed in this range" in row.text) == (name in marked), name
    site.shot("what-changed")
    # A range before the store existed: nothing changed then.
    site.go("#/changes?since=2001-01-01T00%3A00&until=2001-01-02T00%3A00")
    assert "No dataset got a new version." in one(site, "main").text


def test_what_changed_in_one_namespace_leaves_the_others_out(site: Site) -> None:
    failed_run = _foreign_run(site, "select 1", 1, end="FAIL")  # a job of namespace shop
    # Wide enough that the browser's time zone moves nothing in or out of it.
    window = "since=2026-11-01T00%3A00&until=2027-01-01T00%3A00"
    span = {"since": "2026-11-01T00:00:00Z", "until": "2027-01-01T00:00:00Z"}
    for _ in range(100):  # the fold runs beside the server
        found = api(site, "/strata/changes", **span, namespace="shop")
        if failed_run in [f["run"] for f in found["runs"]["failed"]]:
            break
        time.sleep(0.1)
    every = api(site, "/strata/changes", **span)
    site.go(f"#/changes?{window}")
    pick = one(site, "select#namespace")
    assert pick.get_attribute("value") == ""  # all namespaces
    shown = [
        r.find_elements(By.TAG_NAME, "td")[0].text
        for r in css(site, "table.changes-versions tbody tr")
    ]
    assert sorted(shown) == sorted(v["name"] for v in every["versions"])
    Select(pick).select_by_value("shop")
    site.wait_shown(f"#/changes?{window}&namespace=shop")
    assert one(site, "main h1").text == "What changed in shop"
    shown = [
        r.find_elements(By.TAG_NAME, "td")[0].text
        for r in css(site, "table.changes-versions tbody tr")
    ]
    assert shown and sorted(shown) == sorted(v["name"] for v in found["versions"])
    failed = [x.get_attribute("title") for x in css(site, "table.changes-failed a.run-id")]
    assert failed_run in failed and failed == [f["run"] for f in found["runs"]["failed"]]
    # What is out of date now in this namespace only: none of Strata's own datasets.
    stale = [
        r.find_elements(By.TAG_NAME, "td")[1].text
        for r in css(site, "table.changes-stale tbody tr")
    ]
    assert all(name.startswith("shop:") for name in stale), stale
    assert one(site, "select#namespace").get_attribute("value") == "shop"


def test_two_runs_side_by_side_with_exact_versions(site: Site) -> None:
    job = "hourly.clean_clicks"
    listed = api(site, f"/namespaces/strata/jobs/{job}/runs")
    newest, older = listed["runs"][0], listed["runs"][1]
    total = listed["totalCount"]
    site.go(f"#/jobs/strata/{job}")
    site.driver.find_element(By.LINK_TEXT, f"Compare with #{total - 1}").click()
    site.wait_shown(f"#/compare?a={older['id']}&b={newest['id']}")
    assert one(site, "main h1").text == f"Runs #{total - 1} and #{total} of {job}"
    rows = {
        r.find_element(By.TAG_NAME, "th").text.rstrip(" ≠"): r
        for r in css(site, "table.compare-table tbody tr")
    }
    for label, key in (("Read", "inputDatasetVersions"), ("Wrote", "outputDatasetVersions")):
        cells = rows[label].find_elements(By.TAG_NAME, "td")
        for cell, run in zip(cells, (older, newest), strict=True):
            detail = api(site, f"/strata/runs/{run['id']}")
            ids = [v["datasetVersionId"] for v in detail[key]]
            expected = [f"{v['name']} v{detail['commitIds'][v['version']]}" for v in ids]
            shown = [li.text.split(" · ")[0] for li in cell.find_elements(By.TAG_NAME, "li")]
            assert shown == expected
        differs = "differs" in (rows[label].get_attribute("class") or "")
        keys = [
            sorted(
                v["datasetVersionId"]["version"] for v in api(site, f"/strata/runs/{r['id']}")[key]
            )
            for r in (older, newest)
        ]
        assert differs == (keys[0] != keys[1])
    site.shot("compare-runs")


def test_branches_page_switches_previews_merges_and_marks_branch_versions(site: Site) -> None:
    """A branch written beside the demo: the branches page lists it as the API does, the
    switcher opens it with its datasets and what merging would do, a read token cannot
    merge and a write token does, and the dataset's versions name the branch."""
    import dataclasses

    import pyarrow as pa

    from strata.lake import branches
    from strata.lake.service import Lake

    name, branch = "scratch/branch_demo", "ui/dev"
    main = site.service.lake
    dev = Lake(dataclasses.replace(main.settings, branch=branch), main.engine)
    with main.transaction(name, "SNAPSHOT") as txn:
        txn.write(pa.table({"x": [1]}))
    branches.create(main.engine, branch)
    with dev.transaction(name, "APPEND") as txn:
        txn.write(pa.table({"x": [2]}))

    site.go("#/branches")
    listed = api(site, "/strata/branches")["branches"]
    rows = [
        [c.text for c in r.find_elements(By.CSS_SELECTOR, "td")]
        for r in css(site, "table.branch-table tbody tr")
    ]
    assert [r[:3] for r in rows] == [
        [b["name"], b["parent"] or "—", "—" if b["datasets"] is None else str(b["datasets"])]
        for b in listed
    ]
    picked = site.driver.find_element(By.ID, "branch-switch")
    picked.find_element(By.CSS_SELECTOR, f"option[value='{branch}']").click()
    route = f"#/branches?branch={quote(branch, safe='')}"
    site.wait_shown(route)
    on_branch = api(site, f"/strata/branches/{quote(branch, safe='')}/datasets")["datasets"]
    shown = {
        cells[0].text: (cells[1].text, cells[4].text)
        for r in css(site, "table.branch-datasets tbody tr")
        if (cells := r.find_elements(By.CSS_SELECTOR, "td"))
    }
    assert shown[name] == ("v2", f"written on {branch}")
    assert {k for k, (_, how) in shown.items() if how == "from main"} == {
        d["name"] for d in on_branch if d["name"] != name
    }
    plan = section(site, f"Merge {branch} into main")
    assert "fast-forward" in plan.text
    button = plan.find_element(By.ID, "merge-button")
    assert not button.is_enabled()  # a read token cannot merge
    assert main.version(name).commit_id == 1

    site.go(route, token=WRITE)
    site.driver.find_element(By.ID, "merge-button").click()
    site.wait(lambda d: "up to date" in section(site, f"Merge {branch} into main").text)
    assert main.version(name).commit_id == 2

    with dev.transaction(name, "APPEND") as txn:
        txn.write(pa.table({"x": [3]}))
    site.go(ds(name))
    badges = {
        r.find_elements(By.CSS_SELECTOR, "td")[0].text.split()[0]: [
            b.text for b in r.find_elements(By.CSS_SELECTOR, "td:first-child .badge")
        ]
        for r in section(site, "Versions").find_elements(By.CSS_SELECTOR, "tbody tr")
    }
    assert badges == {"v3": [f"⎇ {branch}"], "v2": [], "v1": []}
    assert site.errors() == []
    site.shot("branches")


def test_the_branch_switch_on_every_page(site: Site) -> None:
    """The header's branch switch: the dataset page reads its status, history, preview
    and trace on the branch picked; the status page says which branch it judges and
    points builds to the branch's checkout; a lineage page says it shows main; the
    address's ``branch=`` picks too; and main is one pick away."""
    import dataclasses

    import pyarrow as pa

    from strata.lake import branches
    from strata.lake.service import Lake

    name, mine, other = "scratch/branch_pick", "ui/try", "ui/other"
    main = site.service.lake
    with main.transaction(name, "SNAPSHOT") as txn:
        txn.write(pa.table({"x": [1]}))
    for branch, x in ((mine, 2), (other, 3)):
        branches.create(main.engine, branch)
        on = Lake(dataclasses.replace(main.settings, branch=branch), main.engine)
        with on.transaction(name, "APPEND") as txn:
            txn.write(pa.table({"x": [x]}))

    def versions() -> list[str]:
        rows = section(site, "Versions").find_elements(By.CSS_SELECTOR, "tbody tr")
        return [r.find_elements(By.CSS_SELECTOR, "td")[0].text.split()[0] for r in rows]

    def pick(branch: str) -> None:
        switch = site.driver.find_element(By.ID, "branch-pick")
        site.wait(lambda d: switch.is_displayed())
        switch.find_element(By.CSS_SELECTOR, f"option[value='{branch}']").click()

    site.go(ds(name))
    assert versions() == ["v3", "v2", "v1"]  # main's history names every branch's
    pick(mine)
    site.wait(lambda d: f"⎇ {mine}" in one(site, "main h1").text)
    line = api(site, f"/strata/history/{quote(name, safe='')}", branch=mine)["versions"]
    assert versions() == [f"v{v['version']}" for v in reversed(line)] == ["v2", "v1"]
    assert one(site, "#branch-note").is_displayed() is False

    site.driver.find_element(By.LINK_TEXT, "Trace").click()
    site.wait(lambda d: "Trace of v2" in one(site, "main").text)
    site.go(ds(name, f"?preview=&branch={quote(mine, safe='')}"))
    assert "Preview of v2" in one(site, "main").text  # no version: the branch's current

    site.driver.find_element(By.CSS_SELECTOR, "a[href='#/status']").click()
    site.wait_shown("#/status")
    assert f"⎇ {mine}" in one(site, "main h1").text
    assert f"on {mine}, with causes relative to it" in one(site, "main .summary").text
    assert f"strata build --branch {mine}" in one(site, "#build-hint").text

    site.driver.find_element(By.LINK_TEXT, "Browse").click()
    site.wait_shown("#/")
    note = site.wait(
        lambda d: one(site, "#branch-note").is_displayed() and one(site, "#branch-note")
    )
    assert f"⎇ {mine} is picked, but this page shows main" in note.text  # type: ignore[attr-defined]
    site.shot("branch-note")

    site.go(ds(name, f"?branch={quote(other, safe='')}"))
    assert versions() == ["v3", "v1"]
    assert one(site, "#branch-pick").get_attribute("value") == other
    pick("main")
    site.wait(lambda d: "⎇" not in one(site, "main h1").text)
    assert versions() == ["v3", "v2", "v1"]
    assert site.errors() == []
