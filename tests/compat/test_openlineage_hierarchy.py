"""Marquez's ``OpenLineageIntegrationTest`` job-hierarchy scenarios: Airflow DAGs and
tasks as parent and child jobs, including the older integrations' ``parentRun`` key and
DAG-run ids that are not UUIDs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from marquez_api import Marquez

START = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/0.10.0/integration/airflow"


def _facet(**fields: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": PRODUCER, **fields}


def airflow_event(
    ns: str,
    task: str,
    parent_run: str | None,
    dag: str | None,
    *,
    event_type: str = "COMPLETE",
    at: datetime = START,
    run_id: str | None = None,
) -> dict[str, Any]:
    """``createAirflowRunEvent``: a task's run with a parent facet naming its DAG run."""
    facets: dict[str, Any] = {
        "nominalTime": _facet(
            nominalStartTime=at.isoformat(), nominalEndTime=(at + timedelta(hours=1)).isoformat()
        ),
        "airflow_version": _facet(airflowVersion="2.1.0", openlineageAirflowVersion="0.10"),
    }
    if parent_run is not None:
        facets["parent"] = _facet(run={"runId": parent_run}, job={"namespace": ns, "name": dag})
    return {
        "eventType": event_type,
        "eventTime": at.isoformat(),
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": run_id or str(uuid.uuid4()), "facets": facets},
        "job": {
            "namespace": ns,
            "name": task,
            "facets": {
                "documentation": _facet(description="the job docs"),
                "sql": _facet(query="SELECT * FROM the_table"),
            },
        },
        "inputs": [],
        "outputs": [],
    }


def _assert_hierarchy(marquez: Marquez, ns: str, dag: str, task: str) -> list[dict[str, Any]]:
    """The task is the DAG's child, the DAG has no parent; the DAG's runs."""
    job = marquez.client.get_job(ns, task)
    assert job["id"] == {"namespace": ns, "name": task}
    assert job["parentJobName"] == dag
    parent = marquez.client.get_job(ns, dag)
    assert parent["id"] == {"namespace": ns, "name": dag}
    assert parent["parentJobName"] is None
    runs: list[dict[str, Any]] = marquez.client.list_job_runs(ns, dag)["runs"]
    return runs


@pytest.mark.parametrize(
    ("dag", "task"),
    [("the_dag", "task"), ("the.dag", "task"), ("dag_with_task_group", "task_group.task")],
)
def test_airflow_integration(marquez: Marquez, ns: str, dag: str, task: str) -> None:
    """Two tasks of one DAG run; also with a dot in the DAG's name, and in a task group."""
    dag_run = str(uuid.uuid4())
    marquez.send(
        airflow_event(ns, f"{dag}.{task}1", dag_run, dag),
        airflow_event(ns, f"{dag}.{task}2", dag_run, dag),
    )
    runs = _assert_hierarchy(marquez, ns, dag, f"{dag}.{task}1")
    assert [r["id"] for r in runs] == [dag_run]


def _renamed_parent(event: dict[str, Any], key: str) -> dict[str, Any]:
    facets = event["run"]["facets"]
    facets[key] = facets.pop("parent")
    return event


def test_airflow_integration_with_the_parent_run_facet_key(marquez: Marquez, ns: str) -> None:
    """Older Airflow integrations sent ``parentRun``: an alias of ``parent``."""
    dag_run = str(uuid.uuid4())
    marquez.send(
        _renamed_parent(airflow_event(ns, "the_dag.task1", dag_run, "the_dag"), "parentRun"),
        _renamed_parent(airflow_event(ns, "the_dag.task2", dag_run, "the_dag"), "parentRun"),
    )
    runs = _assert_hierarchy(marquez, ns, "the_dag", "the_dag.task1")
    assert [r["id"] for r in runs] == [dag_run]


def test_airflow_integration_with_parent_and_parent_run_keys(marquez: Marquez, ns: str) -> None:
    """Both keys sent: ``parentRun`` wins, as in Marquez."""
    dag_run = str(uuid.uuid4())
    events = []
    for task in ("the_dag.task1", "the_dag.task2"):
        event = airflow_event(ns, task, dag_run, "the_dag")
        facets = event["run"]["facets"]
        facets["parentRun"] = facets["parent"]
        facets["parent"] = _facet(
            run={"runId": dag_run}, job={"namespace": "incorrect_namespace", "name": "a_new_dag"}
        )
        events.append(event)
    marquez.send(*events)
    runs = _assert_hierarchy(marquez, ns, "the_dag", "the_dag.task1")
    assert len(runs) == 1


