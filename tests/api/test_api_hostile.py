"""Hostile events: each is refused with a 4xx naming the problem before it is queued, the
writer goes on, and what the server acknowledges is what it shows, on both backends."""

from __future__ import annotations

import json
import uuid
from functools import partial
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ol_events import run_event

PRODUCER = "https://example.com/hostile"


event = partial(run_event, "START", namespace="hostile", job="job", producer=PRODUCER)


def facet(value: Any) -> dict[str, Any]:
    return {"custom": {"_producer": PRODUCER, "_schemaURL": "https://x/s.json", "value": value}}


def text(body: dict[str, Any]) -> str:
    """JSON as a lenient producer writes it: NaN as is, lone surrogates escaped."""
    return json.dumps(body, allow_nan=True)


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def post(client: TestClient, body: str) -> Any:
    return client.post(
        "/api/v1/lineage",
        content=body.encode("utf-8", "surrogatepass"),
        headers={"content-type": "application/json"},
    )


def assert_alive(client: TestClient) -> None:
    """A good event after the bad one is answered and visible."""
    run_id = str(uuid.uuid4())
    r = client.post("/api/v1/lineage", json=event(run_id))
    assert r.status_code == 201, r.text
    assert client.get(f"/api/v1/jobs/runs/{run_id}").json()["state"] == "RUNNING"


