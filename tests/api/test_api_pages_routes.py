"""The routes the pages read beyond Marquez: a version's first rows, a run with its job
and state history, the latest runs, and builds started over HTTP."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from ol_events import run_event
from strata import __version__
from strata.api import create_app
from strata.lake.service import Lake
from strata.settings import Settings


def _lake_with_rows(settings: Settings, engine: sa.Engine) -> Lake:
    lake = Lake(settings, engine)
    first = pa.table({"id": list(range(250)), "name": [f"n{i}" for i in range(250)]})
    with lake.transaction("raw/people", type="SNAPSHOT") as txn:
        txn.write(first)
    second = pa.table({"id": [1, 2], "name": ["a", None]})
    with lake.transaction("raw/people", type="APPEND") as txn:
        txn.write(second)
    return lake


def test_preview_gives_the_first_rows_of_a_version(
    client: TestClient, settings: Settings, engine: sa.Engine
) -> None:
    lake = _lake_with_rows(settings, engine)
    body = client.get("/api/v1/strata/preview/raw%2Fpeople").json()
    assert body["version"] == 2 and body["totalRows"] == 252
    assert body["columns"] == [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"}]
    assert len(body["rows"]) == 100
    expected = lake.read_arrow("raw/people").to_pylist()
    rows = [dict(zip(["id", "name"], r, strict=True)) for r in body["rows"]]
    assert all(r in expected for r in rows)
    first = client.get("/api/v1/strata/preview/raw%2Fpeople?version=1&rows=5").json()
    assert first["version"] == 1 and first["totalRows"] == 250 and len(first["rows"]) == 5


def test_preview_refuses_what_it_cannot_show(
    client: TestClient, settings: Settings, engine: sa.Engine
) -> None:
    _lake_with_rows(settings, engine)
    missing = client.get("/api/v1/strata/preview/raw%2Fnobody")
    assert missing.status_code == 404 and "raw/nobody" in missing.json()["message"]
    gone = client.get("/api/v1/strata/preview/raw%2Fpeople?version=9")
    assert gone.status_code == 404
    too_many = client.get("/api/v1/strata/preview/raw%2Fpeople?rows=5000")
    assert too_many.status_code in (400, 422) and "rows" in too_many.text


def test_a_lake_dataset_is_located_under_the_lake_the_server_has_now(
    settings: Settings, engine: sa.Engine, tmp_path: Path
) -> None:
    _lake_with_rows(settings, engine)
    moved = tmp_path / "moved-lake"
    shutil.move(str(tmp_path / "lake"), moved)
    today = dataclasses.replace(settings, lake_uri=moved.as_uri())
    with TestClient(create_app(today, engine), raise_server_exceptions=True) as client:
        ds = client.get("/api/v1/namespaces/strata/datasets/raw%2Fpeople").json()
        listed = client.get("/api/v1/namespaces/strata/datasets").json()["datasets"]
        versions = client.get("/api/v1/namespaces/strata/datasets/raw%2Fpeople/versions").json()[
            "versions"
        ]
        graph = client.get("/api/v1/lineage?nodeId=dataset:strata:raw/people").json()
        preview = client.get("/api/v1/strata/preview/raw%2Fpeople").json()
    where = ds["physicalName"]
    assert where.startswith(moved.as_uri() + "/") and "/lake/" not in where
    folder = Path(urlparse(where).path)
    assert list(folder.rglob("*.parquet")), f"no files under {folder}"
    assert {d["physicalName"] for d in listed} == {where}
    assert {v["physicalName"] for v in versions} == {where}
    assert [n["data"]["physicalName"] for n in graph["graph"]] == [where]
    assert preview["totalRows"] == 252  # the files really are there


def test_another_producers_dataset_keeps_the_physical_name_it_was_given(
    client: TestClient,
) -> None:
    assert (
        client.put(
            "/api/v1/sources/db",
            json={"type": "POSTGRESQL", "connectionUrl": "jdbc:postgresql://h/db"},
        ).status_code
        == 200
    )
    body = {"type": "DB_TABLE", "physicalName": "public.orders", "sourceName": "db"}
    made = client.put("/api/v1/namespaces/shop/datasets/orders", json=body).json()
    got = client.get("/api/v1/namespaces/shop/datasets/orders").json()
    assert made["physicalName"] == got["physicalName"] == "public.orders"


def test_run_detail_has_its_job_and_state_history(client: TestClient) -> None:
    run_id = str(uuid.uuid4())
    events = [
        run_event("START", run_id, job="load", at="2024-05-01T10:00:00Z", inputs=["ns|in"]),
        run_event("RUNNING", run_id, job="load", at="2024-05-01T10:01:00Z"),
        run_event("FAIL", run_id, job="load", at="2024-05-01T10:02:00Z", outputs=["ns|out"]),
    ]
    for event in events:
        assert client.post("/api/v1/lineage", json=event).status_code in (200, 201)
    body = client.get(f"/api/v1/strata/runs/{run_id}").json()
    assert body["id"] == run_id and body["state"] == "FAILED"
    assert body["job"] == {"namespace": "ns", "name": "load"}
    assert [s["state"] for s in body["states"]] == ["RUNNING", "FAILED"]
    assert body["states"][-1]["transitionedAt"].startswith("2024-05-01T10:02:00")
    marquez = client.get(f"/api/v1/jobs/runs/{run_id}").json()
    assert {k: body[k] for k in marquez} == marquez  # a superset of Marquez's run
    unknown = client.get(f"/api/v1/strata/runs/{uuid.uuid4()}")
    assert unknown.status_code == 404 and unknown.json()["code"]


def test_recent_runs_are_newest_first_with_their_jobs(client: TestClient) -> None:
    ids = []
    for i in range(3):
        run_id = str(uuid.uuid4())
        ids.append(run_id)
        at = f"2024-05-01T10:0{i}:00Z"
        assert client.post(
            "/api/v1/lineage", json=run_event("COMPLETE", run_id, job=f"j{i}", at=at)
        )
    runs = client.get("/api/v1/strata/runs?limit=2").json()["runs"]
    assert [r["id"] for r in runs] == ids[::-1][:2]
    assert [r["job"]["name"] for r in runs] == ["j2", "j1"]
    assert client.get("/api/v1/strata/runs?limit=0").status_code in (400, 422)


def test_a_build_of_a_dataset_no_pipeline_writes_is_refused_before_it_is_queued(
    client: TestClient, settings: Settings, engine: sa.Engine, tmp_path: object
) -> None:
    app_settings = dataclasses.replace(settings, pipelines=())
    with TestClient(create_app(app_settings, engine)) as c:
        refused = c.post("/api/v1/strata/builds", json={"dataset": "metrics/none"})
        assert refused.status_code == 400 and "pipelines" in refused.json()["message"]
        assert c.get("/api/v1/strata/builds").json() == {"builds": []}
        missing = c.get("/api/v1/strata/builds/nope")
        assert (
            missing.status_code == 404 and "GET /api/v1/strata/builds" in missing.json()["message"]
        )
        bad = c.post("/api/v1/strata/builds", json={"dataset": ""})
        assert bad.status_code in (400, 422)


def test_builds_need_a_write_token(settings: Settings, engine: sa.Engine) -> None:
    guarded = dataclasses.replace(settings, read_tokens=("r",), write_tokens=("w",))
    with TestClient(create_app(guarded, engine)) as c:
        body = {"dataset": "metrics/none"}
        assert c.post("/api/v1/strata/builds", json=body).status_code == 401
        read = c.post("/api/v1/strata/builds", json=body, headers={"Authorization": "Bearer r"})
        assert read.status_code == 403 and "write token" in read.json()["message"]
        listed = c.get("/api/v1/strata/builds", headers={"Authorization": "Bearer r"})
        assert listed.status_code == 200


def test_the_page_is_served_at_the_root_with_its_vendored_scripts(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for script in (
        "/ui/vendor/dagre-3.1.3.min.js",
        "/ui/vendor/diff-9.0.0.min.js",
        "/ui/js/app.js",
    ):
        assert f'src="{script}"' in page.text
        served = client.get(script)
        assert served.status_code == 200 and "javascript" in served.headers["content-type"]
    # Nothing is fetched from elsewhere: the page works offline.
    assert "http://" not in page.text and "https://" not in page.text
    assert client.get("/ui/nothing.js").status_code == 404


def test_builds_are_kept_in_the_store_for_every_server_and_a_stop_ends_them(
    settings: Settings, engine: sa.Engine
) -> None:

    first, second = create_app(settings, engine), create_app(settings, engine)
    tasks = first.state.build_tasks
    queued = _build_request(tasks, "QUEUED")
    queued.progress.update({"planned": ["p.daily"], "running": [], "transforms": []})
    tasks.hold_lease()  # as a server taking its first request does
    tasks.state.add_build_request(queued)
    with TestClient(second) as other:
        seen = other.get(f"/api/v1/strata/builds/{queued.id}").json()
        assert (seen["state"], seen["planned"], seen["done"]) == ("QUEUED", ["p.daily"], 0)
        assert [b["id"] for b in other.get("/api/v1/strata/builds").json()["builds"]] == [queued.id]
        tasks.close()  # the first server stops: what it had not finished ends ABORTED
        ended = other.get(f"/api/v1/strata/builds/{queued.id}").json()
        assert (ended["state"], ended["error"]) == ("ABORTED", "the server stopped")
        assert ended["endedAt"] is not None


def test_a_killed_servers_builds_end_aborted_once_its_lease_expires(
    settings: Settings, engine: sa.Engine
) -> None:
    """What a server killed outright leaves: its requests unfinished and its lease, no
    longer renewed. Any server reads them as running until the lease expires, then
    ABORTED, and the store says so too."""
    import time
    from datetime import UTC, datetime

    from strata.builds.state import BuildState
    from strata.builds.state.requests import BuildRequest, server_lease

    state = BuildState(engine, settings.namespace)
    killed = "server-killed"
    left = [
        BuildRequest(
            id=str(uuid.uuid4()),
            dataset="metrics/daily",
            force=False,
            state=st,
            holder=killed,
            requested_at=datetime.now(UTC),
            started_at=datetime.now(UTC) if st == "RUNNING" else None,
            ended_at=None,
            progress={"planned": ["p.daily"], "running": [], "transforms": []},
            error=None,
            run=None,
        )
        for st in ("RUNNING", "QUEUED")
    ]
    assert state.try_lease(server_lease(killed), killed, 2.0) is None  # its last renewal
    for request in left:
        state.add_build_request(request)
    with TestClient(create_app(settings, engine)) as other:
        seen = other.get(f"/api/v1/strata/builds/{left[0].id}").json()
        assert seen["state"] == "RUNNING"  # the lease has not run out: it may yet finish
        time.sleep(2.5)
        listed = {b["id"]: b for b in other.get("/api/v1/strata/builds").json()["builds"]}
        for request in left:
            build = listed[request.id]
            assert (build["state"], build["error"]) == ("ABORTED", "the server running it stopped")
            assert build["endedAt"] is not None
    stored = {r.id: r.state for r in state.build_requests(10)}
    assert stored == {left[0].id: "ABORTED", left[1].id: "ABORTED"}


def test_the_server_says_what_it_offers_to_each_token(
    settings: Settings, engine: sa.Engine, tmp_path: Path
) -> None:
    with TestClient(create_app(dataclasses.replace(settings, pipelines=()), engine)) as c:
        bare = c.get("/api/v1/strata/server").json()
        assert bare == {"version": __version__, "builds": False, "tokens": False, "access": "write"}
    guarded = dataclasses.replace(
        settings, pipelines=(str(tmp_path),), read_tokens=("r",), write_tokens=("w",)
    )
    with TestClient(create_app(guarded, engine)) as c:

        def access(header: str | None) -> object:
            sent = {"Authorization": header} if header else {}
            answer = c.get("/api/v1/strata/server", headers=sent)
            assert answer.status_code == 200  # asked before a page holds a token
            assert (answer.json()["builds"], answer.json()["tokens"]) == (True, True)
            return answer.json()["access"]

        assert access(None) == "none"
        assert access("Bearer nope") == "none"
        assert access("Basic r") == "none"
        assert access("Bearer r") == "read"
        assert access("Bearer w") == "write"
        assert c.get("/api/v1/namespaces").status_code == 401  # everything else still asks


def test_a_run_is_numbered_in_its_job_by_time_whatever_order_it_arrived_in(
    client: TestClient,
) -> None:
    ids = [str(uuid.uuid4()) for _ in range(3)]
    for i in (2, 0, 1):  # sent out of order
        at = f"2024-05-01T10:0{i}:00Z"
        event = run_event("COMPLETE", ids[i], job="numbered", at=at)
        assert client.post("/api/v1/lineage", json=event).status_code in (200, 201)
    numbers = [client.get(f"/api/v1/strata/runs/{i}").json()["number"] for i in ids]
    assert numbers == [1, 2, 3]
    listed = client.get("/api/v1/namespaces/ns/jobs/numbered/runs").json()
    # The job's run list is newest first: its first run is number totalCount.
    assert [r["id"] for r in listed["runs"]] == ids[::-1] and listed["totalCount"] == 3


def test_a_build_says_starting_spark_until_spark_runs(
    settings: Settings, engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:

    from strata.api import build_tasks

    spark_up = threading.Event()
    monkeypatch.setattr(build_tasks, "spark_running", spark_up.is_set)
    tasks = create_app(settings, engine).state.build_tasks
    request = _build_request(tasks, "RUNNING")
    tasks.state.add_build_request(request)
    recorder = build_tasks._Recorder(tasks, request.id)
    recorder.planned(["p.daily"])
    assert tasks.get(request.id)["sparkStarting"] is False
    recorder.started("p.daily")
    assert tasks.get(request.id)["sparkStarting"] is True
    spark_up.set()
    deadline = time.monotonic() + 5
    while tasks.get(request.id)["sparkStarting"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tasks.get(request.id)["sparkStarting"] is False
    assert tasks.get(request.id)["running"] == ["p.daily"]  # the rest of the progress kept
    recorder.ended.set()


def test_the_summary_counts_the_runs_of_the_last_hours_by_state(client: TestClient) -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    stamp = lambda hours: (now - timedelta(hours=hours)).isoformat()  # noqa: E731
    sent = [("COMPLETE", "a", 1), ("FAIL", "b", 2), ("FAIL", "b", 3), ("COMPLETE", "a", 72)]
    ids = []
    for kind, job, hours_ago in sent:
        ids.append(str(uuid.uuid4()))
        event = run_event(kind, ids[-1], job=f"dash_{job}", at=stamp(hours_ago))
        assert client.post("/api/v1/lineage", json=event).status_code in (200, 201)
    day = client.get("/api/v1/strata/summary", params={"hours": 24}).json()
    assert day["states"] == {"COMPLETED": 1, "FAILED": 2} and day["runs"] == 3
    assert day["jobs"] == 2 and day["hours"] == 24
    assert [f["run"] for f in day["failed"]] == [ids[1], ids[2]]  # newest first
    assert day["failed"][0]["job"] == {"namespace": "ns", "name": "dash_b"}
    week = client.get("/api/v1/strata/summary", params={"hours": 24 * 7}).json()
    assert week["runs"] == 4 and week["states"]["COMPLETED"] == 2
    for bad in ("0", "-1", "x", str(24 * 367)):
        refused = client.get("/api/v1/strata/summary", params={"hours": bad})
        assert refused.status_code in (400, 422) and "hours" in refused.text


def test_changes_between_two_times_name_new_versions_and_failed_runs(
    client: TestClient,
) -> None:
    def send(kind: str, job: str, at: str, out: str) -> str:
        run_id = str(uuid.uuid4())
        event = run_event(kind, run_id, job=job, at=at, outputs=[f"ns|{out}"])
        assert client.post("/api/v1/lineage", json=event).status_code in (200, 201)
        return run_id

    send("COMPLETE", "load", "2024-05-01T09:00:00Z", "early")
    send("COMPLETE", "load", "2024-05-01T10:10:00Z", "orders")
    send("COMPLETE", "load", "2024-05-01T10:20:00Z", "orders")
    failed = send("FAIL", "fix", "2024-05-01T10:30:00Z", "fixed")
    window = {"since": "2024-05-01T10:00:00Z", "until": "2024-05-01T11:00:00Z"}
    found = client.get("/api/v1/strata/changes", params=window).json()
    assert (found["since"], found["until"]) == ("2024-05-01T10:00:00Z", "2024-05-01T11:00:00Z")
    names = {v["name"]: v for v in found["versions"]}
    assert "early" not in names  # made before the range
    assert names["orders"]["count"] == 2
    assert names["orders"]["latestAt"].startswith("2024-05-01T10:20:00")
    assert found["runs"]["states"] == {"COMPLETED": 2, "FAILED": 1}
    assert [f["run"] for f in found["runs"]["failed"]] == [failed]
    backwards = client.get(
        "/api/v1/strata/changes", params={"since": window["until"], "until": window["since"]}
    ).json()
    assert backwards["versions"] == [] and backwards["runs"]["total"] == 0  # an empty range
    zoneless = client.get("/api/v1/strata/changes", params={"since": "2024-05-01T10:00:00"})
    assert zoneless.status_code in (400, 422) and "since" in zoneless.text


def test_changes_in_one_namespace_leave_the_others_out(client: TestClient) -> None:
    def send(kind: str, namespace: str, job: str, minute: int, out: str) -> str:
        run_id = str(uuid.uuid4())
        at = f"2024-05-01T10:{minute:02d}:00Z"
        event = run_event(kind, run_id, job=job, namespace=namespace, at=at, outputs=[out])
        assert client.post("/api/v1/lineage", json=event).status_code in (200, 201)
        return run_id

    send("COMPLETE", "shop", "load", 10, "shop|orders")
    shop_failed = send("FAIL", "shop", "fix", 20, "shop|fixed")
    send("COMPLETE", "crm", "sync", 30, "crm|people")
    crm_failed = send("FAIL", "crm", "sync", 40, "crm|people")
    # A job of one namespace writing a dataset of another: the run is its job's, the
    # version its dataset's.
    send("COMPLETE", "crm", "export", 50, "shop|exported")
    window = {"since": "2024-05-01T10:00:00Z", "until": "2024-05-01T11:00:00Z"}

    def changes(**extra: str) -> dict[str, Any]:
        answer = client.get("/api/v1/strata/changes", params={**window, **extra})
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found

    every, shop, crm = changes(), changes(namespace="shop"), changes(namespace="crm")
    assert (every["namespace"], shop["namespace"], crm["namespace"]) == (None, "shop", "crm")
    versions = {(v["namespace"], v["name"]) for v in every["versions"]}
    assert versions == {
        ("shop", "orders"),
        ("shop", "fixed"),
        ("crm", "people"),
        ("shop", "exported"),
    }
    assert {v["name"] for v in shop["versions"]} == {"orders", "fixed", "exported"}
    assert {(v["namespace"], v["name"]) for v in crm["versions"]} == {("crm", "people")}
    assert every["runs"]["states"] == {"COMPLETED": 3, "FAILED": 2}
    assert shop["runs"]["states"] == {"COMPLETED": 1, "FAILED": 1} and shop["runs"]["jobs"] == 2
    assert crm["runs"]["states"] == {"COMPLETED": 2, "FAILED": 1} and crm["runs"]["jobs"] == 2
    assert [f["run"] for f in shop["runs"]["failed"]] == [shop_failed]
    assert [f["run"] for f in crm["runs"]["failed"]] == [crm_failed]
    unknown = client.get("/api/v1/strata/changes", params={**window, "namespace": "nosuch"})
    assert unknown.status_code == 404 and "namespace 'nosuch' not found" in unknown.text
    assert unknown.json()  # a JSON body, as every refusal


def _build_request(tasks: Any, state: str) -> Any:
    """A build request of ``metrics/daily`` held by ``tasks``' server, as one it took."""
    from datetime import UTC, datetime

    from strata.builds.state.requests import BuildRequest

    now = datetime.now(UTC)
    return BuildRequest(
        id=str(uuid.uuid4()),
        dataset="metrics/daily",
        force=False,
        state=state,
        holder=tasks.holder,
        requested_at=now,
        started_at=None if state == "QUEUED" else now,
        ended_at=None,
        progress={},
        error=None,
        run=None,
    )
