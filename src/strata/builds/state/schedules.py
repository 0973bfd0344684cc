"""The schedule tables: when each schedule was first seen, and the firings taken, each
kept per branch (a schedule builds the branch it names)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store.bulk import insert_ignore
from strata.store.schema import schedule_firings, schedules

_S, _F = schedules.c, schedule_firings.c


@dataclass(frozen=True)
class Firing:
    """One firing a worker took: when it was due, and what its build came to."""

    schedule: str
    due_at: datetime
    holder: str
    started_at: datetime
    ended_at: datetime | None
    # COMPLETED, FAILED, NOTHING (nothing out of date), ABORTED (its worker stopped
    # mid-build); None: running
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
    conn: Connection, branch: str, name: str, due: datetime, holder: str, now: datetime
) -> bool:
    """Take the firing of ``name`` on ``branch`` due at ``due``; False when another worker
    has it."""
    row = {"branch": branch, "schedule": name, "due_at": due, "holder": holder, "started_at": now}
    return insert_ignore(conn, schedule_firings, row, ["branch", "schedule", "due_at"])


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
        .values(ended_at=now, outcome=outcome, run_uuid=run, error=error)
    )


def firings(conn: Connection, branch: str, name: str, limit: int) -> list[Firing]:
    """The latest ``limit`` firings of ``name`` on ``branch``, newest first."""
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
        )
        .where(_F.branch == branch, _F.schedule == name)
        .order_by(_F.due_at.desc())
        .limit(limit)
    )
    return [
        Firing(str(r[0]), r[1], str(r[2]), r[3], r[4], r[5], r[6], r[7])
        for r in conn.execute(q).all()
    ]
