"""Insert-if-absent and the answers built on it hold with two connections racing.

Each round starts two threads at a barrier, each in a transaction of its own; exactly
one may be told it inserted. On PostgreSQL psycopg reports ``rowcount == -1`` for an
``ON CONFLICT DO NOTHING`` that inserted nothing, so an answer read from the row count
tells both racers they won.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TypeVar

import sqlalchemy as sa

from strata.builds.state import leases
from strata.store import schema as s
from strata.store.bulk import insert_ignore
from strata.store.engine import write_tx

T = TypeVar("T")
ROUNDS = 25


def _race(first: Callable[[], T], second: Callable[[], T]) -> tuple[T, T]:
    gate = threading.Barrier(2)

    def go(fn: Callable[[], T]) -> T:
        gate.wait()
        return fn()

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(go, first), pool.submit(go, second)
        return a.result(), b.result()


def test_insert_ignore_tells_exactly_one_racer_it_inserted(engine: sa.Engine) -> None:
    now = datetime.now(UTC)

    def insert(name: str, owner: str) -> bool:
        with write_tx(engine) as conn:
            row = {"name": name, "owner": owner, "created_at": now, "updated_at": now}
            return insert_ignore(conn, s.namespaces, row, ["name"])

    for i in range(ROUNDS):
        won = _race(lambda i=i: insert(f"ns{i}", "a"), lambda i=i: insert(f"ns{i}", "b"))
        assert sorted(won) == [False, True], f"round {i}: {won}"
    with engine.connect() as conn:
        stored = conn.execute(sa.select(sa.func.count()).select_from(s.namespaces)).scalar()
    assert stored == ROUNDS


def test_insert_ignore_without_keys_yields_to_any_unique_constraint(engine: sa.Engine) -> None:
    now = datetime.now(UTC)
    with write_tx(engine) as conn:
        row = {"name": "x", "owner": "a", "created_at": now, "updated_at": now}
        assert insert_ignore(conn, s.namespaces, row, None)
        assert not insert_ignore(conn, s.namespaces, {**row, "owner": "b"}, None)
        assert conn.execute(sa.select(s.namespaces.c.owner)).scalar() == "a"


def test_a_lease_has_one_holder_when_two_race_for_it(engine: sa.Engine) -> None:
    for i in range(ROUNDS):
        name = f"job{i}"
        answers = _race(
            lambda n=name: leases.try_acquire(engine, n, "one", 60),
            lambda n=name: leases.try_acquire(engine, n, "two", 60),
        )
        winners = [a for a in answers if a is None]
        assert len(winners) == 1, f"round {i}: both took the lease ({answers})"
        with engine.connect() as conn:
            holder = conn.execute(
                sa.select(s.build_leases.c.holder).where(s.build_leases.c.name == name)
            ).scalar()
        # The loser is told who holds it, and that is who the store says holds it.
        assert [a.holder for a in answers if a is not None] == [holder]


def test_a_lease_released_while_another_tries_for_it_is_never_an_error(
    engine: sa.Engine,
) -> None:
    """One holder takes and releases a lease over and over while another tries for it:
    each try either takes it or names the holder, never an error; once the churn
    stops, the other takes it."""
    stop, errors, seen = threading.Event(), [], set()

    def churn() -> None:
        while not stop.is_set():
            if leases.try_acquire(engine, "busy", "one", 60) is None:
                leases.release(engine, "busy", "one")

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        for _ in range(300):
            try:
                answer = leases.try_acquire(engine, "busy", "two", 60)
            except Exception as exc:  # collected for the assertion below
                errors.append(exc)
                continue
            seen.add("took" if answer is None else answer.holder)
            if answer is None:
                leases.release(engine, "busy", "two")
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:3]
    assert seen and seen <= {"took", "one"}
    assert leases.try_acquire(engine, "busy", "two", 60) is None
