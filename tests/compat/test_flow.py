"""Marquez's ``FlowIntegrationTest``: a job reading and writing the same dataset through
the write API, in four orders of calls; the version it read is never the one it wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from marquez_api import Marquez
from marquez_client.models import DatasetId, DatasetType, JobType

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DATASET = "test-same-io-dataset"


class Flow:
    """The namespace, a source, and ``createDataset``/``createJob`` with an optional run."""

    def __init__(self, marquez: Marquez, ns: str) -> None:
        self.marquez, self.ns = marquez, ns
        marquez.client.create_namespace(ns, "me")
        marquez.client.create_source(f"{ns}_db", "POSTGRESQL", "postgresql://db.example.com/x")
        marquez.client.create_tag("PII")
        marquez.client.create_tag("SENSITIVE")

    def dataset(self, run_id: str | None = None) -> None:
        field = {"name": "test_field1", "type": "BOOL", "tags": ["SENSITIVE"]}
        self.marquez.client.create_dataset(
            self.ns, DATASET, DatasetType.DB_TABLE, "public.table", f"{self.ns}_db",
            fields=[field], tags=["PII"], description="a table", run_id=run_id,
        )  # fmt: skip

    def job(self, run_id: str | None = None) -> None:
        same = [DatasetId(self.ns, DATASET)]
        self.marquez.client.create_job(
            self.ns, "job", JobType.BATCH, "https://git/job", inputs=same, outputs=same,
            description="a job", run_id=run_id,
        )  # fmt: skip

    def run(self) -> str:
        return str(self.marquez.client.create_job_run(self.ns, "job")["id"])

    def mark(self, run_id: str, state: str) -> None:
        mark = {"RUNNING": self.marquez.client.mark_job_run_as_started}.get(
            state, self.marquez.client.mark_job_run_as_completed
        )
        mark(run_id)


def _dataset_api(flow: Flow, run: str) -> None:
    flow.dataset(run)
    flow.mark(run, "COMPLETED")


def _job_run_id_updated(flow: Flow, run: str) -> None:
    flow.mark(run, "RUNNING")
    flow.job(run)
    flow.dataset(run)
    flow.mark(run, "COMPLETED")


def _job_run_id_updated_at_the_end(flow: Flow, run: str) -> None:
    flow.mark(run, "RUNNING")
    flow.mark(run, "COMPLETED")
    flow.job(run)


def _job_and_dataset_api(flow: Flow, run: str) -> None:
    flow.job(run)
    flow.dataset(run)
    flow.mark(run, "COMPLETED")


@pytest.mark.parametrize(
    "steps",
    [_dataset_api, _job_run_id_updated, _job_run_id_updated_at_the_end, _job_and_dataset_api],
    ids=["dataset-api", "job-run-id-updated", "job-run-id-at-the-end", "only-one-output"],
)
def test_the_version_read_is_not_the_version_written(
    marquez: Marquez, ns: str, steps: Callable[[Flow, str], None]
) -> None:
    flow = Flow(marquez, ns)
    flow.dataset()
    flow.job()
    run = flow.run()
    steps(flow, run)
    body: dict[str, Any] = marquez.get(f"/jobs/runs/{run}")
    read = [v["datasetVersionId"] for v in body["inputDatasetVersions"]]
    wrote = [v["datasetVersionId"] for v in body["outputDatasetVersions"]]
    assert read and wrote
    for version in [*read, *wrote]:
        assert (version["namespace"], version["name"]) == (ns, DATASET)
    assert not {v["version"] for v in read} & {v["version"] for v in wrote}
    if steps is _job_and_dataset_api:
        assert len(wrote) == 1
