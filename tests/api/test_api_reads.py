"""Marquez read routes over a seeded store, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from api_seed import Seeder, chain
from fastapi.testclient import TestClient

from strata.store import schema as s


def get(client: TestClient, url: str, status: int = 200, **params: Any) -> Any:
    r = client.get(url, params=params, follow_redirects=False)
    assert r.status_code == status, r.text
    return r.json() if r.content else None


def test_namespaces_datasets_jobs(client: TestClient, seed: Seeder) -> None:
    ids = chain(seed)
    body = get(client, "/api/v1/namespaces")
    # The server made "default" when it started, as Marquez does.
    assert [n["name"] for n in body["namespaces"]] == ["default", "ns"]
    assert body["totalCount"] == 2
    assert get(client, "/api/v1/namespaces/ns")["ownerName"] == "me"

    ds = get(client, "/api/v1/namespaces/ns/datasets", limit=2)
    assert ds["totalCount"] == 3 and len(ds["datasets"]) == 2
    assert [d["name"] for d in ds["datasets"]] == ["mid", "out"]
    raw = get(client, "/api/v1/namespaces/ns/datasets/raw")
    assert raw["id"] == {"namespace": "ns", "name": "raw"}
    assert raw["currentVersion"] == ids["raw_v1"]
    assert [f["name"] for f in raw["fields"]] == ["a", "b"]

    job = get(client, "/api/v1/namespaces/ns/jobs/job1")
    assert job["name"] == "job1" and job["simpleName"] == "job1" and job["parentJobName"] is None
    assert job["inputs"] == [{"namespace": "ns", "name": "raw"}]
    assert job["outputs"] == [{"namespace": "ns", "name": "mid"}]
    assert job["latestRun"]["id"] == ids["run1"]
    jobs = get(client, "/api/v1/namespaces/ns/jobs")
    assert jobs["totalCount"] == 2

    runs = get(client, "/api/v1/namespaces/ns/jobs/job1/runs", limit=20)
    assert runs["totalCount"] == 1
    run = runs["runs"][0]
    assert run["state"] == "COMPLETED" and run["durationMs"] == 5000
    assert run["inputVersions"] == [{"namespace": "ns", "name": "raw", "version": ids["raw_v1"]}]
    assert run["outputVersions"][0]["version"] == ids["mid_v1"]
    assert run["jobVersion"] == {"namespace": "ns", "name": "job1", "version": ids["job1_v"]}
    assert get(client, f"/api/v1/jobs/runs/{ids['run1']}")["id"] == ids["run1"]
    facets = get(client, f"/api/v1/jobs/runs/{ids['run1']}/facets")
    assert facets == {"runId": ids["run1"], "facets": {"x": {"y": 1}}}

    versions = get(client, "/api/v1/namespaces/ns/datasets/mid/versions")
    assert versions["versions"][0]["createdByRun"]["id"] == ids["run1"]
    v = get(client, f"/api/v1/namespaces/ns/datasets/raw/versions/{ids['raw_v1']}")
    assert v["version"] == ids["raw_v1"] and v["commitId"] == 1
    assert get(client, "/api/v1/namespaces/ns/datasets/raw/versions/1")["version"] == ids["raw_v1"]
    jv = get(client, "/api/v1/namespaces/ns/jobs/job1/versions")
    assert jv["versions"][0]["version"] == ids["job1_v"]
    assert jv["versions"][0]["fingerprint"] == "fp1"
    assert get(client, "/api/v1/namespaces/ns/jobs/job1/versions/fp1")["version"] == ids["job1_v"]


def test_unknown_resources_are_404(client: TestClient, seed: Seeder) -> None:
    chain(seed)
    for url in [
        "/api/v1/namespaces/nope",
        "/api/v1/namespaces/ns/datasets/nope",
        "/api/v1/namespaces/ns/datasets/raw/versions/00000000-0000-0000-0000-000000000000",
        "/api/v1/namespaces/ns/jobs/nope",
        "/api/v1/namespaces/nope/jobs",
        "/api/v1/jobs/runs/00000000-0000-0000-0000-000000000000",
        "/api/v1/sources/nope",
        "/api/v1/no/such/route",
    ]:
        body = get(client, url, 404)
        assert set(body) == {"code", "message", "details"}, url


def test_lineage_graph(client: TestClient, seed: Seeder) -> None:
    chain(seed)
    graph = get(client, "/api/v1/lineage", nodeId="dataset:ns:mid", depth=5)["graph"]
    ids = [n["id"] for n in graph]
    assert ids == sorted(ids)
    assert set(ids) == {
        "dataset:ns:raw",
        "dataset:ns:mid",
        "dataset:ns:out",
        "job:ns:job1",
        "job:ns:job2",
    }
    by_id = {n["id"]: n for n in graph}
    mid = by_id["dataset:ns:mid"]
    assert mid["type"] == "DATASET"
    assert mid["inEdges"] == [{"origin": "job:ns:job1", "destination": "dataset:ns:mid"}]
    assert mid["outEdges"] == [{"origin": "dataset:ns:mid", "destination": "job:ns:job2"}]
    job1 = by_id["job:ns:job1"]
    assert set(job1) == {"id", "type", "data", "inEdges", "outEdges"}
    assert job1["data"]["latestRun"]["state"] == "COMPLETED"
    assert job1["outEdges"] == [{"origin": "job:ns:job1", "destination": "dataset:ns:mid"}]

    near = get(client, "/api/v1/lineage", nodeId="job:ns:job1", depth=0)["graph"]
    assert {n["id"] for n in near} == {"job:ns:job1", "dataset:ns:raw", "dataset:ns:mid"}


def test_lineage_as_of(client: TestClient, seed: Seeder) -> None:
    ids = chain(seed)
    then = get(client, "/api/v1/lineage", nodeId="dataset:ns:mid", asOf=ids["t_middle"])["graph"]
    assert {n["id"] for n in then} == {"job:ns:job1", "dataset:ns:raw", "dataset:ns:mid"}
    get(client, "/api/v1/lineage", 404, nodeId="job:ns:job2", asOf=ids["t_middle"])
    get(client, "/api/v1/lineage", 400, nodeId="job:ns:job2", asOf="2024-01-01T00:00:00")


def test_orphan_dataset_graph(client: TestClient, seed: Seeder) -> None:
    seed.dataset("ns", "lonely", ["a"])
    graph = get(client, "/api/v1/lineage", nodeId="dataset:ns:lonely")["graph"]
    assert [n["id"] for n in graph] == ["dataset:ns:lonely"]


def test_column_lineage(client: TestClient, seed: Seeder) -> None:
    chain(seed)
    graph = get(client, "/api/v1/column-lineage", nodeId="datasetField:ns:out:a")["graph"]
    ids = {n["id"] for n in graph}
    assert ids == {"datasetField:ns:out:a", "datasetField:ns:mid:a", "datasetField:ns:raw:a"}
    out = next(n for n in graph if n["id"] == "datasetField:ns:out:a")
    assert out["type"] == "DATASET_FIELD"
    assert out["data"]["inputFields"][0]["dataset"] == "mid"
    assert out["inEdges"] == [
        {"origin": "datasetField:ns:out:a", "destination": "datasetField:ns:mid:a"}
    ]
    down = get(
        client, "/api/v1/column-lineage", nodeId="datasetField:ns:raw:a", withDownstream=True
    )["graph"]
    assert {n["id"] for n in down} == ids
    only_up = get(client, "/api/v1/column-lineage", nodeId="dataset:ns:raw")["graph"]
    assert {n["id"] for n in only_up} == {"datasetField:ns:raw:a", "datasetField:ns:raw:b"}


def test_run_upstream_and_provenance(client: TestClient, seed: Seeder) -> None:
    ids = chain(seed)
    for url, params in [
        ("/api/v1/runlineage/upstream", {"runId": ids["run2"]}),
        (f"/api/v1/runs/{ids['run2']}/lineage/upstream", {}),
    ]:
        runs = get(client, url, **params)["runs"]
        assert [r["run"]["id"] for r in runs] == [ids["run2"], ids["run1"]]
        assert runs[0]["inputs"] == [
            {
                "namespace": "ns",
                "name": "mid",
                "version": ids["mid_v1"],
                "producedByRunId": ids["run1"],
            }
        ]
        assert runs[0]["job"] == {"namespace": "ns", "name": "job2", "version": ids["job2_v"]}

    tree = get(client, "/api/v1/strata/provenance/ns/out")
    assert tree["version"] == ids["out_v1"]
    assert tree["run"]["id"] == ids["run2"] and tree["run"]["programVersion"] == "fp2"
    (mid,) = tree["inputs"]
    assert mid["version"] == ids["mid_v1"] and mid["run"]["job"]["name"] == "job1"
    assert mid["inputs"][0]["version"] == ids["raw_v1"] and mid["inputs"][0]["run"] is None
    short = get(client, "/api/v1/strata/provenance/ns/out", depth=0)
    assert short["inputs"] == [] and short["truncated"] is True
    get(client, "/api/v1/strata/provenance/ns/out", 404, version="99")


def test_job_redirects(client: TestClient, seed: Seeder) -> None:
    parent = seed.job("ns", "dag")
    child = seed.job("ns", "task", parent=parent, parent_name="dag")
    seed.alias("ns", "old_task", child)
    r = client.get("/api/v1/namespaces/ns/jobs/old_task/runs?limit=5", follow_redirects=False)
    assert r.status_code == 301
    assert r.headers["location"] == "/api/v1/namespaces/ns/jobs/dag.task/runs?limit=5"
    r = client.get("/api/v1/namespaces/ns/jobs/task", follow_redirects=False)
    assert r.status_code == 301 and r.headers["location"].endswith("/jobs/dag.task")
    job = get(client, "/api/v1/namespaces/ns/jobs/dag.task")
    assert (job["name"], job["simpleName"], job["parentJobName"]) == ("dag.task", "task", "dag")

    other = seed.job("ns", "dag2")
    seed.job("ns", "task", parent=other, parent_name="dag2")
    r = client.get("/api/v1/namespaces/ns/jobs/task", follow_redirects=False)
    assert r.status_code == 300
    names = [c["name"] for c in r.json()["details"]["candidates"]]
    assert names == ["dag.task", "dag2.task"]


def test_names_with_slashes_and_unicode(client: TestClient, seed: Seeder) -> None:
    name = "s3://bucket/päth/x%20y'; DROP TABLE datasets;--"
    seed.dataset("gs://ns/1", name, ["a"])
    from urllib.parse import quote

    url = f"/api/v1/namespaces/{quote('gs://ns/1', safe='')}/datasets/{quote(name, safe='')}"
    assert get(client, url)["name"] == name
    graph = get(client, "/api/v1/lineage", nodeId=f"dataset:gs://ns/1:{name}")["graph"]
    assert graph[0]["data"]["name"] == name


def test_search_and_tags(client: TestClient, seed: Seeder) -> None:
    chain(seed)
    res = get(client, "/api/v1/search", q="JOB", filter="JOB")
    assert res["totalCount"] == 2
    assert res["results"][0] == {
        "type": "JOB",
        "name": "job1",
        "updatedAt": res["results"][0]["updatedAt"],
        "namespace": "ns",
        "nodeId": "job:ns:job1",
    }
    assert get(client, "/api/v1/search", q="i")["totalCount"] == 1  # only mid
    # Marquez counts the results it returns.
    assert get(client, "/api/v1/search", q="o", sort="UPDATE_AT", limit=1)["totalCount"] == 1
    assert client.put("/api/v1/tags/PII", json={"description": "personal"}).status_code == 200
    tags = get(client, "/api/v1/tags")
    assert tags["tags"] == [{"name": "PII", "description": "personal"}]
    r = client.post("/api/v1/namespaces/ns/datasets/raw/fields/a/tags/PII")
    assert r.status_code == 200, r.text
    assert r.json()["fields"][0]["tags"] == ["PII"]
    r = client.post("/api/v1/namespaces/ns/datasets/raw/tags/PII")
    assert r.json()["tags"] == ["PII"]


def test_runs_page_versions_order_and_total(
    client: TestClient, seed: Seeder, engine: sa.Engine
) -> None:
    zed, alpha, out = (
        seed.dataset("ns", "zed"),
        seed.dataset("ns", "alpha"),
        seed.dataset("ns", "out"),
    )
    zed_v, alpha_v = seed.version(zed, None), seed.version(alpha, None)
    job = seed.job("ns", "etl")
    jv = seed.job_version(job, [zed, alpha], [out])
    runs = [seed.run(job, jv, [zed_v, alpha_v]) for _ in range(3)]
    outs = {r: [seed.version(out, r), seed.version(alpha, r)] for r in runs[:2]}
    bare = seed.run(job, None)  # no inputs, outputs or job version
    with engine.begin() as conn:
        # Two runs created at the same instant: the id breaks the tie, newest page first.
        at = conn.execute(sa.select(s.runs.c.created_at).where(s.runs.c.uuid == runs[2])).scalar()
        conn.execute(s.runs.update().where(s.runs.c.uuid == runs[1]).values(created_at=at))
        # Facets are free-form JSON: integers beyond 64 bits must come back exactly.
        conn.execute(
            s.runs.update().where(s.runs.c.uuid == runs[0]).values(facets={"n": {"big": 2**70}})
        )
    newest = [bare, *sorted(runs[1:], reverse=True), runs[0]]

    body = get(client, "/api/v1/namespaces/ns/jobs/etl/runs")
    assert body["totalCount"] == 4
    assert [r["id"] for r in body["runs"]] == newest
    by_id = {r["id"]: r for r in body["runs"]}
    for rid in runs:
        one = get(client, f"/api/v1/jobs/runs/{rid}")
        assert by_id[rid] == one  # the page shows each run as the run route does
        assert [v["name"] for v in one["inputVersions"]] == ["alpha", "zed"]
    assert [v["name"] for v in by_id[runs[0]]["outputVersions"]] == ["alpha", "out"]
    assert {v["version"] for v in by_id[runs[0]]["outputVersions"]} == set(outs[runs[0]])
    assert by_id[runs[2]]["outputVersions"] == []
    assert by_id[bare]["jobVersion"] is None and by_id[bare]["inputVersions"] == []
    assert by_id[runs[0]]["facets"] == {"n": {"big": 2**70}}

    page = get(client, "/api/v1/namespaces/ns/jobs/etl/runs", limit=2, offset=1)
    assert [r["id"] for r in page["runs"]] == newest[1:3] and page["totalCount"] == 4
    past = get(client, "/api/v1/namespaces/ns/jobs/etl/runs", offset=10)
    assert past == {"runs": [], "totalCount": 4}
    seed.job("ns", "idle")
    assert get(client, "/api/v1/namespaces/ns/jobs/idle/runs") == {"runs": [], "totalCount": 0}
    r = client.get("/api/v1/namespaces/ns/jobs/etl/runs")
    assert r.headers["content-type"] == "application/json"


def test_search_by_relevance_puts_whole_names_then_prefixes_then_parts(
    client: TestClient, seed: Seeder
) -> None:
    names = ["raw/clicks_customer", "customer", "metrics/customer_daily", "customers", "x-customer"]
    for name in names:
        seed.dataset("ns", name)
    seed.job("ns", "load_customer")
    found = get(client, "/api/v1/search", q="CUSTOMER", sort="RELEVANCE", limit=20)["results"]
    assert [r["name"] for r in found] == [
        "customer",  # the whole name
        "customers",  # starts with it
        "x-customer",  # a part starts with it; shorter first
        "metrics/customer_daily",
        "load_customer",  # anywhere else
        "raw/clicks_customer",
    ]
    assert [r["type"] for r in found].count("JOB") == 1
    by_name = get(client, "/api/v1/search", q="customer", limit=20)["results"]
    assert [r["name"] for r in by_name] == sorted([*names, "load_customer"])  # Marquez's order
    bad = client.get("/api/v1/search", params={"q": "c", "sort": "BEST"})
    assert bad.status_code in (400, 422) and "sort" in bad.text
