"""Group commit: concurrent submissions share transactions and get their own answers."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import sqlalchemy as sa
from lineage_support import ds, dump, rid, run_event

from strata.errors import InvalidEvent, StrataError
from strata.lineage import ingest, runs
from strata.lineage.events import Event, parse_event
from strata.lineage.ingest import IngestResult, ingest_event
from strata.lineage.writer import GroupWriter
from strata.store import schema as s


def _story(n: int) -> list[dict[str, Any]]:
    events = []
    for i in range(n):
        io = {"inputs": [ds("ns", f"in_{i % 3}")], "outputs": [ds("ns", f"out_{i % 4}")]}
        events.append(run_event("START", i, f"run{i}", f"job{i % 5}", **io))
        events.append(run_event("COMPLETE", i + 0.5, f"run{i}", f"job{i % 5}", **io))
    return events


def test_concurrent_submissions_are_grouped(engine: sa.Engine, monkeypatch: Any) -> None:
    groups: list[int] = []
    real = ingest.ingest_parsed

    def counting(eng: sa.Engine, items: list[Event | StrataError]) -> Any:
        groups.append(len(items))
        return real(eng, items)

    monkeypatch.setattr("strata.lineage.writer.ingest_parsed", counting)
    events = _story(20)
    writer = GroupWriter(engine)
    gate = threading.Barrier(8)
    answers: dict[int, list[IngestResult | StrataError]] = {}

    def client(k: int) -> None:
        gate.wait()
        for i in range(k, len(events), 8):
            answers[i] = writer.submit([parse_event(events[i])]).result(timeout=60)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    assert sorted(answers) == list(range(len(events)))
    assert all(isinstance(a[0], IngestResult) and not a[0].duplicate for a in answers.values())
    assert sum(groups) == len(events)
    assert len(groups) < len(events), "no two requests ever shared a transaction"
    with engine.connect() as conn:
        done = conn.execute(sa.select(sa.func.count()).where(s.runs.c.state == "COMPLETED"))
        assert done.scalar() == 20


def test_grouped_result_equals_one_by_one(engine: sa.Engine, tmp_path: Any) -> None:
    from strata.store import migrate
    from strata.store.engine import create_engine

    events = _story(6)
    writer = GroupWriter(engine)
    futures = [writer.submit([parse_event(e)]) for e in events]
    futures.append(writer.submit([parse_event(events[3])]))  # a retry in the same group
    results = [f.result(timeout=60) for f in futures]
    writer.close()
    assert [r[0].duplicate for r in results if isinstance(r[0], IngestResult)] == [False] * len(
        events
    ) + [True]
    other = create_engine(f"sqlite:///{tmp_path / 'one.db'}")
    migrate.upgrade(other)
    for e in events:
        ingest_event(other, e)
    assert dump(engine) == dump(other)
    other.dispose()


def test_a_refused_event_is_answered_alone(engine: sa.Engine, monkeypatch: Any) -> None:
    real = runs.apply_run_events

    def refusing(conn: sa.Connection, events: list[Event]) -> None:
        real(conn, events)  # its writes must be undone with the refusal
        if any(event.job_name == "refused" for event in events):
            raise InvalidEvent("refused by the store", path="$.job.name")

    monkeypatch.setattr(runs, "apply_run_events", refusing)
    writer = GroupWriter(engine)
    good = writer.submit([parse_event(run_event("START", 0, "ok", "job_a"))])
    mixed = writer.submit(
        [
            parse_event(run_event("START", 1, "r1", "job_b")),
            parse_event(run_event("START", 2, "r2", "refused", outputs=[ds("ns", "ghost")])),
            InvalidEvent("bad", path="$.x"),
        ]
    )
    after = writer.submit([parse_event(run_event("COMPLETE", 4, "ok", "job_a"))])
    assert isinstance(good.result(timeout=60)[0], IngestResult)
    got = mixed.result(timeout=60)
    writer.close()
    assert isinstance(got[0], IngestResult)
    assert isinstance(got[1], InvalidEvent) and got[1].message == "refused by the store"
    assert isinstance(got[2], InvalidEvent) and got[2].message == "bad"
    assert isinstance(after.result(timeout=60)[0], IngestResult)
    with engine.connect() as conn:
        state = conn.execute(sa.select(s.runs.c.state).where(s.runs.c.uuid == rid("ok")))
        assert state.scalar() == "COMPLETED"
        names = conn.execute(sa.select(s.datasets.c.name)).scalars().all()
        assert "ghost" not in names
        jobs = conn.execute(sa.select(s.jobs.c.name)).scalars().all()
        assert sorted(jobs) == ["job_a", "job_b"]


def test_closed_writer_refuses_work(engine: sa.Engine) -> None:
    writer = GroupWriter(engine)
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit([parse_event(run_event("START", 0, "r", "j"))])
