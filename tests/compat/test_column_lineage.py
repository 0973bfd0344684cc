"""Marquez's ``ColumnLineageIntegrationTest``: dataset_a (col_a, col_b) → job1 →
dataset_b (col_c from both) → job2 → dataset_c (col_d from col_c)."""

from __future__ import annotations

from typing import Any

import pytest
from dataproc import dataproc_events
from marquez_api import Marquez

from ol_events import run_event

P = {"_producer": "https://p", "_schemaURL": "https://s"}


def _dataset(ns: str, name: str, fields: list[str], lineage: dict[str, Any] | None = None) -> Any:
    facets: dict[str, Any] = {
        "schema": {
            **P,
            "fields": [{"name": f, "type": "STRING", "description": ""} for f in fields],
        },
        "dataSource": {**P, "name": "the source", "uri": "http://thesource.com"},
    }
    if lineage is not None:
        facets["columnLineage"] = {**P, "fields": lineage}
    return {"namespace": ns, "name": name, "facets": facets}


def _column(ns: str, dataset: str, *fields: str, what: str, kind: str) -> dict[str, Any]:
    return {
        "inputFields": [{"namespace": ns, "name": dataset, "field": f} for f in fields],
        "transformationDescription": what,
        "transformationType": kind,
    }


@pytest.fixture
def chain(marquez: Marquez, ns: str) -> str:
    a = _dataset(ns, "dataset_a", ["col_a", "col_b"])
    b = _dataset(
        ns,
        "dataset_b",
        ["col_c"],
        {"col_c": _column(ns, "dataset_a", "col_a", "col_b", what="description1", kind="type1")},
    )
    c = _dataset(
        ns,
        "dataset_c",
        ["col_d"],
        {"col_d": _column(ns, "dataset_b", "col_c", what="description2", kind="type2")},
    )
    for job, (read, wrote) in {"job1": (a, b), "job2": (b, c)}.items():
        marquez.send(run_event(job=job, namespace=ns, inputs=[read], outputs=[wrote]))
    return ns


def _fields(lineage: dict[str, Any]) -> set[str]:
    return {n["id"].rsplit(":", 1)[1] for n in lineage["graph"]}


def test_column_lineage_by_dataset(marquez: Marquez, chain: str) -> None:
    lineage = marquez.client.get_column_lineage_by_dataset(chain, "dataset_b")
    assert len(lineage["graph"]) == 3
    assert _fields(lineage) == {"col_a", "col_b", "col_c"}


def test_column_lineage_by_dataset_field(marquez: Marquez, chain: str) -> None:
    lineage = marquez.client.get_column_lineage_by_dataset_field(chain, "dataset_b", "col_c")
    assert len(lineage["graph"]) == 3
    assert _fields(lineage) == {"col_a", "col_b", "col_c"}


def test_column_lineage_with_a_depth_limit(marquez: Marquez, chain: str) -> None:
    lineage = marquez.client.get_column_lineage_by_dataset_field(
        chain, "dataset_c", "col_d", depth=1, with_downstream=False
    )
    assert len(lineage["graph"]) == 2
    assert _fields(lineage) == {"col_c", "col_d"}


def test_column_lineage_with_downstream(marquez: Marquez, chain: str) -> None:
    lineage = marquez.client.get_column_lineage_by_job(
        chain, "job1", depth=10, with_downstream=True
    )
    assert len(lineage["graph"]) == 4
    assert "col_d" in _fields(lineage)


def test_column_lineage_by_job(marquez: Marquez, chain: str) -> None:
    lineage = marquez.client.get_column_lineage_by_job(
        chain, "job1", depth=1, with_downstream=False
    )
    assert len(lineage["graph"]) == 3
    assert _fields(lineage) == {"col_a", "col_b", "col_c"}


def test_a_dataset_carries_its_column_lineage(marquez: Marquez, chain: str) -> None:
    """``columnLineage`` of a dataset: its current version's output fields and the input
    fields each was made from."""

    def source(field: str) -> dict[str, Any]:
        return {
            "namespace": chain,
            "dataset": "dataset_a",
            "field": field,
            "transformationDescription": "description1",
            "transformationType": "type1",
        }

    got = marquez.client.get_dataset(chain, "dataset_b")["columnLineage"]
    assert got == [{"name": "col_c", "inputFields": [source("col_a"), source("col_b")]}]
    assert marquez.client.get_dataset(chain, "dataset_a")["columnLineage"] is None


