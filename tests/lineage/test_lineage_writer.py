"""The server's writer: concurrent submissions share transactions, get their own answers,
and are folded in groups before anyone reads."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import sqlalchemy as sa
from lineage_support import ds, dump, rid, run_event

from strata.errors import InvalidEvent, StrataError
from strata.lineage.record import apply, runs, versions
from strata.lineage.record import writer as writer_module
from strata.lineage.record.apply import RecordResult, record_event
from strata.lineage.record.events import Event, parse_event
from strata.lineage.record.unfolded import Unfolded
from strata.lineage.record.writer import GroupWriter
from strata.store import schema as s
from strata.store.engine import write_tx
from strata.store.journal import journal_for


def _pending(journal: sa.Engine) -> list[tuple[str, str | None]]:
    p = s.lineage_pending
    with journal.connect() as conn:
        return [tuple(r) for r in conn.execute(sa.select(p.c.payload_hash, p.c.error)).all()]


def _story(n: int) -> list[dict[str, Any]]:
    events = []
    for i in range(n):
        io = {"inputs": [ds("ns", f"in_{i % 3}")], "outputs": [ds("ns", f"out_{i % 4}")]}
        events.append(run_event("START", i, f"run{i}", f"job{i % 5}", **io))
        events.append(run_event("COMPLETE", i + 0.5, f"run{i}", f"job{i % 5}", **io))
    return events


def test_concurrent_submissions_are_grouped(engine: sa.Engine, monkeypatch: Any) -> None:
    stored: list[int] = []
    folded: list[int] = []
    real_accept, real_fold = apply.accept_parsed, apply.fold_pending

    def counting(
        eng: sa.Engine, journal: sa.Engine, items: list[Event | StrataError], **kw: Any
    ) -> Any:
        stored.append(len(items))
        return real_accept(eng, journal, items, **kw)

    def folding(eng: sa.Engine, journal: sa.Engine, limit: int, known: Any = None) -> Any:
        done = real_fold(eng, journal, limit, known)
        folded.append(len(done))
        return done

    monkeypatch.setattr("strata.lineage.record.writer.accept_parsed", counting)
    monkeypatch.setattr("strata.lineage.record.writer.fold_pending", folding)
    events = _story(20)
    writer = GroupWriter(engine)
    gate = threading.Barrier(8)
    answers: dict[int, list[RecordResult | StrataError]] = {}

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
    assert all(isinstance(a[0], RecordResult) and not a[0].duplicate for a in answers.values())
    assert sum(stored) == len(events) == sum(folded)
    assert len(stored) < len(events), "no two requests were ever stored together"
    assert len([n for n in folded if n]) < len(events), "no two events were ever folded together"
    with engine.connect() as conn:
        done = conn.execute(sa.select(sa.func.count()).where(s.runs.c.state == "COMPLETED"))
        assert done.scalar() == 20
    assert _pending(journal_for(engine)) == []


@pytest.mark.parametrize("fold_in", ["thread", "process"])
def test_grouped_result_equals_one_by_one(engine: sa.Engine, tmp_path: Any, fold_in: str) -> None:
    from strata.store import migrate
    from strata.store.engine import create_engine

    events = _story(6)
    writer = GroupWriter(engine, fold_in=fold_in)
    futures = [writer.submit([parse_event(e)]) for e in events]
    futures.append(writer.submit([parse_event(events[3])]))  # a retry in the same group
    results = [f.result(timeout=60) for f in futures]
    assert writer.wait_folded(60)
    writer.close()
    assert [r[0].duplicate for r in results if isinstance(r[0], RecordResult)] == [False] * len(
        events
    ) + [True]
    other = create_engine(f"sqlite:///{tmp_path / 'one.db'}")
    migrate.upgrade(other)
    for e in events:
        record_event(other, e)
    assert dump(engine) == dump(other)
    other.dispose()


def test_an_event_refused_when_stored_is_answered_alone(
    engine: sa.Engine, monkeypatch: Any
) -> None:
    real = versions.check_lake_outputs

    def refusing(conn: sa.Connection, events: list[Event]) -> None:
        real(conn, events)
        if any(event.job_name == "refused" for event in events):
            raise InvalidEvent("refused by the store", path="$.job.name")

    monkeypatch.setattr(versions, "check_lake_outputs", refusing)
    writer = GroupWriter(engine)
    good = writer.submit([parse_event(run_event("START", 0, "ok", "job_a"))])
    mixed = writer.submit(
        [
            parse_event(run_event("START", 1, "r1", "job_b")),
            # Only an event naming a version can be refused by the store when queued.
            parse_event(
                run_event(
                    "START",
                    2,
                    "r2",
                    "refused",
                    outputs=[ds("ns", "ghost", version={"datasetVersion": "7"})],
                )
            ),
            InvalidEvent("bad", path="$.x"),
        ]
    )
    after = writer.submit([parse_event(run_event("COMPLETE", 4, "ok", "job_a"))])
    assert isinstance(good.result(timeout=60)[0], RecordResult)
    got = mixed.result(timeout=60)
    writer.close()
    assert isinstance(got[0], RecordResult)
    assert isinstance(got[1], InvalidEvent) and got[1].message == "refused by the store"
    assert isinstance(got[2], InvalidEvent) and got[2].message == "bad"
    assert isinstance(after.result(timeout=60)[0], RecordResult)
    with engine.connect() as conn:
        state = conn.execute(sa.select(s.runs.c.state).where(s.runs.c.uuid == rid("ok")))
        assert state.scalar() == "COMPLETED"
        names = conn.execute(sa.select(s.datasets.c.name)).scalars().all()
        assert "ghost" not in names
        jobs = conn.execute(sa.select(s.jobs.c.name)).scalars().all()
        assert sorted(jobs) == ["job_a", "job_b"]
        stored = conn.execute(sa.select(s.lineage_events.c.job_name)).scalars().all()
        assert "refused" not in stored


def test_an_event_the_fold_refuses_is_set_aside(engine: sa.Engine, monkeypatch: Any) -> None:
    real = runs.apply_run_events

    def refusing(conn: sa.Connection, events: list[Event]) -> None:
        real(conn, events)  # its writes must be undone with the refusal
        if any(event.job_name == "refused" for event in events):
            raise InvalidEvent("refused by the store", path="$.job.name")

    monkeypatch.setattr(runs, "apply_run_events", refusing)
    writer = GroupWriter(engine)
    got = writer.submit(
        [
            parse_event(run_event("START", 1, "r1", "job_b")),
            parse_event(run_event("START", 2, "r2", "refused", outputs=[ds("ns", "ghost")])),
        ]
    ).result(timeout=60)
    assert all(isinstance(r, RecordResult) for r in got)  # stored and acknowledged
    assert writer.wait_folded(60), "a refused event must not hold reads back"
    writer.close()
    with engine.connect() as conn:
        assert "ghost" not in conn.execute(sa.select(s.datasets.c.name)).scalars().all()
        assert conn.execute(sa.select(s.jobs.c.name)).scalars().all() == ["job_b"]
        stored = conn.execute(sa.select(s.lineage_events.c.job_name)).scalars().all()
        assert stored == ["job_b"]
    assert _pending(journal_for(engine)) == [(got[1].payload_hash, "refused by the store")]


def test_a_write_the_database_refuses_after_it_was_sent_refuses_only_its_event(
    engine: sa.Engine, monkeypatch: Any
) -> None:
    """On PostgreSQL the fold does not wait for its writes (strata.lineage.record.deferred): a
    write's error comes back at a later statement, and must still refuse only its event."""
    from strata.store import bulk

    real = runs.write_runs

    def failing(conn: sa.Connection, steps: list[Any]) -> None:
        real(conn, steps)
        if any(st.run.job_name == "refused" for st in steps):
            stmt = bulk.upsert(conn, s.namespaces, ["name", "created_at", "updated_at"], ["name"])
            bulk.execute_many(conn, stmt, [{"name": "x", "created_at": None, "updated_at": None}])

    monkeypatch.setattr(runs, "write_runs", failing)
    writer = GroupWriter(engine)
    got = writer.submit(
        [
            parse_event(run_event("START", 1, "r1", "job_b", outputs=[ds("ns", "kept")])),
            parse_event(run_event("START", 2, "r2", "refused", outputs=[ds("ns", "ghost")])),
            parse_event(run_event("COMPLETE", 3, "r1", "job_b", outputs=[ds("ns", "kept")])),
        ]
    ).result(timeout=60)
    assert all(isinstance(r, RecordResult) for r in got)
    assert writer.wait_folded(60)
    writer.close()
    with engine.connect() as conn:
        assert conn.execute(sa.select(s.datasets.c.name)).scalars().all() == ["kept"]
        assert conn.execute(sa.select(s.runs.c.state)).scalars().all() == ["COMPLETED"]
        assert conn.execute(sa.select(s.datasets.c.current_version_uuid)).scalar() is not None
    [(digest, why)] = _pending(journal_for(engine))
    assert digest == got[1].payload_hash and why is not None and "created_at" in why


