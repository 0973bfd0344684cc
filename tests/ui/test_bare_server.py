"""The pages of a server with no pipelines, over a store that holds only Marquez's and
OpenLineage's own events, on each backend: nothing asks for what only builds offer, and
runs are told apart."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx
import sqlalchemy as sa
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from ui_site import READ, WRITE, Site, css, one, section

from ol_events import run_event
from strata.store.schema import jobs, runs

KITCHEN = "grandmas.kitchen"


def _runs_of(site: Site, job: str) -> list[str]:
    """The job's run ids, oldest first by the time of their earliest event."""
    with site.service.lake.engine.connect() as conn:
        ordered = conn.execute(
            sa.select(runs.c.uuid)
            .join(jobs, jobs.c.uuid == runs.c.job_uuid)
            .where(jobs.c.namespace == KITCHEN, jobs.c.name == job)
            .order_by(runs.c.created_at, runs.c.uuid)
        )
        return [str(u) for u in ordered.scalars()]


def test_no_status_or_build_without_pipelines(bare_site: Site) -> None:
    bare_site.go("#/")
    assert not one(bare_site, "#nav-status").is_displayed()
    # Lineage, dataset and job pages of other producers' metadata ask for no build route:
    # the autouse check fails the test on any failed request (a 400 or 404 logged).
    bare_site.go(f"#/lineage/dataset/{KITCHEN}/apple.pie?depth=3")
    assert one(bare_site, "svg.graph")
    assert not css(bare_site, ".badge[data-state='out_of_date']")
    bare_site.go(f"#/datasets/{KITCHEN}/apples")
    assert section(bare_site, "Versions")
    bare_site.go(f"#/jobs/{KITCHEN}/gather_apples")
    assert section(bare_site, "Runs (2)")
    bare_site.go("#/status")  # an old bookmark: a sentence, not an error
    said = one(bare_site, "#no-pipelines").text
    assert "no pipelines are configured" in said and "strata serve --pipeline PATH" in said
    assert not css(bare_site, "button.build")
    bare_site.shot("status-without-pipelines")


def test_runs_carry_their_number_in_the_job_and_their_ids_end(bare_site: Site) -> None:
    oldest, newest = _runs_of(bare_site, "gather_apples")
    bare_site.go(f"#/jobs/{KITCHEN}/gather_apples")
    links = section(bare_site, "Runs (2)").find_elements(By.CSS_SELECTOR, "a.run-id")
    # Newest first; the two ids share their first characters only if made the same moment,
    # so the links show their ends.
    assert [x.text for x in links] == [f"#2 …{newest[-8:]}", f"#1 …{oldest[-8:]}"]
    assert [x.get_attribute("title") for x in links] == [newest, oldest]
    links[1].click()
    bare_site.wait_shown(f"#/runs/{quote(oldest, safe='')}")
    assert one(bare_site, "main h1").text == "Run #1 of gather_apples"
    assert oldest in one(bare_site, ".state-line").text
    bare_site.shot("run-number")


def test_search_ranks_whole_names_first_and_says_what_matched(bare_site: Site) -> None:
    bare_site.go("#/")
    one(bare_site, "#q").send_keys("apples", Keys.ENTER)
    bare_site.wait_shown("#/search?q=apples")
    rows = [
        [td.text for td in r.find_elements(By.TAG_NAME, "td")]
        for r in css(bare_site, "table.search-table tbody tr")
    ]
    asked = httpx.get(
        f"{bare_site.url}/api/v1/search",
        params={"q": "apples", "sort": "RELEVANCE", "limit": 100},
        headers={"Authorization": f"Bearer {READ}"},
    ).json()["results"]
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (x["type"].lower(), x["name"], x["namespace"]) for x in asked
    ]
    assert rows[0][:4] == ["dataset", "apples", KITCHEN, "whole name"]
    assert ["dataset", "crab.apples", "start of a part"] in [[r[0], r[1], r[3]] for r in rows]
    assert one(bare_site, "table.search-table mark").text == "apples"
    bare_site.shot("search-ranked")
    # The query belongs to the search page: another page's header is empty again.
    css(bare_site, "table.search-table a")[0].click()
    bare_site.wait_shown(f"#/datasets/{KITCHEN}/apples")
    assert one(bare_site, "#q").get_attribute("value") == ""


