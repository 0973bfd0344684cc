"""The rows of a graph's nodes: datasets, jobs, their tags and latest runs, one query each.

Rows are unpacked as tuples in the order of their SELECT: reading a SQLAlchemy row by
attribute costs ten times as much as unpacking it, and a graph has a few thousand values
to read.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.lineage.query import datasets as dataset_reads
from strata.lineage.query import runs as run_reads
from strata.store import bulk, jsoncodec
from strata.store.bulk import one_of
from strata.store.owners import tags
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.jobs import versions as versions_of
from strata.store.owners.runs import rows as stored_runs

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()


def _in_ids(col: sa.ColumnElement[Any], pg: bool) -> sa.ColumnElement[bool]:
    """``col IN :ids`` (on PostgreSQL one array parameter, see :func:`bulk.one_of`)."""
    result: sa.ColumnElement[bool] = one_of("postgresql" if pg else "sqlite", col, "ids")
    return result


def _json_text(col: sa.ColumnElement[Any], name: str) -> sa.Label[str]:
    """A JSON column read as its text, for :func:`_json`."""
    return sa.cast(col, sa.Text).label(name)


def _version_cols(v: sa.FromClause) -> list[sa.ColumnElement[Any]]:
    return [
        v.c.uuid.label("v_uuid"),
        # When data was last written (Marquez's lastModifiedAt): a run's output or a commit;
        # a declared or stand-in version writes nothing.
        sa.case(
            (sa.and_(v.c.run_uuid.is_(None), v.c.commit_id.is_(None)), sa.null()),
            else_=v.c.created_at,
        ).label("v_created_at"),
        v.c.lifecycle_state.label("v_lifecycle_state"),
        v.c.commit_id.label("v_commit_id"),
        _json_text(v.c.schema_fields, "v_schema_fields"),
        _json_text(v.c.facets, "v_facets"),
    ]


_DATASET_COLS = 14  # before the version columns of _datasets_select; "tagged" is the last


@functools.cache
def _datasets_select(pg: bool, with_current: bool) -> sa.Select[Any]:
    """Visible datasets by uuid, whether they carry tags and, ``with_current``, their current
    version (:func:`_version_cols`)."""
    d, v = _DATASETS, _VERSIONS
    stmt = sa.select(
        d.c.uuid,
        d.c.namespace,
        d.c.name,
        d.c.type,
        d.c.physical_name,
        d.c.source_name,
        d.c.description,
        d.c.is_lake,
        d.c.created_at,
        d.c.updated_at,
        d.c.deleted_at,
        d.c.current_version_uuid,
        _json_text(d.c.facets, "facets"),
        tags.dataset_tagged(d.c.uuid).label("tagged"),
    ).where(_in_ids(d.c.uuid, pg), d.c.is_hidden.is_(False))
    if not with_current:
        return stmt
    return stmt.add_columns(*_version_cols(v)).outerjoin(v, v.c.uuid == d.c.current_version_uuid)


@functools.cache
def _versions_select(pg: bool) -> sa.Select[Any]:
    v = _VERSIONS
    return sa.select(*_version_cols(v)).where(_in_ids(v.c.uuid, pg))


def datasets(
    conn: Connection, uuids: Collection[str], version_of: dict[str, str | None] | None
) -> dict[str, dataset_reads.Dataset]:
    """Visible datasets at their current version, or at ``version_of``'s; as
    :func:`.datasets.datasets_by_uuid`."""
    pg = conn.dialect.name == "postgresql"
    rows = bulk.rows_by_ids(conn, _datasets_select(pg, version_of is None), uuids)
    versions: dict[str, Sequence[Any]] = {}
    if version_of is None:
        versions = {r[0]: r[_DATASET_COLS:] for r in rows if r[_DATASET_COLS] is not None}
    else:
        wanted = {v for v in version_of.values() if v}
        by_uuid = {v[0]: v for v in bulk.rows_by_ids(conn, _versions_select(pg), wanted)}
        versions = {d: by_uuid[v] for d, v in version_of.items() if v in by_uuid}
    by_dataset = tags.of_datasets(conn, [r[0] for r in rows if r[_DATASET_COLS - 1]])
    out: dict[str, dataset_reads.Dataset] = {}
    for (
        uuid,
        namespace,
        name,
        type_,
        physical_name,
        source_name,
        description,
        is_lake,
        created_at,
        updated_at,
        deleted_at,
        current_version,
        facets_text,
        *_,
    ) in rows:
        facets: dict[str, Any] = dict(jsoncodec.loads(facets_text) or {})
        dataset_facets = dict(facets)
        version = versions.get(uuid)
        modified_at = lifecycle = commit_id = schema = None
        if version is not None:
            _, modified_at, lifecycle, commit_id, schema_text, v_facets_text = version
            schema = jsoncodec.loads(schema_text)
            v_facets = jsoncodec.loads(v_facets_text)
            if isinstance(v_facets, dict):
                facets.update(v_facets)
        dtags = by_dataset.get(uuid, {})
        out[uuid] = dataset_reads.Dataset(
            uuid=uuid,
            namespace=namespace,
            name=name,
            type=type_,
            physical_name=physical_name or name,
            source_name=source_name,
            description=description,
            is_lake=bool(is_lake),
            created_at=created_at,
            updated_at=updated_at,
            deleted_at=deleted_at,
            current_version=current_version if version_of is None else version_of.get(uuid),
            last_modified_at=modified_at,
            lifecycle_state=lifecycle,
            fields=dataset_reads.dataset_fields(
                dataset_reads.shown_schema(schema, modified_at, dataset_facets), dtags
            ),
            tags=sorted(dtags.get("", [])),
            facets=facets,
            commit_id=commit_id,
        )
    return out


def _run_cols(r: sa.FromClause, j: sa.FromClause) -> list[sa.ColumnElement[Any]]:
    """What a :class:`.runs.Run` needs, for :func:`runs`."""
    return [
        r.c.uuid.label("r_uuid"),
        r.c.job_uuid.label("r_job_uuid"),
        j.c.namespace.label("r_job_namespace"),
        j.c.name.label("r_job_name"),
        r.c.job_version_uuid.label("r_job_version_uuid"),
        r.c.parent_run_uuid.label("r_parent_run_uuid"),
        r.c.state.label("r_state"),
        r.c.created_at.label("r_created_at"),
        r.c.updated_at.label("r_updated_at"),
        r.c.nominal_start_time.label("r_nominal_start_time"),
        r.c.nominal_end_time.label("r_nominal_end_time"),
        r.c.started_at.label("r_started_at"),
        r.c.ended_at.label("r_ended_at"),
        _json_text(r.c.facets, "r_facets"),
    ]


JOB_COLS = 14  # before the run columns of jobs_select; "tagged" is the last


@functools.cache
def jobs_select(pg: bool, with_run: bool) -> sa.Select[Any]:
    """Visible jobs by uuid with their parent's name and whether they carry tags;
    ``with_run``, also the latest run of their current version (:func:`_run_cols`)."""
    j, parent = job_rows.relation(), job_rows.relation("parent")
    stmt = (
        sa.select(
            j.c.uuid,
            j.c.namespace,
            j.c.name,
            j.c.simple_name,
            j.c.parent_job_uuid,
            parent.c.name.label("parent_name"),
            j.c.type,
            j.c.location,
            j.c.description,
            _json_text(j.c.facets, "facets"),
            j.c.created_at,
            j.c.updated_at,
            j.c.current_version_uuid,
            tags.job_tagged(j.c.uuid).label("tagged"),
        )
        .select_from(j.outerjoin(parent, parent.c.uuid == j.c.parent_job_uuid))
        .where(_in_ids(j.c.uuid, pg), j.c.is_hidden.is_(False))
    )
    if not with_run:
        return stmt
    jv, r, rj = versions_of.relation(), stored_runs.relation(), job_rows.relation("run_job")
    return (
        stmt.add_columns(*_run_cols(r, rj))
        .outerjoin(jv, jv.c.uuid == j.c.current_version_uuid)
        .outerjoin(r, r.c.uuid == jv.c.latest_run_uuid)
        .outerjoin(rj, rj.c.uuid == r.c.job_uuid)
    )


@functools.cache
def runs_select(pg: bool) -> sa.Select[Any]:
    r, j = stored_runs.relation(), job_rows.relation()
    return (
        sa.select(*_run_cols(r, j)).join(j, j.c.uuid == r.c.job_uuid).where(_in_ids(r.c.uuid, pg))
    )


def runs(conn: Connection, rows: Iterable[Sequence[Any]]) -> dict[str, run_reads.Run]:
    """:class:`.runs.Run` (as :func:`.runs.runs_by_uuid`) from :func:`_run_cols` values,
    with the versions the runs read and wrote."""
    by_uuid = {r[0]: r for r in rows if r[0] is not None}
    inputs, outputs = run_reads.run_io_refs(conn, by_uuid)
    # _run_cols lists Run's first fields in order; the facets come as JSON text.
    return {
        uuid: run_reads.Run(
            *[
                *row[:13],
                dict(jsoncodec.loads(row[13]) or {}),
                inputs.get(uuid, []),
                outputs.get(uuid, []),
            ]
        )
        for uuid, row in by_uuid.items()
    }