def test_a_fold_process_that_dies_is_replaced(engine: sa.Engine) -> None:
    import os
    import signal

    writer = GroupWriter(engine, fold_in="process")
    writer.submit([run_event("START", 0, "a", "j")]).result(timeout=60)
    assert writer.wait_folded(60)
    # Killed while idle, as a crash or the OOM killer would: waking the next one must not
    # hang on anything the dead one held (a shared multiprocessing.Event did, now and then).
    for i in range(3):
        [child] = [p for p in _children() if p != os.getpid()]
        os.kill(child, signal.SIGKILL)
        writer.submit([run_event("RUNNING", i + 1, "a", "j")]).result(timeout=60)
        assert writer.wait_folded(60), "nothing folded after the fold process died"
    writer.submit([run_event("COMPLETE", 9, "a", "j")]).result(timeout=60)
    assert writer.wait_folded(60)
    writer.close()
    with engine.connect() as conn:
        state = conn.execute(sa.select(s.runs.c.state).where(s.runs.c.uuid == rid("a")))
        assert state.scalar() == "COMPLETED"


def _children() -> list[int]:
    import multiprocessing

    return [p.pid for p in multiprocessing.active_children() if p.pid is not None]


def test_reads_wait_for_the_fold(engine: sa.Engine, monkeypatch: Any) -> None:
    import asyncio
    import time

    real = apply.fold_pending

    def slow(eng: sa.Engine, journal: sa.Engine, limit: int, known: Any = None) -> Any:
        time.sleep(0.3)
        return real(eng, journal, limit, known)

    monkeypatch.setattr("strata.lineage.record.writer.fold_pending", slow)
    writer = GroupWriter(engine)

    async def post_then_read() -> str | None:
        await asyncio.wrap_future(writer.submit([run_event("START", 0, "r", "j")]))
        await writer.barrier()
        with engine.connect() as conn:
            found = conn.execute(sa.select(s.runs.c.state).where(s.runs.c.uuid == rid("r")))
            return found.scalar()

    assert asyncio.run(post_then_read()) == "RUNNING"
    writer.close()


