"""Each job's run count, ``job_run_counts``: kept by triggers on ``runs`` (counting a
busy job's runs would read every one of its index entries), read by a job's run list."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from strata.store.schema import job_run_counts

_C = job_run_counts


def join_run_count(
    from_: sa.FromClause, job: sa.ColumnElement[Any]
) -> tuple[sa.Join, sa.ColumnElement[Any]]:
    """``from_`` outer-joined to the run count of ``job`` (a column of it), and that
    count: NULL for a job that never ran."""
    return from_.outerjoin(_C, _C.c.job_uuid == job), _C.c.run_count