def test_airflow_integration_with_the_parent_on_the_start_event_only(
    marquez: Marquez, ns: str
) -> None:
    """The DAG run, known only from its task's events, starts when the task does."""
    dag_run, run_id = str(uuid.uuid4()), str(uuid.uuid4())
    start = airflow_event(
        ns, "the_dag.task1", dag_run, "the_dag", event_type="START", run_id=run_id
    )
    complete = airflow_event(ns, "the_dag.task1", None, None, run_id=run_id)
    marquez.send(start, complete)
    [run] = _assert_hierarchy(marquez, ns, "the_dag", "the_dag.task1")
    assert run["startedAt"] is not None
    assert run["state"] == "RUNNING"


def test_airflow_missing_parent_for_an_existing_job(marquez: Marquez, ns: str) -> None:
    first = airflow_event(ns, "the_dag.task1", str(uuid.uuid4()), "the_dag")
    second = airflow_event(ns, "the_dag.task1", None, None, at=START + timedelta(hours=1))
    marquez.send(first, second)
    _assert_hierarchy(marquez, ns, "the_dag", "the_dag.task1")
    runs = marquez.client.list_job_runs(ns, "the_dag.task1")["runs"]
    assert {r["id"] for r in runs} == {first["run"]["runId"], second["run"]["runId"]}


def test_airflow_add_parent_for_an_existing_job(marquez: Marquez, ns: str) -> None:
    first = airflow_event(ns, "the_dag.task1", None, None)
    second = airflow_event(
        ns, "the_dag.task1", str(uuid.uuid4()), "the_dag", at=START + timedelta(hours=1)
    )
    marquez.send(first, second)
    _assert_hierarchy(marquez, ns, "the_dag", "the_dag.task1")
    assert marquez.client.get_job(ns, "the_dag.task1")["simpleName"] == "task1"
    runs = marquez.client.list_job_runs(ns, "the_dag.task1")["runs"]
    assert {r["id"] for r in runs} == {first["run"]["runId"], second["run"]["runId"]}


def test_airflow_handles_the_parent_for_events_out_of_order(marquez: Marquez, ns: str) -> None:
    """COMPLETE without the parent facet first, then START with it."""
    event = airflow_event(ns, "the_dag.task1", str(uuid.uuid4()), "the_dag")
    complete = {**event, "run": {**event["run"], "facets": dict(event["run"]["facets"])}}
    del complete["run"]["facets"]["parent"]
    start = {**event, "eventType": "START"}
    marquez.send(complete, start)
    _assert_hierarchy(marquez, ns, "the_dag", "the_dag.task1")
    runs = marquez.client.list_job_runs(ns, "the_dag.task1")["runs"]
    assert [r["id"] for r in runs] == [event["run"]["runId"]]


def test_old_airflow_integration(marquez: Marquez, ns: str) -> None:
    """The DAG run's own id as the parent run id, the task's name as the parent job's:
    the parent is the DAG, its run the name-based UUID Marquez makes of them."""
    dag_run = "scheduled__2022-04-25T00:20:00+00:00"
    marquez.send(
        airflow_event(ns, "the_dag.task1", dag_run, "the_dag.task1"),
        airflow_event(ns, "the_dag.task2", dag_run, "the_dag.task2"),
    )
    runs = _assert_hierarchy(marquez, ns, "the_dag", "the_dag.task1")
    assert marquez.client.get_job(ns, "the_dag.task1")["simpleName"] == "task1"
    expected = uuid.uuid3(uuid.NAMESPACE_URL, f"{ns}.the_dag.{dag_run}")
    assert [r["id"] for r in runs] == [str(expected)]
    assert len(marquez.client.list_job_runs(ns, "the_dag.task1")["runs"]) == 1


def test_a_parent_run_known_only_from_its_children_takes_the_earliest(
    marquez: Marquez, ns: str
) -> None:
    """Marquez makes the DAG run from the first child event it receives; Strata from
    the earliest by time, whatever the arrival order (see docs/api.md)."""
    dag_run = str(uuid.uuid4())
    later = airflow_event(ns, "the_dag.task2", dag_run, "the_dag", at=START + timedelta(hours=1))
    earlier = airflow_event(ns, "the_dag.task1", dag_run, "the_dag", event_type="START")
    marquez.send(later, earlier)
    [run] = marquez.client.list_job_runs(ns, "the_dag")["runs"]
    assert run["state"] == "RUNNING"
    assert run["startedAt"] == earlier["eventTime"].replace("+00:00", "Z")
    assert run["endedAt"] is None
