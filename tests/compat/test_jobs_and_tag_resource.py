"""Marquez's ``JobResourceIntegrationTest`` and ``TagResourceIntegrationTest`` scenarios:
jobs, runs and job versions made through the write API, and tags added and removed."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from marquez_api import Marquez
from marquez_client.models import DatasetId, DatasetType, JobType

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LOCATION = "https://github.com/repo/test/commit/abc"


def _job(marquez: Marquez, ns: str, name: str = "job", **meta: Any) -> dict[str, Any]:
    """``createJob`` with ``JOB_META`` (a batch job without inputs or outputs)."""
    return marquez.client.create_job(
        ns, name, JobType.BATCH, meta.pop("location", LOCATION), **meta
    )


def _versions(marquez: Marquez, ns: str, job: str) -> list[dict[str, Any]]:
    return marquez.get(f"/namespaces/{ns}/jobs/{job}/versions", limit=5, offset=0)["versions"]


def _refused(answer: Any, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    return body


@pytest.fixture
def jns(marquez: Marquez, ns: str) -> str:
    """``setup()``: the namespace and a table source."""
    marquez.client.create_namespace(ns, "me")
    marquez.client.create_source(f"{ns}_db", "POSTGRESQL", "postgresql://db.example.com/x")
    return ns


def test_list_jobs_and_runs(marquez: Marquez, jns: str) -> None:
    _job(marquez, jns)
    marquez.client.create_job_run(jns, "job")
    assert [j["name"] for j in marquez.client.list_jobs(jns)["jobs"]] == ["job"]
    assert len(marquez.client.list_job_runs(jns, "job")["runs"]) == 1


def test_runs_of_jobs_that_do_not_exist_are_refused(marquez: Marquez, jns: str) -> None:
    answer = marquez.status("POST", f"/namespaces/{jns}/jobs/NotExists/runs", {})
    assert "NotExists" in _refused(answer, 404)["message"]
    assert _refused(marquez.status("GET", f"/namespaces/{jns}/jobs/not-existing"), 404)
    missing_versions = marquez.status("GET", f"/namespaces/{jns}/jobs/a fake job name/versions")
    assert "a fake job name" in _refused(missing_versions, 404)["message"]


def test_a_job_put_naming_another_jobs_run_or_a_missing_one_is_refused(
    marquez: Marquez, jns: str
) -> None:
    _job(marquez, jns)
    _job(marquez, jns, "DIFFERENT_JOB")
    run_id = str(uuid.uuid4())
    marquez.client.create_job_run(jns, "DIFFERENT_JOB", run_id=run_id)
    body = {"type": "BATCH", "location": LOCATION}
    others = marquez.status("PUT", f"/namespaces/{jns}/jobs/job", {**body, "runId": run_id})
    assert run_id in _refused(others, 404)["message"]
    missing = str(uuid.uuid4())
    answer = marquez.status("PUT", f"/namespaces/{jns}/jobs/job", {**body, "runId": missing})
    assert missing in _refused(answer, 404)["message"]
    absent = [{"namespace": jns, "name": "does-not-exist"}]
    answer = marquez.status(
        "PUT", f"/namespaces/{jns}/jobs/job", {**body, "inputs": absent, "outputs": absent}
    )
    assert "does-not-exist" in _refused(answer, 404)["message"]


def test_list_job_versions(marquez: Marquez, jns: str) -> None:
    _job(marquez, jns)
    first = str(uuid.uuid4())
    marquez.client.create_job_run(jns, "job", run_id=first)
    marquez.client.mark_job_run_as_completed(first)
    versions = _versions(marquez, jns, "job")
    assert len(versions) == 1 and versions[0]["latestRun"]["id"] == first

    second = str(uuid.uuid4())
    marquez.client.create_job_run(jns, "job", run_id=second)
    _job(marquez, jns, location="https://github.com/repo/test/commit/def", run_id=second)
    marquez.client.mark_job_run_as_completed(second)
    versions = _versions(marquez, jns, "job")
    assert len(versions) == 2 and versions[0]["latestRun"]["id"] == second


def test_get_a_job_version(marquez: Marquez, jns: str) -> None:
    _job(marquez, jns)
    run_id = str(uuid.uuid4())
    marquez.client.create_job_run(jns, "job", run_id=run_id)
    marquez.client.mark_job_run_as_completed(run_id)
    listed = _versions(marquez, jns, "job")[0]
    version = marquez.get(f"/namespaces/{jns}/jobs/job/versions/{listed['version']}")
    assert version["version"] == listed["version"]
    assert version["inputs"] == [] and version["outputs"] == []
    assert version["latestRun"]["id"] == run_id


def test_a_job_version_with_inputs_and_outputs(marquez: Marquez, jns: str) -> None:
    stream, table = f"{jns}_kafka", f"{jns}_db"
    marquez.client.create_source(stream, "KAFKA", "kafka://localhost:9092")
    marquez.client.create_dataset(
        jns, "topic", DatasetType.STREAM, "topic", stream, schema_location="http://registry/x"
    )
    fields = [{"name": "a", "type": "INTEGER"}]
    marquez.client.create_dataset(jns, "table", DatasetType.DB_TABLE, "table", table, fields=fields)
    marquez.client.create_job(
        jns,
        "newJob",
        JobType.BATCH,
        "https://github.com/repo/test/commit/new",
        inputs=[DatasetId(jns, "topic")],
        outputs=[DatasetId(jns, "table")],
    )
    run_id = str(uuid.uuid4())
    marquez.client.create_job_run(jns, "newJob", run_id=run_id)
    marquez.client.create_dataset(
        jns, "table", DatasetType.DB_TABLE, "table", table, fields=fields, run_id=run_id
    )
    marquez.client.mark_job_run_as_completed(run_id)
    listed = _versions(marquez, jns, "newJob")[0]
    assert listed["latestRun"]["id"] == run_id
    version = marquez.get(f"/namespaces/{jns}/jobs/newJob/versions/{listed['version']}")
    assert [i["name"] for i in version["inputs"]] == ["topic"]
    assert [o["name"] for o in version["outputs"]] == ["table"]


def test_delete_a_job(marquez: Marquez, jns: str) -> None:
    _job(marquez, jns)
    assert marquez.client.list_jobs(jns)["jobs"]
    _refused(marquez.status("DELETE", f"/namespaces/{jns}/jobs/job"), 200)
    assert marquez.client.list_jobs(jns)["jobs"] == []


def test_get_a_source(marquez: Marquez) -> None:
    name = f"source_{uuid.uuid4().hex[:8]}"
    made = marquez.client.create_source(name, "POSTGRESQL", "postgresql://h/db", "a source")
    read = marquez.client.get_source(name)
    for source in (made, read):
        assert source["name"] == name and source["type"] == "POSTGRESQL"
        assert source["connectionUrl"] == "postgresql://h/db"
        assert source["description"] == "a source"
        assert source["createdAt"] and source["updatedAt"]


def test_create_and_list_tags(marquez: Marquez) -> None:
    before = {t["name"] for t in marquez.client.list_tags()["tags"]}
    name = f"TAG_{uuid.uuid4().hex[:8]}"
    made = marquez.client.create_tag(name, "a new tag")
    after = marquez.client.list_tags()["tags"]
    assert {t["name"] for t in after} == before | {name}
    assert made in after


def _table(marquez: Marquez, ns: str) -> None:
    """``DB_TABLE_META``: fields tagged SENSITIVE, the table tagged PII."""
    marquez.client.create_namespace(ns, "me")
    marquez.client.create_source(f"{ns}_db", "POSTGRESQL", "postgresql://db.example.com/x")
    for tag in ("PII", "SENSITIVE", "TESTDATASETTAG", "TESTFIELDTAG"):
        marquez.client.create_tag(tag)
    fields = [{"name": "a", "type": "INTEGER", "tags": ["SENSITIVE"]}, {"name": "b"}]
    marquez.client.create_dataset(
        ns, "table", DatasetType.DB_TABLE, "table", f"{ns}_db", fields=fields, tags=["PII"]
    )


def test_a_dataset_tag_is_deleted(marquez: Marquez, ns: str) -> None:
    _table(marquez, ns)
    tagged = marquez.client.tag_dataset(ns, "table", "TESTDATASETTAG")
    assert set(tagged["tags"]) == {"PII", "TESTDATASETTAG"}
    untagged = _refused(
        marquez.status("DELETE", f"/namespaces/{ns}/datasets/table/tags/TESTDATASETTAG"), 200
    )
    assert untagged["tags"] == ["PII"]


def test_a_field_tag_is_deleted_and_a_second_tagging_changes_nothing(
    marquez: Marquez, ns: str
) -> None:
    _table(marquez, ns)
    for _ in range(2):  # the second time: ON CONFLICT DO NOTHING
        tagged = marquez.client.tag_dataset_field(ns, "table", "a", "TESTFIELDTAG")
        assert sorted(tagged["fields"][0]["tags"]) == ["SENSITIVE", "TESTFIELDTAG"]
    path = f"/namespaces/{ns}/datasets/table/fields/a/tags/TESTFIELDTAG"
    untagged = _refused(marquez.status("DELETE", path), 200)
    assert untagged["fields"][0]["tags"] == ["SENSITIVE"]


def test_a_job_tag_is_added_and_deleted(marquez: Marquez, ns: str) -> None:
    marquez.client.create_namespace(ns, "me")
    marquez.client.create_tag("TESTDATASETTAG")
    _job(marquez, ns)
    tagged = _refused(marquez.status("POST", f"/namespaces/{ns}/jobs/job/tags/TESTDATASETTAG"), 200)
    assert tagged["tags"] == ["TESTDATASETTAG"]
    path = f"/namespaces/{ns}/jobs/job/tags/TESTDATASETTAG"
    assert _refused(marquez.status("DELETE", path), 200)["tags"] == []
