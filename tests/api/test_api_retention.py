"""Retention over HTTP: the policies, marks, pins and passes; a pass; marks undone;
pins; a purged version answered 410 with its history intact; writes need a write
token."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from urllib.parse import quote

import pyarrow as pa
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from strata.api import create_app
from strata.lake.service import Lake
from strata.settings import Settings

POLICY = {"name": "raw", "datasets": ["raw/*"], "keep_versions": 1, "grace": "1d"}
DS = quote("raw/users", safe="")


@pytest.fixture
def lake(settings: Settings) -> Iterator[Lake]:
    lk = Lake(settings)
    for country in ("UK", "US", "FR", "DE"):
        with lk.transaction("raw/users", "SNAPSHOT") as txn:
            txn.write(pa.table({"user": ["ada"], "country": [country]}))
    yield lk
    lk.engine.dispose()


@pytest.fixture
def api(settings: Settings, engine: sa.Engine, lake: Lake) -> Iterator[TestClient]:
    configured = dataclasses.replace(settings, retention=(POLICY,))
    with TestClient(create_app(configured, engine)) as c:
        yield c


def ok(response: object) -> dict:  # type: ignore[type-arg]
    assert response.status_code == 200, response.text  # type: ignore[attr-defined]
    return response.json()  # type: ignore[attr-defined, no-any-return]


def test_a_pass_its_marks_and_purges_over_http(api: TestClient) -> None:
    overview = ok(api.get("/api/v1/strata/retention"))
    assert [p["name"] for p in overview["policies"]] == ["raw"]
    assert overview["policies"][0]["grace_seconds"] == 86400
    assert overview["marks"] == [] and overview["passes"] == []

    dry = ok(api.post("/api/v1/strata/retention?dry_run=true"))
    assert [(v["version"], v["action"]) for v in dry["versions"]] == [
        (1, "marked"),
        (2, "marked"),
        (3, "marked"),
    ]
    assert ok(api.get("/api/v1/strata/retention"))["marks"] == []  # a dry run marks nothing
    ok(api.post("/api/v1/strata/retention"))
    overview = ok(api.get("/api/v1/strata/retention"))
    assert [m["version"] for m in overview["marks"]] == [1, 2, 3]
    assert overview["passes"][0]["marked"] == 3 and overview["passes"][0]["trigger"] == "api"

    assert ok(api.delete(f"/api/v1/strata/retention/marks/{DS}/3"))["action"] == "unmarked"
    pinned = ok(api.put(f"/api/v1/strata/pins/{DS}/2", json={"note": "audit"}))
    assert pinned["pinned"] is True and pinned["unmarked"] is True
    swept = ok(api.post("/api/v1/strata/retention?grace=0s"))
    assert [(v["version"], v["action"]) for v in swept["versions"]] == [
        (1, "purged"),
        (3, "purged"),
    ]
    overview = ok(api.get("/api/v1/strata/retention"))
    assert overview["pins"] == [
        {
            "dataset": "raw/users",
            "version": 2,
            "pinned_at": overview["pins"][0]["pinned_at"],
            "note": "audit",
        }
    ]

    gone = api.get(f"/api/v1/strata/preview/{DS}?version=1")
    assert gone.status_code == 410
    assert gone.json()["code"] == "purged_version"
    assert gone.json()["message"].startswith("raw/users@1 was purged on ")
    history = ok(api.get(f"/api/v1/strata/history/{DS}"))["versions"]
    assert [v["purged"]["policy"] if v["purged"] else None for v in history] == [
        "raw",
        None,
        "raw",
        None,
    ]
    assert ok(api.get(f"/api/v1/strata/preview/{DS}?version=2"))["version"] == 2


def test_a_pass_over_some_datasets_leaves_the_others_and_the_daily_pass(
    api: TestClient, lake: Lake
) -> None:
    for n in (1, 2, 3):
        with lake.transaction("raw/orders", "SNAPSHOT") as txn:
            txn.write(pa.table({"order": [n]}))
    # One that matches nothing refuses the whole pass before it changes anything.
    unknown = api.post("/api/v1/strata/retention", params={"dataset": ["raw/users", "raw/x*"]})
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["message"].startswith("no lake dataset matches 'raw/x*'")
    assert ok(api.get("/api/v1/strata/retention"))["marks"] == []

    scoped = ok(api.post("/api/v1/strata/retention", params={"dataset": "raw/o*"}))
    assert scoped["datasets"] == ["raw/orders"]
    assert [(v["dataset"], v["version"], v["action"]) for v in scoped["versions"]] == [
        ("raw/orders", 1, "marked"),
        ("raw/orders", 2, "marked"),
    ]
    overview = ok(api.get("/api/v1/strata/retention"))
    assert {m["dataset"] for m in overview["marks"]} == {"raw/orders"}
    assert overview["passes"] == []  # not the store's pass: the daily one still runs
    whole = ok(api.post("/api/v1/strata/retention"))
    assert whole["datasets"] is None
    assert {(v["dataset"], v["action"]) for v in whole["versions"]} == {("raw/users", "marked")}
    assert [p["marked"] for p in ok(api.get("/api/v1/strata/retention"))["passes"]] == [3]


def test_bad_requests_get_a_clear_4xx(api: TestClient) -> None:
    bad = api.post("/api/v1/strata/retention?grace=tomorrow")
    assert bad.status_code == 400 and "grace" in bad.json()["message"], bad.text
    bad_name = api.put("/api/v1/strata/pins/%12/1")
    assert bad_name.status_code == 404 and "no dataset" in bad_name.json()["message"]
    missing = api.put(f"/api/v1/strata/pins/{DS}/99")
    assert missing.status_code == 404 and "has no version 99" in missing.json()["message"]
    unknown = api.put(f"/api/v1/strata/pins/{quote('raw/nothing', safe='')}/1")
    assert unknown.status_code == 404
    assert api.delete(f"/api/v1/strata/pins/{DS}/1").status_code == 404
    assert api.delete(f"/api/v1/strata/retention/marks/{DS}/1").status_code == 404
    assert api.put(f"/api/v1/strata/pins/{DS}/0").status_code == 400
    for given in ("grace=0s", "dataset=raw%2Fevents"):
        mixed = api.post(f"/api/v1/strata/retention?lineage=true&{given}")
        assert mixed.status_code == 400, mixed.text
        message = mixed.json()["message"]
        assert given.split("=")[0] in message and "without lineage=true" in message
    long = ok(api.post("/api/v1/strata/retention?grace=9999w"))  # marks; nothing purged
    assert {v["action"] for v in long["versions"]} == {"marked"}
    ok(api.post("/api/v1/strata/retention?grace=0s"))
    purged = api.put(f"/api/v1/strata/pins/{DS}/1")
    assert purged.status_code == 400 and "no data left to keep" in purged.json()["message"]


def test_retention_writes_need_a_write_token(
    settings: Settings, engine: sa.Engine, lake: Lake
) -> None:
    secured = dataclasses.replace(
        settings, retention=(POLICY,), read_tokens=("r",), write_tokens=("w",)
    )
    with TestClient(create_app(secured, engine)) as c:
        read = {"Authorization": "Bearer r"}
        write = {"Authorization": "Bearer w"}
        assert c.get("/api/v1/strata/retention", headers=read).status_code == 200
        assert c.post("/api/v1/strata/retention", headers=read).status_code == 403
        assert c.put(f"/api/v1/strata/pins/{DS}/1", headers=read).status_code == 403
        assert c.delete(f"/api/v1/strata/pins/{DS}/1", headers=read).status_code == 403
        assert c.post("/api/v1/strata/retention", headers=write).status_code == 200
        assert c.put(f"/api/v1/strata/pins/{DS}/1", headers=write).status_code == 200


def test_lineage_retention_over_http(settings: Settings, engine: sa.Engine, lake: Lake) -> None:
    """Old runs posted through the lineage API go; the Marquez run list and its total
    agree afterwards; the overview shows the limit and the pass."""
    import ol_events

    with TestClient(create_app(settings, engine)) as c:  # no limit: nothing goes
        unlimited = ok(c.post("/api/v1/strata/retention?lineage=true"))
        assert unlimited["days"] is None and unlimited["runs"] == 0
    configured = dataclasses.replace(settings, lineage_retention_days=90)
    with TestClient(create_app(configured, engine)) as c:
        for day in (1, 2, 3):
            at = f"2024-01-0{day}T10:00:00Z"
            run = ol_events.run_event("COMPLETE", job="loader", namespace="ops", at=at)
            assert c.post("/api/v1/lineage", json=run).status_code in (200, 201)
        c.get("/api/v1/namespaces/ops/jobs/loader")  # the fold has caught up
        before = ok(c.get("/api/v1/namespaces/ops/jobs/loader/runs"))
        assert before["totalCount"] == 3
        dry = ok(c.post("/api/v1/strata/retention?lineage=true&dry_run=true"))
        assert dry["dry_run"] and dry["runs"] == 2
        done = ok(c.post("/api/v1/strata/retention?lineage=true"))
        assert done["runs"] == 2 and done["events"] == 2
        after = ok(c.get("/api/v1/namespaces/ops/jobs/loader/runs"))
        assert after["totalCount"] == 1 and len(after["runs"]) == 1
        assert after["runs"][0]["id"] == before["runs"][0]["id"]  # the newest stays
        overview = ok(c.get("/api/v1/strata/retention"))
        assert overview["lineage"] == {"days": 90}
        [last] = [p for p in overview["passes"] if p["kind"] == "lineage"]
        assert last["details"]["runs"] == 2 and last["trigger"] == "api"
