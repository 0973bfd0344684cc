"""Writer processes for the crash and concurrency tests.

Run as ``python lake_worker.py``: the process imports Strata once, then reads
one JSON job per line on stdin and forks a child for each, answering with the
child's pid on stdout. Forking a warmed-up process makes a writer start in
milliseconds, so tests can start (and SIGKILL) many of them cheaply. Children
are reaped automatically; they report through files, never through stdout.

Jobs:

``append_loop``
    start → write rows (writer, seq, i) → commit, ``count`` times (or forever
    when ``count`` is 0). Before each commit it appends ``commit <seq>`` to its
    log, after it ``done <seq> <commit id>``. With ``done_file`` it writes
    ``ok`` (or the traceback) there when it finishes.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset
import pyarrow.fs
import pyarrow.parquet

from strata.lake.service import Lake
from strata.settings import Settings
from strata.store.engine import create_engine


def batch(writer: int, seq: int, rows: int) -> pa.Table:
    """The rows a writer commits for one sequence number: (writer, seq, 0..rows-1)."""
    return pa.Table.from_pydict(
        {
            "writer": pa.array([writer] * rows, pa.int64()),
            "seq": pa.array([seq] * rows, pa.int64()),
            "i": pa.array(range(rows), pa.int64()),
        }
    )


def _log(path: str, line: str) -> None:
    # One write(2) on an O_APPEND file: survives SIGKILL, never interleaves.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def append_loop(job: dict[str, Any]) -> None:
    settings = Settings(
        home=job["home"], database_url=job["database_url"], lake_uri=job["lake_uri"]
    )
    engine = create_engine(job["database_url"])
    lake = Lake(settings, engine)
    rng = random.Random(job["writer"])
    go = job.get("go")
    while go and not Path(go).exists():
        time.sleep(0.001)
    seq = 0
    while job["count"] == 0 or seq < job["count"]:
        rows = rng.randint(1, 4)
        txn = lake.transaction(job["dataset"], "APPEND")
        if rng.random() < 0.3:  # sometimes two containers in one commit
            txn.write(batch(job["writer"], seq, rows).slice(0, 1))
            if rows > 1:
                txn.write(batch(job["writer"], seq, rows).slice(1))
        else:
            txn.write(batch(job["writer"], seq, rows))
        _log(job["log"], f"commit {seq} {rows}")
        version = txn.commit()
        _log(job["log"], f"done {seq} {version.commit_id}")
        seq += 1


def run(job: dict[str, Any]) -> None:
    done = job.get("done_file")
    try:
        append_loop(job)
    except BaseException:
        if done:
            Path(done).write_text(traceback.format_exc())
        os._exit(1)
    if done:
        Path(done).write_text("ok")
    os._exit(0)


def _warm_up() -> None:
    """Load everything a writer needs once, here, so forked children start at once."""
    import sqlalchemy.dialects.postgresql
    import sqlalchemy.dialects.sqlite

    import strata.lake.transaction

    del sqlalchemy, strata
    with contextlib.suppress(ImportError):
        import psycopg  # noqa: F401


def main() -> None:
    _warm_up()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            run(job)
        print(pid, flush=True)


if __name__ == "__main__":
    main()