WORDED = {"documentation", "ownership", "sql", "dataSource", "dataQualityAssertions", "schema"}
FULL_RUN = "ea041791-68bc-4ae1-bd89-4c8106a157e4"  # Marquez's event_full.json


def _api(site: Site, path: str) -> Any:
    answer = httpx.get(f"{site.url}/api/v1{path}", headers={"Authorization": f"Bearer {READ}"})
    answer.raise_for_status()
    return answer.json()


def _facets_listed(site: Site) -> set[str]:
    return {d.get_attribute("data-facet") for d in css(site, "details.facet")}


def test_other_producers_metadata_in_words_and_every_other_facet_as_json(
    bare_site: Site,
) -> None:
    run = _api(bare_site, f"/strata/runs/{FULL_RUN}")
    [read] = [
        x for x in run["inputDatasetVersions"] if "dataQualityAssertions" in (x["facets"] or {})
    ]
    ns, name = read["datasetVersionId"]["namespace"], read["datasetVersionId"]["name"]
    read_version = read["datasetVersionId"]["version"]
    d = _api(bare_site, f"/namespaces/{ns}/datasets/{name}")
    bare_site.go(f"#/datasets/{ns}/{name}")
    about = section(bare_site, "About").text
    assert d["description"] and d["description"] in about
    assert d["facets"]["dataSource"]["name"] in about
    assert _facets_listed(bare_site) == set(d["facets"]) - WORDED
    # The dataset shows the assertions its reader sent about the version it read, which
    # the same run then rewrote: the version read is named.
    said = read["facets"]["dataQualityAssertions"]["assertions"]
    judged = _api(bare_site, f"/namespaces/{ns}/datasets/{name}/versions/{read_version}")
    assert judged["facets"]["dataQualityAssertions"]["assertions"] == said
    assert d["currentVersion"] != read_version
    passed = sum(1 for x in said if x["success"])
    box = section(
        bare_site,
        f"Data quality assertions on version …{read_version[-8:]}, before the current one"
        f" ({passed} of {len(said)} passed)",
    )
    rows = [
        r.find_elements(By.TAG_NAME, "td") for r in box.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert [(r[1].text, r[2].text) for r in rows] == [
        (x["assertion"], x.get("column") or "—") for x in said
    ]
    bare_site.shot("dataset-assertions")
    first = css(bare_site, "details.facet")[0]
    first.find_element(By.TAG_NAME, "summary").click()
    assert '"_producer"' in first.find_element(By.TAG_NAME, "pre").text

    job = _api(bare_site, f"/namespaces/{run['job']['namespace']}/jobs/{run['job']['name']}")
    bare_site.go(f"#/jobs/{run['job']['namespace']}/{run['job']['name']}")
    about = section(bare_site, "About")
    assert job["description"] in about.text
    sql = about.find_element(By.CSS_SELECTOR, "pre.sql")
    assert sql.text == job["facets"]["sql"]["query"]
    keywords = [k.text.upper() for k in sql.find_elements(By.CSS_SELECTOR, ".sql-keyword")]
    assert "SELECT" in keywords and "FROM" in keywords
    assert _facets_listed(bare_site) == set(job["facets"]) - WORDED
    bare_site.shot("job-facets")

    bare_site.go(f"#/runs/{FULL_RUN}")
    box = section(bare_site, f"Assertions on {name} ({passed} of {len(said)} passed)")
    rows = box.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.find_elements(By.TAG_NAME, "td")[1].text for r in rows] == [
        x["assertion"] for x in said
    ]
    assert _facets_listed(bare_site) == set(run["facets"]) - WORDED
    bare_site.shot("run-assertions")


def test_a_jobs_run_durations_are_drawn_oldest_first(bare_site: Site) -> None:
    job = _api(bare_site, "/namespaces/my-scheduler-namespace/jobs/myjob.mytask")
    runs = _api(bare_site, f"/namespaces/{job['namespace']}/jobs/{job['name']}/runs")["runs"]
    timed = [r for r in runs if r["durationMs"] is not None]
    bare_site.go(f"#/jobs/{job['namespace']}/{job['name']}")
    bars = css(bare_site, "figure.durations rect.bar")
    if len(timed) < 2:  # nothing to compare: no chart
        assert bars == []
    else:
        assert [b.get_attribute("data-run") for b in bars] == [r["id"] for r in timed][::-1]


