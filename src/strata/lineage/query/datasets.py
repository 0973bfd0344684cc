"""Datasets and their versions as Marquez shows them: fields with tags, facets (their
readers' input facets too), column lineage, and the run that made each version."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata import ids
from strata.errors import NotFound
from strata.lineage.query.common import DatasetVersionRef, Page, chunks
from strata.lineage.query.namespaces import get_namespace
from strata.lineage.query.read_facets import readers_input_facets
from strata.lineage.query.runs import Run, runs_by_uuid
from strata.store import bulk
from strata.store.owners import tags
from strata.store.owners.datasets import columns as edges_of
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import symlinks as stored_symlinks
from strata.store.owners.datasets import versions as stored_versions

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()

# --- datasets -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    type: str | None
    description: str | None
    tags: list[str]


@dataclass(frozen=True)
class Dataset:
    uuid: str
    namespace: str
    name: str
    type: str
    physical_name: str
    source_name: str | None
    description: str | None
    is_lake: bool
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None
    current_version: str | None
    last_modified_at: datetime | None
    lifecycle_state: str | None
    fields: list[Field]
    tags: list[str]
    facets: dict[str, Any]
    commit_id: int | None
    # Marquez's ``columnLineage``: each output field of the version and the fields it came
    # from (only where datasets are read one by one or listed, not in graphs).
    column_lineage: list[ColumnLineage] = field(default_factory=list)


@dataclass(frozen=True)
class ColumnLineage:
    """An output field of a dataset version and the input fields it was made from."""

    field: str
    inputs: list[tuple[str, str, str, str | None, str | None]]  # ns, dataset, field, desc, type


def _column_lineage(conn: Connection, versions: Sequence[str]) -> dict[str, list[ColumnLineage]]:
    """The column lineage of each of ``versions``, by output field then input."""
    cl, d = edges_of.relation("cl"), _DATASETS
    edges: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for batch in chunks(sorted(set(versions))):
        rows = conn.execute(
            sa.select(
                cl.c.dataset_version_uuid,
                cl.c.output_field,
                d.c.namespace,
                d.c.name,
                cl.c.input_field,
                cl.c.transformation_description,
                cl.c.transformation_type,
            )
            .join(d, d.c.uuid == cl.c.input_dataset_uuid)
            .where(cl.c.dataset_version_uuid.in_(batch))
            .order_by(cl.c.output_field, d.c.namespace, d.c.name, cl.c.input_field)
        ).all()
        for version, output, *source in rows:
            edges[str(version)][str(output)].append(tuple(source))
    return {
        v: [ColumnLineage(f, inputs) for f, inputs in by_field.items()]
        for v, by_field in edges.items()
    }


def dataset_fields(schema_fields: Any, field_tags: dict[str, list[str]]) -> list[Field]:
    out: list[Field] = []
    if not isinstance(schema_fields, list):
        return out
    for f in schema_fields:
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            typ = f.get("type")
            desc = f.get("description")
            out.append(
                Field(
                    f["name"],
                    typ if isinstance(typ, str) else None,
                    desc if isinstance(desc, str) else None,
                    sorted(field_tags.get(f["name"], [])),
                )
            )
    return out


def _datasets_from_rows(
    conn: Connection,
    rows: Sequence[sa.Row[Any]],
    version_of: dict[str, str | None] | None = None,
) -> list[Dataset]:
    """Datasets with their version's fields; ``version_of`` overrides the current version."""
    chosen = {
        r.uuid: (version_of.get(r.uuid) if version_of is not None else r.current_version_uuid)
        for r in rows
    }
    version_ids = [v for v in chosen.values() if v]
    versions: dict[str, sa.Row[Any]] = {}
    dv = _VERSIONS
    for batch in chunks(version_ids):
        for row in conn.execute(sa.select(dv).where(dv.c.uuid.in_(batch))).all():
            versions[row.uuid] = row
    by_dataset = tags.of_datasets(conn, [r.uuid for r in rows])
    lineage = _column_lineage(conn, version_ids)
    read = readers_input_facets(conn, version_ids)
    out = []
    for r in rows:
        vid = chosen[r.uuid]
        v = versions.get(vid) if vid else None
        dtags = by_dataset.get(r.uuid, {})
        facets: dict[str, Any] = dict(r.facets or {})
        if v is not None and isinstance(v.facets, dict):
            facets.update(v.facets)
        facets.update(read.get(vid, {}) if vid else {})
        out.append(
            Dataset(
                uuid=r.uuid,
                namespace=r.namespace,
                name=r.name,
                type=r.type,
                physical_name=r.physical_name or r.name,
                source_name=r.source_name,
                description=r.description,
                is_lake=bool(r.is_lake),
                created_at=r.created_at,
                updated_at=r.updated_at,
                deleted_at=r.deleted_at,
                current_version=vid,
                last_modified_at=_written_at(v),
                lifecycle_state=v.lifecycle_state if v is not None else None,
                fields=dataset_fields(
                    shown_schema(
                        v.schema_fields if v is not None else None, _written_at(v), r.facets
                    ),
                    dtags,
                ),
                tags=sorted(dtags.get("", [])),
                facets=facets,
                commit_id=v.commit_id if v is not None else None,
                column_lineage=lineage.get(vid, []) if vid else [],
            )
        )
    return out