def test_a_field_of_a_dataset_the_run_did_not_read_is_dropped(marquez: Marquez, ns: str) -> None:
    """Marquez keeps only input fields of the run's own inputs: no phantom dataset."""
    lineage = {
        "out": {
            "inputFields": [
                {"namespace": ns, "name": "read", "field": "a"},
                {"namespace": ns, "name": "ghost", "field": "g"},
            ]
        }
    }
    read, written = _dataset(ns, "read", ["a"]), _dataset(ns, "written", ["out"], lineage)
    marquez.send(run_event(job="job", namespace=ns, inputs=[read], outputs=[written]))
    [column] = marquez.client.get_dataset(ns, "written")["columnLineage"]
    assert [(f["dataset"], f["field"]) for f in column["inputFields"]] == [("read", "a")]
    assert marquez.status("GET", f"/namespaces/{ns}/datasets/ghost").status_code == 404


def test_input_fields_name_the_version_the_run_read(marquez: Marquez, chain: str) -> None:
    """After dataset_a moves on, col_c's input fields still name the version job1 read;
    a version in the start node puts versions in every node id."""
    [run] = marquez.client.list_job_runs(chain, "job1")["runs"]
    [read] = [v["datasetVersionId"]["version"] for v in run["inputDatasetVersions"]]
    marquez.send(
        {
            "eventTime": "2026-11-26T11:00:00Z",
            "producer": "https://p",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
            "dataset": _dataset(chain, "dataset_a", ["col_a", "col_b", "col_z"]),
        }
    )
    now = marquez.client.get_dataset(chain, "dataset_a")["currentVersion"]
    assert now != read
    lineage = marquez.client.get_column_lineage_by_dataset_field(chain, "dataset_b", "col_c")
    [col_c] = [n for n in lineage["graph"] if n["id"].endswith(":col_c")]
    assert {f["datasetVersion"] for f in col_c["data"]["inputFields"]} == {read}

    b = marquez.client.get_dataset(chain, "dataset_b")["currentVersion"]
    pinned = marquez.client.get_column_lineage_by_dataset_field(
        chain, "dataset_b", "col_c", version=b
    )
    assert {n["id"] for n in pinned["graph"]} == {
        f"datasetField:{chain}:dataset_b:col_c#{b}",
        f"datasetField:{chain}:dataset_a:col_a#{read}",
        f"datasetField:{chain}:dataset_a:col_b#{read}",
    }


@pytest.mark.parametrize("order", ["as sent", "reversed"])
def test_spark_column_lineage_outlives_a_version_that_carries_none(
    marquez: Marquez, ns: str, order: str
) -> None:
    """As Marquez, a dataset's column lineage is its latest recorded edges: the table
    written last without a ``columnLineage`` facet still shows where its columns came
    from, whatever order the events arrived in; asked by version, it has none."""
    events = dataproc_events(ns)
    marquez.send(*(reversed(events) if order == "reversed" else events))
    hdfs, t1, t2 = f"hdfs://{ns}", "/user/hive/warehouse/t1", "/user/hive/warehouse/t2"
    graph = marquez.get("/column-lineage", nodeId=f"dataset:{hdfs}:{t2}")["graph"]
    inputs = {
        n["data"]["field"]: {(f["dataset"], f["field"]) for f in n["data"]["inputFields"]}
        for n in graph
        if n["data"]["dataset"] == t2
    }
    assert inputs == {"a": {(t1, "a")}, "b": {(t1, "b")}}, graph
    down = marquez.get(
        "/column-lineage", nodeId=f"datasetField:{hdfs}:{t1}:a", withDownstream="true"
    )
    assert f"datasetField:{hdfs}:{t2}:a" in {n["id"] for n in down["graph"]}
    latest = marquez.client.list_dataset_versions(hdfs, t2)["versions"][0]["version"]
    exact = marquez.get("/column-lineage", nodeId=f"dataset:{hdfs}:{t2}#{latest}")["graph"]
    assert all(not n["data"]["inputFields"] for n in exact), exact
