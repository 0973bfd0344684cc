"""Ingest routes and bad input: every bad request is a 4xx JSON error and stores nothing."""

from __future__ import annotations

import gzip
import hashlib
import json
import uuid
from functools import partial
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from ol_events import run_event
from strata.store import schema as s

PRODUCER = "https://example.com/producer"
SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


event = partial(
    run_event,
    at="2024-05-01T10:00:00.000Z",
    inputs=["ns|in"],
    outputs=["ns|out"],
    producer=PRODUCER,
)


def stored(client: TestClient, engine: sa.Engine) -> int:
    """Events in the store once the server has folded what it acknowledged."""
    assert client.app.state.lineage_writer.wait_folded(60)  # type: ignore[attr-defined]
    with engine.connect() as conn:
        return int(
            conn.execute(sa.select(sa.func.count()).select_from(s.lineage_events)).scalar_one()
        )


def test_ingest_and_read_back(client: TestClient, engine: sa.Engine) -> None:
    run_id = str(uuid.uuid4())
    r = client.post("/api/v1/lineage", json=event("START", run_id))
    assert r.status_code == 201, r.text
    raw = json.dumps(event("COMPLETE", run_id, eventTime="2024-05-01T10:05:00Z")).encode()
    r = client.post(
        "/api/v1/lineage",
        content=gzip.compress(raw),
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert r.status_code == 201, r.text
    # A retry of the same event is a no-op, not an error.
    assert client.post("/api/v1/lineage", json=event("START", run_id)).status_code == 201
    assert stored(client, engine) == 2
    run = client.get(f"/api/v1/jobs/runs/{run_id}").json()
    assert run["state"] == "COMPLETED"
    events = client.get("/api/v1/events/lineage", params={"sortDirection": "asc"}).json()
    assert events["totalCount"] == 2
    assert [e["eventType"] for e in events["events"]] == ["START", "COMPLETE"]
    job = client.get("/api/v1/namespaces/ns/jobs/etl").json()
    assert job["latestRun"]["id"] == run_id
    graph = client.get("/api/v1/lineage", params={"nodeId": "job:ns:etl"}).json()["graph"]
    assert {n["id"] for n in graph} == {"job:ns:etl", "dataset:ns:in", "dataset:ns:out"}


def test_big_event(client: TestClient, engine: sa.Engine) -> None:
    facet = {"_producer": PRODUCER, "_schemaURL": "https://x/y.json", "blob": "x" * 3_000_000}
    body = event(run={"runId": str(uuid.uuid4()), "facets": {"big": facet}})
    r = client.post(
        "/api/v1/lineage",
        content=gzip.compress(json.dumps(body).encode()),
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert r.status_code == 201, r.text
    assert stored(client, engine) == 1


def test_an_event_is_hashed_as_json_writes_it(client: TestClient, engine: sa.Engine) -> None:
    # The event's id is the hash of its canonical text: any other text would store the
    # same event sent again (alone, in a batch, from Python) as a second event.
    deep: Any = ["leaf"]
    for _ in range(150):
        deep = {"d": deep}
    facet = {
        "_producer": PRODUCER,
        "_schemaURL": "https://x/y.json",
        "floats": [1e-05, -2.5e-07, 1e-09, 1.5e-10, 0.5, 1e16, 1e22, 123.456, -0.0],
        "text": "0.00001 e-5",
        "deep": deep,
    }
    body = event(run={"runId": str(uuid.uuid4()), "facets": {"numbers": facet}})
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert client.post("/api/v1/lineage", json=body).status_code == 201
    assert client.post("/api/v1/lineage/batch", json=[body]).status_code == 200
    assert stored(client, engine) == 1
    with engine.connect() as conn:
        digest = conn.execute(sa.select(s.lineage_events.c.payload_hash)).scalar_one()
    assert digest == hashlib.sha256(text.encode()).hexdigest()


BAD: list[tuple[str, Any, int]] = [
    ("malformed json", b'{"eventType": "START",', 400),
    ("not an object", b"[1, 2]", 422),
    ("empty body", b"", 400),
    ("not utf-8", b"\xff\xfe{}", 400),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, 400),
    ("missing job", {k: v for k, v in event().items() if k != "job"}, 422),
    ("missing eventTime", {k: v for k, v in event().items() if k != "eventTime"}, 422),
    ("unknown eventType", event("EXPLODE"), 422),
    ("non-uuid runId", event(run_id="not-a-uuid"), 422),
    ("wrong type runId", event(run={"runId": 42}), 422),
    ("wrong type inputs", event(inputs="nope"), 422),
    ("wrong type eventTime", event(eventTime=12), 422),
    ("bad eventTime", event(eventTime="yesterday"), 422),
]


@pytest.mark.parametrize(("what", "body", "status"), BAD, ids=[b[0] for b in BAD])
def test_bad_events_are_4xx_and_store_nothing(
    client: TestClient, engine: sa.Engine, what: str, body: Any, status: int
) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = client.post(
        "/api/v1/lineage", content=content, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == status, (what, r.text)
    err = r.json()
    assert set(err) == {"code", "message", "details"}
    assert err["message"]
    assert stored(client, engine) == 0


def test_bad_event_names_the_field(client: TestClient) -> None:
    r = client.post("/api/v1/lineage", json=event(run_id="not-a-uuid"))
    assert r.status_code == 422
    assert "runId" in json.dumps(r.json())


def test_bad_gzip(client: TestClient, engine: sa.Engine) -> None:
    r = client.post(
        "/api/v1/lineage",
        content=b"not gzip",
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert r.status_code == 400
    r = client.post("/api/v1/lineage", content=b"{}", headers={"Content-Encoding": "br"})
    assert r.status_code == 415
    assert stored(client, engine) == 0


def test_weird_names_round_trip(client: TestClient) -> None:
    from urllib.parse import quote

    name = "ünï/cödé'; DROP TABLE jobs; --%_"
    assert client.post("/api/v1/lineage", json=event(job=name)).status_code == 201
    r = client.get(f"/api/v1/namespaces/ns/jobs/{quote(name, safe='')}")
    assert r.status_code == 200, r.text
    assert r.json()["name"] == name
    assert client.get("/api/v1/search", params={"q": "DROP"}).json()["totalCount"] == 1


def test_batch(client: TestClient, engine: sa.Engine) -> None:
    r = client.post("/api/v1/lineage/batch", json=[event(), event(run_id="bad"), event()])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "partial_success"
    assert body["summary"]["received"] == 3 and body["summary"]["failed"] == 1
    assert [x["status"] for x in body["results"]] == [201, 422, 201]
    assert body["failed_events"][0]["index"] == 1
    assert stored(client, engine) == 2
    assert client.post("/api/v1/lineage/batch", json={"a": 1}).status_code == 422


BAD_QUERIES = [
    "/api/v1/namespaces?limit=-1",
    "/api/v1/namespaces?limit=abc",
    "/api/v1/namespaces?offset=-5",
    "/api/v1/lineage",
    "/api/v1/lineage?nodeId=nonsense",
    "/api/v1/lineage?nodeId=table:ns:x",
    "/api/v1/lineage?nodeId=dataset:ns:x&depth=-1",
    "/api/v1/lineage?nodeId=dataset:ns:x&depth=100000",
    "/api/v1/lineage?nodeId=dataset:ns:x&asOf=never",
    "/api/v1/column-lineage?nodeId=job",
    "/api/v1/jobs/runs/not-a-uuid",
    "/api/v1/jobs/runs/not-a-uuid/facets",
    "/api/v1/runlineage/upstream?runId=xyz",
    "/api/v1/events/lineage?before=tomorrow",
    "/api/v1/events/lineage?sortDirection=sideways",
    "/api/v1/search?q=",
    "/api/v1/search?q=x&filter=TABLE",
    "/api/v1/strata/provenance/ns/x?depth=-1",
]


@pytest.mark.parametrize("url", BAD_QUERIES)
def test_bad_queries_are_400_naming_the_field(client: TestClient, url: str) -> None:
    r = client.get(url)
    assert 400 <= r.status_code < 500, (url, r.text)
    body = r.json()
    assert set(body) == {"code", "message", "details"}
    if r.status_code == 400:
        assert body["details"].get("field"), body


def test_bad_write_bodies(client: TestClient, engine: sa.Engine) -> None:
    r = client.put(
        "/api/v1/namespaces/x", content=b"{oops", headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400, r.text
    r = client.put("/api/v1/namespaces/x", json={"ownerName": 5})
    assert r.status_code == 422 and r.json()["details"]["field"] == "ownerName"
    r = client.put("/api/v1/namespaces/x", json={})
    assert r.status_code == 422 and r.json()["details"]["field"] == "ownerName"
    r = client.put("/api/v1/namespaces/ns/datasets/d", json={"type": "DB_TABLE"})
    assert r.status_code == 422
    # Each action is a route of its own, as in Marquez: another is no route at all.
    r = client.post("/api/v1/jobs/runs/00000000-0000-0000-0000-000000000000/explode")
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    with engine.connect() as conn:
        names = conn.execute(sa.select(s.namespaces.c.name)).scalars().all()
    assert names == ["default"]  # made when the server started, as in Marquez


def test_the_app_starts_its_fold_before_taking_requests(client: TestClient) -> None:
    # ``client`` ran the app's lifespan: the writer's threads run and its fold is ready.
    writer = client.app.state.lineage_writer  # type: ignore[attr-defined]
    assert writer.start(0)
    assert writer.health()["threads"] == {"store": True, "fold": True, "watchdog": True}
