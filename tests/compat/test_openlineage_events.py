"""More of Marquez's ``OpenLineageIntegrationTest``: a DatasetEvent and a JobEvent from its
own test resources (the conformance corpus), Spark under Airflow, and one parent run id
reused in two namespaces."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from marquez_api import Marquez
from test_openlineage_hierarchy import airflow_event

from strata import ids

EVENTS = Path(__file__).parents[2].parent / "shared" / "conformance" / "events"


def _load(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / "marquez" / "open_lineage" / name).read_text())
    return event


def test_a_dataset_event(marquez: Marquez) -> None:
    event = _load("event_dataset_event.json")
    marquez.send(event)
    namespace, name = event["dataset"]["namespace"], event["dataset"]["name"]
    expected = event["dataset"]["facets"]
    dataset = marquez.client.get_dataset(namespace, name)
    assert {k: v for k, v in dataset["facets"].items() if k in expected} == expected
    latest = marquez.client.list_dataset_versions(namespace, name)["versions"][0]
    assert (latest["namespace"], latest["name"]) == (namespace, name)
    assert latest["facets"] == expected


def test_a_job_event(marquez: Marquez) -> None:
    event = _load("event_job_event.json")
    marquez.send(event)
    namespace, name = event["job"]["namespace"], event["job"]["name"]
    job = marquez.client.get_job(namespace, name)
    assert job["facets"] == {}
    [read], [wrote] = event["inputs"], event["outputs"]
    assert job["inputs"] == [{"namespace": read["namespace"], "name": read["name"]}]
    assert job["outputs"] == [{"namespace": wrote["namespace"], "name": wrote["name"]}]
    got = marquez.client.get_dataset(read["namespace"], read["name"])
    assert got["description"] == "input documentation"
    got = marquez.client.get_dataset(wrote["namespace"], wrote["name"])
    assert got["description"] == "output documentation"
    [version] = marquez.get(f"/namespaces/{namespace}/jobs/{name}/versions")["versions"]
    detail = marquez.get(f"/namespaces/{namespace}/jobs/{name}/versions/{version['version']}")
    assert (detail["namespace"], detail["name"]) == (namespace, name)
    assert detail["inputs"]
    # A JobEvent is not a run's event: the lineage event list does not show it.
    events = marquez.get("/events/lineage", limit=1000)["events"]
    jobs = [(e["job"]["namespace"], e["job"]["name"]) for e in events]
    assert (namespace, name) not in jobs


def test_spark_under_airflow(marquez: Marquez, ns: str) -> None:
    """A Spark job whose parent is an Airflow task, itself a child of its DAG."""
    task = airflow_event(ns, "the_dag.startSparkJob", str(uuid.uuid4()), "the_dag")
    spark = airflow_event(
        ns, "the_dag.startSparkJob.theSparkJob", task["run"]["runId"], "the_dag.startSparkJob"
    )
    del spark["run"]["facets"]["airflow_version"]
    marquez.send(task, spark)
    airflow_task = marquez.client.get_job(ns, "the_dag.startSparkJob")
    assert (airflow_task["simpleName"], airflow_task["parentJobName"]) == (
        "startSparkJob",
        "the_dag",
    )
    spark_job = marquez.client.get_job(ns, "the_dag.startSparkJob.theSparkJob")
    assert (spark_job["simpleName"], spark_job["parentJobName"]) == (
        "theSparkJob",
        "the_dag.startSparkJob",
    )
    assert marquez.client.get_job(ns, "the_dag")["parentJobName"] is None
    assert len(marquez.client.list_job_runs(ns, "the_dag")["runs"]) == 1


def test_one_parent_run_id_in_two_namespaces(marquez: Marquez, ns: str) -> None:
    """The same DAG name and run id in two namespaces: two DAG jobs, each its children's
    parent. Marquez gives the second namespace's DAG a run of its own under another id,
    so which DAG keeps the id depends on arrival order; Strata keeps one run, of the DAG
    job with the smaller uuid, whichever came first (docs/api.md)."""
    other = f"{ns}_another"
    dag_run = str(uuid.uuid4())
    events = [
        airflow_event(ns, "reused_dag_name.task1", dag_run, "reused_dag_name"),
        airflow_event(other, "reused_dag_name.task1", dag_run, "reused_dag_name"),
    ]
    marquez.send(*events)
    for namespace in (ns, other):
        task = marquez.client.get_job(namespace, "reused_dag_name.task1")
        assert task["parentJobName"] == "reused_dag_name"
        assert marquez.client.get_job(namespace, "reused_dag_name")["parentJobName"] is None
    owners = [
        namespace
        for namespace in (ns, other)
        if marquez.client.list_job_runs(namespace, "reused_dag_name")["runs"]
    ]
    assert owners == [min((ns, other), key=lambda n: ids.job_uuid(n, "reused_dag_name"))]
