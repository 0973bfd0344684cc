"""Python that a transform hands to Spark (UDFs) runs on the executors, with the
pipeline folder's modules carried along and the driver's interpreter."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from strata.builds.service import BuildService
from strata.lake.service import Lake
from strata.settings import Settings

pytestmark = pytest.mark.spark
UDF_PIPELINES = Path(__file__).with_name("udf_pipelines")


def test_a_udf_from_a_pipeline_module_runs_on_the_executors(
    settings: Settings, tmp_path: Path, spark: object
) -> None:
    lake = Lake(settings)
    with lake.transaction("raw/experiments", type="SNAPSHOT") as txn:
        txn.write(pa.table({"experiment_id": ["e1", "e2"], "description": ["blue", None]}))
    folder = shutil.copytree(UDF_PIPELINES, tmp_path / "pipelines")
    service = BuildService(settings, [str(folder)], lake=lake)
    report = service.build(["loud/experiments"])
    assert [s.outcome for s in report.steps] == ["built"], [s.reason for s in report.steps]
    rows = sorted(lake.read_arrow("loud/experiments").to_pylist(), key=lambda r: r["experiment_id"])
    # The Python workers imported neither `loud` nor `_text` by name (they are not on
    # the workers' path): both travelled with the pickled functions.
    assert [(r["experiment_id"], r["description"]) for r in rows] == [("e1", "BLUE!"), ("e2", None)]
    assert {r["python"] for r in rows} == {sys.prefix}
    lake.engine.dispose()
