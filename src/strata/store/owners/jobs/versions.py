"""The owner of ``job_versions`` and ``job_version_io``: each version of a job (its
fingerprint of io and source) and the datasets it reads and writes, the edges of the
lineage graph.

The fold inserts new versions with their edges (:func:`insert_new`), stretches them over
the runs that use them (:func:`widen`), and retention recomputes or drops them
(:func:`identities`, :func:`update_times`, :func:`delete`). The graph's walk over the
current versions' edges is one recursive statement here (:func:`walk_statement`). Every
other read joins :func:`relation` or :func:`io_relation` into its own statement.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store.bulk import (
    cached,
    chunks,
    execute_arrays,
    execute_many,
    insert_ignore_many,
    update_rows,
)
from strata.store.owners.runs import rows as stored_runs
from strata.store.schema import job_version_io, job_versions

_JV, _IO = job_versions, job_version_io


def relation(name: str = "job_versions") -> NamedFromClause:
    """The versions under ``name``, to read in a statement that joins them to another
    family's tables (an alias: it can be selected from, not written)."""
    return _JV.alias(name)


def io_relation(name: str = "job_version_io") -> NamedFromClause:
    """The versions' dataset edges under ``name``, read-only as :func:`relation`."""
    return _IO.alias(name)


# --- writes -----------------------------------------------------------------------------


def insert_new(
    conn: Connection, rows: Sequence[dict[str, Any]], edges: Mapping[str, list[dict[str, Any]]]
) -> None:
    """Insert the versions of ``rows`` not stored yet and, of those, their ``edges`` (by
    version uuid): a version's edges are written once, with it."""
    if not rows:
        return
    created = insert_ignore_many(conn, _JV, list(rows), ["uuid"])
    new_edges = [e for u in sorted(created) for e in edges.get(u, ())]
    if new_edges:
        execute_many(conn, cached(("job-version-io",), _IO.insert), new_edges)


def _widened(created: Any, updated: Any, run: Any) -> dict[str, Any]:
    """A version's times and latest run once it covers the run ``run`` of these times
    (the later run, ties to the larger id, is the latest)."""
    jv = _JV
    latest = stored_runs.relation("latest")
    beaten = sa.exists().where(
        latest.c.uuid == jv.c.latest_run_uuid,
        sa.or_(
            latest.c.updated_at < updated,
            sa.and_(latest.c.updated_at == updated, latest.c.uuid < run),
        ),
    )
    return {
        "created_at": sa.case((created < jv.c.created_at, created), else_=jv.c.created_at),
        "updated_at": sa.case((updated > jv.c.updated_at, updated), else_=jv.c.updated_at),
        "latest_run_uuid": sa.case(
            (jv.c.latest_run_uuid.is_(None), run),
            (jv.c.latest_run_uuid == run, run),
            (beaten, run),
            else_=jv.c.latest_run_uuid,
        ),
    }


def _widen_statement() -> Any:
    created = sa.bindparam("c", type_=_JV.c.created_at.type)
    updated = sa.bindparam("u", type_=_JV.c.updated_at.type)
    return (
        _JV.update()
        .where(_JV.c.uuid == sa.bindparam("v"))
        .values(**_widened(created, updated, sa.bindparam("r")))
    )


# Each version's runs reduced to the earliest creation and the latest run (ties to the
# larger id): what applying them one by one leaves.
_WIDEN_ROWS = """(SELECT DISTINCT ON (w.v) w.v, w.r, w.u, min(w.c) OVER (PARTITION BY w.v) AS c
  FROM unnest(%(v)s::varchar[], %(r)s::varchar[], %(c)b::timestamptz[],
    %(u)b::timestamptz[]) AS w(v, r, c, u)
  ORDER BY w.v, w.u DESC, w.r DESC) AS x"""


def _widen_arrays_sql(dialect: Dialect) -> str:
    """:func:`_widen_statement` for every run at once, on PostgreSQL."""
    x = sa.table("x", sa.column("v"), sa.column("r"), sa.column("c"), sa.column("u"))
    stmt = _JV.update().where(_JV.c.uuid == x.c.v).values(**_widened(x.c.c, x.c.u, x.c.r))
    sql = str(stmt.compile(dialect=dialect))
    anchor = " FROM x WHERE "
    assert sql.count(anchor) == 1, sql
    return sql.replace(anchor, f" FROM {_WIDEN_ROWS} WHERE ")