def shown_schema(
    version_schema: Any, written_at: datetime | None, dataset_facets: dict[str, Any] | None
) -> Any:
    """The fields a dataset shows: its current version's; for a version no run or commit
    wrote that has none (a dataset only ever read), the schema its events sent, as
    Marquez versions an input read with a schema."""
    if version_schema is not None or written_at is not None:
        return version_schema
    schema = (dataset_facets or {}).get("schema")
    return schema.get("fields") if isinstance(schema, dict) else None


def _written_at(version: sa.Row[Any] | None) -> datetime | None:
    """When the version's data was written (Marquez's ``lastModifiedAt``): a run's output
    or a lake commit; a declared or stand-in version writes nothing."""
    if version is None or (version.run_uuid is None and version.commit_id is None):
        return None
    created: datetime = version.created_at
    return created


# Rows for reading, without the ingest bookkeeping (``fold_state``), which can be large.
_READABLE = sa.select(*[c for c in _DATASETS.c if c.name != "fold_state"])


def datasets_by_uuid(
    conn: Connection, uuids: Iterable[str], version_of: dict[str, str | None] | None = None
) -> dict[str, Dataset]:
    rows: list[sa.Row[Any]] = []
    for batch in chunks(set(uuids)):
        rows.extend(conn.execute(_READABLE.where(_DATASETS.c.uuid.in_(batch))).all())
    return {d.uuid: d for d in _datasets_from_rows(conn, rows, version_of)}


def list_datasets(conn: Connection, namespace: str, limit: int, offset: int) -> Page[Dataset]:
    get_namespace(conn, namespace)
    t = _DATASETS
    where = sa.and_(t.c.namespace == namespace, t.c.deleted_at.is_(None), t.c.is_hidden.is_(False))
    rows = conn.execute(
        sa.select(t).where(where).order_by(t.c.name).limit(limit).offset(offset)
    ).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(t).where(where)).scalar_one()
    return Page(_datasets_from_rows(conn, rows), total)


def symlink_target(conn: Connection, namespace: str, name: str) -> sa.Row[Any] | None:
    """The visible dataset whose ``symlinks`` facet names ``namespace``/``name`` (a Hive
    table behind a path, say), as Marquez resolves a symlink; where several do, the first
    by namespace and name, so that the answer does not depend on arrival order."""
    t = _DATASETS
    return conn.execute(
        sa.select(t)
        .where(t.c.uuid.in_(stored_symlinks.symlinked(namespace, name)), t.c.is_hidden.is_(False))
        .order_by(t.c.namespace, t.c.name)
        .limit(1)
    ).first()


def dataset_row(conn: Connection, namespace: str, name: str) -> sa.Row[Any]:
    """The visible dataset of that name, else the one it is a symlink of."""
    t = _DATASETS
    row = conn.execute(
        sa.select(t).where(t.c.namespace == namespace, t.c.name == name, t.c.is_hidden.is_(False))
    ).first()
    if row is None:
        row = symlink_target(conn, namespace, name)
    if row is None:
        raise NotFound(
            f"dataset {name!r} not found in namespace {namespace!r}",
            namespace=namespace,
            dataset=name,
        )
    return row


def require_datasets(conn: Connection, keys: Sequence[tuple[str, str]]) -> None:
    """:func:`dataset_row` for many (namespace, name) pairs, a statement per thousand:
    NotFound names the first that is missing."""
    t = _DATASETS
    by_uuid = {ids.dataset_uuid(ns, name): (ns, name) for ns, name in keys}
    found: set[tuple[str, str]] = set()
    for chunk in bulk.chunks(sorted(by_uuid)):
        rows = conn.execute(
            sa.select(t.c.uuid).where(
                bulk.one_of(conn.dialect.name, t.c.uuid, "u"), t.c.is_hidden.is_(False)
            ),
            {"u": chunk},
        )
        found.update(by_uuid[str(r.uuid)] for r in rows)
    for namespace, name in keys:
        if (namespace, name) not in found:
            # Rows from before dataset ids were shared keep other ids: look those up by name.
            dataset_row(conn, namespace, name)  # raises NotFound naming it


