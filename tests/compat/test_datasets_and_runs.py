"""Marquez's ``DatasetIntegrationTest`` and ``RunIntegrationTest`` scenarios through
marquez-python, and the write-API checks its clients rely on."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from marquez_api import Marquez
from marquez_client.models import DatasetId, DatasetType, JobType

from ol_events import facet, run_event

# marquez-python marks its write calls deprecated (use OpenLineage); Marquez's tests use them.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PII, SENSITIVE = "PII", "SENSITIVE"


def _setup(marquez: Marquez, ns: str) -> str:
    """``setup()``: the namespace, a table source and the two tags; the source's name."""
    source = f"{ns}_postgres"
    marquez.client.create_namespace(ns, "me", "a namespace")
    marquez.client.create_source(source, "POSTGRESQL", "postgresql://db.example.com:5432/x")
    marquez.client.create_tag(PII, "Personally identifiable information")
    marquez.client.create_tag(SENSITIVE, "Contains sensitive information")
    return source


def _field(name: str, *tags: str) -> dict[str, Any]:
    return {"name": name, "type": "VARCHAR", "description": f"the {name}", "tags": list(tags)}


def _fields(dataset: dict[str, Any]) -> list[tuple[str, str | None, set[str]]]:
    return [(f["name"], f["type"], set(f["tags"])) for f in dataset["fields"]]


