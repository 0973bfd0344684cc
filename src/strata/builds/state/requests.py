"""Build requests: a build asked for over HTTP and its progress, one row each.

The server that took a request runs it and rewrites the row as the build goes (state,
times, and ``progress``: planned, running and finished transforms), so whichever server
of the store a page polls answers the same, and a restart forgets nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.builds.state import leases
from strata.store import schema as s

UNFINISHED = ("QUEUED", "RUNNING")
# A server that takes requests holds this lease, renewed while it runs: once it expires
# (the server was killed, or hangs), its unfinished requests are ABORTED by any reader.
SERVER_LEASE = "build-server:"
STOPPED = "the server running it stopped"


def server_lease(holder: str) -> str:
    """The name of the lease a server taking requests as ``holder`` holds."""
    return SERVER_LEASE + holder


@dataclass(frozen=True)
class BuildRequest:
    id: str
    dataset: str
    force: bool
    state: str
    holder: str
    requested_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    progress: Mapping[str, Any]
    error: str | None
    run: str | None


def add(conn: Connection, request: BuildRequest) -> None:
    conn.execute(
        s.build_requests.insert().values(
            uuid=request.id,
            dataset=request.dataset,
            force=request.force,
            state=request.state,
            holder=request.holder,
            requested_at=request.requested_at,
            progress=dict(request.progress),
        )
    )


def update(conn: Connection, request_id: str, **values: Any) -> None:
    """Set columns of one request (``run`` for ``run_uuid``)."""
    if "run" in values:
        values["run_uuid"] = values.pop("run")
    conn.execute(
        s.build_requests.update().where(s.build_requests.c.uuid == request_id).values(**values)
    )


def get(conn: Connection, request_id: str) -> BuildRequest | None:
    row = conn.execute(_select().where(s.build_requests.c.uuid == request_id)).first()
    return None if row is None else _request(row)


def recent(conn: Connection, limit: int) -> list[BuildRequest]:
    t = s.build_requests
    rows = conn.execute(_select().order_by(t.c.requested_at.desc(), t.c.uuid.desc()).limit(limit))
    return [_request(r) for r in rows]


def abandon(conn: Connection, holder: str | None, at: datetime, why: str) -> int:
    """End ``holder``'s unfinished requests ABORTED (its server is stopping); with no
    holder, every server's (none of them runs any more)."""
    t = s.build_requests
    unfinished = t.c.state.in_(UNFINISHED)
    which = unfinished if holder is None else sa.and_(t.c.holder == holder, unfinished)
    done = conn.execute(t.update().where(which).values(state="ABORTED", ended_at=at, error=why))
    return int(done.rowcount or 0)


def _abandoned(at: datetime) -> sa.ColumnElement[bool]:
    """Unfinished requests whose server's lease is gone or expired at ``at``."""
    t = s.build_requests
    alive = leases.held(sa.literal(SERVER_LEASE) + t.c.holder, at)
    return sa.and_(t.c.state.in_(UNFINISHED), ~alive)


def any_abandoned(conn: Connection, at: datetime) -> bool:
    """Whether some unfinished request has no server running it any more."""
    t = s.build_requests
    return conn.execute(sa.select(t.c.uuid).where(_abandoned(at)).limit(1)).first() is not None


def expire_abandoned(conn: Connection, at: datetime) -> int:
    """End ABORTED the unfinished requests no server runs any more (its lease expired:
    it was killed, or hangs)."""
    t = s.build_requests
    done = conn.execute(
        t.update().where(_abandoned(at)).values(state="ABORTED", ended_at=at, error=STOPPED)
    )
    return int(done.rowcount or 0)


def _select() -> sa.Select[Any]:
    return sa.select(s.build_requests)


def _request(row: sa.Row[Any]) -> BuildRequest:
    return BuildRequest(
        id=row.uuid,
        dataset=row.dataset,
        force=bool(row.force),
        state=row.state,
        holder=row.holder,
        requested_at=row.requested_at,
        started_at=row.started_at,
        ended_at=row.ended_at,
        progress=row.progress or {},
        error=row.error,
        run=row.run_uuid,
    )