def test_events_queued_by_another_process_are_folded_in_order(
    engine: sa.Engine, tmp_path: Any
) -> None:
    """A START stored but not folded (its server died), a COMPLETE folded at once by a
    direct ingest, then the START folded later: the same model as in-order ingest."""
    from strata.store import migrate
    from strata.store.engine import create_engine

    start = run_event("START", 0, "r", "j", outputs=[ds("ns", "out")])
    done = run_event("COMPLETE", 1, "r", "j", outputs=[ds("ns", "out")])
    reader = run_event("START", 2, "c", "k", inputs=[ds("ns", "out")])
    journal = journal_for(engine)
    [stored] = apply.accept_parsed(engine, journal, [parse_event(start)])
    assert isinstance(stored, RecordResult) and not stored.duplicate
    record_event(engine, done)
    record_event(engine, reader)
    assert _pending(journal) == [(stored.payload_hash, None)]
    writer = GroupWriter(engine, journal)
    writer.submit([run_event("START", 3, "other", "j2")]).result(timeout=60)
    assert writer.wait_folded(60)
    writer.close()
    assert _pending(journal) == []
    other = create_engine(f"sqlite:///{tmp_path / 'one.db'}")
    migrate.upgrade(other)
    for e in (start, done, reader, run_event("START", 3, "other", "j2")):
        record_event(other, e)
    assert dump(engine) == dump(other)
    other.dispose()


