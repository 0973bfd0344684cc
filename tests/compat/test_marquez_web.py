"""The requests Marquez's web UI makes (``web/src/store/requests/*.ts`` in Marquez's
source), replayed against a server holding a small lineage: the views they feed work
when each answers as the UI reads it."""

from __future__ import annotations

import random
import urllib.parse
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from marquez_api import MARQUEZ_WEB_ORIGIN, Marquez
from test_openlineage_hierarchy import airflow_event


@pytest.fixture
def seeded(marquez: Marquez, ns: str) -> dict[str, str]:
    """A DAG run whose task read one dataset and wrote another."""
    # At a time of its own, so the events page's window finds it among other tests' events.
    at = datetime(2031, 1, 1, tzinfo=UTC) + timedelta(minutes=random.randrange(500_000))
    event = airflow_event(ns, "the_dag.task", str(uuid.uuid4()), "the_dag", at=at)
    schema = {"_producer": "https://p", "_schemaURL": "https://s", "fields": [{"name": "id"}]}
    event["inputs"] = [{"namespace": ns, "name": "in_table"}]
    event["outputs"] = [{"namespace": ns, "name": "out table", "facets": {"schema": schema}}]
    marquez.send(event)
    return {
        "ns": ns,
        "job": "the_dag.task",
        "run": event["run"]["runId"],
        "ds": "out table",
        "after": (at - timedelta(seconds=1)).isoformat(),
        "before": (at + timedelta(seconds=1)).isoformat(),
    }


def _get(marquez: Marquez, path: str, method: str = "GET", **body: Any) -> Any:
    # As the UI's proxy forwards them: with the page's Origin, allowed by the server.
    answer = httpx.request(
        method,
        f"{marquez.root}{path}",
        json=body or None,
        headers={"Origin": MARQUEZ_WEB_ORIGIN},
        timeout=30,
    )
    assert 200 <= answer.status_code < 300, f"{method} {path}: {answer.status_code} {answer.text}"
    return answer.json() if answer.content else None


def test_the_web_uis_requests_answer(marquez: Marquez, seeded: dict[str, str]) -> None:
    q = urllib.parse.quote
    ns, job, run, ds = (q(seeded[k], safe="") for k in ("ns", "job", "run", "ds"))
    api = "/api/v1"
    # namespaces.ts, datasets.ts
    assert seeded["ns"] in {n["name"] for n in _get(marquez, f"{api}/namespaces")["namespaces"]}
    listed = _get(marquez, f"{api}/namespaces/{ns}/datasets?limit=20&offset=0")
    assert {d["name"] for d in listed["datasets"]} == {"in_table", "out table"}
    assert _get(marquez, f"{api}/namespaces/{ns}/datasets/{ds}")["fields"][0]["name"] == "id"
    versions = _get(marquez, f"{api}/namespaces/{ns}/datasets/{ds}/versions?limit=10&offset=0")
    assert len(versions["versions"]) == 1
    # A page of a site not allowed cannot tag: the write is refused before it is made.
    refused = httpx.post(
        f"{marquez.root}{api}/namespaces/{ns}/datasets/{ds}/tags/PII",
        headers={"Origin": "http://elsewhere.example"},
        timeout=30,
    )
    assert refused.status_code == 403, refused.text
    assert _get(marquez, f"{api}/namespaces/{ns}/datasets/{ds}")["tags"] == []
    _get(marquez, f"{api}/namespaces/{ns}/datasets/{ds}/tags/PII", "POST")
    _get(marquez, f"{api}/namespaces/{ns}/datasets/{ds}/fields/id/tags/PII", "POST")
    _get(marquez, f"{api}/namespaces/{ns}/datasets/{ds}/fields/id/tags/PII", "DELETE")
    _get(marquez, f"{api}/namespaces/{ns}/datasets/{ds}/tags/PII", "DELETE")
    # jobs.ts: every namespace's jobs, one namespace's, with their last run's state
    everyone = _get(marquez, f"{api}/jobs?limit=100&offset=0")
    assert everyone["totalCount"] >= 2 and len(everyone["jobs"]) <= 100
    paged = {j["name"] for j in _get(marquez, f"{api}/jobs?limit=10000&offset=0")["jobs"]}
    assert seeded["job"] in paged
    mine = _get(marquez, f"{api}/namespaces/{ns}/jobs?limit=25&offset=0&lastRunStates=COMPLETED")
    assert {j["name"] for j in mine["jobs"]} == {"the_dag", seeded["job"]}  # the DAG's too
    failed = _get(marquez, f"{api}/namespaces/{ns}/jobs?lastRunStates=FAILED&lastRunStates=ABORTED")
    assert failed["jobs"] == [] and failed["totalCount"] == 2
    assert _get(marquez, f"{api}/namespaces/{ns}/jobs/{job}")["latestRun"]["id"] == seeded["run"]
    runs = _get(marquez, f"{api}/namespaces/{ns}/jobs/{job}/runs?limit=10&offset=0")
    assert [r["id"] for r in runs["runs"]] == [seeded["run"]]
    _get(marquez, f"{api}/namespaces/{ns}/jobs/{job}/tags/PII", "POST")
    _get(marquez, f"{api}/namespaces/{ns}/jobs/{job}/tags/PII", "DELETE")
    # facets.ts
    assert "airflow_version" in _get(marquez, f"{api}/jobs/runs/{run}/facets?type=run")["facets"]
    assert "sql" in _get(marquez, f"{api}/jobs/runs/{run}/facets?type=job")["facets"]
    # lineage.ts, columnlineage.ts
    graph = _get(marquez, f"{api}/lineage?nodeId=job:{ns}:{job}&depth=5")["graph"]
    assert f"dataset:{seeded['ns']}:out table" in {n["id"] for n in graph}
    column = _get(
        marquez, f"{api}/column-lineage?nodeId=dataset:{ns}:{ds}&depth=5&withDownstream=true"
    )
    assert {n["id"] for n in column["graph"]} == {f"datasetField:{seeded['ns']}:out table:id"}
    # events.ts
    events = _get(
        marquez,
        f"{api}/events/lineage?limit=20&before={q(seeded['before'])}&after={q(seeded['after'])}"
        "&offset=0&sortDirection=desc",
    )["events"]
    assert any(e["run"]["runId"] == seeded["run"] for e in events)
    # search.ts (and the v2beta search the UI's search box uses)
    hits = _get(marquez, f"{api}/search?q=the_dag&sort=NAME&limit=100&filter=JOB")["results"]
    assert any(h["name"] == seeded["job"] for h in hits)
    for kind in ("jobs", "datasets"):
        _get(marquez, f"/api/v2beta/search/{kind}?q=table")
    # tags.ts, intervalMetrics.ts, lineageMetrics.ts
    _get(marquez, f"{api}/tags/ui_tag", "PUT", description="from the UI")
    assert "ui_tag" in {t["name"] for t in _get(marquez, f"{api}/tags")["tags"]}
    for asset in ("jobs", "datasets", "sources"):
        for unit in ("DAY", "WEEK"):
            _get(marquez, f"{api}/stats/{asset}?period={unit}&timezone=Europe/Paris")
    _get(marquez, f"{api}/stats/lineage-events?period=DAY&timezone=UTC")
