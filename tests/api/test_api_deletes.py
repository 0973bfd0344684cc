"""Marquez's DELETE routes: soft deletes that a later event undoes."""

from __future__ import annotations

import dataclasses
import uuid
from functools import partial
from typing import Any

import sqlalchemy as sa
from api_seed import Seeder, chain
from fastapi.testclient import TestClient

import ol_events
from strata.api import create_app
from strata.settings import Settings
from strata.store import schema as s

P = "https://example.com/producer"
SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/"


run_event = partial(ol_events.run_event, inputs=("ns|in",), outputs=("ns|out",), producer=P)


def post(client: TestClient, body: dict[str, Any]) -> None:
    r = client.post("/api/v1/lineage", json=body)
    assert r.status_code == 201, r.text


def names(client: TestClient, what: str, namespace: str = "ns") -> list[str]:
    r = client.get(f"/api/v1/namespaces/{namespace}/{what}")
    assert r.status_code == 200, r.text
    body = r.json()
    items = [x["name"] for x in body[what]]
    assert body["totalCount"] == len(items)
    return items


def assert_404(r: Any) -> None:
    assert r.status_code == 404, r.text
    assert set(r.json()) == {"code", "message", "details"}


def test_dataset_delete_hides_until_an_event_names_it(client: TestClient) -> None:
    post(client, run_event())
    before = client.get("/api/v1/namespaces/ns/datasets/out").json()
    r = client.delete("/api/v1/namespaces/ns/datasets/out")
    assert r.status_code == 200, r.text
    assert r.json() == before  # the dataset as it was, as Marquez answers
    assert_404(client.get("/api/v1/namespaces/ns/datasets/out"))
    assert_404(client.get("/api/v1/namespaces/ns/datasets/out/versions"))
    assert_404(client.delete("/api/v1/namespaces/ns/datasets/out"))
    assert names(client, "datasets") == ["in"]
    hits = client.get("/api/v1/search", params={"q": "out"}).json()["results"]
    assert [h["name"] for h in hits if h["type"] == "DATASET"] == []
    # The job and its run are untouched.
    assert client.get("/api/v1/namespaces/ns/jobs/etl").status_code == 200
    # Named again, as an input this time: back, with its history.
    post(client, run_event(job="other", inputs=("ns|out",), outputs=()))
    back = client.get("/api/v1/namespaces/ns/datasets/out")
    assert back.status_code == 200, back.text
    assert back.json()["currentVersion"] == before["currentVersion"]
    assert names(client, "datasets") == ["in", "out"]


def test_dataset_event_and_put_bring_a_dataset_back(client: TestClient) -> None:
    post(client, run_event())
    assert client.delete("/api/v1/namespaces/ns/datasets/in").status_code == 200
    post(
        client,
        {
            "eventTime": "2024-05-02T00:00:00Z",
            "dataset": {"namespace": "ns", "name": "in"},
            "producer": P,
            "schemaURL": SCHEMA + "DatasetEvent",
        },
    )
    assert client.get("/api/v1/namespaces/ns/datasets/in").status_code == 200
    assert client.delete("/api/v1/namespaces/ns/datasets/in").status_code == 200
    r = client.put("/api/v1/sources/db", json={"type": "POSTGRESQL", "connectionUrl": "pg://x"})
    assert r.status_code == 200, r.text
    r = client.put(
        "/api/v1/namespaces/ns/datasets/in",
        json={"type": "DB_TABLE", "physicalName": "in", "sourceName": "db"},
    )
    assert r.status_code == 200, r.text
    assert names(client, "datasets") == ["in", "out"]


