"""Leases: one holder at a time per name (a transform, a trigger), renewed while it works.

A lease is a row with an expiry; taking one is one write transaction that succeeds when
the row is absent or expired, so two builders never run one transform at once, and a
holder that died frees its lease when the lease runs out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from strata.store import schema as s
from strata.store.bulk import claim
from strata.store.engine import write_tx


@dataclass(frozen=True)
class Taken:
    """A lease someone else holds: who, and until when unless renewed."""

    name: str
    holder: str
    until: datetime

    def describe(self) -> str:
        """``waiting for the lease of X, held by pid 4242 on host h (build …), until 12:03:10``."""
        local = self.until.astimezone().strftime("%H:%M:%S")
        return f"waiting for the lease of {self.name}, held by {self.holder}, until {local}"

    def to_dict(self) -> dict[str, str]:
        return {"lease": self.name, "holder": self.holder, "until": self.until.isoformat()}


def try_acquire(engine: Engine, name: str, holder: str, seconds: float) -> Taken | None:
    """Take the lease on ``name``; None when taken, else who holds it until when. One
    statement takes a free or expired lease (or ours) and reads who holds it, so a
    lease released meanwhile is taken, and a loser always learns the holder."""
    bl = s.build_leases
    now = datetime.now(UTC)
    until = now + timedelta(seconds=seconds)
    row = {"name": name, "holder": holder, "expires_at": until}
    claimable = sa.or_(bl.c.expires_at < now, bl.c.holder == holder)
    with write_tx(engine) as conn:
        _, other, expires = claim(conn, bl, row, ["name"], claimable)
    if other == holder:
        return None
    assert isinstance(expires, datetime)
    return Taken(name, str(other), expires)


def release(engine: Engine, name: str, holder: str) -> None:
    bl = s.build_leases
    with write_tx(engine) as conn:
        conn.execute(bl.delete().where(bl.c.name == name, bl.c.holder == holder))


def renew(engine: Engine, name: str, holder: str, seconds: float) -> None:
    bl = s.build_leases
    with write_tx(engine) as conn:
        conn.execute(
            bl.update()
            .where(bl.c.name == name, bl.c.holder == holder)
            .values(expires_at=datetime.now(UTC) + timedelta(seconds=seconds))
        )


def held(name: sa.ColumnElement[str], at: datetime) -> sa.ColumnElement[bool]:
    """Whether a lease named ``name`` is held at ``at`` (taken and not expired): a
    condition for a query on another table to compose."""
    bl = s.build_leases
    return sa.select(bl.c.name).where(bl.c.name == name, bl.c.expires_at >= at).exists()


def drop_expired(engine: Engine) -> list[str]:
    """Drop the leases whose holders stopped renewing them; their names."""
    bl = s.build_leases
    with write_tx(engine) as conn:
        expired = bl.c.expires_at < datetime.now(UTC)
        names: list[str] = list(conn.execute(sa.select(bl.c.name).where(expired)).scalars())
        if names:
            conn.execute(bl.delete().where(expired, bl.c.name.in_(names)))
    return names