def test_a_fold_that_falls_behind_slows_senders_then_refuses(
    engine: sa.Engine, monkeypatch: Any
) -> None:
    gate = threading.Event()
    real = apply.fold_pending

    def stuck(eng: sa.Engine, journal: sa.Engine, limit: int, known: Any = None) -> Any:
        gate.wait(60)
        return real(eng, journal, limit, known)

    monkeypatch.setattr("strata.lineage.record.writer.fold_pending", stuck)
    writer = GroupWriter(engine, max_backlog=1, backlog_wait=0.3)
    first = writer.submit([run_event("START", 0, "a", "j")]).result(timeout=60)
    assert isinstance(first[0], RecordResult)
    [busy] = writer.submit([run_event("START", 1, "b", "j")]).result(timeout=60)
    assert isinstance(busy, StrataError) and busy.http_status == 503
    assert "behind" in busy.message and "again" in busy.message
    gate.set()
    assert writer.wait_folded(60)
    [late] = writer.submit([run_event("START", 1, "b", "j")]).result(timeout=60)
    assert isinstance(late, RecordResult) and not late.duplicate  # nothing was stored before
    writer.close()


def test_closed_writer_refuses_work(engine: sa.Engine) -> None:
    writer = GroupWriter(engine)
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit([parse_event(run_event("START", 0, "r", "j"))])


