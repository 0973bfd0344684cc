"""Small answers a Marquez client sees: the ``default`` namespace and source, search's
``totalCount``, and one rule for a child job's simple name in every route."""

from __future__ import annotations

import uuid

from marquez_api import Marquez
from test_openlineage_hierarchy import airflow_event

from ol_events import facet, run_event


def test_a_new_server_has_the_default_namespace_and_source(marquez: Marquez) -> None:
    namespace = marquez.get("/namespaces/default")
    assert (namespace["name"], namespace["ownerName"]) == ("default", "anonymous")
    assert marquez.get("/sources/default")["name"] == "default"


def test_a_dataset_whose_events_name_no_source_is_of_the_default_source(
    marquez: Marquez, ns: str
) -> None:
    event = airflow_event(ns, "loader", None, None)
    event["outputs"] = [{"namespace": ns, "name": "plain"}]
    marquez.send(event)
    assert marquez.get(f"/namespaces/{ns}/datasets/plain")["sourceName"] == "default"


def test_search_counts_the_results_it_returns(marquez: Marquez, ns: str) -> None:
    marquez.send(*[airflow_event(ns, f"{ns}_job{i}", None, None) for i in range(3)])
    found = marquez.get("/search", q=f"{ns}_job", limit=2)
    assert len(found["results"]) == 2 and found["totalCount"] == 2


def test_a_child_jobs_simple_name_reads_the_same_everywhere(marquez: Marquez, ns: str) -> None:
    marquez.send(airflow_event(ns, "the_dag.task1", str(uuid.uuid4()), "the_dag"))
    moved = marquez.status("GET", f"/namespaces/{ns}/jobs/task1")
    assert moved.status_code == 301
    assert moved.headers["location"].endswith(f"/namespaces/{ns}/jobs/the_dag.task1")
    graph = marquez.get("/lineage", nodeId=f"job:{ns}:task1")
    assert f"job:{ns}:the_dag.task1" in {n["id"] for n in graph["graph"]}


def test_a_reader_during_a_write_reads_a_stand_in_not_the_version_being_written(
    marquez: Marquez, ns: str
) -> None:
    """Marquez binds the reader to the version the writer's START made (one version);
    Strata binds what was current when the reader started: nothing yet, so a stand-in
    with the schema the reader sent (two versions, once the writer completes)."""
    schema = facet(fields=[{"name": "id", "type": "INTEGER"}])
    table = {"namespace": ns, "name": "table", "facets": {"schema": schema}}
    writer = str(uuid.uuid4())
    reader = str(uuid.uuid4())
    marquez.send(
        run_event("START", writer, job="write", namespace=ns, at="2026-11-01T10:00:00Z",
                  outputs=[table]),
        run_event("COMPLETE", reader, job="read", namespace=ns, at="2026-11-01T10:05:00Z",
                  inputs=[table]),
        run_event("COMPLETE", writer, job="write", namespace=ns, at="2026-11-01T10:10:00Z",
                  outputs=[table]),
    )  # fmt: skip
    versions = marquez.get(f"/namespaces/{ns}/datasets/table/versions")["versions"]
    assert [v["createdByRun"] and v["createdByRun"]["id"] for v in versions] == [writer, None]
    assert [f["name"] for f in versions[1]["fields"]] == ["id"]
    [read] = marquez.get(f"/jobs/runs/{reader}")["inputDatasetVersions"]
    assert read["datasetVersionId"]["version"] == versions[1]["version"]
