"""The owner of ``transactions``: each lake transaction's part on one dataset, from
OPEN to COMMITTED or ABORTED, and when an aborted one's folder was cleaned.

The lake opens parts (:func:`open_part`), changes their type before they write
(:func:`set_type`), closes them in the commit's own statement (:func:`close`), aborts a
group (:func:`abort_group`) and, in gc, abandoned ones (:func:`abort_abandoned`), and
marks cleaned folders (:func:`mark_cleaned`). A version's page and retention read a
version's transaction type by joining :func:`relation`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store.schema import transactions

_T = transactions


def relation(name: str = "transactions") -> NamedFromClause:
    """The transactions under ``name``, read-only, to join to another family's tables."""
    return _T.alias(name)


@dataclass(frozen=True)
class Opened:
    """A transaction's part on one dataset as it starts."""

    uuid: str
    group_uuid: str
    dataset_uuid: str
    type: str
    started_at: datetime
    base_commit_id: int
    run_uuid: str | None
    path: str


def open_part(conn: Connection, part: Opened) -> None:
    conn.execute(_T.insert().values(**asdict(part), state="OPEN"))


def set_type(conn: Connection, uuid: str, kind: str) -> None:
    conn.execute(_T.update().where(_T.c.uuid == uuid).values(type=kind))


def state_of(conn: Connection, uuid: str) -> str | None:
    found = conn.execute(sa.select(_T.c.state).where(_T.c.uuid == uuid)).scalar()
    return None if found is None else str(found)


def close(*, returning: bool = False) -> Any:
    """The update that commits an OPEN part, for the commit to run inside its own
    transaction: ``txn_uuid`` committed as ``cid`` at ``now`` (bind parameters); it
    changes no row when the part is no longer OPEN. ``returning`` the part's uuid, to run
    as a CTE of the commit's one statement."""
    p = sa.bindparam
    stmt = (
        _T.update()
        .where(_T.c.uuid == p("txn_uuid"), _T.c.state == "OPEN")
        .values(state="COMMITTED", committed_at=p("now"), ended_at=p("now"), commit_id=p("cid"))
    )
    return stmt.returning(_T.c.uuid) if returning else stmt


def abort_group(conn: Connection, group_uuid: str, now: datetime) -> None:
    """Abort the group's parts still OPEN."""
    conn.execute(
        _T.update()
        .where(_T.c.group_uuid == group_uuid, _T.c.state == "OPEN")
        .values(state="ABORTED", ended_at=now)
    )


def abort_abandoned(conn: Connection, cutoff: datetime, now: datetime) -> list[tuple[str, str]]:
    """Abort parts still OPEN that started before ``cutoff`` (their writer died), then
    the (uuid, folder) of every aborted part started before it not cleaned yet."""
    t = _T.c
    conn.execute(
        _T.update()
        .where(t.state == "OPEN", t.started_at < cutoff)
        .values(state="ABORTED", ended_at=now)
    )
    dead = conn.execute(
        sa.select(t.uuid, t.path).where(
            t.state == "ABORTED", t.cleaned_at.is_(None), t.started_at < cutoff
        )
    ).all()
    return [(str(r.uuid), str(r.path)) for r in dead]


def mark_cleaned(conn: Connection, uuids: Collection[str], now: datetime) -> None:
    """Aborted parts whose folders are gone."""
    conn.execute(
        _T.update()
        .where(_T.c.uuid.in_(list(uuids)), _T.c.state == "ABORTED")
        .values(cleaned_at=now)
    )


def states(conn: Connection, uuids: Collection[str]) -> dict[str, str]:
    """uuid -> state, for those of ``uuids`` that have a row."""
    found: dict[str, str] = {}
    every = list(uuids)
    for start in range(0, len(every), 500):
        part = every[start : start + 500]
        q = sa.select(_T.c.uuid, _T.c.state).where(_T.c.uuid.in_(part))
        found.update((str(u), str(s)) for u, s in conn.execute(q).all())
    return found
