"""Leases: one holder at a time per name (a transform, a trigger), renewed while it works.

A lease is a row with an expiry; taking one is one write transaction that succeeds when
the row is absent or expired, so two builders never run one transform at once, and a
holder that died frees its lease when the lease runs out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from strata.store import schema as s
from strata.store.engine import write_tx
from strata.store.upsert import insert_ignore


def try_acquire(engine: Engine, name: str, holder: str, seconds: float) -> str | None:
    """Take the lease on ``name``; None when taken, else the current holder."""
    bl = s.build_leases
    now = datetime.now(UTC)
    until = now + timedelta(seconds=seconds)
    with write_tx(engine) as conn:
        row = {"name": name, "holder": holder, "expires_at": until}
        if insert_ignore(conn, bl, row, ["name"]):
            return None
        taken = conn.execute(
            bl.update()
            .where(bl.c.name == name, sa.or_(bl.c.expires_at < now, bl.c.holder == holder))
            .values(holder=holder, expires_at=until)
        ).rowcount
        if taken:
            return None
        return str(conn.execute(sa.select(bl.c.holder).where(bl.c.name == name)).scalar())


def release(engine: Engine, name: str, holder: str) -> None:
    with write_tx(engine) as conn:
        conn.execute(
            s.build_leases.delete().where(
                s.build_leases.c.name == name, s.build_leases.c.holder == holder
            )
        )


def renew(engine: Engine, name: str, holder: str, seconds: float) -> None:
    bl = s.build_leases
    with write_tx(engine) as conn:
        conn.execute(
            bl.update()
            .where(bl.c.name == name, bl.c.holder == holder)
            .values(expires_at=datetime.now(UTC) + timedelta(seconds=seconds))
        )


@contextmanager
def held(
    engine: Engine,
    name: str,
    holder: str,
    seconds: float,
    waiting: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the lease on ``name`` for the block, waiting while another holder has it."""
    told = False
    while (other := try_acquire(engine, name, holder, seconds)) is not None:
        if waiting is not None and not told:
            waiting(other)
            told = True
        time.sleep(0.2)
    with heartbeat(lambda: renew(engine, name, holder, seconds), seconds / 3):
        try:
            yield
        finally:
            release(engine, name, holder)


@contextmanager
def heartbeat(beat: Callable[[], None], every: float) -> Iterator[None]:
    """Call ``beat`` every ``every`` seconds in a daemon thread while the block runs."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            try:
                beat()
            except Exception:  # a missed renewal is retried; the lease outlives a few
                continue

    thread = threading.Thread(target=loop, name="strata-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
