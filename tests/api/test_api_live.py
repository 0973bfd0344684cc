"""A real uvicorn server: openlineage-python sends (gzip, API key), marquez-python reads."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import marquez_client
import pytest
import sqlalchemy as sa

from live_server import serving
from strata.api import create_app
from strata.settings import Settings

WRITE, READ = "w-token", "r-token"


@pytest.fixture
def server(settings: Settings, engine: sa.Engine) -> Iterator[str]:
    import dataclasses

    secured = dataclasses.replace(
        settings, write_tokens=(WRITE,), read_tokens=(READ,), lineage_fold="process"
    )
    with serving(create_app(secured, engine)) as url:
        yield url


def test_openlineage_client_to_marquez_client(server: str) -> None:
    import requests
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import (
        InputDataset,
        Job,
        OutputDataset,
        Run,
        RunEvent,
        RunState,
    )
    from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport

    transport = HttpTransport(
        HttpConfig(
            url=server,
            compression="gzip",  # type: ignore[arg-type]
            auth=ApiKeyTokenProvider({"apiKey": WRITE}),
        )
    )
    client = OpenLineageClient(transport=transport)
    run_id = str(uuid.uuid4())
    job = Job(namespace="live", name="daily.load")
    for state in (RunState.START, RunState.COMPLETE):
        client.emit(
            RunEvent(
                eventType=state,
                eventTime=datetime.now(UTC).isoformat(),
                run=Run(runId=run_id),
                job=job,
                producer="https://example.com/live-test",
                inputs=[InputDataset(namespace="live", name="src/raw")],
                outputs=[OutputDataset(namespace="live", name="dst/clean")],
            )
        )
        time.sleep(0.01)

    mq = marquez_client.MarquezClient(server, api_key=READ)
    assert "live" in [n["name"] for n in mq.list_namespaces()["namespaces"]]
    got = mq.get_job("live", "daily.load")
    assert got["name"] == "daily.load" and got["latestRun"]["state"] == "COMPLETED"
    runs = mq.list_job_runs("live", "daily.load")["runs"]
    assert [r["id"] for r in runs] == [run_id]
    assert mq.get_job_run(run_id)["state"] == "COMPLETED"
    ds = mq.get_dataset("live", "dst/clean")
    assert ds["name"] == "dst/clean" and ds["currentVersion"]
    assert mq.list_dataset_versions("live", "dst/clean")["versions"]

    # Auth: no token 401, a read token may not write.
    assert requests.get(f"{server}/api/v1/namespaces", timeout=5).status_code == 401
    r = requests.put(
        f"{server}/api/v1/namespaces/x",
        json={"ownerName": "me"},
        headers={"Authorization": f"Bearer {READ}"},
        timeout=5,
    )
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    r = requests.put(
        f"{server}/api/v1/namespaces/x",
        json={"ownerName": "me"},
        headers={"Authorization": f"Bearer {WRITE}"},
        timeout=5,
    )
    assert r.status_code == 200
    assert requests.get(f"{server}/openapi.json", timeout=5).status_code == 200
