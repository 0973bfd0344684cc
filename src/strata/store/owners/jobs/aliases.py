"""Jobs' other names: the name a job's events use when the job is known by another.

The only module that reads or writes ``job_aliases``. A child job's events name it by
its own name, which the fold turns into a name under its parent; the name the events
used is kept here so that a lookup by it can redirect, as Marquez does.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store.schema import job_aliases

_A = job_aliases


def set_alias(conn: Connection, job_uuid: str, namespace: str, alias: str | None) -> None:
    """Make ``alias`` the job's one other name in ``namespace``, or drop it (None)."""
    conn.execute(_A.delete().where(_A.c.job_uuid == job_uuid))
    if alias is not None:
        conn.execute(_A.insert().values(namespace=namespace, name=alias, job_uuid=job_uuid))


def named(namespace: Any, name: Any) -> sa.Select[Any]:
    """The jobs ``name`` is another name of in ``namespace``: an expression of job uuids
    for a query on jobs to compose (``jobs.c.uuid.in_(named(...))``)."""
    return sa.select(_A.c.job_uuid).where(_A.c.namespace == namespace, _A.c.name == name)
