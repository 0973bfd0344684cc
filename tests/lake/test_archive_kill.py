"""An archive pass SIGKILLed mid-move (while it copies, and after it recorded some
moves): every file stays readable from the place the catalog names, and the next pass
finishes the move with each file on exactly one tier."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from lake_support import fill_snapshots, strata_process

from strata.lake.service import Lake
from strata.store.schema import dataset_files

DATASETS = [f"raw/part{i}" for i in range(3)]
VERSIONS = 40


def _pass(lake: Lake, tmp_path: Path) -> subprocess.Popen[bytes]:
    cold = (tmp_path / "cold").as_uri()
    policy = f'[[archive]]\ndatasets = ["raw/*"]\nolder_than = "0s"\nuri = "{cold}"\n'
    return strata_process(lake, tmp_path, policy, "archive", STRATA_GC_GRACE_SECONDS="0")


def _recorded(lake: Lake) -> int:
    with lake.engine.connect() as conn:
        query = sa.select(sa.func.count()).where(dataset_files.c.archive_uri.is_not(None))
        return int(conn.execute(query).scalar() or 0)


def _copying(tmp_path: Path) -> bool:
    return any((tmp_path / "cold").rglob("*.parquet")) if (tmp_path / "cold").exists() else False


def _every_file_where_the_catalog_says(lake: Lake, tmp_path: Path, exactly: bool) -> None:
    with lake.engine.connect() as conn:
        rows = conn.execute(sa.select(dataset_files.c.path, dataset_files.c.archive_uri)).all()
    for path, archive in rows:
        lake_copy = Path(lake.storage.local(path)).is_file()
        cold_copy = (tmp_path / "cold" / path).is_file()
        assert cold_copy if archive else lake_copy, (path, archive)
        if exactly:
            assert lake_copy != cold_copy, path


@pytest.mark.parametrize(
    "when", ["copying", "recorded"], ids=["killed-while-copying", "killed-after-a-record"]
)
def test_a_move_killed_mid_way_leaves_every_file_readable(
    lake: Lake, tmp_path: Path, when: str
) -> None:
    fill_snapshots(lake, DATASETS, VERSIONS)
    ready: Callable[[], bool] = (
        (lambda: _copying(tmp_path)) if when == "copying" else (lambda: _recorded(lake) > 0)
    )
    proc = _pass(lake, tmp_path)
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, "the pass ended before it could be killed"
        assert time.monotonic() < deadline, f"the pass reached no {when} step in 60 s"
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)

    moved = _recorded(lake)
    assert moved < len(DATASETS) * (VERSIONS - 1)  # killed before the end
    _every_file_where_the_catalog_says(lake, tmp_path, exactly=False)
    for name in DATASETS:
        for v in lake.versions(name):
            assert lake.read_arrow(name, version=v.commit_id).num_rows == 50

    finish = _pass(lake, tmp_path)
    assert finish.wait(timeout=120) == 0
    assert _recorded(lake) == len(DATASETS) * (VERSIONS - 1)
    _every_file_where_the_catalog_says(lake, tmp_path, exactly=True)
    for name in DATASETS:
        for v in lake.versions(name):
            assert lake.read_arrow(name, version=v.commit_id).num_rows == 50