def test_job_delete_hides_until_an_event_for_it(client: TestClient) -> None:
    post(client, run_event())
    post(client, run_event(job="keep"))
    before = client.get("/api/v1/namespaces/ns/jobs/etl").json()
    r = client.delete("/api/v1/namespaces/ns/jobs/etl")
    assert r.status_code == 200, r.text
    assert r.json() == before
    assert_404(client.get("/api/v1/namespaces/ns/jobs/etl"))
    assert_404(client.get("/api/v1/namespaces/ns/jobs/etl/runs"))
    assert_404(client.delete("/api/v1/namespaces/ns/jobs/etl"))
    assert names(client, "jobs") == ["keep"]
    hits = client.get("/api/v1/search", params={"q": "etl", "filter": "JOB"}).json()
    assert hits["totalCount"] == 0
    # Its datasets stay; its run is still readable by id.
    assert names(client, "datasets") == ["in", "out"]
    assert client.get(f"/api/v1/jobs/runs/{before['latestRun']['id']}").status_code == 200
    post(client, run_event(at="2024-05-03T00:00:00Z"))
    assert client.get("/api/v1/namespaces/ns/jobs/etl").status_code == 200
    assert names(client, "jobs") == ["etl", "keep"]


def test_child_job_by_old_name_and_parent_untouched(client: TestClient) -> None:
    parent = {
        "_producer": P,
        "_schemaURL": P,
        "run": {"runId": str(uuid.uuid4())},
        "job": {"namespace": "ns", "name": "dag"},
    }
    body = run_event(job="task")
    body["run"]["facets"] = {"parent": parent}
    post(client, body)
    # The event's own name redirects to the FQN, for DELETE as for GET.
    r = client.delete("/api/v1/namespaces/ns/jobs/task", follow_redirects=False)
    assert r.status_code == 301
    assert r.headers["location"] == "/api/v1/namespaces/ns/jobs/dag.task"
    assert client.delete("/api/v1/namespaces/ns/jobs/dag.task").status_code == 200
    assert names(client, "jobs") == ["dag"]
    # An event under the old name finds the job through its alias.
    body = run_event(job="task", at="2024-06-01T00:00:00Z")
    body["run"]["facets"] = {"parent": parent}
    post(client, body)
    assert names(client, "jobs") == ["dag", "dag.task"]


def test_namespace_delete_hides_everything_in_it(client: TestClient) -> None:
    post(client, run_event())
    post(client, run_event(job="other", namespace="elsewhere", inputs=(), outputs=("x|y",)))
    before = client.get("/api/v1/namespaces/ns").json()
    r = client.delete("/api/v1/namespaces/ns")
    assert r.status_code == 200, r.text
    assert r.json() == before
    shown = client.get("/api/v1/namespaces/ns").json()
    assert shown["isHidden"] is True  # Marquez still lists a hidden namespace, flagged
    listed = {
        n["name"]: n["isHidden"] for n in client.get("/api/v1/namespaces").json()["namespaces"]
    }
    assert listed == {"default": False, "ns": True, "elsewhere": False, "x": False}
    assert names(client, "datasets") == []
    assert names(client, "jobs") == []
    assert names(client, "jobs", "elsewhere") == ["other"]
    assert names(client, "datasets", "x") == ["y"]
    assert_404(client.delete("/api/v1/namespaces/nowhere"))
    # An event in the namespace brings back the namespace and what it names, nothing else.
    post(client, run_event(job="etl", inputs=(), outputs=("ns|out",), at="2024-06-01T00:00:00Z"))
    assert client.get("/api/v1/namespaces/ns").json()["isHidden"] is False
    assert names(client, "jobs") == ["etl"]
    assert names(client, "datasets") == ["out"]


