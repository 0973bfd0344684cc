"""A transaction aborted while Spark still writes into its folder leaves nothing behind."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from strata.lake.service import Lake
from strata.lake.spark import stop_jobs, undone_on_error
from strata.lake.storage import Storage

pytestmark = pytest.mark.spark


def _waited(value: int) -> int:
    time.sleep(60)
    return value


def _files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_an_abort_after_stop_jobs_leaves_no_file_of_the_cancelled_write(
    lake: Lake,
    spark: Any,
) -> None:
    """A build stopped mid-write cancels the job and waits for it before its abort
    deletes the folder: no job still runs, and no task writes after the delete."""
    from pyspark.sql.functions import udf

    slow = udf(_waited, "long")
    frame = spark.range(4).repartition(2).withColumn("id", slow("id"))
    txn = lake.transaction("stopped/slow", "SNAPSHOT")
    folder = Path(lake.storage.local(txn._part(None).folder))
    failed: list[BaseException] = []

    def write() -> None:
        try:
            txn.write(frame)
        except BaseException as exc:  # the cancelled job's error, whatever pyspark makes it
            failed.append(exc)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    tracker, deadline = spark.sparkContext.statusTracker(), time.monotonic() + 60
    while not tracker.getActiveJobsIds():
        assert time.monotonic() < deadline, "the write's Spark job never started"
        time.sleep(0.05)
    time.sleep(1)  # its tasks are in the UDF, their output folders made
    started = time.monotonic()
    stop_jobs(spark)
    assert tracker.getActiveJobsIds() == []
    assert time.monotonic() - started < 10
    txn.abort()
    writer.join(timeout=30)
    assert not writer.is_alive() and failed, "the cancelled write did not end in an error"
    time.sleep(1)  # a task left running would write its file by now
    assert _files_under(folder) == [], _files_under(folder)
    assert lake.versions("stopped/slow") == []


class _Vanishing:
    """pyarrow's file system, but another process removes one entry while the first
    recursive delete runs, as a cancelled Spark job removes its temporary folder."""

    def __init__(self, fs: Any, gone: Path) -> None:
        self._fs, self._gone, self.deletes = fs, gone, 0

    def delete_dir(self, path: str) -> None:
        self.deletes += 1
        if self.deletes == 1:
            for p in sorted(self._gone.rglob("*"), reverse=True):
                p.rmdir() if p.is_dir() else p.unlink()
            self._gone.rmdir()
            raise FileNotFoundError(f"Cannot delete directory entry '{self._gone}'")
        self._fs.delete_dir(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)


def test_delete_dir_finishes_when_an_entry_vanishes_meanwhile(tmp_path: Path) -> None:
    storage = Storage(tmp_path.as_uri())
    (tmp_path / "txn" / "_temporary" / "0").mkdir(parents=True)
    (tmp_path / "txn" / "_temporary" / "0" / "part-0").write_bytes(b"x")
    (tmp_path / "txn" / "kept.parquet").write_bytes(b"y")
    fs = _Vanishing(storage.fs, tmp_path / "txn" / "_temporary")
    storage._fs = fs
    assert storage.delete_dir("txn") is True
    assert not (tmp_path / "txn").exists()
    assert fs.deletes == 2
    assert storage.delete_dir("txn") is False


def test_a_failed_blocks_error_is_raised_whatever_its_undo_does() -> None:
    """The undo of a failed Spark call runs, and its own failure (a Py4J error on a
    connection Ctrl-C closed) never takes the block's error's place; after Ctrl-C no
    JVM call is made, so the KeyboardInterrupt reaches the build as one."""
    undone: list[str] = []

    def undo() -> None:
        undone.append("undo")
        raise RuntimeError("Answer from Java side is empty")

    with pytest.raises(ValueError, match="the write's own error"), undone_on_error(undo):
        raise ValueError("the write's own error")
    assert undone == ["undo"]
    with pytest.raises(KeyboardInterrupt), undone_on_error(undo):
        raise KeyboardInterrupt
    assert undone == ["undo"]  # not called again
    with undone_on_error(undo):
        pass
    assert undone == ["undo"]  # a block that succeeds keeps what it set up
