"""Many processes appending to one dataset at once: every append lands exactly once."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from lake_history import read_log, verify_history, writer_job

from strata.lake.service import Lake
from strata.settings import Settings

pytestmark = pytest.mark.slow

WRITERS = 8
APPENDS = 10


def test_concurrent_appends_all_land(
    settings: Settings,
    lake: Lake,
    workers,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    go = tmp_path / "go"
    done = [tmp_path / f"done-{w}" for w in range(WRITERS)]
    for w in range(WRITERS):
        workers.spawn(
            **writer_job(
                settings,
                "shared/appends",
                w,
                tmp_path / f"writer-{w}.log",
                count=APPENDS,
                go=str(go),
                done_file=str(done[w]),
            )
        )
    go.touch()  # all start together
    deadline = time.monotonic() + 180
    while not all(d.exists() for d in done):
        assert time.monotonic() < deadline, "writers did not finish"
        time.sleep(0.05)
    for d in done:
        assert d.read_text() == "ok", d.read_text()

    history = verify_history(lake, "shared/appends", read_back=3)
    assert history.versions == WRITERS * APPENDS
    expected = {(w, s) for w in range(WRITERS) for s in range(APPENDS)}
    assert set(history.batches) == expected
    assert sorted(history.batches.values()) == list(range(1, WRITERS * APPENDS + 1))
    total = 0
    for w in range(WRITERS):
        log = read_log(tmp_path / f"writer-{w}.log")
        assert set(log.done) == set(range(APPENDS))
        for seq, commit_id in log.done.items():
            assert history.batches[(w, seq)] == commit_id
        total += sum(log.committing.values())
    assert len(history.rows) == total
    assert lake.version("shared/appends").row_count == total
    # The writers really overlapped: commits of different writers interleave.
    order = [w for (w, _), _c in sorted(history.batches.items(), key=lambda kv: kv[1])]
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert switches > WRITERS
