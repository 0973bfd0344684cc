"""Run ``args``: the POST body's args, or what Marquez derives from an event's facets."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from strata.lineage.query.run_args import run_args

P = "https://example.com/producer"
SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


def facet(**fields: Any) -> dict[str, Any]:
    return {"_producer": P, "_schemaURL": P, **fields}


def make_job(client: TestClient) -> None:
    assert client.put("/api/v1/namespaces/ns", json={"ownerName": "me"}).status_code == 200
    assert client.put("/api/v1/namespaces/ns/jobs/etl", json={"type": "BATCH"}).status_code == 200


def test_post_run_args_come_back(client: TestClient) -> None:
    make_job(client)
    r = client.post(
        "/api/v1/namespaces/ns/jobs/etl/runs",
        json={"args": {"email": "me@example.com", "retries": 3}},
    )
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["args"] == {"email": "me@example.com", "retries": "3"}
    assert created["context"] == {}
    assert client.get(f"/api/v1/jobs/runs/{created['id']}").json()["args"] == created["args"]
    runs = client.get("/api/v1/namespaces/ns/jobs/etl/runs").json()["runs"]
    assert runs[0]["args"] == created["args"]
    # A lifecycle transition keeps them.
    done = client.post(f"/api/v1/jobs/runs/{created['id']}/complete")
    assert done.status_code == 200, done.text
    assert done.json()["args"] == created["args"]


def test_post_run_args_are_spelled_as_marquez_reads_them(client: TestClient) -> None:
    """Marquez reads args as ``Map<String, String>`` with Jackson: a boolean becomes
    true/false and a number the text it was written as; null, objects and arrays are
    refused (a 400 from Jackson, or for null a server error in Marquez)."""
    make_job(client)
    url = "/api/v1/namespaces/ns/jobs/etl/runs"
    headers = {"content-type": "application/json"}
    body = (
        b'{"args": {"s": "x", "t": true, "f": false, "i": 3, "n": -12, "d": 1.50,'
        b' "e": 1E+3, "big": 123456789012345678901234567890}}'
    )
    r = client.post(url, content=body, headers=headers)
    assert r.status_code == 201, r.text
    want = {
        "s": "x",
        "t": "true",
        "f": "false",
        "i": "3",
        "n": "-12",
        "d": "1.50",
        "e": "1E+3",
        "big": "123456789012345678901234567890",
    }
    assert r.json()["args"] == want
    assert client.get(f"/api/v1/jobs/runs/{r.json()['id']}").json()["args"] == want
    for value in (b"null", b'{"a": 1}', b"[1]", b"NaN"):
        r = client.post(url, content=b'{"args": {"ok": "1", "k": ' + value + b"}}", headers=headers)
        assert r.status_code == 400, (value, r.text)
        assert r.json()["details"]["field"] == "args.k"
    assert client.get(url).json()["totalCount"] == 1  # nothing stored for those
    r = client.post(url, json={"args": None})
    assert r.status_code == 201, r.text
    assert r.json()["args"] == {}


def test_post_run_without_args_has_none(client: TestClient) -> None:
    make_job(client)
    r = client.post(
        "/api/v1/namespaces/ns/jobs/etl/runs",
        json={"nominalStartTime": "2024-01-01T00:00:00Z", "nominalEndTime": "2024-01-02T00:00:00Z"},
    )
    assert r.status_code == 201, r.text
    assert r.json()["args"] == {}
    assert r.json()["nominalStartTime"] == "2024-01-01T00:00:00Z"


def test_event_runs_get_nominal_times_and_parent(client: TestClient) -> None:
    run_id, parent_id = str(uuid.uuid4()), str(uuid.uuid4())
    body = {
        "eventType": "START",
        "eventTime": "2024-05-01T10:00:00Z",
        "run": {
            "runId": run_id,
            "facets": {
                "nominalTime": facet(
                    nominalStartTime="2024-05-01T10:00:00Z", nominalEndTime="2024-05-01T11:00:00Z"
                ),
                "parent": facet(
                    run={"runId": parent_id}, job={"namespace": "airflow", "name": "dag"}
                ),
            },
        },
        "job": {"namespace": "ns", "name": "task"},
        "producer": P,
        "schemaURL": SCHEMA,
    }
    r = client.post("/api/v1/lineage", json=body)
    assert r.status_code == 201, r.text
    run = client.get(f"/api/v1/jobs/runs/{run_id}").json()
    assert run["args"] == {
        "nominal_start_time": "2024-05-01T10:00:00Z",
        "nominal_end_time": "2024-05-01T11:00:00Z",
        "run_id": parent_id,
        "name": "dag",
        "namespace": "airflow",
    }
    assert run["context"] == {}


def test_plain_event_run_has_no_args(client: TestClient) -> None:
    run_id = str(uuid.uuid4())
    body = {
        "eventType": "COMPLETE",
        "eventTime": "2024-05-01T10:00:00Z",
        "run": {"runId": run_id},
        "job": {"namespace": "ns", "name": "etl"},
        "producer": P,
        "schemaURL": SCHEMA,
    }
    assert client.post("/api/v1/lineage", json=body).status_code == 201
    assert client.get(f"/api/v1/jobs/runs/{run_id}").json()["args"] == {}


@pytest.mark.parametrize(
    ("facets", "expected"),
    [
        ({}, {}),
        ({"nominalTime": {"nominalEndTime": "x"}}, {}),
        ({"nominalTime": "junk", "parent": {"run": "junk", "job": {}}}, {}),
        (
            {"parent": {"run": {"runId": 7}, "job": {"name": None}}},
            {"run_id": "7", "name": "", "namespace": ""},
        ),
        ({"runArgs": {"args": {"a": None, "b": 1}}}, {"a": "", "b": "1"}),
        (
            {"runArgs": {"args": {"t": True, "f": 2.5, "o": {"x": [1, None]}}}},
            {"t": "true", "f": "2.5", "o": '{"x":[1,null]}'},
        ),
    ],
)
def test_odd_facets_never_fail(facets: dict[str, Any], expected: dict[str, str]) -> None:
    assert run_args(facets) == expected
