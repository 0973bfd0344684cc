"""The rest of Marquez's ``OpenLineageIntegrationTest``: events refused, events read back
in order and by time, a parent facet's job deleted, and its corpus of events replayed."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from marquez_api import Marquez

from ol_events import facet, run_event

CORPUS = Path(__file__).parents[3] / "shared" / "conformance" / "events" / "marquez"
REPLAYED = [  # ``data()``: Marquez leaves event_large.json out (FIXME there)
    "event_full.json",
    "event_simple.json",
    "event_without_schema_url.json",
    "event_required_only.json",
    "event_unicode.json",
    "null_nominal_end_time.json",
    "event_namespace_naming.json",
]


def _post(marquez: Marquez, body: str | dict[str, Any]) -> httpx.Response:
    content = body if isinstance(body, str) else json.dumps(body)
    headers = {"content-type": "application/json"}
    return httpx.post(f"{marquez.api}/lineage", content=content, headers=headers, timeout=30)


def test_a_namespace_with_an_emoji_is_taken_and_reads_back(marquez: Marquez, ns: str) -> None:
    """Marquez refuses it (400: its namespace names are ASCII); Strata takes any
    non-empty name without NUL and answers it exactly."""
    bad = f"sqlserver://myhost:3342;user=auser;password=\U0001f602\U0001f602;database={ns}"
    event = run_event(job="job_name", namespace=ns, inputs=[(bad, "the_table")])
    assert _post(marquez, event).status_code == 201
    assert marquez.client.get_dataset(bad, "the_table")["namespace"] == bad
    assert bad in {n["name"] for n in marquez.client.list_namespaces(limit=10_000)["namespaces"]}


_VALID = {
    "eventTime": "2021-11-03T10:53:52.427343",
    "eventType": "COMPLETE",
    "inputs": [{"facets": {}, "name": "SOURCE_TABLE_1", "namespace": "testing_namespace_1"}],
    "job": {"facets": {}, "name": "testing_name_1", "namespace": "testing_namespace_1"},
    "outputs": [],
    "producer": "me",
    "run": {"facets": {}, "runId": "dae0d60a-6010-4c37-980e-c5270f5a6be4"},
}
_PARENT_WITHOUT_RUN = {
    "_producer": "me",
    "_schemaURL": "https://me",
    "run": {},
    "job": {"namespace": "my-scheduler-namespace", "name": "myjob.mytask"},
}
_BAD_SCHEMA = {"fields": [{"assertion": "a", "success": True}], **facet()}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"inputs": [{"facets": {}, "name": None, "namespace": "n"}]}, "$.inputs[0].name"),
        (
            {"outputs": [{"name": "T", "namespace": "n", "facets": {"schema": _BAD_SCHEMA}}]},
            "$.outputs[0].facets.schema.fields[0].name",
        ),
        ({"job": {"facets": {}, "name": None, "namespace": "n"}}, "$.job.name"),
        ({"run": {"facets": {}, "runId": None}}, "$.run.runId"),
        (
            {"run": {"facets": {"parent": _PARENT_WITHOUT_RUN}, "runId": str(uuid.uuid4())}},
            "$.run.facets.parent.run.runId",
        ),
    ],
    ids=["input-null-name", "schema-fields-invalid", "job-null-name", "null-run-id", "parent-run"],
)
def test_events_failing_validation_are_refused(
    marquez: Marquez, change: dict[str, Any], path: str
) -> None:
    answer = _post(marquez, {**_VALID, **change})
    assert answer.status_code == 422, answer.text
    assert answer.json()["details"]["path"] == path


def test_an_event_time_without_a_time_is_refused_naming_it(marquez: Marquez) -> None:
    body = {**_VALID, "eventTime": "2021-11-03", "eventType": "START"}
    answer = _post(marquez, body)
    assert answer.status_code == 422  # Marquez: 400 with Jackson's message
    assert "2021-11-03" in answer.text and answer.json()["details"]["path"] == "$.eventTime"


def test_the_lineage_of_a_dataset_that_does_not_exist_is_not_found(marquez: Marquez) -> None:
    answer = marquez.status("GET", "/lineage?nodeId=dataset:Imadethisup:andthistoo")
    assert answer.status_code == 404 and "andthistoo" in answer.json()["message"]


def _events_of(marquez: Marquez, run_id: str, **params: Any) -> list[dict[str, Any]]:
    """The run's events as ``/events/lineage`` lists them (other tests' events left out)."""
    events = marquez.get("/events/lineage", limit=10_000, **params)["events"]
    return [e for e in events if e["run"]["runId"] == run_id]


def _output_event(ns: str, run_id: str, event_type: str, at: datetime) -> dict[str, Any]:
    return run_event(
        event_type,
        run_id,
        job="job",
        namespace=ns,
        at=at.isoformat().replace("+00:00", "Z"),
        outputs=[(ns, "table")],
        run={"runId": run_id, "facets": {}},
    )


def test_an_event_is_read_back_as_it_was_sent(marquez: Marquez, ns: str) -> None:
    run_id = str(uuid.uuid4())
    sent = _output_event(ns, run_id, "COMPLETE", datetime.now(UTC))
    marquez.send(sent)
    assert _events_of(marquez, run_id) == [sent]


@pytest.mark.parametrize("direction", ["desc", "asc"])
def test_events_are_sorted_by_time(marquez: Marquez, ns: str, direction: str) -> None:
    run_id, now = str(uuid.uuid4()), datetime.now(UTC)
    first = _output_event(ns, run_id, "START", now)
    second = _output_event(ns, run_id, "COMPLETE", now + timedelta(seconds=10))
    marquez.send(first, second)
    expected = [second, first] if direction == "desc" else [first, second]
    params = {"sortDirection": direction} if direction == "asc" else {}
    assert _events_of(marquez, run_id, **params) == expected


def test_events_before_and_after_a_time(marquez: Marquez, ns: str) -> None:
    run_id = str(uuid.uuid4())
    after = datetime(2021, 1, 1, tzinfo=UTC)
    before = datetime(2022, 1, 1, tzinfo=UTC)
    first = _output_event(ns, run_id, "START", after - timedelta(days=365))
    second = _output_event(ns, run_id, "COMPLETE", after + timedelta(seconds=10))
    marquez.send(first, second)
    window = {"before": before.isoformat(), "after": after.isoformat(), "sortDirection": "asc"}
    assert _events_of(marquez, run_id, **window) == [second]


def test_a_job_made_from_a_parent_facet_and_its_child_deleted(marquez: Marquez, ns: str) -> None:
    parent = facet(run={"runId": str(uuid.uuid4())}, job={"namespace": ns, "name": "parent"})
    run = {"runId": str(uuid.uuid4()), "facets": {"parent": parent}}
    marquez.send(run_event(job="job", namespace=ns, at="2021-01-01T00:00:00Z", run=run))
    assert {j["name"] for j in marquez.client.list_jobs(ns)["jobs"]} == {"parent", "parent.job"}
    assert marquez.status("DELETE", f"/namespaces/{ns}/jobs/parent.job").status_code == 200
    assert [j["name"] for j in marquez.client.list_jobs(ns)["jobs"]] == ["parent"]


def _isolated(event: Any, suffix: str, runs: dict[str, str]) -> Any:
    """The event with every namespace suffixed and every run id replaced (consistently),
    so a replay shares nothing with earlier ones, as Marquez's cleaned database does."""
    if isinstance(event, list):
        return [_isolated(e, suffix, runs) for e in event]
    if not isinstance(event, dict):
        return event
    out = {k: _isolated(v, suffix, runs) for k, v in event.items()}
    if isinstance(out.get("namespace"), str):
        out["namespace"] += suffix
    if isinstance(out.get("runId"), str):
        out["runId"] = runs.setdefault(out["runId"], str(uuid.uuid4()))
    return out


def _without_data_quality(facets: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in facets.items() if "dataQuality" not in k}


@pytest.mark.parametrize("name", REPLAYED)
def test_a_corpus_event_reads_back_its_facets(marquez: Marquez, name: str) -> None:
    original = json.loads((CORPUS / "open_lineage" / name).read_text())
    event = _isolated(original, f"-{uuid.uuid4().hex[:8]}", {})
    assert _post(marquez, event).status_code == 201
    for member in [*event.get("inputs", []), *event.get("outputs", [])]:
        ns, ds = member["namespace"], member["name"]
        expected = member.get("facets", {})
        dataset = marquez.client.get_dataset(ns, ds)
        assert (dataset["namespace"], dataset["name"]) == (ns, ds)
        assert _without_data_quality(dataset["facets"]) == expected
        latest = marquez.client.list_dataset_versions(ns, ds)["versions"][0]
        assert _without_data_quality(latest["facets"]) == expected
    job = marquez.client.get_job(event["job"]["namespace"], event["job"]["name"])
    assert job["facets"] == event["job"].get("facets", {})
    run = marquez.client.get_job_run(event["run"]["runId"])
    assert run["facets"] == event["run"].get("facets", {})