HOSTILE = {
    "surrogate in a name": text(event(job={"namespace": "hostile", "name": "job_\ud800_x"})),
    "surrogate in a namespace": text(event(job={"namespace": "ns\udfff", "name": "j"})),
    "surrogate in a facet": text(
        event(run={"runId": str(uuid.uuid4()), "facets": facet("\ud800")})
    ),
    "surrogate in a key": text(
        event(run={"runId": str(uuid.uuid4()), "facets": facet({"\udc00": 1})})
    ),
    "offset of 99 hours": text(event(eventTime="2024-01-01T00:00:00+99:00")),
    "offset of 24 hours": text(event(eventTime="2024-01-01T00:00:00+24:00")),
    "offset past year 9999": text(event(eventTime="9999-12-31T23:00:00-05:00")),
    "offset before year 1": text(event(eventTime="0001-01-01T00:30:00+01:00")),
    "NaN": text(event(run={"runId": str(uuid.uuid4()), "facets": facet(float("nan"))})),
    "Infinity": text(event(run={"runId": str(uuid.uuid4()), "facets": facet(float("inf"))})),
    "-Infinity": text(event(run={"runId": str(uuid.uuid4()), "facets": facet(float("-inf"))})),
    "1e400": text(event(run={"runId": str(uuid.uuid4()), "facets": facet(1)})).replace(
        '"value": 1', '"value": 1e400'
    ),
    "5,001-digit integer": text(
        event(run={"runId": str(uuid.uuid4()), "facets": facet(1)})
    ).replace('"value": 1', '"value": ' + "9" * 5001),
    **{
        f"facet nested {n} deep": text(
            event(run={"runId": str(uuid.uuid4()), "facets": facet(1)})
        ).replace('"value": 1', '"value": ' + nested(n))
        for n in (201, 990, 1023, 1030)
    },
    "job name of 100,000 characters": text(event(job={"namespace": "h", "name": "j" * 100_000})),
    "dataset name over 1,024 bytes": text(event(outputs=[{"namespace": "h", "name": "é" * 513}])),
    "namespace over 1,024 bytes": text(event(job={"namespace": "n" * 1025, "name": "j"})),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_event_is_refused_and_ingest_goes_on(client: TestClient, name: str) -> None:
    r = post(client, HOSTILE[name])
    assert r.status_code in (400, 422), r.text
    answer = r.json()
    assert answer["code"] in ("invalid_argument", "invalid_event") and answer["message"]
    assert_alive(client)


def test_the_same_events_in_a_batch_are_refused_one_by_one(client: TestClient) -> None:
    good = event()
    items = [
        event(job={"namespace": "h", "name": "j" * 2000}),
        event(eventTime="2024-01-01T00:00:00+24:00"),
        good,
    ]
    r = client.post("/api/v1/lineage/batch", json=items)
    assert r.status_code == 200, r.text
    statuses = [item.get("status") for item in r.json()["results"]]
    assert statuses[:2] == [422, 422] and statuses[2] == 201, r.text
    assert client.get(f"/api/v1/jobs/runs/{good['run']['runId']}").status_code == 200


def test_a_name_at_the_limit_is_stored_and_read_back(client: TestClient) -> None:
    name = "é" * 512  # 1,024 bytes
    run_id = str(uuid.uuid4())
    r = client.post("/api/v1/lineage", json=event(run_id, job={"namespace": "h", "name": name}))
    assert r.status_code == 201, r.text
    assert client.get(f"/api/v1/namespaces/h/jobs/{name}").json()["name"] == name


# --- generated hostile events --------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec=None), max_size=20),  # surrogates and NUL included
    st.sampled_from(["\ud800", "a\udfffb", "\x00", "é" * 600, "9" * 30]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
_TIMES = st.one_of(
    st.sampled_from(
        [
            "2024-01-01T00:00:00+24:00",
            "9999-12-31T23:59:59-00:01",
            "0001-01-01T00:00:00+00:01",
            "2024-02-30T00:00:00Z",
            "2024-01-01T00:00:00.123456789-23:59",
            "2024-01-01 00:00",
        ]
    ),
    st.text(max_size=30),
)
_NAMES = st.one_of(
    st.text(alphabet=st.characters(codec=None), min_size=1, max_size=10),
    st.integers(min_value=1000, max_value=1100).map(lambda n: "x" * n),
    st.sampled_from(["\ud800", "é" * 513]),
)


@st.composite
def hostile_events(draw: st.DrawFn) -> dict[str, Any]:
    body = event()
    where = draw(st.sampled_from(["time", "job", "facet", "output", "top"]))
    if where == "time":
        body["eventTime"] = draw(_TIMES)
    elif where == "job":
        body["job"] = {"namespace": draw(_NAMES), "name": draw(_NAMES)}
    elif where == "facet":
        body["run"]["facets"] = facet(draw(_VALUES))
    elif where == "output":
        body["outputs"] = [{"namespace": draw(_NAMES), "name": draw(_NAMES)}]
    else:
        body[draw(st.text(max_size=8))] = draw(_VALUES)
    return body


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=hostile_events())
def test_generated_hostile_events_are_answered_and_what_is_acknowledged_is_shown(
    client: TestClient, body: dict[str, Any]
) -> None:
    r = post(client, text(body))
    assert r.status_code in (201, 400, 422), r.text
    if r.status_code == 201:
        # Acknowledged means stored: visible through the API on either backend.
        run = client.get(f"/api/v1/jobs/runs/{body['run']['runId']}")
        assert run.status_code == 200, run.text
    else:
        assert r.json()["message"]
    assert_alive(client)


def test_lists_a_request_can_hold_are_bounded(client: TestClient) -> None:
    """A batch, a dataset's fields and tags, a job's datasets: each past its bound is one
    4xx naming it, and nothing is stored."""
    from strata.api.models import MAX_ITEMS, MAX_TAGS
    from strata.api.routes.lineage import MAX_BATCH

    tiny = {"eventTime": "2024-05-01T10:00:00Z", "eventType": "START"}  # refused if taken
    r = client.post("/api/v1/lineage/batch", json=[tiny] * (MAX_BATCH + 1))
    assert r.status_code == 422 and f"more than the {MAX_BATCH}" in r.json()["message"]
    assert client.put("/api/v1/namespaces/bounded", json={"ownerName": "me"}).status_code == 200
    client.put("/api/v1/sources/s", json={"type": "POSTGRESQL", "connectionUrl": "x://y"})
    body = {"type": "DB_TABLE", "physicalName": "t", "sourceName": "s"}
    fields = [{"name": f"c{i}"} for i in range(MAX_ITEMS + 1)]
    for extra in ({"fields": fields}, {"tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}):
        r = client.put("/api/v1/namespaces/bounded/datasets/t", json={**body, **extra})
        assert r.status_code == 422, r.text
        assert str(MAX_ITEMS if "fields" in extra else MAX_TAGS) in r.text
    many = [{"namespace": "bounded", "name": f"d{i}"} for i in range(MAX_ITEMS + 1)]
    r = client.put("/api/v1/namespaces/bounded/jobs/j", json={"type": "BATCH", "inputs": many})
    assert r.status_code == 422 and str(MAX_ITEMS) in r.text
    assert client.get("/api/v1/namespaces/bounded/datasets").json()["totalCount"] == 0
    assert client.get("/api/v1/namespaces/bounded/jobs").json()["totalCount"] == 0
    # A query list: the states repeat, the answer is the same as one of each.
    states = "&".join(["lastRunStates=FAILED"] * 500)
    assert client.get(f"/api/v1/jobs?{states}").status_code == 200