def _all_events(site: Site) -> list[dict[str, Any]]:
    found = _api(site, "/events/lineage?limit=1000")
    assert found["totalCount"] == len(found["events"])
    events: list[dict[str, Any]] = found["events"]
    return events


def test_the_events_page_pages_a_time_range_and_shows_each_events_json(bare_site: Site) -> None:
    every = _all_events(bare_site)
    bare_site.go("#/events")
    rows = css(bare_site, "table.events-table tbody tr")
    assert len(rows) == min(50, len(every))
    assert f"{len(every)} events" in one(bare_site, "main .summary").text
    shown = rows[0].find_elements(By.TAG_NAME, "td")
    assert shown[1].text == (every[0].get("eventType") or "—")
    shown[5].find_element(By.TAG_NAME, "summary").click()
    assert every[0]["eventTime"] in shown[5].find_element(By.TAG_NAME, "pre").text
    if len(every) > 50:
        bare_site.driver.find_element(By.LINK_TEXT, "Older →").click()
        bare_site.wait_shown("#/events?offset=50")
        assert len(css(bare_site, "table.events-table tbody tr")) == min(50, len(every) - 50)
    # The apples' September: a range in local time, as typed.
    bare_site.go("#/events")
    one(bare_site, "#after").send_keys("2020-09-01")
    one(bare_site, "#before").send_keys("2020-09-30 23:59", Keys.ENTER)
    bare_site.wait(lambda d: "after" in d.current_url and "before" in d.current_url)
    bare_site.wait_shown("#/events?after=2020-09-01T00%3A00&before=2020-09-30T23%3A59")
    times = [
        t.get_attribute("datetime")
        for t in css(bare_site, "table.events-table tbody tr td:first-child time")
    ]
    start = bare_site.driver.execute_script("return new Date('2020-09-01T00:00').toISOString()")
    end = bare_site.driver.execute_script("return new Date('2020-09-30T23:59').toISOString()")
    expected = [e for e in every if start < _utc(e["eventTime"]) < end]
    assert len(times) == len(expected) > 0
    one(bare_site, "#after").send_keys("x", Keys.ENTER)
    bare_site.wait(lambda d: "is not a time" in one(bare_site, "#after-problem").text)
    bare_site.shot("events")


def _utc(stamp: str) -> str:
    from datetime import UTC, datetime

    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def test_deleting_needs_a_write_token_and_asks_first(bare_site: Site) -> None:
    route = f"#/jobs/{KITCHEN}/prepare_vinegar"
    bare_site.go(route)  # a read token: the button says why it is off
    button = one(bare_site, "button.delete-button")
    assert not button.is_enabled() and "write token" in button.get_attribute("title")
    bare_site.go(route, token=WRITE)
    one(bare_site, "button.delete-button").click()
    dialog = one(bare_site, "dialog.confirm")
    assert dialog.is_displayed() and "prepare_vinegar" in dialog.text
    dialog.find_element(By.XPATH, ".//button[.='Keep it']").click()
    assert _api(bare_site, f"/namespaces/{KITCHEN}/jobs/prepare_vinegar")["name"]  # kept
    one(bare_site, "button.delete-button").click()
    one(bare_site, "#confirm-delete").click()
    bare_site.wait_shown(f"#/?ns={KITCHEN}&deleted=prepare_vinegar")
    assert "Deleted prepare_vinegar" in one(bare_site, "main .notice").text
    listed = _api(bare_site, f"/namespaces/{KITCHEN}/jobs")["jobs"]
    assert "prepare_vinegar" not in {j["name"] for j in listed}
    with bare_site.service.lake.engine.connect() as conn:  # hidden, not removed
        hidden = conn.execute(
            sa.select(jobs.c.is_hidden).where(
                jobs.c.namespace == KITCHEN, jobs.c.name == "prepare_vinegar"
            )
        ).scalar_one()
    assert hidden is True