def widen(conn: Connection, runs: Sequence[tuple[str, str, Any, Any]]) -> None:
    """Stretch versions' times and latest run to cover runs ``(version, run, created,
    updated)`` as stored (the later run, ties to the larger id, is the latest)."""
    if not runs:
        return
    if conn.dialect.name == "postgresql":
        # One statement, where row by row the fold sent one per run it touched.
        columns = list(zip(*runs, strict=True))
        arrays = {k: list(col) for k, col in zip("vrcu", columns, strict=True)}
        sql = cached(("widen-job-versions-arrays",), lambda: _widen_arrays_sql(conn.dialect))
        execute_arrays(conn, sql, arrays)
        return
    execute_many(
        conn,
        cached(("widen-job-version",), _widen_statement),
        [{"v": v, "r": r, "c": c, "u": u} for v, r, c, u in runs],
    )


def update_times(conn: Connection, writes: Sequence[dict[str, Any]]) -> None:
    """Set each version's ``created_at``, ``updated_at`` and ``latest_run_uuid``."""
    update_rows(conn, _JV, "uuid", list(writes))


def delete(conn: Connection, uuids: Collection[str]) -> None:
    """Drop these versions and their edges."""
    for part in chunks(sorted(uuids)):
        conn.execute(_IO.delete().where(_IO.c.job_version_uuid.in_(part)))
        conn.execute(_JV.delete().where(_JV.c.uuid.in_(part)))


# --- reads ------------------------------------------------------------------------------


def identities(conn: Connection, uuids: Collection[str]) -> dict[str, tuple[str, str]]:
    """version uuid -> (its job's uuid, its fingerprint), for those stored."""
    out: dict[str, tuple[str, str]] = {}
    for part in chunks(sorted(uuids)):
        found = sa.select(_JV.c.uuid, _JV.c.job_uuid, _JV.c.version).where(_JV.c.uuid.in_(part))
        out.update((str(u), (str(j), str(fp))) for u, j, fp in conn.execute(found))
    return out


# One row per hop: the hop's new job versions and every version reached so far. The visited
# set travels as an array, so each version is expanded once (a plain recursive UNION of
# (version, hop) rows would re-expand every version at every later hop).
_WALK_SQL = """
WITH RECURSIVE walk(hop, frontier, seen) AS (
  SELECT 0, f.versions::varchar[], f.versions::varchar[] FROM ({start}) AS f(versions)
  WHERE f.versions IS NOT NULL
  UNION ALL
  SELECT w.hop + 1, n.versions, w.seen || n.versions
  FROM walk AS w CROSS JOIN LATERAL (
    SELECT array_agg(DISTINCT b.job_version_uuid) AS versions
    FROM job_version_io AS a
    JOIN job_version_io AS b ON b.dataset_uuid = a.dataset_uuid
    JOIN jobs AS j ON j.uuid = b.job_uuid AND j.current_version_uuid = b.job_version_uuid
    WHERE a.job_version_uuid = ANY (w.frontier)
      AND b.job_version_uuid NOT IN (SELECT unnest(w.seen))
  ) AS n
  WHERE w.hop < :depth AND n.versions IS NOT NULL
)
SELECT v.uuid AS job_version_uuid, io.job_uuid, io.dataset_uuid, io.io_type
FROM (SELECT seen FROM walk ORDER BY hop DESC LIMIT 1) AS w
CROSS JOIN LATERAL unnest(w.seen) AS v(uuid)
LEFT JOIN job_version_io AS io ON io.job_version_uuid = v.uuid
"""


_WALK_FROM_DATASET = sa.text(
    _WALK_SQL.format(
        start="SELECT array_agg(DISTINCT a.job_version_uuid) FROM job_version_io AS a"
        " JOIN jobs AS j ON j.uuid = a.job_uuid AND j.current_version_uuid = a.job_version_uuid"
        " WHERE a.dataset_uuid = :start"
    )
)


_WALK_FROM_JOB = sa.text(
    _WALK_SQL.format(
        start="SELECT ARRAY[current_version_uuid] FROM jobs"
        " WHERE uuid = :start AND current_version_uuid IS NOT NULL"
    )
)


def walk_statement(from_job: bool) -> sa.TextClause:
    """The current graph's reach from ``:start`` (a job, or a dataset) within ``:depth``
    hops, as one recursive statement (PostgreSQL): rows of (job version, its job, a
    dataset, INPUT|OUTPUT); a reached version with no edges has a null job."""
    return _WALK_FROM_JOB if from_job else _WALK_FROM_DATASET