def test_events_folded_together_each_bring_back_what_they_name(client: TestClient) -> None:
    """A batch is folded in one statement per table: every event of it counts, not the
    first or the last."""
    post(client, run_event(job="a"))
    post(client, run_event(job="b", namespace="other", inputs=(), outputs=("other|x",)))
    for path in ("datasets/in", "datasets/out", "jobs/a"):
        assert client.delete(f"/api/v1/namespaces/ns/{path}").status_code == 200
    assert client.delete("/api/v1/namespaces/other").status_code == 200
    assert names(client, "datasets") == [] and names(client, "jobs") == []
    later = "2024-06-01T00:00:00Z"
    batch = [
        run_event(job="c", inputs=("ns|in",), outputs=(), at=later),
        run_event(job="a", inputs=(), outputs=(), at=later),
        {
            "eventTime": later,
            "dataset": {"namespace": "ns", "name": "out"},
            "producer": P,
            "schemaURL": SCHEMA + "DatasetEvent",
        },
        run_event(job="d", namespace="third", inputs=(), outputs=("other|x",), at=later),
    ]
    r = client.post("/api/v1/lineage/batch", json=batch)
    assert r.status_code == 200, r.text
    assert r.json()["summary"]["failed"] == 0
    assert names(client, "datasets") == ["in", "out"]
    assert names(client, "jobs") == ["a", "c"]
    # The namespace comes back through a dataset named in it, its other job does not.
    assert client.get("/api/v1/namespaces/other").json()["isHidden"] is False
    assert names(client, "datasets", "other") == ["x"]
    assert names(client, "jobs", "other") == []


def test_put_namespace_brings_it_back(client: TestClient) -> None:
    assert client.put("/api/v1/namespaces/ns", json={"ownerName": "me"}).status_code == 200
    assert client.delete("/api/v1/namespaces/ns").status_code == 200
    assert client.get("/api/v1/namespaces/ns").json()["isHidden"] is True
    r = client.put("/api/v1/namespaces/ns", json={"ownerName": "you"})
    assert r.status_code == 200, r.text
    assert r.json()["isHidden"] is False


def test_new_version_brings_a_dataset_back(
    client: TestClient, seed: Seeder, engine: sa.Engine
) -> None:
    """A lake commit adds a version without an event: it counts as news of the dataset."""
    uuid_ = seed.dataset("lake", "table", fields=["a"])
    assert client.delete("/api/v1/namespaces/lake/datasets/table").status_code == 200
    assert names(client, "datasets", "lake") == []
    seed.version(uuid_, None, fields=["a", "b"])
    assert names(client, "datasets", "lake") == ["table"]
    with engine.connect() as conn:
        hidden = conn.execute(sa.select(sa.func.count()).where(s.datasets.c.is_hidden)).scalar()
    assert hidden == 0


def test_missing_things_are_404(client: TestClient) -> None:
    post(client, run_event())
    for url in (
        "/api/v1/namespaces/nowhere/datasets/out",
        "/api/v1/namespaces/ns/datasets/nothing",
        "/api/v1/namespaces/nowhere/jobs/etl",
        "/api/v1/namespaces/ns/jobs/nothing",
    ):
        assert_404(client.delete(url))
    assert names(client, "datasets") == ["in", "out"]
    assert names(client, "jobs") == ["etl"]


def test_names_with_slashes(client: TestClient) -> None:
    post(client, run_event(inputs=(), outputs=("s3://bucket|a/b",)))
    r = client.delete("/api/v1/namespaces/s3%3A%2F%2Fbucket/datasets/a%2Fb")
    assert r.status_code == 200, r.text
    assert r.json()["name"] == "a/b"
    assert_404(client.get("/api/v1/namespaces/s3%3A%2F%2Fbucket/datasets/a%2Fb"))


def test_deletes_need_a_write_token(settings: Settings, engine: sa.Engine) -> None:
    secured = dataclasses.replace(settings, write_tokens=("w",), read_tokens=("r",))
    with TestClient(create_app(secured, engine)) as client:
        assert client.delete("/api/v1/namespaces/ns").status_code == 401
        r = client.delete("/api/v1/namespaces/ns", headers={"Authorization": "Bearer r"})
        assert r.status_code == 403
        assert set(r.json()) == {"code", "message", "details"}
        r = client.delete("/api/v1/namespaces/ns", headers={"Authorization": "Bearer w"})
        assert r.status_code == 404


def graph(client: TestClient, node_id: str, url: str = "/api/v1/lineage", **params: Any) -> Any:
    r = client.get(url, params={"nodeId": node_id, **params})
    assert r.status_code == 200, r.text
    return {n["id"]: n for n in r.json()["graph"]}


def edge(origin: str, destination: str) -> dict[str, str]:
    return {"origin": origin, "destination": destination}