def test_a_fold_takes_at_most_its_share_of_json(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events of megabytes are allowed: a fold stops at a JSON budget (always taking one
    event, however large)."""
    events = [parse_event(e) for e in _story(4)]  # 8 events
    size = max(len(e.json_text().encode()) for e in events)
    monkeypatch.setattr(apply, "_GROUP_BYTES", 3 * size)
    journal = journal_for(engine)
    apply.accept_parsed(engine, journal, events)
    hashes = [e.payload_hash for e in events]
    assert apply.fold_pending(engine, journal, 100).folded == hashes[:3]
    assert apply.fold_pending(engine, journal, 2).folded == hashes[3:5]  # the count still binds
    monkeypatch.setattr(apply, "_GROUP_BYTES", 1)
    assert apply.fold_pending(engine, journal, 100).folded == hashes[5:6]
    monkeypatch.undo()
    assert apply.fold_pending(engine, journal, 100).folded == hashes[6:]
    assert _pending(journal) == []


def test_an_event_sent_again_after_its_fold_changes_nothing(engine: sa.Engine) -> None:
    events = [parse_event(e) for e in _story(2)]
    writer = GroupWriter(engine)
    for event in events:
        writer.submit([event]).result(timeout=60)
    assert writer.wait_folded(60)
    before = dump(engine)
    [again] = writer.submit([events[1]]).result(timeout=60)
    assert isinstance(again, RecordResult)  # queued again: the fold finds it stored
    assert writer.wait_folded(60)
    writer.close()
    assert dump(engine) == before
    assert _pending(journal_for(engine)) == []
    with engine.connect() as conn:
        stored = conn.execute(sa.select(sa.func.count()).select_from(s.lineage_events))
        assert stored.scalar() == len(events)


def test_coroutines_get_their_own_answers_in_one_wake_up_per_group(
    engine: sa.Engine, monkeypatch: Any
) -> None:
    import asyncio

    wakes: list[int] = []
    real_settle = writer_module._settle

    def settle(answers: Any) -> None:
        wakes.append(len(answers))
        real_settle(answers)

    monkeypatch.setattr(writer_module, "_settle", settle)
    events = _story(10)
    writer = GroupWriter(engine)
    bad = {**events[0], "eventTime": "not a time"}

    async def main() -> list[Any]:
        gate = asyncio.Event()

        async def one(payload: dict[str, Any]) -> Any:
            await gate.wait()
            return await writer.store([payload])

        tasks = [asyncio.create_task(one(e)) for e in [*events, bad]]
        doomed = asyncio.create_task(one(events[1]))  # its sender gives up: not answered
        await asyncio.sleep(0)
        gate.set()
        await asyncio.sleep(0)
        doomed.cancel()
        return await asyncio.gather(*tasks)

    answers = asyncio.run(main())
    writer.close()
    assert [type(a[0]) for a in answers] == [RecordResult] * len(events) + [InvalidEvent]
    assert [a[0].payload_hash for a in answers[:-1]] == [
        parse_event(e).payload_hash for e in events
    ]
    assert sum(wakes) == len(events) + 2  # the cancelled request was stored all the same
    assert len(wakes) < len(events), "every request woke the event loop on its own"


def test_reads_wait_for_the_oldest_event_still_unfolded() -> None:
    unfolded = Unfolded()
    events = [parse_event(e) for e in _story(3)][:5]
    with unfolded.state:
        for event in events:
            assert unfolded.add(event, keep_parsed=False)
        assert not unfolded.add(events[0], keep_parsed=False)  # waits already: one number
        a, b, c, d, e = (event.payload_hash for event in events)
        unfolded.release([b, d])  # folded out of order: a still waits
        assert unfolded.folded_upto() == 0
        unfolded.release([a])
        assert unfolded.folded_upto() == 2
        unfolded.release([c, e])
        assert unfolded.folded_upto() == 5
    assert unfolded.wait_folded(0)


def test_unfolded_names_the_events_another_fold_may_have_taken() -> None:
    unfolded = Unfolded()
    events = [parse_event(e) for e in _story(3)][:5]
    a, b, c, d, _ = (event.payload_hash for event in events)
    with unfolded.state:
        for event in events:
            unfolded.add(event, keep_parsed=False)
        unfolded.mark_committed(4)  # e is numbered but not in the queue yet
        assert unfolded.overtaken([]) == [a, b, c, d]  # the queue was empty: all committed
        assert unfolded.overtaken([c, "another server's"]) == [a, b]  # older than c
        assert unfolded.overtaken(["another server's"]) == [a, b, c, d]
        unfolded.release([a, b])
        assert unfolded.overtaken([d]) == [c]


def test_events_another_writer_folded_release_this_ones_readers(
    engine: sa.Engine, monkeypatch: Any
) -> None:
    """Two servers on one store: events stored by one and folded by the other's fold
    must not hold the first one's reads back."""
    idle = sa.create_engine(engine.url)  # the first server's: its fold never wins the lock
    real = apply.fold_pending

    def fold(eng: sa.Engine, journal: sa.Engine, limit: int, known: Any = None) -> Any:
        return apply.Folded([], {}) if eng is idle else real(eng, journal, limit, known)

    monkeypatch.setattr(writer_module, "fold_pending", fold)
    first = GroupWriter(idle, journal_for(engine), poll=0.05)
    second = GroupWriter(engine, poll=0.05)
    try:
        results = first.submit(_story(20)).result(60)
        assert all(isinstance(r, RecordResult) for r in results)
        second.start()
        assert first.wait_folded(30)  # released by looking the queue up, not by folding
        assert _pending(journal_for(engine)) == []
        with engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(s.runs)).scalar() == 20
    finally:
        first.close()
        second.close()
        idle.dispose()


@pytest.mark.parametrize("fold_in", ["thread", "process"])
def test_start_returns_once_the_fold_has_folded_a_group(engine: sa.Engine, fold_in: str) -> None:
    journal = journal_for(engine)
    left = [parse_event(e) for e in _story(2)]
    apply.accept_parsed(engine, journal, left)  # acknowledged by a server that stopped
    writer = GroupWriter(engine, fold_in=fold_in)
    assert writer.start(60)
    assert _pending(journal) == []  # one group held all four
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(s.runs)).scalar() == 2
    writer.close()


def test_start_does_not_wait_for_a_whole_backlog(engine: sa.Engine, monkeypatch: Any) -> None:
    # A server that left thousands of events queued takes requests once its fold runs,
    # not once it has folded all of them.
    journal = journal_for(engine)
    apply.accept_parsed(engine, journal, [parse_event(e) for e in _story(3)])
    real_fold = apply.fold_pending
    second = threading.Event()
    release = threading.Event()
    calls: list[int] = []

    def slow_after_first(eng: sa.Engine, jrn: sa.Engine, limit: int, known: Any = None) -> Any:
        calls.append(limit)
        if len(calls) == 2:
            second.set()
            release.wait(60)
        return real_fold(eng, jrn, limit, known)

    monkeypatch.setattr("strata.lineage.record.writer.fold_pending", slow_after_first)
    writer = GroupWriter(engine, fold_events=2)
    try:
        assert writer.start(30)
        assert second.wait(30)  # the rest of the backlog is still being folded
        assert len(_pending(journal)) == 4
    finally:
        release.set()
    assert writer.wait_folded(60)
    writer.close()
    assert _pending(journal) == []


