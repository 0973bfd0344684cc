"""The routes the pages read beyond Marquez: a version's first rows, a run with its job
and state history, the latest runs, and builds started over HTTP."""

from __future__ import annotations

import dataclasses
import uuid

import pyarrow as pa
import sqlalchemy as sa
from fastapi.testclient import TestClient

from ol_events import run_event
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
    from datetime import UTC, datetime

    from strata.builds.state.requests import BuildRequest

    first, second = create_app(settings, engine), create_app(settings, engine)
    tasks = first.state.build_tasks
    queued = BuildRequest(
        id=str(uuid.uuid4()),
        dataset="metrics/daily",
        force=False,
        state="QUEUED",
        holder=tasks.holder,
        requested_at=datetime.now(UTC),
        started_at=None,
        ended_at=None,
        progress={"planned": ["p.daily"], "running": [], "transforms": []},
        error=None,
        run=None,
    )
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
