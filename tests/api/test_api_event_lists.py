"""Marquez's ``/events`` and ``/events/{namespace}`` raw event lists."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

import ol_events

P = "https://example.com/producer"
SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/"


def run_event(
    minute: int, job_ns: str, inputs: tuple[str, ...] = (), outputs: tuple[str, ...] = ()
) -> dict[str, Any]:
    return ol_events.run_event(
        job=f"job{minute}",
        namespace=job_ns,
        at=f"2024-05-01T10:{minute:02d}:00Z",
        inputs=[(ns, "in") for ns in inputs],
        outputs=[(ns, "out") for ns in outputs],
        producer=P,
    )


@pytest.fixture
def events(client: TestClient) -> list[dict[str, Any]]:
    made = [
        run_event(1, "a"),
        run_event(2, "b", inputs=("a",)),
        run_event(3, "b", outputs=("a",)),
        run_event(4, "b", inputs=("c",), outputs=("c",)),
        {
            "eventTime": "2024-05-01T10:05:00Z",
            "dataset": {"namespace": "a", "name": "d"},
            "producer": P,
            "schemaURL": SCHEMA + "DatasetEvent",
        },
        {
            "eventTime": "2024-05-01T10:06:00Z",
            "job": {"namespace": "s3://bucket", "name": "j"},
            "inputs": [],
            "outputs": [],
            "producer": P,
            "schemaURL": SCHEMA + "JobEvent",
        },
    ]
    for body in made:
        r = client.post("/api/v1/lineage", json=body)
        assert r.status_code == 201, r.text
    return made


def times(body: dict[str, Any]) -> list[str]:
    assert set(body) == {"events"}  # Marquez's shape: no totalCount here
    return [e["eventTime"] for e in body["events"]]


def test_all_events_newest_first(client: TestClient, events: list[dict[str, Any]]) -> None:
    body = client.get("/api/v1/events").json()
    assert body["events"][0] == events[-1]
    assert times(body) == [e["eventTime"] for e in reversed(events)]
    page = client.get("/api/v1/events", params={"limit": 2, "offset": 1}).json()
    assert times(page) == times(body)[1:3]


def test_namespace_events(client: TestClient, events: list[dict[str, Any]]) -> None:
    def minutes(ns: str) -> list[int]:
        r = client.get(f"/api/v1/events/{ns}")
        assert r.status_code == 200, r.text
        return [int(t[14:16]) for t in times(r.json())]

    # Through the job, an input, an output, and a DatasetEvent's dataset.
    assert minutes("a") == [5, 3, 2, 1]
    assert minutes("b") == [4, 3, 2]
    assert minutes("c") == [4]  # once, though it is an input and an output
    assert minutes("s3%3A%2F%2Fbucket") == [6]
    assert minutes("nowhere") == []
    r = client.get("/api/v1/events/a", params={"limit": 1, "offset": 1})
    assert times(r.json()) == ["2024-05-01T10:03:00Z"]


def test_events_lineage_is_not_a_namespace(
    client: TestClient, events: list[dict[str, Any]]
) -> None:
    body = client.get("/api/v1/events/lineage").json()
    # Marquez's lineage event list holds run events only: not the DatasetEvent or JobEvent.
    runs = [e for e in events if "run" in e]
    assert body["totalCount"] == len(runs) == 4
    assert sorted(e["eventTime"] for e in body["events"]) == sorted(e["eventTime"] for e in runs)


@pytest.mark.parametrize("url", ["/api/v1/events", "/api/v1/events/a"])
@pytest.mark.parametrize("params", [{"limit": -1}, {"offset": -1}, {"limit": "x"}])
def test_bad_paging_is_400(client: TestClient, url: str, params: dict[str, Any]) -> None:
    r = client.get(url, params=params)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"code", "message", "details"}