def test_tags(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    first = [_field("email", SENSITIVE), _field("age")]
    made = marquez.client.create_dataset(
        ns, "tags_ds", DatasetType.DB_TABLE, "tags_ds", source, fields=first, tags=[PII]
    )
    assert _fields(made) == [("email", "VARCHAR", {SENSITIVE}), ("age", "VARCHAR", set())]
    assert made["tags"] == [PII]
    changed = [_field("ssn", PII), first[0]]
    updated = marquez.client.create_dataset(
        ns, "tags_ds", DatasetType.DB_TABLE, "tags_ds", source, fields=changed, tags=[SENSITIVE]
    )
    expected = [("ssn", "VARCHAR", {PII}), ("email", "VARCHAR", {SENSITIVE})]
    assert set(updated["tags"]) == {SENSITIVE, PII}
    assert _fields(updated) == expected
    read = marquez.client.get_dataset(ns, "tags_ds")
    assert _fields(read) == expected and set(read["tags"]) == {SENSITIVE, PII}


def test_a_dataset_put_makes_a_version_per_content(marquez: Marquez, ns: str) -> None:
    """1 version after the first PUT, the same after the same PUT, 2 after a change."""
    source = _setup(marquez, ns)
    put = marquez.client.create_dataset
    first = put(ns, "t", DatasetType.DB_TABLE, "t", source, fields=[_field("a")])
    assert first["currentVersion"] is not None
    assert len(marquez.client.list_dataset_versions(ns, "t")["versions"]) == 1
    put(ns, "t", DatasetType.DB_TABLE, "t", source, fields=[_field("a")])
    assert len(marquez.client.list_dataset_versions(ns, "t")["versions"]) == 1
    put(ns, "t", DatasetType.DB_TABLE, "t", source, fields=[_field("a"), _field("b")])
    versions = marquez.client.list_dataset_versions(ns, "t")["versions"]
    assert [[f["name"] for f in v["fields"]] for v in versions] == [["a", "b"], ["a"]]
    assert marquez.client.get_dataset(ns, "t")["currentVersion"] == versions[0]["version"]


def test_a_dataset_event_makes_a_version_with_fields(marquez: Marquez, ns: str) -> None:
    marquez.send(
        {
            "eventTime": "2026-11-26T10:00:00Z",
            "producer": "https://example.com/p",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
            "dataset": {
                "namespace": ns,
                "name": "declared",
                "facets": {
                    "schema": {
                        "_producer": "https://example.com/p",
                        "_schemaURL": "https://example.com/s",
                        "fields": [{"name": "id", "type": "INT"}],
                    }
                },
            },
        }
    )
    dataset = marquez.client.get_dataset(ns, "declared")
    assert [f["name"] for f in dataset["fields"]] == ["id"]
    [version] = marquez.client.list_dataset_versions(ns, "declared")["versions"]
    assert version["version"] == dataset["currentVersion"]
    assert version["createdByRun"] is None


def test_db_table_version_with_run(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    fields = [_field("email", SENSITIVE), _field("age")]
    marquez.client.create_dataset(
        ns, "table1", DatasetType.DB_TABLE, "table1", source, fields=fields, tags=[PII]
    )
    marquez.client.create_job(
        ns, "job1", JobType.BATCH, "https://git/job1", outputs=[DatasetId(ns, "table1")]
    )
    run = marquez.client.create_job_run(ns, "job1")
    marquez.client.create_dataset(
        ns,
        "table1",
        DatasetType.DB_TABLE,
        "table1",
        source,
        fields=fields,
        tags=[PII],
        run_id=run["id"],
    )
    versions = marquez.client.list_dataset_versions(ns, "table1")["versions"]
    assert len(versions) > 1
    made_by = versions[0]["createdByRun"]
    assert made_by is not None
    for key in ("id", "createdAt", "state", "args", "nominalStartTime", "nominalEndTime"):
        assert made_by[key] == run[key], key
    outputs = marquez.get(f"/jobs/runs/{run['id']}")["outputDatasetVersions"]
    assert [o["datasetVersionId"]["version"] for o in outputs] == [versions[0]["version"]]


def _status(answer: Any) -> int:
    return int(answer.status_code)


def test_what_does_not_exist_is_not_found(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    assert _status(marquez.status("GET", f"/namespaces/{ns}/datasets/not-existing")) == 404
    missing_version = f"/namespaces/{ns}/datasets/not-existing/versions/{uuid.uuid4()}"
    assert _status(marquez.status("GET", missing_version)) == 404
    assert _status(marquez.status("GET", "/namespaces/non-existing/datasets/x")) == 404
    body = {"type": "DB_TABLE", "physicalName": "t", "sourceName": source}
    unknown_run = marquez.status(
        "PUT", f"/namespaces/{ns}/datasets/t", {**body, "runId": str(uuid.uuid4())}
    )
    assert _status(unknown_run) == 404 and "run" in unknown_run.json()["message"]
    unknown_source = marquez.status(
        "PUT", f"/namespaces/{ns}/datasets/t", {**body, "sourceName": "not-exists"}
    )
    assert _status(unknown_source) == 404


def test_runs_marked_failed_and_aborted(marquez: Marquez, ns: str) -> None:
    _setup(marquez, ns)
    marquez.client.create_job(ns, "job", JobType.BATCH, "https://git/job")
    for mark, state in (("failed", "FAILED"), ("aborted", "ABORTED")):
        run_id = str(uuid.uuid4())
        marquez.client.create_job_run(ns, "job", run_id=run_id)
        run = getattr(marquez.client, f"mark_job_run_as_{mark}")(run_id)
        assert run["id"] == run_id and run["state"] == state


def test_update_output_dataset(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    marquez.client.create_dataset(ns, "my-output-ds", DatasetType.DB_TABLE, "out", source)
    marquez.client.create_job(
        ns, "job", JobType.BATCH, "https://git/job", outputs=[DatasetId(ns, "my-output-ds")]
    )
    run = marquez.client.create_job_run(ns, "job")
    marquez.client.create_dataset(
        ns, "my-output-ds", DatasetType.DB_TABLE, "out", source, run_id=run["id"]
    )
    done = marquez.client.mark_job_run_as_completed(run["id"])
    assert done["state"] == "COMPLETED"
    current = marquez.client.get_dataset(ns, "my-output-ds")["currentVersion"]
    [made] = marquez.get(f"/jobs/runs/{run['id']}")["outputDatasetVersions"]
    assert made["datasetVersionId"]["version"] == current


def test_a_past_runs_job_facets_are_its_own(marquez: Marquez, ns: str) -> None:
    """``/jobs/runs/{id}/facets?type=job``: the SQL that run ran, not a later edit's."""

    def event(run_id: str, at: str, query: str) -> dict[str, Any]:
        job = {"namespace": ns, "name": "report", "facets": {"sql": facet(query=query)}}
        return run_event(run_id=run_id, job=job, at=at)

    old, new = str(uuid.uuid4()), str(uuid.uuid4())
    marquez.send(
        event(old, "2026-11-20T10:00:00Z", "SELECT 1"),
        event(new, "2026-11-21T10:00:00Z", "SELECT 2"),
    )
    facets = marquez.get(f"/jobs/runs/{old}/facets", type="job")["facets"]
    assert facets["sql"]["query"] == "SELECT 1"
    assert marquez.get(f"/jobs/runs/{new}/facets", type="job")["facets"]["sql"]["query"] == (
        "SELECT 2"
    )


def test_writes_marquez_refuses_are_refused(marquez: Marquez, ns: str) -> None:
    source = _setup(marquez, ns)
    marquez.client.create_dataset(ns, "t", DatasetType.DB_TABLE, "t", source, fields=[_field("a")])
    tag_missing_field = marquez.status("POST", f"/namespaces/{ns}/datasets/t/fields/nope/tags/PII")
    assert _status(tag_missing_field) == 404 and "nope" in tag_missing_field.json()["message"]
    assert _status(marquez.status("POST", f"/namespaces/{ns}/datasets/t/fields/a/tags/PII")) == 200

    marquez.client.create_job(ns, "job", JobType.BATCH, "https://git/job")
    marquez.client.create_job(ns, "other", JobType.BATCH, "https://git/other")
    run_id = str(uuid.uuid4())
    marquez.client.create_job_run(ns, "job", run_id=run_id)
    again = marquez.status("POST", f"/namespaces/{ns}/jobs/job/runs", {"id": run_id})
    assert _status(again) == 409 and run_id in again.json()["message"]  # Marquez: 400

    job = {"type": "BATCH", "location": "https://git/job"}
    unknown_run = {**job, "runId": str(uuid.uuid4())}
    assert _status(marquez.status("PUT", f"/namespaces/{ns}/jobs/job", unknown_run)) == 404
    others_run = {**job, "runId": run_id}
    assert _status(marquez.status("PUT", f"/namespaces/{ns}/jobs/other", others_run)) == 404
    assert _status(marquez.status("PUT", f"/namespaces/{ns}/jobs/job", others_run)) == 200
    no_dataset = {**job, "inputs": [{"namespace": ns, "name": "missing"}]}
    answer = marquez.status("PUT", f"/namespaces/{ns}/jobs/job", no_dataset)
    assert _status(answer) == 404 and "missing" in answer.json()["message"]


@pytest.mark.parametrize("field", [{"type": "INT"}, {"name": "", "type": "INT"}])
def test_a_schema_field_without_a_name_is_refused(
    marquez: Marquez, ns: str, field: dict[str, Any]
) -> None:
    written = {"namespace": ns, "name": "o", "facets": {"schema": facet(fields=[field])}}
    event = run_event(job="j", namespace=ns, outputs=[written])
    answer = httpx.post(f"{marquez.api}/lineage", json=event, timeout=30)
    assert answer.status_code == 422
    assert answer.json()["details"]["path"] == "$.outputs[0].facets.schema.fields[0].name"


def test_a_runs_dataset_versions_carry_its_input_and_output_facets(
    marquez: Marquez, ns: str
) -> None:
    """dbt's test results as input facets, output statistics as output facets."""
    quality = {
        "_producer": "https://p",
        "_schemaURL": "https://s",
        "assertions": [{"assertion": "not_null", "success": True, "column": "id"}],
    }
    stats = {"_producer": "https://p", "_schemaURL": "https://s", "rowCount": 7, "size": 70}
    run_id = str(uuid.uuid4())
    read = {"namespace": ns, "name": "src", "inputFacets": {"dataQualityAssertions": quality}}
    wrote = {"namespace": ns, "name": "dst", "outputFacets": {"outputStatistics": stats}}
    marquez.send(
        run_event(run_id=run_id, job="dbt_model", namespace=ns, inputs=[read], outputs=[wrote])
    )
    for run in (
        marquez.get(f"/jobs/runs/{run_id}"),
        marquez.get(f"/namespaces/{ns}/jobs/dbt_model/runs")["runs"][0],
    ):
        [read] = run["inputDatasetVersions"]
        assert read["facets"] == {"dataQualityAssertions": quality}
        [wrote] = run["outputDatasetVersions"]
        assert wrote["facets"] == {"outputStatistics": stats}


def test_a_dataset_shows_the_input_facets_its_readers_sent(marquez: Marquez, ns: str) -> None:
    """As Marquez's dataset and version views: a reader's dataQualityAssertions on the
    version it read, the later reader's over the earlier one's; another dataset's stay out."""

    def quality(success: bool) -> dict[str, Any]:
        said = [{"assertion": "not_null", "success": success, "column": "id"}]
        return {"_producer": "https://p", "_schemaURL": "https://s", "assertions": said}

    marquez.send(run_event(job="load", namespace=ns, outputs=[(ns, "orders")]))
    for at, ok in (("2024-05-01T11:00:00Z", True), ("2024-05-01T12:00:00Z", False)):
        read = {
            "namespace": ns,
            "name": "orders",
            "inputFacets": {"dataQualityAssertions": quality(ok)},
        }
        other = {"namespace": ns, "name": "refunds", "inputFacets": {"extra": quality(ok)}}
        marquez.send(run_event(job="check", namespace=ns, at=at, inputs=[read, other]))
    dataset = marquez.client.get_dataset(ns, "orders")
    [version] = marquez.get(f"/namespaces/{ns}/datasets/orders/versions")["versions"]
    one = marquez.get(f"/namespaces/{ns}/datasets/orders/versions/{version['version']}")
    for shown in (dataset, version, one):
        assert shown["facets"]["dataQualityAssertions"] == quality(False)
        assert "extra" not in shown["facets"]


def test_a_dataset_only_read_shows_the_schema_its_readers_sent(marquez: Marquez, ns: str) -> None:
    schema = {"_producer": "https://p", "_schemaURL": "https://s", "fields": [{"name": "id"}]}
    read = {"namespace": ns, "name": "only_read", "facets": {"schema": schema}}
    marquez.send(run_event(job="reader", namespace=ns, inputs=[read]))
    assert [f["name"] for f in marquez.client.get_dataset(ns, "only_read")["fields"]] == ["id"]