@pytest.mark.parametrize("backend", ["postgresql"])  # planner settings of PostgreSQL
def test_the_fold_plans_lookups_without_workers_or_compiling(engine: sa.Engine) -> None:
    """A fold's statements are key lookups: with scans priced out their plans look costly
    enough for parallel workers and JIT compiling, each of which took longer than the
    lookups (JIT up to 110 ms a statement once the store held some history)."""
    settings = ("enable_seqscan", "enable_bitmapscan", "max_parallel_workers_per_gather", "jit")
    with engine.connect() as conn:
        before = conn.exec_driver_sql("SHOW max_parallel_workers_per_gather").scalar()
    with write_tx(engine) as conn:
        apply.lock_writers(conn)
        inside = {name: conn.exec_driver_sql(f"SHOW {name}").scalar() for name in settings}
    with engine.connect() as conn:  # for the fold's transaction only
        after = conn.exec_driver_sql("SHOW max_parallel_workers_per_gather").scalar()
    assert inside == {
        "enable_seqscan": "off",
        "enable_bitmapscan": "off",
        "max_parallel_workers_per_gather": "0",
        "jit": "off",
    }
    assert after == before != "0"


class _Dies(BaseException):
    """Escapes every ``except Exception``: the store thread dies of it."""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_store_thread_that_dies_is_replaced_and_its_callers_answered(
    engine: sa.Engine, monkeypatch: Any
) -> None:
    real = apply.accept_parsed
    calls = {"n": 0}

    def dying(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise _Dies
        return real(*args, **kw)

    monkeypatch.setattr("strata.lineage.record.writer.accept_parsed", dying)
    writer = GroupWriter(engine, watch=0.05)
    lost = writer.submit([run_event("START", 0, "a", "j")])
    with pytest.raises(StrataError, match="send it again"):
        lost.result(timeout=30)
    [stored] = writer.submit([run_event("START", 1, "b", "j")]).result(timeout=30)
    assert isinstance(stored, RecordResult)
    assert writer.wait_folded(60)
    health = writer.health()
    assert health["running"] and health["restarts"] == 1
    writer.close()
    with engine.connect() as conn:
        stored_runs = conn.execute(sa.select(s.runs.c.uuid)).scalars().all()
    assert [str(u) for u in stored_runs] == [rid("b")]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_health_reports_a_dead_thread_until_the_watchdog_replaces_it(
    engine: sa.Engine, monkeypatch: Any
) -> None:
    def dying(*args: Any, **kw: Any) -> Any:
        raise _Dies

    writer = GroupWriter(engine, watch=3600)
    writer.start(30)
    assert writer.health()["running"]
    monkeypatch.setattr("strata.lineage.record.writer.accept_parsed", dying)
    writer.submit([run_event("START", 0, "a", "j")])
    writer._threads["store"].join(30)
    health = writer.health()
    assert not health["running"] and health["threads"]["store"] is False
    writer.close(5)


def test_an_event_that_breaks_parsing_is_refused_alone(engine: sa.Engine, monkeypatch: Any) -> None:
    """An exception validation did not foresee refuses that event; the others of its group
    are stored."""
    from strata.lineage.record import writer as writer_mod

    real = writer_mod.parse_event

    def fragile(payload: Any) -> Any:
        if payload["job"]["name"] == "boom":
            raise RecursionError("maximum recursion depth exceeded")
        return real(payload)

    monkeypatch.setattr(writer_mod, "parse_event", fragile)
    writer = GroupWriter(engine)
    bad, good = writer.submit(
        [run_event("START", 0, "a", "boom"), run_event("START", 0, "b", "j")]
    ).result(timeout=30)
    assert isinstance(bad, InvalidEvent) and "RecursionError" in bad.message
    assert isinstance(good, RecordResult)
    writer.close()
