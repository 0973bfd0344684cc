"""Marquez write routes build the same model as the equivalent OpenLineage events."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from strata.lineage.record.apply import record_event
from strata.store import schema as s
from strata.store.schema import metadata

RUN = "0190d5d4-1111-7222-8333-444455556666"
P = "https://example.com/p"
LOC = "https://git/etl.py"


def _facet(**fields: Any) -> dict[str, Any]:
    return {"_producer": P, "_schemaURL": P, **fields}


def _model(engine: sa.Engine) -> dict[str, Any]:
    r, rs, jv, dv, d, j = (
        s.runs,
        s.run_states,
        s.job_versions,
        s.dataset_versions,
        s.datasets,
        s.jobs,
    )
    with engine.connect() as conn:
        run = conn.execute(
            sa.select(r.c.state, r.c.started_at, r.c.ended_at, jv.c.version)
            .join(jv, jv.c.uuid == r.c.job_version_uuid)
            .where(r.c.uuid == RUN)
        ).one()
        states = conn.execute(
            sa.select(rs.c.state).where(rs.c.run_uuid == RUN).order_by(rs.c.transitioned_at)
        ).all()
        versions = conn.execute(
            sa.select(d.c.name, dv.c.uuid, d.c.current_version_uuid == dv.c.uuid)
            .join(dv, dv.c.dataset_uuid == d.c.uuid)
            .order_by(d.c.name, dv.c.uuid)
        ).all()
        job = conn.execute(
            sa.select(j.c.name, j.c.location, j.c.type, jv.c.version).join(
                jv, jv.c.uuid == j.c.current_version_uuid
            )
        ).all()
        inputs = conn.execute(sa.select(s.run_inputs.c.dataset_version_uuid)).all()
    return {
        "run": tuple(run),
        "states": [x[0] for x in states],
        "versions": [tuple(v) for v in versions],
        "job": [tuple(x) for x in job],
        "inputs": sorted(x[0] for x in inputs),
    }


def _wipe(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(table.delete())


@pytest.mark.parametrize("outcome", ["complete", "fail"])
def test_marquez_lifecycle_equals_openlineage_events(
    client: TestClient, engine: sa.Engine, outcome: str
) -> None:
    io = {
        "inputs": [{"namespace": "ns", "name": "src"}],
        "outputs": [{"namespace": "ns", "name": "dst"}],
    }
    # A job PUT names datasets that exist (as in Marquez): declared first, by events both
    # halves send alike.
    declared = [
        {
            "eventTime": "2023-12-30T00:00:00Z",
            "producer": P,
            "dataset": {"namespace": "ns", "name": name},
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
        }
        for name in ("src", "dst")
    ]
    assert client.put("/api/v1/namespaces/ns", json={"ownerName": "me"}).status_code == 200
    for event in declared:
        assert client.post("/api/v1/lineage", json=event).status_code == 201
    r = client.put("/api/v1/namespaces/ns/jobs/etl", json={"type": "BATCH", "location": LOC, **io})
    assert r.status_code == 200, r.text
    r = client.post("/api/v1/namespaces/ns/jobs/etl/runs", json={"id": RUN})
    assert r.status_code == 201, r.text
    assert r.json()["state"] == "NEW"
    started = "2024-01-01T00:00:00Z"
    ended = "2024-01-01T01:00:00Z"
    r = client.post(f"/api/v1/jobs/runs/{RUN}/start", params={"at": started})
    assert r.status_code == 200 and r.json()["state"] == "RUNNING", r.text
    r = client.post(f"/api/v1/jobs/runs/{RUN}/{outcome}", params={"at": ended})
    assert r.status_code == 200, r.text
    via_api = _model(engine)
    assert via_api["states"] == ["RUNNING", "COMPLETED" if outcome == "complete" else "FAILED"]
    job = client.get("/api/v1/namespaces/ns/jobs/etl").json()
    assert job["inputs"] == io["inputs"] and job["outputs"] == io["outputs"]

    _wipe(engine)
    job_facets = {
        "sourceCodeLocation": _facet(type="git", url=LOC),
        "jobType": _facet(processingType="BATCH", integration="MARQUEZ", jobType="BATCH"),
    }
    base = {"producer": P, "job": {"namespace": "ns", "name": "etl", "facets": job_facets}, **io}
    for event in declared:
        record_event(engine, event)
    record_event(engine, {**base, "eventTime": "2023-12-31T00:00:00Z"})
    run_job = {
        "namespace": "ns",
        "name": "etl",
        "facets": {"sourceCodeLocation": job_facets["sourceCodeLocation"]},
    }
    for event_type, at in [
        (None, "2023-12-31T12:00:00Z"),
        ("START", started),
        (outcome.upper(), ended),
    ]:
        event: dict[str, Any] = {
            **base,
            "job": run_job,
            "eventTime": at,
            "run": {"runId": RUN, "facets": {}},
        }
        if event_type is not None:  # the NEW run's event carries the job's io
            event.update(inputs=[], outputs=[], job={"namespace": "ns", "name": "etl"})
            event["eventType"] = event_type
        record_event(engine, event)
    assert _model(engine) == via_api


def test_a_job_put_of_thousands_of_datasets_is_set_based(
    client: TestClient, engine: sa.Engine
) -> None:
    """A job naming 2,000 datasets is checked and folded in a few statements per thousand,
    not a few per dataset; one missing name among them is refused by name, nothing kept."""
    names = [f"t{i:04d}" for i in range(2_000)]
    batch = [
        {
            "eventType": "COMPLETE",
            "eventTime": "2024-01-01T00:00:00Z",
            "producer": P,
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
            "run": {"runId": f"0190d5d4-1111-7222-8333-{i:012d}"},
            "job": {"namespace": "ns", "name": f"make{i}"},
            "outputs": [{"namespace": "ns", "name": n} for n in names[i : i + 500]],
        }
        for i in range(0, len(names), 500)
    ]
    assert client.post("/api/v1/lineage/batch", json=batch).status_code == 200
    io = {
        "inputs": [{"namespace": "ns", "name": n} for n in names[:1_000]],
        "outputs": [{"namespace": "ns", "name": n} for n in names[1_000:]],
    }
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(args[2])

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        r = client.put("/api/v1/namespaces/ns/jobs/wide", json={"type": "BATCH", **io})
        missing = {"namespace": "ns", "name": "no_such_table"}
        refused = client.put(
            "/api/v1/namespaces/ns/jobs/wider",
            json={"type": "BATCH", "inputs": [*io["inputs"], missing]},
        )
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    assert r.status_code == 200, r.text
    job = r.json()
    assert len(job["inputs"]) == 1_000 and len(job["outputs"]) == 1_000
    assert {d["name"] for d in job["inputs"]} == set(names[:1_000])
    assert len(seen) < 200, f"{len(seen)} statements for one job PUT"
    assert refused.status_code == 404
    assert "no_such_table" in refused.json()["message"]
    assert client.get("/api/v1/namespaces/ns/jobs/wider").status_code == 404
