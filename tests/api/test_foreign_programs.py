"""Program versions of jobs Strata does not build: a dbt model whose SQL changed, a job
whose code moved to a new commit. openlineage-python sends the events to a real server;
the versions are read over HTTP and with `strata history --job`."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
import sqlalchemy as sa
from typer.testing import CliRunner

from live_server import serving
from strata.api import create_app
from strata.cli.main import app as cli
from strata.settings import Settings

ORDERS_V1 = "select id, amount from raw.orders"
ORDERS_V2 = "select id, amount, currency from raw.orders where amount > 0"


@pytest.fixture
def server(settings: Settings, engine: sa.Engine) -> Iterator[str]:
    import dataclasses

    pipelines = settings.home / "pipelines"  # none: this store's jobs are all foreign
    pipelines.mkdir(parents=True, exist_ok=True)
    served = dataclasses.replace(settings, lineage_fold="process", pipelines=(str(pipelines),))
    with serving(create_app(served, engine)) as url:
        yield url


def _emit(
    server: str, job: str, facets: dict[str, Any], at: datetime, end: str = "COMPLETE"
) -> str:
    """One run of ``job`` in namespace ``dbt`` (START then ``end``), with these job
    facets; returns its run id."""
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent
    from openlineage.client.event_v2 import RunState as S
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    client = OpenLineageClient(transport=HttpTransport(HttpConfig(url=server)))
    run_id = str(uuid.uuid4())
    for i, state in enumerate((S.START, S[end])):
        client.emit(
            RunEvent(
                eventType=state,
                eventTime=(at + timedelta(seconds=i)).isoformat(),
                run=Run(runId=run_id),
                job=Job(namespace="dbt", name=job, facets=facets),
                producer="https://example.com/dbt-like",
                inputs=[InputDataset(namespace="warehouse", name="raw.orders")],
                outputs=[OutputDataset(namespace="warehouse", name=f"marts.{job}")],
            )
        )
    return run_id


def _versions(server: str, job: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while True:  # the fold runs beside the server: wait until it has every run
        got = requests.get(f"{server}/api/v1/namespaces/dbt/jobs/{job}/versions", timeout=10)
        assert got.status_code == 200, got.text
        versions: list[dict[str, Any]] = got.json()["versions"]
        if all(v["latestRun"] and v["latestRun"]["state"] == "COMPLETED" for v in versions) or (
            time.monotonic() > deadline
        ):
            return versions
        time.sleep(0.1)


def _history(settings: Settings, *args: str) -> Any:
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    result = CliRunner().invoke(cli, [*where, "--home", str(settings.home), "history", *args])
    return result


def test_a_changed_query_is_a_new_job_version(server: str, settings: Settings) -> None:
    from openlineage.client.facet_v2 import sql_job

    t0 = datetime(2026, 11, 20, 6, tzinfo=UTC)
    first = _emit(server, "orders", {"sql": sql_job.SQLJobFacet(query=ORDERS_V1)}, t0)
    again = _emit(server, "orders", {"sql": sql_job.SQLJobFacet(query=ORDERS_V1)}, t0 + HOUR)
    changed = _emit(server, "orders", {"sql": sql_job.SQLJobFacet(query=ORDERS_V2)}, t0 + 2 * HOUR)

    versions = _versions(server, "orders")
    assert len(versions) == 2  # the same query twice is one version
    newest, oldest = versions
    assert newest["programFacets"] == oldest["programFacets"] == ["sql"]
    assert newest["latestRun"]["id"] == changed and oldest["latestRun"]["id"] == again
    assert newest["fingerprint"] != oldest["fingerprint"]
    run = requests.get(f"{server}/api/v1/jobs/runs/{first}", timeout=10).json()
    assert run["jobVersion"]["version"] == oldest["version"]

    result = _history(settings, "--job", "orders", "--namespace", "dbt", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert [v["version"] for v in shown["versions"]] == [v["version"] for v in versions]
    assert [v["latest_run"]["id"] for v in shown["versions"]] == [changed, again]
    assert shown["versions"][0]["inputs"] == ["warehouse:raw.orders"]

    table = _history(settings, "--job", "orders", "--namespace", "dbt")
    assert table.exit_code == 0, table.output
    assert "versions of job orders in dbt" in table.stdout and "sql" in table.stdout


def test_a_new_commit_of_the_code_is_a_new_job_version(server: str) -> None:
    from openlineage.client.facet_v2 import source_code_location_job as loc

    t0 = datetime(2026, 11, 21, 6, tzinfo=UTC)
    url = "https://git.example.com/shop/models/orders.sql"
    for i, commit in enumerate(("4f2a9c1", "4f2a9c1", "b77d301")):
        facet = loc.SourceCodeLocationJobFacet(type="git", url=url, version=commit)
        _emit(server, "located", {"sourceCodeLocation": facet}, t0 + i * HOUR)
    _emit(server, "plain", {}, t0)

    versions = _versions(server, "located")
    assert len(versions) == 2
    assert {tuple(v["programFacets"]) for v in versions} == {("sourceCodeLocation",)}
    assert _versions(server, "plain")[0]["programFacets"] == []  # its io alone


def test_history_of_a_job_names_where_it_is(server: str, settings: Settings) -> None:
    _emit(server, "orders", {}, datetime(2026, 11, 22, tzinfo=UTC))
    _versions(server, "orders")

    elsewhere = _history(settings, "--job", "orders")  # the lake's namespace by default
    assert elsewhere.exit_code == 1
    assert "job 'orders' not found in namespace" in elsewhere.stderr
    assert "pass --namespace dbt" in elsewhere.stderr

    both = _history(settings, "raw/orders", "--job", "orders")
    assert both.exit_code == 1 and "name a dataset or a job" in both.stderr
    neither = _history(settings)
    assert neither.exit_code == 1 and "name a dataset or a job" in neither.stderr


HOUR = timedelta(hours=1)


def _foreign_status(settings: Settings, *extra: str) -> list[dict[str, Any]]:
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    pipelines = settings.home / "pipelines"
    args = [*where, "--home", str(settings.home), *extra, "status", "--json"]
    args += ["--pipeline", str(pipelines)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)["datasets"]
    return [d for d in found if d["kind"] == "foreign"]


def test_status_says_a_foreign_dataset_lags_its_jobs_program(
    server: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openlineage.client.facet_v2 import sql_job

    t0 = datetime(2026, 11, 23, 6, tzinfo=UTC)
    wrote = _emit(server, "orders", {"sql": sql_job.SQLJobFacet(query=ORDERS_V1)}, t0)
    _versions(server, "orders")
    assert _foreign_status(settings) == []  # written by the job's newest program

    failed = _emit(
        server, "orders", {"sql": sql_job.SQLJobFacet(query=ORDERS_V2)}, t0 + HOUR, end="FAIL"
    )
    deadline = time.monotonic() + 10
    while not (found := _foreign_status(settings)) and time.monotonic() < deadline:
        time.sleep(0.1)
    [row] = found
    assert (row["namespace"], row["name"], row["state"]) == (
        "warehouse",
        "marts.orders",
        "out_of_date",
    )
    [cause] = row["causes"]
    assert cause["kind"] == "program_changed" and cause["foreign_job"] == {
        "namespace": "dbt",
        "name": "orders",
    }
    assert cause["old"]["run"] == wrote and cause["old"]["program_facets"] == ["sql"]
    assert cause["newest_run"] == {"id": failed, "state": "FAILED"}
    versions = _versions(server, "orders")
    assert cause["new"]["version"] == versions[0]["version"] != cause["old"]["version"]
    assert "job dbt:orders is at sql" in cause["text"] and "FAILED" in cause["text"]

    api = requests.get(f"{server}/api/v1/strata/status", timeout=10).json()["datasets"]
    assert [d for d in api if d["kind"] == "foreign"] == found
    monkeypatch.setenv("STRATA_FOREIGN_STATUS", "0")
    assert _foreign_status(settings) == []  # switched off
    monkeypatch.delenv("STRATA_FOREIGN_STATUS")

    _emit(server, "orders", {"sql": sql_job.SQLJobFacet(query=ORDERS_V2)}, t0 + 2 * HOUR)
    deadline = time.monotonic() + 10
    while _foreign_status(settings) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _foreign_status(settings) == []  # the new program ran to completion
