"""Marquez's ``MarquezAppIntegrationTest`` scenarios: namespaces, sources and datasets made
through the write API, as its clients make them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from marquez_api import Marquez
from marquez_client.models import DatasetId, DatasetType, JobType

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize("suffix", ["DEFAULT", "database://localhost:1234", "s3://bucket", "bq:"])
def test_create_a_namespace(marquez: Marquez, ns: str, suffix: str) -> None:
    name = f"{ns}_{suffix}"
    made = marquez.client.create_namespace(name, "owner", "described")
    assert (made["name"], made["ownerName"], made["description"]) == (name, "owner", "described")
    listed = marquez.client.list_namespaces(limit=1000)["namespaces"]
    assert [n["name"] for n in listed].count(name) == 1


@pytest.mark.parametrize("suffix", ["test_source312", "s3://bucket", "asdf", "bigquery:"])
def test_create_a_source(marquez: Marquez, ns: str, suffix: str) -> None:
    name = f"{ns}_{suffix}"
    made = marquez.client.create_source(name, "POSTGRESQL", "postgresql://db:5432/x", "a db")
    assert (made["name"], made["type"], made["connectionUrl"], made["description"]) == (
        name,
        "POSTGRESQL",
        "postgresql://db:5432/x",
        "a db",
    )
    listed = marquez.client.list_sources(limit=1000)["sources"]
    assert [s["name"] for s in listed].count(name) == 1


def _setup(marquez: Marquez, ns: str) -> str:
    marquez.client.create_namespace(ns, "owner", "described")
    marquez.client.create_source(f"{ns}_src", "POSTGRESQL", "postgresql://db:5432/x")
    return f"{ns}_src"


def _fields(dataset: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(f["name"], f["type"]) for f in dataset["fields"]]


def test_a_custom_dataset_tag(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    fields = [{"name": "a", "type": "INTEGER", "tags": ["ANY"]}]
    marquez.client.create_dataset(
        ns, "public.mytable", DatasetType.DB_TABLE, "public.mytable", source, fields=fields,
        tags=["ANY_DATASET"],
    )  # fmt: skip
    got = marquez.client.get_dataset(ns, "public.mytable")
    assert got["tags"] == ["ANY_DATASET"] and got["fields"][0]["tags"] == ["ANY"]


def test_a_dataset_field_change(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    put = marquez.client.create_dataset
    first = [{"name": "a", "type": "INTEGER"}, {"name": "b", "type": "TIMESTAMP"}]
    put(ns, "public.mytable", DatasetType.DB_TABLE, "public.mytable", source, fields=first)
    assert _fields(marquez.client.get_dataset(ns, "public.mytable")) == [
        ("a", "INTEGER"),
        ("b", "TIMESTAMP"),
    ]
    second = [{"name": "a", "type": "INTEGER"}, {"name": "b-fix", "type": "STRING"}]
    put(ns, "public.mytable", DatasetType.DB_TABLE, "public.mytable", source, fields=second)
    assert _fields(marquez.client.get_dataset(ns, "public.mytable")) == [
        ("a", "INTEGER"),
        ("b-fix", "STRING"),
    ]


def test_a_dataset_with_an_unknown_field_type(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    kind = f"TYPE_{uuid.uuid4().hex[:6]}"
    fields = [{"name": "field0", "type": kind}, {"name": "field1", "type": None}]
    made = marquez.client.create_dataset(ns, "t", DatasetType.DB_TABLE, "t", source, fields=fields)
    assert _fields(made) == [("field0", kind), ("field1", None)]


def test_create_a_db_table(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    fields = [
        {"name": "email", "type": "VARCHAR", "tags": ["SENSITIVE"]},
        {"name": "age", "type": "INT"},
    ]
    put = marquez.client.create_dataset
    made = put(
        ns, "table", DatasetType.DB_TABLE, "phys.table", source, fields=fields, tags=["PII"],
        description="a table",
    )  # fmt: skip
    assert made["id"] == {"namespace": ns, "name": "table"}
    assert (made["physicalName"], made["sourceName"], made["description"]) == (
        "phys.table",
        source,
        "a table",
    )
    assert _fields(made) == [("email", "VARCHAR"), ("age", "INT")]
    assert made["tags"] == ["PII"]
    assert made["lastModifiedAt"] is None  # nothing has written it
    assert len(marquez.client.list_dataset_versions(ns, "table")["versions"]) == 1
    more = [*fields, {"name": "ssn", "type": "VARCHAR", "tags": ["PII"]}]
    changed = put(
        ns, "table", DatasetType.DB_TABLE, "phys.table", source, fields=more, tags=["PII"],
        description="a table",
    )  # fmt: skip
    assert _fields(changed) == [("email", "VARCHAR"), ("age", "INT"), ("ssn", "VARCHAR")]
    assert changed["lastModifiedAt"] is None
    assert len(marquez.client.list_dataset_versions(ns, "table")["versions"]) == 2


def test_create_a_stream(marquez: Marquez, ns: str) -> None:
    """A stream keeps its schema location; a new location is a new version."""
    marquez.client.create_namespace(ns, "owner")
    marquez.client.create_source(f"{ns}_kafka", "KAFKA", "kafka://broker:9092")
    put = marquez.client.create_dataset
    first = "https://schemas.example.com/clicks/1.avsc"
    made = put(
        ns, "clicks", DatasetType.STREAM, "clicks", f"{ns}_kafka", description="a stream",
        schema_location=first,
    )  # fmt: skip
    assert (made["type"], made["schemaLocation"], made["fields"], made["tags"]) == (
        "STREAM",
        first,
        [],
        [],
    )
    assert made["lastModifiedAt"] is None and made["description"] == "a stream"
    [version] = marquez.client.list_dataset_versions(ns, "clicks")["versions"]
    got = marquez.client.get_dataset_version(ns, "clicks", version["version"])
    assert (got["schemaLocation"], got["createdByRun"]) == (first, None)
    second = "https://schemas.example.com/clicks/2.avsc"
    changed = put(
        ns, "clicks", DatasetType.STREAM, "clicks", f"{ns}_kafka", description="a stream",
        schema_location=second,
    )  # fmt: skip
    assert changed["schemaLocation"] == second
    assert len(marquez.client.list_dataset_versions(ns, "clicks")["versions"]) == 2


def test_create_a_job_and_complete_its_run(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    put = marquez.client.create_dataset
    inputs = [DatasetId(ns, f"in{i}") for i in range(4)]
    outputs = [DatasetId(ns, f"out{i}") for i in range(2)]
    for d in [*inputs, *outputs]:
        put(ns, d.name, DatasetType.DB_TABLE, d.name, source, description="a table")
    job = marquez.client.create_job(
        ns, "job", JobType.BATCH, "https://git/job", inputs=inputs, outputs=outputs,
        description="a job",
    )  # fmt: skip
    assert job["id"] == {"namespace": ns, "name": "job"} and job["type"] == "BATCH"
    assert {d["name"] for d in job["inputs"]} == {d.name for d in inputs}
    # Marquez answers no outputs until a run completes; Strata the declared ones at once.
    assert {d["name"] for d in job["outputs"]} == {d.name for d in outputs}
    assert (job["location"], job["description"], job["latestRun"]) == (
        "https://git/job",
        "a job",
        None,
    )
    run = marquez.client.create_job_run(ns, "job")
    assert (run["state"], run["startedAt"], run["endedAt"], run["durationMs"], run["args"]) == (
        "NEW",
        None,
        None,
        None,
        {},
    )
    started = "2026-11-26T10:00:00.123456Z"
    running = marquez.client.mark_job_run_as_started(run["id"], at=started)
    assert (running["state"], running["startedAt"]) == ("RUNNING", started)
    again = marquez.client.create_job(
        ns, "job", JobType.BATCH, "https://git/job", inputs=inputs, outputs=outputs,
        description="a job", run_id=run["id"],
    )  # fmt: skip
    assert again["latestRun"]["id"] == run["id"]
    assert {d["name"] for d in again["outputs"]} == {d.name for d in outputs}
    ended = "2026-11-26T11:00:00.654321Z"
    done = marquez.client.mark_job_run_as_completed(run["id"], at=ended)
    assert (done["state"], done["startedAt"], done["endedAt"]) == ("COMPLETED", started, ended)
    assert done["durationMs"] == 3_600_530
    assert {d["name"] for d in marquez.client.get_job(ns, "job")["outputs"]} == {
        d.name for d in outputs
    }


def test_a_lazy_input_dataset(marquez: Marquez, ns: str) -> None:
    """Datasets made after the job and its run, then named by a job PUT with the run."""
    marquez.client.create_namespace(ns, "owner", "described")
    stream = f"{ns}_kafka"
    marquez.client.create_source(stream, "KAFKA", "kafka://localhost:9092", "a stream")
    marquez.client.create_job(ns, "job", JobType.BATCH, "https://git/job", description="a job")
    run = marquez.client.create_job_run(ns, "job")
    assert run["id"] and run["createdAt"] and run["updatedAt"]
    assert (run["nominalStartTime"], run["nominalEndTime"], run["state"]) == (None, None, "NEW")
    assert (run["startedAt"], run["endedAt"], run["durationMs"], run["args"]) == (
        None,
        None,
        None,
        {},
    )
    inputs = [DatasetId(ns, f"in{i}") for i in range(2)]
    outputs = [DatasetId(ns, f"out{i}") for i in range(2)]
    for d in inputs:
        marquez.client.create_dataset(ns, d.name, DatasetType.DB_TABLE, d.name, stream)
    for d in outputs:
        marquez.client.create_dataset(
            ns, d.name, DatasetType.DB_TABLE, d.name, stream, run_id=run["id"]
        )
    marquez.client.create_job(
        ns, "job", JobType.BATCH, "https://git/job", inputs=inputs, outputs=outputs,
        description="a job", run_id=run["id"],
    )  # fmt: skip
    job = marquez.client.get_job(ns, "job")
    assert sorted(d["name"] for d in job["inputs"]) == ["in0", "in1"]


def test_runs_are_listed_newest_first(marquez: Marquez, ns: str) -> None:
    marquez.client.create_namespace(ns, "owner")
    marquez.client.create_job(ns, "job", JobType.BATCH, "https://git/job")
    run0 = marquez.client.create_job_run(ns, "job")["id"]
    run1 = marquez.client.create_job_run(ns, "job", mark_as_running=True)["id"]
    marquez.client.mark_job_run_as_completed(run1)
    run2 = marquez.client.create_job_run(ns, "job", mark_as_running=True)["id"]
    listed = [r["id"] for r in marquez.client.list_job_runs(ns, "job")["runs"]]
    assert listed == [run2, run1, run0]


def test_search_finds_a_table_by_part_of_its_name(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    name = f"public.{ns}_mytable"
    fields = [{"name": "a", "type": "INTEGER"}, {"name": "b", "type": "TIMESTAMP"}]
    marquez.client.create_dataset(ns, name, DatasetType.DB_TABLE, name, source, fields=fields)
    found = marquez.get("/search", q=f"{ns}_mytable")
    assert found["totalCount"] == 1
    [result] = found["results"]
    assert (result["type"], result["name"], result["namespace"]) == ("DATASET", name, ns)


def test_tags_made_are_listed(marquez: Marquez) -> None:
    for tag in ("PII", "SENSITIVE"):
        marquez.client.create_tag(tag)
    assert {"PII", "SENSITIVE"} <= {t["name"] for t in marquez.client.list_tags()["tags"]}
