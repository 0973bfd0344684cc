"""The schedule tables: when each schedule was first seen, and the firings taken, each
kept per branch (a schedule builds the branch it names).

A firing is held by the worker that took it until it ends; the worker renews the hold
while it builds. One whose hold lapsed lost its worker: it reads as ABORTED at once, and
the next worker to look at the branch's schedules records it so."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store.bulk import insert_ignore
from strata.store.schema import schedule_firings, schedules

_S, _F = schedules.c, schedule_firings.c
ABORTED = "ABORTED"
LAPSED = (
    "its worker stopped renewing its hold on this firing before the build ended (killed, "
    "or its machine lost); the build's runs end ABORTED when the next build of their "
    "transforms starts"
)


@dataclass(frozen=True)
class Firing:
    """One firing a worker took: when it was due, and what its build came to."""

    schedule: str
    due_at: datetime
    holder: str
    started_at: datetime
    ended_at: datetime | None
    # COMPLETED, FAILED, NOTHING (nothing out of date), ABORTED (its worker stopped
    # mid-build, or its hold lapsed); None: running
    outcome: str | None
    run: str | None
    error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "due_at": self.due_at.isoformat(),
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "outcome": self.outcome,
            "run": self.run,
            "error": self.error,
            "holder": self.holder,
        }


def register(
    conn: Connection, branch: str, names: Collection[str], now: datetime
) -> dict[str, datetime]:
    """When each of ``names`` on ``branch`` was first seen (now, for those new)."""
    for name in names:
        row = {"branch": branch, "name": name, "registered_at": now}
        insert_ignore(conn, schedules, row, ["branch", "name"])
    rows = conn.execute(
        sa.select(_S.name, _S.registered_at).where(_S.branch == branch, _S.name.in_(list(names)))
    )
    return {str(r[0]): r[1] for r in rows.all()}


def last_due(conn: Connection, branch: str, names: Collection[str]) -> dict[str, datetime]:
    q = (
        sa.select(_F.schedule, sa.func.max(_F.due_at))
        .where(_F.branch == branch, _F.schedule.in_(list(names)))
        .group_by(_F.schedule)
    )
    return {str(r[0]): r[1] for r in conn.execute(q).all()}


def take(
    conn: Connection,
    branch: str,
    name: str,
    due: datetime,
    holder: str,
    now: datetime,
    hold: timedelta,
) -> bool:
    """Take the firing of ``name`` on ``branch`` due at ``due``, held for ``hold``; False
    when another worker has it."""
    row = {
        "branch": branch,
        "schedule": name,
        "due_at": due,
        "holder": holder,
        "started_at": now,
        "expires_at": now + hold,
    }
    return insert_ignore(conn, schedule_firings, row, ["branch", "schedule", "due_at"])


def renew(
    conn: Connection, branch: str, name: str, due: datetime, holder: str, until: datetime
) -> None:
    """Hold ``holder``'s running firing until ``until``."""
    conn.execute(
        schedule_firings.update()
        .where(_F.branch == branch, _F.schedule == name, _F.due_at == due)
        .where(_F.holder == holder, _F.ended_at.is_(None))
        .values(expires_at=until)
    )


def end_lapsed(conn: Connection, branch: str, now: datetime) -> int:
    """End ABORTED every running firing of ``branch`` whose hold lapsed; how many."""
    lapsed = (_F.branch == branch, _F.ended_at.is_(None), _F.expires_at < now)
    ended = conn.execute(
        schedule_firings.update()
        .where(*lapsed)
        .values(ended_at=now, outcome=ABORTED, error=LAPSED, expires_at=None)
    )
    return int(ended.rowcount or 0)


def finish(
    conn: Connection,
    branch: str,
    name: str,
    due: datetime,
    now: datetime,
    outcome: str,
    run: str | None,
    error: str | None,
) -> None:
    conn.execute(
        schedule_firings.update()
        .where(_F.branch == branch, _F.schedule == name, _F.due_at == due)
        .values(ended_at=now, outcome=outcome, run_uuid=run, error=error, expires_at=None)
    )


def firings(conn: Connection, branch: str, name: str, limit: int, now: datetime) -> list[Firing]:
    """The latest ``limit`` firings of ``name`` on ``branch``, newest first; one whose hold
    lapsed by ``now`` as ABORTED, whether or not a worker recorded it yet."""
    q = (
        sa.select(
            _F.schedule,
            _F.due_at,
            _F.holder,
            _F.started_at,
            _F.ended_at,
            _F.outcome,
            _F.run_uuid,
            _F.error,
            _F.expires_at,
        )
        .where(_F.branch == branch, _F.schedule == name)
        .order_by(_F.due_at.desc())
        .limit(limit)
    )
    out = []
    for r in conn.execute(q).all():
        firing = Firing(str(r[0]), r[1], str(r[2]), r[3], r[4], r[5], r[6], r[7])
        if firing.ended_at is None and r[8] is not None and r[8] < now:
            firing = replace(firing, ended_at=r[8], outcome=ABORTED, error=LAPSED)
        out.append(firing)
    return out
