"""Crash safety: writers SIGKILLed at random points never leave a partial version.

Each writer process loops start → write → commit on one dataset, logging
``commit <seq>`` before and ``done <seq> <commit id>`` after each commit. The
test kills writers at random moments (two at a time, so kills also land while
the other writer holds the commit lock), then checks the history version by
version, checks it against the writers' logs, runs gc and checks again.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest
import sqlalchemy as sa
from lake_history import read_log, verify_history, writer_job

from strata.lake.service import NO_ROW_MARGIN, Lake
from strata.settings import Settings
from strata.store.schema import transactions

pytestmark = pytest.mark.slow

ROUNDS = 8  # two writers per round: 16 kills per backend
DATASET = "crash/appends"


def _folders_on_disk(lake: Lake) -> set[str]:
    """Every transaction folder (``<dataset uuid>/<transaction uuid>``) in the lake."""
    out = set()
    for ds in lake.storage.list_dir(""):
        if ds.type == pafs.FileType.Directory:
            for txn in lake.storage.list_dir(ds.base_name):
                out.add(f"{ds.base_name}/{txn.base_name}")
    return out


def _files_on_disk(lake: Lake) -> set[str]:
    root = Path(lake.storage.local(""))
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _txn_rows(lake: Lake) -> dict[str, set[str]]:
    """Transaction folders by state."""
    out: dict[str, set[str]] = {"OPEN": set(), "COMMITTED": set(), "ABORTED": set()}
    with lake.engine.connect() as conn:
        for row in conn.execute(sa.select(transactions.c.state, transactions.c.path)):
            out[row.state].add(row.path)
    return out


def test_sigkilled_writers_leave_only_whole_versions(
    settings: Settings,
    lake: Lake,
    workers,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    rng = random.Random()
    started = time.monotonic()
    kills = 0
    for r in range(ROUNDS):
        pids = [
            workers.spawn(**writer_job(settings, DATASET, w, tmp_path / f"writer-{w}.log"))
            for w in (2 * r, 2 * r + 1)
        ]
        for pid in pids:
            time.sleep(rng.uniform(0.05, 0.9))
            workers.kill(pid)
            kills += 1
    assert kills == 2 * ROUNDS
    assert time.monotonic() - started < 60

    history = verify_history(lake, DATASET, read_back=5)
    assert history.versions > 0, "no writer committed anything before being killed"

    # The catalog agrees with what the writers saw, and holds nothing they did not try.
    for w in range(2 * ROUNDS):
        log = read_log(tmp_path / f"writer-{w}.log")
        in_lake = {seq for (writer, seq) in history.batches if writer == w}
        # A writer commits its seqs in order, one at a time.
        assert in_lake == set(range(len(in_lake)))
        assert set(log.done) <= in_lake, f"writer {w}: a commit it saw succeed is missing"
        assert in_lake <= set(log.committing), f"writer {w}: a commit it never tried landed"
        for seq, commit_id in log.done.items():
            assert history.batches[(w, seq)] == commit_id
        for seq in in_lake:
            rows = sum(1 for row in history.rows if row[0] == w and row[1] == seq)
            assert rows == log.committing[seq]

    # The kills left debris: open transactions and folders no version references.
    state = _txn_rows(lake)
    stray = _folders_on_disk(lake) - state["COMMITTED"]
    assert stray | state["OPEN"], "16 random kills should leave an unfinished transaction"

    # A writer killed between making its folder and recording its row leaves a folder no
    # row names, which gc leaves until it is older than its margin: as if that long ago.
    then = time.time() - NO_ROW_MARGIN.total_seconds() - 5
    for folder in stray:
        os.utime(lake.storage.local(folder), (then, then))
    report = lake.gc(grace_seconds=0)
    assert report.folders + report.orphan_folders == len(stray)
    assert report.transactions >= len(state["OPEN"])
    state = _txn_rows(lake)
    assert state["OPEN"] == set(), "gc must abort transactions whose writer died"
    assert _folders_on_disk(lake) == state["COMMITTED"]
    assert _files_on_disk(lake) == history.all_paths

    after = verify_history(lake, DATASET, read_back=5)
    assert after.versions == history.versions
    assert after.batches == history.batches
    assert after.rows == history.rows
    print(
        f"\n{settings.database_url.split(':')[0]}: {kills} kills, {history.versions} versions "
        f"and {len(history.rows)} rows verified, gc removed {report.folders} transaction "
        f"and {report.orphan_folders} orphan folder(s)"
    )
