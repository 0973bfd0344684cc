"""Python that a transform hands to Spark (UDFs) runs on the executors, with the
pipeline folder's modules carried along and the driver's interpreter."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from build_support import users

from strata.build.service import BuildService
from strata.lake.service import Lake
from strata.settings import Settings

pytestmark = pytest.mark.spark
UDF_PIPELINE = Path(__file__).with_name("udf_pipeline.py")


def udf_pipelines(folder: Path) -> Path:
    """A pipeline folder with the UDF pipeline and the helper module it imports."""
    folder.mkdir()
    shutil.copy(UDF_PIPELINE, folder / "loud.py")
    (folder / "_text.py").write_text(
        "def shout(value):\n    return None if value is None else value.upper() + '!'\n"
    )
    return folder


def test_a_udf_from_a_pipeline_module_runs_on_the_executors(
    settings: Settings, tmp_path: Path, spark: object
) -> None:
    lake = Lake(settings)
    with lake.transaction("raw/users", type="SNAPSHOT") as txn:
        txn.write(users(("ada", "uk"), ("bo", "jp")))
    service = BuildService(settings, [str(udf_pipelines(tmp_path / "pipelines"))], lake=lake)
    report = service.build(["loud/users"])
    assert [s.outcome for s in report.steps] == ["built"], [s.reason for s in report.steps]
    rows = sorted(lake.read_arrow("loud/users").to_pylist(), key=lambda r: r["user"])
    # The executors' Python workers imported neither `loud` nor `_text` by name: both
    # travelled with the pickled functions.
    assert [(r["user"], r["country"]) for r in rows] == [("ada", "UK!"), ("bo", "JP!")]
    assert {r["python"] for r in rows} == {sys.prefix}
    lake.engine.dispose()
