"""Search over dataset and job names, and the raw event lists."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import InvalidArgument
from strata.lineage.query.common import Page
from strata.store.owners import events as stored_events
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.jobs import rows as job_rows

_DATASETS = dataset_rows.relation()

# --- search and events --------------------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    type: Literal["DATASET", "JOB"]
    namespace: str
    name: str
    updated_at: datetime


def search(
    conn: Connection,
    q: str,
    filter: Literal["DATASET", "JOB"] | None,
    sort: Literal["NAME", "UPDATE_AT", "RELEVANCE"],
    limit: int,
    namespace: str | None = None,
) -> Page[SearchHit]:
    """Case-insensitive pattern search; ``%`` and ``_`` in ``q`` are wildcards, as in Marquez.
    ``RELEVANCE`` puts whole-name matches first, then names starting with ``q``, then names
    with a part (after ``/``, ``.`` or ``-``) starting with it, then the rest; shorter first."""
    pattern = f"%{q.lower()}%"
    parts: list[sa.Select[Any]] = []
    if filter in (None, "DATASET"):
        d = _DATASETS
        cond = sa.and_(
            sa.func.lower(d.c.name).like(pattern),
            d.c.deleted_at.is_(None),
            d.c.is_hidden.is_(False),
        )
        if namespace:
            cond = sa.and_(cond, d.c.namespace == namespace)
        parts.append(
            sa.select(
                sa.literal("DATASET").label("type"),
                d.c.namespace,
                d.c.name,
                d.c.updated_at,
            ).where(cond)
        )
    if filter in (None, "JOB"):
        j = job_rows.relation()
        cond = sa.and_(sa.func.lower(j.c.name).like(pattern), j.c.is_hidden.is_(False))
        if namespace:
            cond = sa.and_(cond, j.c.namespace == namespace)
        parts.append(
            sa.select(
                sa.literal("JOB").label("type"), j.c.namespace, j.c.name, j.c.updated_at
            ).where(cond)
        )
    u = sa.union_all(*parts).subquery() if len(parts) > 1 else parts[0].subquery()
    orders: dict[str, list[sa.ColumnElement[Any]]] = {
        "NAME": [u.c.name, u.c.namespace, u.c.type],
        "UPDATE_AT": [u.c.updated_at.desc(), u.c.name, u.c.type],
        "RELEVANCE": [_match_rank(u.c.name, q), sa.func.length(u.c.name), u.c.name, u.c.type],
    }
    rows = conn.execute(sa.select(u).order_by(*orders[sort]).limit(limit)).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(u)).scalar_one()
    return Page([SearchHit(r.type, r.namespace, r.name, r.updated_at) for r in rows], total)


def _match_rank(name: sa.ColumnElement[str], q: str) -> sa.ColumnElement[int]:
    """0 for a whole-name match, 1 a prefix, 2 a part's prefix, 3 anything else."""
    low, needle = sa.func.lower(name), q.lower()
    part = sa.or_(*[low.like(f"%{sep}{needle}%") for sep in ("/", ".", "-")])
    return sa.case((low.like(needle), 0), (low.like(f"{needle}%"), 1), (part, 2), else_=3)


def list_events(
    conn: Connection,
    before: datetime | None,
    after: datetime | None,
    ascending: bool,
    limit: int,
    offset: int,
) -> Page[dict[str, Any]]:
    """Raw run events by event time (``ix_lineage_events_time``): Marquez's lineage event
    list, which keeps DatasetEvents and JobEvents apart and does not show them."""
    if before is not None and after is not None and after > before:
        raise InvalidArgument(
            "'after' is later than 'before'; swap them", before=str(before), after=str(after)
        )
    found, total = stored_events.page_of_run_events(conn, before, after, ascending, limit, offset)
    return Page(found, total)


def all_events(
    conn: Connection, limit: int, offset: int, namespace: str | None = None
) -> list[dict[str, Any]]:
    """Every kind of event by event time, newest first (ties by id, so pages do not
    overlap): all of them, or those touching ``namespace``."""
    return stored_events.newest(conn, limit, offset, namespace)
