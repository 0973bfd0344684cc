"""Garbage collection: abandoned and orphaned data goes, committed data always stays."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from strata.errors import TransactionClosed
from strata.lake.service import NO_ROW_MARGIN, Lake
from strata.store.schema import transactions

GRACE = 0.5


def ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def _age(folder: Path, seconds: float) -> None:
    """Date a folder back, as a folder left by a writer that long ago."""
    then = time.time() - seconds
    os.utime(folder, (then, then))


def files_on_disk(lake: Lake) -> set[str]:
    root = Path(lake.storage.local(""))
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def referenced(lake: Lake, dataset: str) -> set[str]:
    return {
        f.path for v in lake.versions(dataset) for f in lake.files(dataset, version=v.commit_id)
    }


def test_gc_removes_abandoned_and_orphaned_data_only(lake: Lake) -> None:
    ds = "gc/target"
    with lake.transaction(ds, "APPEND") as txn:
        txn.write(ids(1))
    with lake.transaction(ds, "APPEND") as txn:
        txn.write(ids(2))
    [first, _] = lake.files(ds)
    # An UPDATE drops version 1's file from the latest version; version 1 still needs it.
    with lake.transaction(ds, "UPDATE") as txn:
        txn.write(ids(3))
        txn.remove(first.path)
    committed = referenced(lake, ds)
    assert first.path in committed

    abandoned = lake.transaction(ds, "APPEND")  # its writer "died" after writing
    [stale_entry] = abandoned.write(ids(666))
    ds_uuid = lake.datasets()[0].uuid
    orphan = Path(lake.storage.local(f"{ds_uuid}/{uuid.uuid4()}"))
    orphan.mkdir()
    pq.write_table(ids(777), orphan / "part-x.parquet")  # a folder no transaction row names
    _age(orphan, NO_ROW_MARGIN.total_seconds() + 5)
    time.sleep(GRACE * 2)
    fresh = lake.transaction(ds, "APPEND")  # inside the grace period: must survive
    [fresh_entry] = fresh.write(ids(4))
    young_orphan = Path(lake.storage.local(f"{ds_uuid}/{uuid.uuid4()}"))
    young_orphan.mkdir()

    # A long grace period touches nothing.
    report = lake.gc(grace_seconds=3600)
    assert (report.transactions, report.folders, report.orphan_folders) == (0, 0, 0)
    assert orphan.is_dir() and Path(lake.storage.local(stale_entry.path)).is_file()

    report = lake.gc(grace_seconds=GRACE)
    assert report.to_dict() == {"transactions": 1, "folders": 1, "orphan_folders": 1}
    assert not Path(lake.storage.local(stale_entry.path)).parent.exists()
    assert not orphan.exists()
    assert young_orphan.is_dir()
    assert Path(lake.storage.local(fresh_entry.path)).is_file()
    assert files_on_disk(lake) == committed | {fresh_entry.path}

    # The abandoned transaction was aborted by gc: it can never commit now.
    with pytest.raises(TransactionClosed) as info:
        abandoned.commit()
    assert "gc" in info.value.message
    assert abandoned.state == "ABORTED"
    with lake.engine.connect() as conn:
        state = conn.execute(
            sa.select(transactions.c.state).where(transactions.c.uuid == abandoned.uuid)
        ).scalar()
    assert state == "ABORTED"

    # The young transaction still commits, and every version still reads back.
    assert fresh.commit().commit_id == 4
    assert lake.read_arrow(ds, version=1).column("id").to_pylist() == [1]
    assert sorted(lake.read_arrow(ds, version=2).column("id").to_pylist()) == [1, 2]
    assert sorted(lake.read_arrow(ds).column("id").to_pylist()) == [2, 3, 4]

    # Nothing left to collect: a second run is a no-op, and committed files stay. A
    # folder no row names goes only once it is older than the grace by the margin.
    report = lake.gc(grace_seconds=0)
    assert (report.transactions, report.folders, report.orphan_folders) == (0, 0, 0)
    assert young_orphan.is_dir()
    _age(young_orphan, NO_ROW_MARGIN.total_seconds() + 5)
    assert lake.gc(grace_seconds=0).orphan_folders == 1
    assert files_on_disk(lake) == referenced(lake, ds)


def test_gc_uses_the_configured_grace_period(lake: Lake) -> None:
    # The settings fixture sets gc_grace_seconds=0: an open transaction is collected at once.
    txn = lake.transaction("gc/default", "APPEND")
    txn.write(ids(1))
    report = lake.gc()
    assert report.transactions == 1
    with pytest.raises(TransactionClosed):
        txn.commit()
    assert lake.versions("gc/default") == []


def test_gc_finishes_an_interrupted_abort(lake: Lake) -> None:
    """A transaction marked ABORTED whose files were never deleted (the aborting
    process died in between) is cleaned by gc."""
    txn = lake.transaction("gc/half-aborted", "APPEND")
    [entry] = txn.write(ids(1))
    with lake.engine.begin() as conn:
        conn.execute(
            transactions.update()
            .where(transactions.c.uuid == txn.uuid)
            .values(state="ABORTED", ended_at=sa.func.now())
        )
    folder = Path(lake.storage.local(entry.path)).parent
    assert folder.is_dir()
    report = lake.gc(grace_seconds=0)
    assert (report.transactions, report.folders) == (1, 1)
    assert not folder.exists()
    with lake.engine.connect() as conn:
        cleaned = conn.execute(
            sa.select(transactions.c.cleaned_at).where(transactions.c.uuid == txn.uuid)
        ).scalar()
    assert cleaned is not None
    with pytest.raises(TransactionClosed):
        txn.commit()


def test_gc_racing_a_commit_never_deletes_committed_files(lake: Lake) -> None:
    """gc aborting an old open transaction while that transaction commits: exactly one
    of them wins, and a committed version never loses its files."""
    ds = "gc/race"
    txn = lake.transaction(ds, "APPEND")
    [entry] = txn.write(ids(1))
    time.sleep(0.2)  # older than gc's grace period below
    gc_result: list[object] = []

    def run_gc() -> None:
        other = Lake(lake.settings)
        try:
            gc_result.append(other.gc(grace_seconds=0.1))
        except Exception as exc:  # reported below
            gc_result.append(exc)
        finally:
            other.engine.dispose()

    started: list[threading.Thread] = []

    @sa.event.listens_for(lake.engine, "before_cursor_execute")
    def pause_mid_commit(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        # Inside the commit's SQL transaction, after its state check: let gc run now.
        if not started and statement.lstrip().upper().startswith("INSERT INTO DATASET_FILES"):
            t = threading.Thread(target=run_gc)
            started.append(t)
            t.start()
            t.join(timeout=1.0)  # gc either finishes (no protection) or waits for us

    try:
        try:
            version = txn.commit()
        except TransactionClosed:
            version = None
    finally:
        sa.event.remove(lake.engine, "before_cursor_execute", pause_mid_commit)
    assert started, "the commit never reached its file inserts"
    started[0].join(timeout=60)
    assert gc_result and not isinstance(gc_result[0], Exception), gc_result
    local = Path(lake.storage.local(entry.path))
    if version is not None:
        assert [v.commit_id for v in lake.versions(ds)] == [1]
        assert local.is_file(), "gc deleted the files of a committed version"
        assert lake.read_arrow(ds).column("id").to_pylist() == [1]
    else:
        assert lake.versions(ds) == []
        assert not local.exists()


def test_gc_removes_files_written_after_gc_aborted_the_transaction(lake: Lake) -> None:
    """A writer slower than the grace period may keep writing after gc aborted it
    (object stores and Spark create folders on write); those files are collected too."""
    txn = lake.transaction("gc/slow-writer", "APPEND")
    [entry] = txn.write(ids(1))
    assert lake.gc(grace_seconds=0).transactions == 1
    folder = Path(lake.storage.local(entry.path)).parent
    assert not folder.exists()
    # What the late writer leaves behind: its folder again, with a new container.
    folder.mkdir(parents=True)
    pq.write_table(ids(2), folder / "part-late.parquet")
    with pytest.raises(TransactionClosed):
        txn.commit()
    report = lake.gc(grace_seconds=0)
    assert report.orphan_folders == 1
    assert not folder.exists()
    assert lake.versions("gc/slow-writer") == []


def test_gc_looping_while_appends_commit_never_loses_a_committed_version(lake: Lake) -> None:
    """gc with no grace period, in a loop, while another writer appends: every version
    committed during the race reads back whole afterwards (the store decides, at the
    moment of deletion, which folders a transaction still needs)."""
    ds = "gc/busy"
    stop = threading.Event()
    gc_runs: list[int] = []
    failures: list[BaseException] = []

    def collect() -> None:
        other = Lake(lake.settings)
        try:
            while not stop.is_set():
                other.gc(grace_seconds=0)
                gc_runs.append(1)
                time.sleep(0.01)  # no grace aborts every open transaction: let some commit
        except BaseException as exc:  # reported below
            failures.append(exc)
        finally:
            other.engine.dispose()

    collector = threading.Thread(target=collect)
    collector.start()
    committed: dict[int, int] = {}  # version -> the id it added
    deadline = time.monotonic() + 8
    try:
        while time.monotonic() < deadline and len(committed) < 300:
            value = len(committed) + 1
            try:
                with lake.transaction(ds, "APPEND") as txn:
                    txn.write(ids(value))
            except TransactionClosed:
                continue  # gc took it for abandoned (no grace): try again
            committed[txn.versions[ds].commit_id] = value
    finally:
        stop.set()
        collector.join(timeout=60)
    assert not failures, failures
    assert len(committed) >= 10 and len(gc_runs) >= 20, (len(committed), len(gc_runs))
    for version in sorted(committed):
        got = lake.read_arrow(ds, version=version).column("id").to_pylist()
        assert sorted(got) == sorted(committed[v] for v in committed if v <= version)
