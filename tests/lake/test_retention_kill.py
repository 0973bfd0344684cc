"""A retention pass SIGKILLed while it deletes files: every version it purged refuses to
be read, every other version reads whole, and the next pass finishes the deletion."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import sqlalchemy as sa
from lake_support import fill_snapshots, strata_process

from strata.errors import PurgedVersion
from strata.lake.service import Lake
from strata.store.schema import dataset_versions, pending_deletes

DATASETS = [f"raw/part{i}" for i in range(4)]
VERSIONS = 60


def _fill(lake: Lake) -> None:
    fill_snapshots(lake, DATASETS, VERSIONS)


def _count(lake: Lake, query: sa.Select[tuple[int]]) -> int:
    with lake.engine.connect() as conn:
        return int(conn.execute(query).scalar() or 0)


def _pass(lake: Lake, tmp_path: Path) -> subprocess.Popen[bytes]:
    policy = '[[retention]]\ndatasets = ["raw/*"]\nkeep_versions = 1\ngrace = "0s"\n'
    return strata_process(lake, tmp_path, policy, "retention")


def test_a_pass_killed_while_deleting_leaves_nothing_a_read_trusts(
    lake: Lake, tmp_path: Path
) -> None:
    _fill(lake)
    proc = _pass(lake, tmp_path)
    listed = sa.select(sa.func.count()).select_from(pending_deletes)
    deadline = time.monotonic() + 60
    while _count(lake, listed) == 0:  # the first dataset's purge committed: files listed
        assert proc.poll() is None, "the pass ended before it could be killed"
        assert time.monotonic() < deadline, "the pass listed no file in 60 s"
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)

    purged = sa.select(sa.func.count()).where(dataset_versions.c.purged_at.is_not(None))
    assert _count(lake, purged) > 0
    for name in DATASETS:
        for v in lake.versions(name):
            if v.purged_at is not None:
                try:
                    lake.read_arrow(name, version=v.commit_id)
                except PurgedVersion:
                    continue
                raise AssertionError(f"{name}@{v.commit_id} is purged but still reads")
            assert lake.read_arrow(name, version=v.commit_id).num_rows == 50

    finish = _pass(lake, tmp_path)
    assert finish.wait(timeout=120) == 0
    assert _count(lake, listed) == 0
    assert _count(lake, purged) == len(DATASETS) * (VERSIONS - 1)
    for name in DATASETS:
        [kept] = [v for v in lake.versions(name) if v.purged_at is None]
        on_disk = [p for p in Path(lake.storage.local(kept.dataset_uuid)).rglob("*.parquet")]
        assert [p.relative_to(Path(lake.storage.local(""))).as_posix() for p in on_disk] == [
            f.path for f in lake.files(name)
        ]