LATER = {"asOf": "2100-01-01T00:00:00Z"}


def test_hidden_dataset_leaves_the_lineage_graph(client: TestClient, seed: Seeder) -> None:
    ids = chain(seed)  # raw -> job1 -> mid -> job2 -> out
    assert client.delete("/api/v1/namespaces/ns/datasets/mid").status_code == 200
    for params in ({}, LATER):
        nodes = graph(client, "dataset:ns:raw", **params)
        # As Marquez: the walk goes on through mid, which is left out with its edges.
        assert list(nodes) == ["dataset:ns:out", "dataset:ns:raw", "job:ns:job1", "job:ns:job2"]
        job1, job2 = nodes["job:ns:job1"]["data"], nodes["job:ns:job2"]["data"]
        assert nodes["job:ns:job1"]["outEdges"] == [] and job1["outputs"] == []
        assert nodes["job:ns:job2"]["inEdges"] == [] and job2["inputs"] == []
        assert job2["outputs"] == [{"namespace": "ns", "name": "out"}]
        assert nodes["dataset:ns:out"]["inEdges"] == [edge("job:ns:job2", "dataset:ns:out")]
        # A hidden start node answers 404, as the dataset itself does.
        r = client.get("/api/v1/lineage", params={"nodeId": "dataset:ns:mid", **params})
        assert_404(r)
    # A new version brings it back, into the graph too.
    seed.version(ids["mid"], ids["run1"], ["a"])
    assert "dataset:ns:mid" in graph(client, "dataset:ns:raw")


def test_hidden_job_leaves_the_lineage_graph(client: TestClient, seed: Seeder) -> None:
    chain(seed)
    assert client.delete("/api/v1/namespaces/ns/jobs/job2").status_code == 200
    for params in ({}, LATER):
        nodes = graph(client, "dataset:ns:raw", **params)
        assert list(nodes) == ["dataset:ns:mid", "dataset:ns:raw", "job:ns:job1"]
        assert nodes["dataset:ns:mid"]["outEdges"] == []
        # As Marquez: a dataset that no visible job of the graph reads or writes stands
        # alone, although the walk reaches job1 through the hidden job2.
        assert list(graph(client, "dataset:ns:out", **params)) == ["dataset:ns:out"]
        r = client.get("/api/v1/lineage", params={"nodeId": "job:ns:job2", **params})
        assert_404(r)
    assert_404(client.get("/api/v1/column-lineage", params={"nodeId": "job:ns:job2"}))


def test_hidden_dataset_leaves_column_lineage(client: TestClient, seed: Seeder) -> None:
    ids = chain(seed)  # out.a <- mid.a <- raw.a
    src = seed.dataset("ns", "src", ["a"])
    seed.column(ids["raw_v1"], "a", src, "a")
    url = "/api/v1/column-lineage"
    assert client.delete("/api/v1/namespaces/ns/datasets/mid").status_code == 200
    nodes = graph(client, "datasetField:ns:out:a", url)
    # As Marquez: mid's fields are left out with their edges; the walk goes on through them.
    assert list(nodes) == [
        "datasetField:ns:out:a",
        "datasetField:ns:raw:a",
        "datasetField:ns:src:a",
    ]
    out = nodes["datasetField:ns:out:a"]
    assert out["inEdges"] == [] and out["data"]["inputFields"] == []
    raw = nodes["datasetField:ns:raw:a"]
    assert raw["inEdges"] == [edge("datasetField:ns:raw:a", "datasetField:ns:src:a")]
    assert raw["outEdges"] == []
    # Downstream, out.a is found through mid.a and shows (a field of a visible dataset
    # that the walk found written), without its input from mid.
    down = graph(client, "datasetField:ns:src:a", url, withDownstream=True)
    assert list(down) == list(nodes)
    assert down["datasetField:ns:out:a"]["data"]["inputFields"] == []
    for node_id in ("dataset:ns:mid", "datasetField:ns:mid:a"):
        assert_404(client.get(url, params={"nodeId": node_id}))