def test_the_dashboard_counts_recent_runs_and_names_the_failures(bare_site: Site) -> None:
    now = datetime.now(UTC)
    failed = str(uuid.uuid4())
    sent = [
        (str(uuid.uuid4()), "COMPLETE", 2),
        (failed, "FAIL", 1),
        (str(uuid.uuid4()), "COMPLETE", 30),
    ]
    with httpx.Client(base_url=bare_site.url, headers={"Authorization": f"Bearer {WRITE}"}) as c:
        for run_id, kind, hours_ago in sent:
            at = (now - timedelta(hours=hours_ago)).isoformat()
            answer = c.post(
                "/api/v1/lineage",
                json=run_event(kind, run_id, job="nightly", namespace="dash", at=at),
            )
            assert answer.status_code in (200, 201), answer.text
        for _ in range(100):  # the fold runs beside the server
            if c.get(f"/api/v1/strata/runs/{sent[-1][0]}").status_code == 200:
                break
            time.sleep(0.05)
    day = _api(bare_site, "/strata/summary?hours=24")
    bare_site.go("#/dashboard")
    counts = {
        li.get_attribute("data-state"): li.text for li in css(bare_site, "ul.state-counts li")
    }
    for state, n in day["states"].items():
        assert counts[state].endswith(str(n))
    assert day["states"]["FAILED"] >= 1
    failures = section(bare_site, "Latest failed runs").find_elements(By.CSS_SELECTOR, "tbody tr")
    assert failures[0].find_element(By.CSS_SELECTOR, "a.run-id").get_attribute("title") == failed
    assert "dash / nightly" in failures[0].text
    bars = css(bare_site, "figure.events-chart g.bucket")
    assert len(bars) == len(_api(bare_site, "/stats/lineage-events?period=DAY"))
    assert sum(int(b.get_attribute("data-total")) for b in bars) >= 2  # the two runs' events
    bare_site.shot("dashboard")
    bare_site.driver.find_element(By.LINK_TEXT, "the last 7 days").click()
    bare_site.wait_shown("#/dashboard?window=week")
    week = _api(bare_site, "/strata/summary?hours=168")
    assert one(bare_site, ".tile strong").text == f"{week['runs']:,}"


def test_the_header_suggests_as_you_type_and_switches_namespace(bare_site: Site) -> None:
    # The start page picks a namespace to show, without making it the visitor's choice:
    # picking it in the switch later still switches.
    bare_site.go("#/")
    assert one(bare_site, ".chips a[aria-current=page]").text == "backyard"
    bare_site.driver.get(f"{bare_site.url}/#/events")
    bare_site.driver.refresh()
    bare_site.wait_shown("#/events")
    assert Select(one(bare_site, "#ns-switch")).first_selected_option.get_attribute("value") == ""

    bare_site.go("#/events")
    box = one(bare_site, "#q")
    box.send_keys("apple")
    # Typed slowly (a loaded machine), "app" may be answered first: wait for "apple"'s
    # answer, which no later one replaces.
    bare_site.wait(
        lambda d: one(bare_site, "#suggestions").get_attribute("data-answers") == "apple"
    )
    assert one(bare_site, "#suggestions").is_displayed()
    ranked = _api(bare_site, "/search?q=apple&sort=RELEVANCE&limit=8")["results"]
    options = css(bare_site, "#suggestions [role=option]")
    assert [o.text.split(" ")[1] for o in options] == [x["name"] for x in ranked]
    assert box.get_attribute("aria-expanded") == "true"
    box.send_keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    assert box.get_attribute("aria-activedescendant") == "suggestion-1"
    box.send_keys(Keys.ENTER)
    second = ranked[1]
    kind = "datasets" if second["type"] == "DATASET" else "jobs"
    bare_site.wait_shown(
        f"#/{kind}/{quote(second['namespace'], safe='')}/{quote(second['name'], safe='')}"
    )
    assert not one(bare_site, "#suggestions").is_displayed()

    switch = Select(one(bare_site, "#ns-switch"))
    assert switch.first_selected_option.get_attribute("value") == ""  # none chosen yet
    names = {n["name"] for n in _api(bare_site, "/namespaces")["namespaces"]}
    assert {o.get_attribute("value") for o in switch.options} - {""} == names
    switch.select_by_value("backyard")
    bare_site.wait_shown("#/?ns=backyard")
    bare_site.driver.get(f"{bare_site.url}/#/events")
    bare_site.wait_shown("#/events")
    bare_site.driver.get(f"{bare_site.url}/#/")  # browse opens on the namespace switched to
    bare_site.wait_shown("#/")
    assert one(bare_site, ".chips a[aria-current=page]").text == "backyard"
    assert Select(one(bare_site, "#ns-switch")).first_selected_option.text == "backyard"


