"""The example pipeline on a Spark standalone cluster: the `strata` CLI is the driver, a
worker on this machine runs the executors, the store is PostgreSQL and the lake a local
folder every executor sees.

The drivers are processes of their own, so the suite's shared local SparkSession is left
alone. Strata is run as it is deployed: no test hook, only STRATA_* settings.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from standalone import Standalone, spark_env, standalone

pytestmark = pytest.mark.cluster
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "experiments"
UDF_PIPELINES = Path(__file__).resolve().parents[1] / "builds" / "udf_pipelines"
FIRST_HOUR = datetime(2026, 11, 23, 21, tzinfo=UTC)
HOURS = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    with standalone(tmp_path_factory.mktemp("standalone")) as running:
        yield running


class Driver:
    """`strata …` in a process of its own, configured by STRATA_* variables alone."""

    def __init__(self, cluster: Standalone, database_url: str, folder: Path) -> None:
        self.folder = folder
        self.env = spark_env()
        self.env.update(
            STRATA_SPARK_MASTER=cluster.url,
            STRATA_DATABASE_URL=database_url,
            STRATA_LAKE_URI=(folder / "lake").as_uri(),
            STRATA_HOME=str(folder / "home"),
            STRATA_PIPELINES=f"{EXAMPLE / 'pipelines'},{folder / 'udf'}",
        )
        # Strata gives the Python workers the driver's interpreter by itself.
        self.env.pop("PYSPARK_PYTHON", None)

    def run(self, *args: str) -> str:
        t0 = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "strata.cli", *args],
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        print(f"strata {args[0]}: {time.monotonic() - t0:.1f} s")
        assert done.returncode == 0, f"strata {' '.join(args)}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json"))


def hours_of_clicks(folder: Path) -> tuple[Path, list[Path]]:
    """The example's experiments and ``HOURS`` hours of its clickstream, as Parquet."""
    spec = importlib.util.spec_from_file_location("cluster_clickstream", EXAMPLE / "clickstream.py")
    assert spec is not None and spec.loader is not None
    clickstream = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = clickstream  # its dataclasses look the module up there
    spec.loader.exec_module(clickstream)
    experiments = folder / "experiments.parquet"
    pq.write_table(clickstream.experiments_table(FIRST_HOUR.date()), experiments)
    clicks = []
    for n in range(HOURS):
        hour = FIRST_HOUR + timedelta(hours=n)
        path = folder / "clicks" / f"{hour:%Y%m%dT%H}.parquet"
        path.parent.mkdir(exist_ok=True)
        pq.write_table(clickstream.batch(hour, 7, FIRST_HOUR), path, coerce_timestamps="us")
        clicks.append(path)
    return experiments, clicks


def test_the_example_pipeline_runs_on_the_cluster(
    cluster: Standalone, pg_databases: Any, tmp_path: Path
) -> None:
    shutil.copytree(UDF_PIPELINES, tmp_path / "udf")
    strata = Driver(cluster, pg_databases.new(), tmp_path)
    experiments, clicks = hours_of_clicks(tmp_path)
    strata.run("init")  # PostgreSQL is migrated by `strata init`, once
    # A small local file is read on the driver without Spark: no cluster application.
    strata.run("ingest", str(experiments), "raw/experiments", "--type", "SNAPSHOT")
    # Two hours in one APPEND, read by the cluster (each driver start is an application).
    strata.run("ingest", "--spark", str(clicks[0].parent), "raw/clicks", "--format", "parquet")
    built = strata.json("build", "--all")
    assert built["state"] == "COMPLETED", built

    # The catalog: every version with its exact inputs and program version.
    status = {d["name"]: d for d in strata.json("status")["datasets"]}
    assert not [name for name, d in status.items() if d["stale"]], status
    raw = strata.json("versions", "raw/clicks")
    assert [(v["commit_id"], v["type"]) for v in raw] == [(1, "APPEND")]
    assert raw[0]["row_count"] == sum(pq.read_metadata(p).num_rows for p in clicks)
    result = strata.json("history", "metrics/experiment_cumulative")["versions"]
    assert [v["inputs"] for v in result] == [{"metrics/customer_daily": 1, "raw/experiments": 1}]
    assert result[0]["program"]["ordinal"] == 1 and result[0]["state"] == "COMPLETED"
    cleaned = strata.json("history", "clean/clicks")["versions"]
    assert [v["inputs"] for v in cleaned] == [{"raw/clicks": 1}]

    # Python reached the executors: the pipeline folder's code, on the driver's interpreter.
    loud = [
        json.loads(line) for line in strata.run("read", "loud/experiments", "--json").splitlines()
    ]
    assert loud and {r["python"] for r in loud} == {sys.prefix}
    assert all(r["description"].endswith("!") for r in loud)

    # The work ran on the worker: one application per driver, each with an executor there
    # that wrote its logs into the worker's folder.
    master = cluster.master()
    apps = {a["id"]: a for a in master["completedapps"]}
    assert not master["activeapps"]
    assert [(a["name"], a["state"]) for a in apps.values()] == [("strata", "FINISHED")] * 2
    finished = {e["appid"] for e in cluster.worker()["finishedexecutors"]}
    assert finished == set(apps)
    for app in apps:
        logs = [p.read_text(errors="replace") for p in (cluster.work_dir / app).glob("*/stderr")]
        assert any("Finished task" in log for log in logs), f"{app}: no task ran"