def get_dataset(conn: Connection, namespace: str, name: str) -> Dataset:
    return _datasets_from_rows(conn, [dataset_row(conn, namespace, name)])[0]


@dataclass(frozen=True)
class DatasetVersion:
    uuid: str
    dataset: Dataset
    commit_id: int | None
    created_at: datetime
    run_uuid: str | None
    fields: list[Field]
    facets: dict[str, Any]
    lifecycle_state: str | None
    row_count: int | None
    content_hash: str | None
    created_by_run: Run | None = None
    partitions: dict[str, Any] | None = None  # a partitioned lake version's changes


def _versions_from_rows(
    conn: Connection,
    ds: Dataset,
    rows: Sequence[sa.Row[Any]],
    with_runs: bool = True,
    with_output_facets: bool = False,
) -> list[DatasetVersion]:
    """Versions as Marquez shows them: a listing shows each version's dataset facets and the
    input facets its readers sent (``dataQualityAssertions`` …), one version read alone adds
    the output facets its run sent (``outputStatistics`` …)."""
    runs = runs_by_uuid(conn, [r.run_uuid for r in rows if r.run_uuid]) if with_runs else {}
    field_tags = tags.of_datasets(conn, [ds.uuid]).get(ds.uuid, {})
    read = readers_input_facets(conn, [r.uuid for r in rows])
    out = []
    for r in rows:
        run = runs.get(r.run_uuid) if r.run_uuid else None
        facets, schema = _version_facets_and_schema(ds, r)
        facets = {**facets, **read.get(r.uuid, {})}
        if with_output_facets and run is not None:
            ref = DatasetVersionRef(ds.namespace, ds.name, r.uuid)
            facets = {**facets, **run.io_facets_of("outputs", ref)}
        out.append(
            DatasetVersion(
                uuid=r.uuid,
                dataset=ds,
                commit_id=r.commit_id,
                created_at=r.created_at,
                run_uuid=r.run_uuid,
                fields=dataset_fields(schema, field_tags),
                facets=facets,
                lifecycle_state=r.lifecycle_state,
                row_count=r.row_count,
                content_hash=r.content_hash,
                created_by_run=run,
                partitions=r.partitions,
            )
        )
    return out


def _version_facets_and_schema(ds: Dataset, row: sa.Row[Any]) -> tuple[dict[str, Any], Any]:
    """A version's facets and fields; a stand-in (a version runs read before anything
    wrote or declared one) shows what its readers sent, as Marquez versions an input."""
    if row.run_uuid is None and row.commit_id is None and not row.declared:
        return dict(ds.facets), shown_schema(row.schema_fields, None, ds.facets)
    return dict(row.facets or {}), row.schema_fields


def list_dataset_versions(
    conn: Connection, namespace: str, name: str, limit: int, offset: int
) -> Page[DatasetVersion]:
    ds = get_dataset(conn, namespace, name)
    dv = _VERSIONS
    rows = conn.execute(
        sa.select(dv)
        .where(dv.c.dataset_uuid == ds.uuid)
        .order_by(dv.c.created_at.desc(), dv.c.uuid.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    total = conn.execute(
        sa.select(sa.func.count()).select_from(dv).where(dv.c.dataset_uuid == ds.uuid)
    ).scalar_one()
    return Page(_versions_from_rows(conn, ds, rows), total)


def version_row(conn: Connection, dataset_uuid: str, version: str | None) -> sa.Row[Any] | None:
    """A dataset's version by uuid or commit id; ``None`` asks for the current one."""
    dv = _VERSIONS
    if version is None:
        cur = conn.execute(
            sa.select(_DATASETS.c.current_version_uuid).where(_DATASETS.c.uuid == dataset_uuid)
        ).scalar()
        if cur is None:
            return None
        return conn.execute(sa.select(dv).where(dv.c.uuid == cur)).first()
    if version.isdigit() and len(version) < 19:
        cond = dv.c.commit_id == int(version)
    else:
        cond = dv.c.uuid == version.lower()
    return conn.execute(sa.select(dv).where(dv.c.dataset_uuid == dataset_uuid, cond)).first()


def get_dataset_version(
    conn: Connection, namespace: str, name: str, version: str
) -> DatasetVersion:
    ds = get_dataset(conn, namespace, name)
    row = version_row(conn, ds.uuid, version)
    if row is None:
        raise NotFound(
            f"version {version!r} of dataset {name!r} in namespace {namespace!r} not found",
            namespace=namespace,
            dataset=name,
            version=version,
        )
    return _versions_from_rows(conn, ds, [row], with_output_facets=True)[0]
