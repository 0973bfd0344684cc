"""The events owner's contract, on every backend: an event is stored once per payload
hash, read back by run, by hash and by time, listed (all, one namespace's, run events
alone) with totals, counted per interval and type, and deleted with its run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from strata.store.owners import events

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return AT + timedelta(minutes=minutes)


def _event(
    n: int,
    run: str | None,
    minutes: int,
    kind: str | None = "START",
    job_ns: str | None = "jobs",
    payload: dict[str, Any] | None = None,
) -> events.NewEvent:
    return events.NewEvent(
        uuid=f"00000000-0000-0000-0000-{n:012d}",
        run_uuid=run,
        event_type=kind,
        event_time=_at(minutes),
        received_at=_at(minutes + 1),
        producer="tests",
        job_namespace=job_ns,
        job_name="job" if job_ns else None,
        payload=payload or {"n": n, "eventType": kind},
        payload_hash=f"{n:064d}",
    )


RUN_A = "10000000-0000-0000-0000-00000000000a"
RUN_B = "10000000-0000-0000-0000-00000000000b"


def _seed(engine: sa.Engine) -> list[events.NewEvent]:
    seeded = [
        _event(1, RUN_A, 0, "START"),
        _event(2, RUN_A, 5, "COMPLETE"),
        _event(3, RUN_B, 5, "START"),
        _event(4, None, 7, None, job_ns=None, payload={"dataset": {"namespace": "s3://b"}}),
        _event(
            5, RUN_B, 9, "FAIL", job_ns="other", payload={"n": 5, "inputs": [{"namespace": "pg"}]}
        ),
    ]
    with engine.begin() as conn:
        assert events.store(conn, seeded) == {e.payload_hash for e in seeded}
    return seeded


def test_an_event_is_stored_once_per_payload_hash(engine: sa.Engine) -> None:
    seeded = _seed(engine)
    again = [seeded[0], _event(6, RUN_A, 6, "RUNNING")]
    with engine.begin() as conn:
        assert events.store(conn, again) == {again[1].payload_hash}
        assert events.store(conn, []) == set()
    with engine.connect() as conn:
        assert sorted(events.hashes_of_runs(conn, [RUN_A])) == sorted(
            (RUN_A, e.payload_hash) for e in (seeded[0], seeded[1], again[1])
        )
        assert dict(events.payloads(conn, [seeded[3].payload_hash])) == {
            seeded[3].payload_hash: {"dataset": {"namespace": "s3://b"}}
        }
        assert list(events.payloads(conn, ["f" * 64])) == []


def test_a_runs_events_are_read_in_event_time_order(engine: sa.Engine) -> None:
    _seed(engine)
    with engine.connect() as conn:
        assert events.run_has_own(conn, RUN_A)
        assert not events.run_has_own(conn, "10000000-0000-0000-0000-0000000000ff")
        assert [p["n"] for p in events.payloads_of_run(conn, RUN_A)] == [1, 2]
        assert events.latest_types(conn, [RUN_A, RUN_B]) == {RUN_A: "COMPLETE", RUN_B: "FAIL"}
        runs = sa.select(sa.literal(RUN_B).label("uuid"))
        assert events.count_of_runs(conn, runs) == 2


def test_run_events_page_by_time_with_a_total(engine: sa.Engine) -> None:
    _seed(engine)
    with engine.connect() as conn:
        newest, total = events.page_of_run_events(conn, None, None, False, 2, 0)
        assert total == 4  # the DatasetEvent has no run
        assert [p["n"] for p in newest] == [5, 3]  # ties at 5 minutes: by id, descending
        window, total = events.page_of_run_events(conn, _at(5), _at(5), True, 10, 0)
        assert ([p["n"] for p in window], total) == ([2, 3], 2)
        rest, total = events.page_of_run_events(conn, None, None, True, 10, 3)
        assert ([p["n"] for p in rest], total) == ([5], 4)


def test_the_feed_is_newest_first_and_filters_by_namespace(engine: sa.Engine) -> None:
    _seed(engine)
    with engine.connect() as conn:
        assert [p.get("n") for p in events.newest(conn, 10, 0)] == [5, None, 3, 2, 1]
        assert [p.get("n") for p in events.newest(conn, 2, 1)] == [None, 3]
        assert [p.get("n") for p in events.newest(conn, 10, 0, "jobs")] == [3, 2, 1]
        assert events.newest(conn, 10, 0, "s3://b") == [{"dataset": {"namespace": "s3://b"}}]
        assert [p["n"] for p in events.newest(conn, 10, 0, "pg")] == [5]
        assert events.newest(conn, 10, 0, "nowhere") == []


def test_counts_per_interval_and_type(engine: sa.Engine) -> None:
    _seed(engine)
    with engine.connect() as conn:
        counts = events.counts_by_type(conn, _at(0), [_at(5), _at(10)], ["START", "COMPLETE"])
    # [0, 5): the START at 0; [5, 10): a COMPLETE and a START (the FAIL is not asked for).
    assert counts == [{"START": 1, "COMPLETE": 0}, {"START": 1, "COMPLETE": 1}]


def test_a_runs_events_go_with_it(engine: sa.Engine) -> None:
    seeded = _seed(engine)
    with engine.begin() as conn:
        assert events.delete_of_runs(conn, [RUN_A]) == 2
    with engine.connect() as conn:
        assert not events.run_has_own(conn, RUN_A)
        left = {h for _, h in events.hashes_of_runs(conn, [RUN_A, RUN_B])}
        assert left == {seeded[2].payload_hash, seeded[4].payload_hash}
        assert len(events.newest(conn, 10, 0)) == 3