def test_tags_are_added_and_removed_in_place_with_a_write_token(bare_site: Site) -> None:
    path = "/namespaces/my-datasource-namespace/datasets/instance.schema.table"
    route = "#/datasets/my-datasource-namespace/instance.schema.table"
    bare_site.go(route)  # a read token: tags listed, nothing to edit
    assert not css(bare_site, "input.tag-input")
    bare_site.go(route, token=WRITE)
    about = section(bare_site, "About")
    about.find_element(By.CSS_SELECTOR, "input.tag-input").send_keys("pii", Keys.ENTER)
    bare_site.wait(lambda d: css(bare_site, "section .tag[data-tag='pii']"))
    assert "pii" in _api(bare_site, path)["tags"]
    field = _api(bare_site, path)["fields"][0]["name"]
    schema = section(bare_site, "Schema")
    box = schema.find_element(By.CSS_SELECTOR, f"input[aria-label='New tag for {field}']")
    box.send_keys("sensitive", Keys.ENTER)
    bare_site.wait(
        lambda d: (
            "sensitive" in (_api(bare_site, path)["fields"][0]["tags"] or [])
            and css(bare_site, ".schema-table .tag[data-tag='sensitive']")
        )
    )
    one(bare_site, "button[aria-label='Remove tag pii']").click()
    bare_site.wait(lambda d: not css(bare_site, "section .tag[data-tag='pii']"))
    assert "pii" not in _api(bare_site, path)["tags"]
    bare_site.shot("tags")
    bare_site.go(f"#/jobs/{KITCHEN}/prepare_apple_pie", token=WRITE)
    section(bare_site, "About").find_element(By.CSS_SELECTOR, "input.tag-input").send_keys(
        "daily", Keys.ENTER
    )
    bare_site.wait(lambda d: css(bare_site, ".tag[data-tag='daily']"))
    assert _api(bare_site, f"/namespaces/{KITCHEN}/jobs/prepare_apple_pie")["tags"] == ["daily"]


def test_a_parent_job_known_from_its_children_says_how_they_went(bare_site: Site) -> None:
    parent, child = str(uuid.uuid4()), str(uuid.uuid4())
    facet = {
        "parent": {
            "_producer": "https://example.com/dag",
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/ParentRunFacet.json",
            "run": {"runId": parent},
            "job": {"namespace": "dags", "name": "nightly_dag"},
        }
    }
    sent = [("START", "2024-06-01T01:00:00Z"), ("COMPLETE", "2024-06-01T01:05:00Z")]
    with httpx.Client(base_url=bare_site.url, headers={"Authorization": f"Bearer {WRITE}"}) as c:
        for kind, at in sent:
            event = run_event(kind, child, job="nightly_dag.load", namespace="dags", at=at)
            event["run"]["facets"] = facet
            assert c.post("/api/v1/lineage", json=event).status_code in (200, 201)
        for _ in range(100):
            if c.get(f"/api/v1/strata/runs/{child}").json().get("state") == "COMPLETED":
                break
            time.sleep(0.05)
    made = _api(bare_site, f"/strata/runs/{parent}")
    # As Marquez keeps it: the first child event's state, "running" for good.
    assert made["state"] == "RUNNING" and made["reportedBy"] == "children"
    assert made["childRuns"] == {"COMPLETED": 1}
    bare_site.go("#/jobs/dags/nightly_dag")
    last = section(bare_site, "About").find_element(By.CSS_SELECTOR, ".last-run .from-children")
    assert last.get_attribute("data-state") == "COMPLETED"
    assert "from its 1 child run" in last.text
    bare_site.go(f"#/runs/{parent}")
    assert "completed from its 1 child run" in one(bare_site, ".state-line").text
