"""Read-side queries over the lineage model: namespaces, sources, datasets, jobs, runs, tags.

Every function takes an open :class:`~sqlalchemy.engine.Connection` and returns plain
dataclasses; unknown resources raise :class:`~strata.errors.NotFound`. Lists are pages
(``limit``/``offset``) with a total, and every list is enriched with a fixed number of
batched ``IN`` queries, never one query per row.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata import ids
from strata.errors import InvalidArgument, NotFound
from strata.lineage.query.read_facets import readers_input_facets
from strata.store import bulk
from strata.store import schema as s

T = TypeVar("T")
CHUNK = 900  # below SQLite's bound-parameter limit on old builds, and plenty for PostgreSQL


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    total: int


def chunks(values: Iterable[str]) -> list[list[str]]:
    """``values`` in lists of :data:`CHUNK`: reads take bigger slices than writes."""
    return bulk.chunks(values, CHUNK)


# --- namespaces and sources -------------------------------------------------------------


@dataclass(frozen=True)
class Namespace:
    name: str
    owner: str | None
    description: str | None
    is_hidden: bool
    created_at: datetime
    updated_at: datetime


def _namespace(row: sa.Row[Any]) -> Namespace:
    return Namespace(
        row.name, row.owner, row.description, bool(row.is_hidden), row.created_at, row.updated_at
    )


def _by_name_page(
    conn: Connection, t: sa.Table, limit: int, offset: int, make: Callable[[sa.Row[Any]], T]
) -> Page[T]:
    """A page of a table keyed by ``name``, in name order, with its total."""
    rows = conn.execute(sa.select(t).order_by(t.c.name).limit(limit).offset(offset)).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
    return Page([make(r) for r in rows], total)


def _by_name(conn: Connection, t: sa.Table, name: str, what: str) -> sa.Row[Any]:
    row = conn.execute(sa.select(t).where(t.c.name == name)).first()
    if row is None:
        raise NotFound(f"{what} {name!r} not found", **{what: name})
    return row


def list_namespaces(conn: Connection, limit: int, offset: int) -> Page[Namespace]:
    return _by_name_page(conn, s.namespaces, limit, offset, _namespace)


def get_namespace(conn: Connection, name: str) -> Namespace:
    return _namespace(_by_name(conn, s.namespaces, name, "namespace"))


@dataclass(frozen=True)
class Source:
    name: str
    type: str
    connection_url: str | None
    description: str | None
    created_at: datetime
    updated_at: datetime


def _source(row: sa.Row[Any]) -> Source:
    return Source(
        row.name, row.type, row.connection_url, row.description, row.created_at, row.updated_at
    )


def list_sources(conn: Connection, limit: int, offset: int) -> Page[Source]:
    return _by_name_page(conn, s.sources, limit, offset, _source)


def get_source(conn: Connection, name: str) -> Source:
    return _source(_by_name(conn, s.sources, name, "source"))


# --- tags ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tag:
    name: str
    description: str | None


def _tag(row: sa.Row[Any]) -> Tag:
    return Tag(row.name, row.description)


def list_tags(conn: Connection, limit: int, offset: int) -> Page[Tag]:
    return _by_name_page(conn, s.tags, limit, offset, _tag)


def get_tag(conn: Connection, name: str) -> Tag:
    return _tag(_by_name(conn, s.tags, name, "tag"))


# --- datasets -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetRef:
    namespace: str
    name: str


@dataclass(frozen=True)
class DatasetVersionRef:
    namespace: str
    name: str
    version: str


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
    cl, d = s.column_lineage, s.datasets
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


def _fields(schema_fields: Any, field_tags: dict[str, list[str]]) -> list[Field]:
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


def _dataset_tags(conn: Connection, uuids: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """dataset uuid -> field name ('' for the dataset itself) -> tag names."""
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    t = s.dataset_tags
    for batch in chunks(uuids):
        for r in conn.execute(
            sa.select(t.c.dataset_uuid, t.c.field_name, t.c.tag_name).where(
                t.c.dataset_uuid.in_(batch)
            )
        ).all():
            out[r.dataset_uuid][r.field_name].append(r.tag_name)
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
    dv = s.dataset_versions
    for batch in chunks(version_ids):
        for row in conn.execute(sa.select(dv).where(dv.c.uuid.in_(batch))).all():
            versions[row.uuid] = row
    tags = _dataset_tags(conn, [r.uuid for r in rows])
    lineage = _column_lineage(conn, version_ids)
    read = readers_input_facets(conn, version_ids)
    out = []
    for r in rows:
        vid = chosen[r.uuid]
        v = versions.get(vid) if vid else None
        dtags = tags.get(r.uuid, {})
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
                fields=_fields(
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
_DATASETS = sa.select(*[c for c in s.datasets.c if c.name != "fold_state"])
_JOBS = sa.select(*[c for c in s.jobs.c if c.name != "fold_state"])


def datasets_by_uuid(
    conn: Connection, uuids: Iterable[str], version_of: dict[str, str | None] | None = None
) -> dict[str, Dataset]:
    rows: list[sa.Row[Any]] = []
    for batch in chunks(set(uuids)):
        rows.extend(conn.execute(_DATASETS.where(s.datasets.c.uuid.in_(batch))).all())
    return {d.uuid: d for d in _datasets_from_rows(conn, rows, version_of)}


def list_datasets(conn: Connection, namespace: str, limit: int, offset: int) -> Page[Dataset]:
    get_namespace(conn, namespace)
    t = s.datasets
    where = sa.and_(t.c.namespace == namespace, t.c.deleted_at.is_(None), t.c.is_hidden.is_(False))
    rows = conn.execute(
        sa.select(t).where(where).order_by(t.c.name).limit(limit).offset(offset)
    ).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(t).where(where)).scalar_one()
    return Page(_datasets_from_rows(conn, rows), total)


def dataset_row(conn: Connection, namespace: str, name: str) -> sa.Row[Any]:
    t = s.datasets
    row = conn.execute(
        sa.select(t).where(t.c.namespace == namespace, t.c.name == name, t.c.is_hidden.is_(False))
    ).first()
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
    t = s.datasets
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
    field_tags = _dataset_tags(conn, [ds.uuid]).get(ds.uuid, {})
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
                fields=_fields(schema, field_tags),
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
    dv = s.dataset_versions
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
    dv = s.dataset_versions
    if version is None:
        cur = conn.execute(
            sa.select(s.datasets.c.current_version_uuid).where(s.datasets.c.uuid == dataset_uuid)
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


# --- runs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    uuid: str
    job_uuid: str
    job_namespace: str
    job_name: str
    job_version_uuid: str | None
    parent_run_uuid: str | None
    state: str
    created_at: datetime
    updated_at: datetime
    nominal_start_time: datetime | None
    nominal_end_time: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    facets: dict[str, Any]
    input_versions: list[DatasetVersionRef] = field(default_factory=list)
    output_versions: list[DatasetVersionRef] = field(default_factory=list)
    # The inputFacets and outputFacets its events sent: {"inputs": [[ns, name, facets]]…}.
    io_facets: dict[str, Any] = field(default_factory=dict)

    def io_facets_of(self, side: Literal["inputs", "outputs"], ref: DatasetVersionRef) -> Any:
        """The facets the run sent for one of its input or output datasets."""
        for namespace, name, facets in self.io_facets.get(side) or ():
            if (namespace, name) == (ref.namespace, ref.name):
                return facets
        return {}

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return int((self.ended_at - self.started_at).total_seconds() * 1000)


def _run_select() -> sa.Select[Any]:
    r, j = s.runs, s.jobs
    return sa.select(r, j.c.namespace.label("job_namespace"), j.c.name.label("job_name")).join(
        j, j.c.uuid == r.c.job_uuid
    )


@dataclass(frozen=True)
class RunIO:
    """One version a run read (``read``) or wrote."""

    run: str
    read: bool
    namespace: str
    name: str
    version: str
    commit_id: int | None
    created_at: datetime
    producer: str | None  # the run that wrote the version


@functools.cache
def _run_io_select(dialect: str) -> sa.Select[Any]:
    ri, dv, d = s.run_inputs, s.dataset_versions, s.datasets
    version = (dv.c.uuid, dv.c.commit_id, dv.c.created_at, dv.c.run_uuid.label("producer"))
    ins = (
        sa.select(ri.c.run_uuid.label("run"), sa.true().label("read"), d.c.namespace, d.c.name)
        .add_columns(*version)
        .join(dv, dv.c.uuid == ri.c.dataset_version_uuid)
        .join(d, d.c.uuid == dv.c.dataset_uuid)
        .where(bulk.one_of(dialect, ri.c.run_uuid, "ids"))
    )
    outs = (
        sa.select(dv.c.run_uuid.label("run"), sa.false().label("read"), d.c.namespace, d.c.name)
        .add_columns(*version)
        .join(d, d.c.uuid == dv.c.dataset_uuid)
        .where(bulk.one_of(dialect, dv.c.run_uuid, "ids"))
    )
    both = sa.union_all(ins, outs).subquery()
    return sa.select(both).order_by(both.c.namespace, both.c.name, both.c.uuid)


def run_io(conn: Connection, run_ids: Iterable[str]) -> list[RunIO]:
    """Every version the runs read and wrote, by dataset then version: the one reader of
    a run's inputs and outputs (runs, the lineage graph and provenance use it)."""
    ids = sorted(set(run_ids))
    dialect = conn.dialect.name
    batches = [ids] if dialect == "postgresql" else chunks(ids)  # one array on PostgreSQL
    stmt = _run_io_select(dialect)
    return [
        RunIO(
            x.run, bool(x.read), x.namespace, x.name, x.uuid, x.commit_id, x.created_at, x.producer
        )
        for batch in batches
        if batch
        for x in conn.execute(stmt, {"ids": batch})
    ]


def run_io_refs(
    conn: Connection, run_ids: Iterable[str]
) -> tuple[dict[str, list[DatasetVersionRef]], dict[str, list[DatasetVersionRef]]]:
    """The versions each run read and wrote, as references."""
    inputs: dict[str, list[DatasetVersionRef]] = defaultdict(list)
    outputs: dict[str, list[DatasetVersionRef]] = defaultdict(list)
    for x in run_io(conn, run_ids):
        into = inputs if x.read else outputs
        into[x.run].append(DatasetVersionRef(x.namespace, x.name, x.version))
    return inputs, outputs


def _runs_from_rows(conn: Connection, rows: Sequence[sa.Row[Any]]) -> list[Run]:
    inputs, outputs = run_io_refs(conn, [r.uuid for r in rows])
    return [
        Run(
            uuid=r.uuid,
            job_uuid=r.job_uuid,
            job_namespace=r.job_namespace,
            job_name=r.job_name,
            job_version_uuid=r.job_version_uuid,
            parent_run_uuid=r.parent_run_uuid,
            state=r.state,
            created_at=r.created_at,
            updated_at=r.updated_at,
            nominal_start_time=r.nominal_start_time,
            nominal_end_time=r.nominal_end_time,
            started_at=r.started_at,
            ended_at=r.ended_at,
            facets=dict(r.facets or {}),
            input_versions=inputs.get(r.uuid, []),
            output_versions=outputs.get(r.uuid, []),
            io_facets=dict(r.io_facets or {}),
        )
        for r in rows
    ]


def runs_by_uuid(conn: Connection, uuids: Iterable[str]) -> dict[str, Run]:
    rows: list[sa.Row[Any]] = []
    for batch in chunks(set(uuids)):
        rows.extend(conn.execute(_run_select().where(s.runs.c.uuid.in_(batch))).all())
    return {r.uuid: r for r in _runs_from_rows(conn, rows)}


def get_run(conn: Connection, run_id: str) -> Run:
    run = runs_by_uuid(conn, [run_id.lower()]).get(run_id.lower())
    if run is None:
        raise NotFound(f"run {run_id!r} not found", run_id=run_id)
    return run


def run_number(conn: Connection, run: Run) -> int:
    """The run's place among its job's runs, oldest first from 1: the order of the job's
    run list (``ix_runs_job_created``), so a run reported late takes its place in time."""
    r = s.runs
    earlier = sa.or_(
        r.c.created_at < run.created_at,
        sa.and_(r.c.created_at == run.created_at, r.c.uuid <= run.uuid),
    )
    counted = sa.select(sa.func.count()).where(r.c.job_uuid == run.job_uuid, earlier)
    return int(conn.execute(counted).scalar_one())


def child_run_states(conn: Connection, run_uuid: str) -> dict[str, int]:
    """How many runs name this run as their parent, by state (``ix_runs_parent``)."""
    r = s.runs
    rows = conn.execute(
        sa.select(r.c.state, sa.func.count())
        .where(r.c.parent_run_uuid == run_uuid)
        .group_by(r.c.state)
    )
    return {str(row[0]): int(row[1]) for row in rows}


def run_has_own_events(conn: Connection, run_uuid: str) -> bool:
    """Whether any event was about this run itself, rather than naming it as a parent."""
    e = s.lineage_events
    found = conn.execute(sa.select(e.c.uuid).where(e.c.run_uuid == run_uuid).limit(1))
    return found.first() is not None


def recent_runs(conn: Connection, limit: int) -> list[Run]:
    """The last ``limit`` runs created, of any job, newest first."""
    r = s.runs
    newest = sa.select(r.c.uuid).order_by(r.c.created_at.desc(), r.c.uuid.desc()).limit(limit)
    order: list[str] = [str(row.uuid) for row in conn.execute(newest)]
    found = runs_by_uuid(conn, order)
    return [found[u] for u in order if u in found]


def commit_ids(conn: Connection, version_uuids: Iterable[str]) -> dict[str, int]:
    """The lake commit id of each of these dataset versions that has one."""
    v = s.dataset_versions
    found: dict[str, int] = {}
    for batch in chunks(set(version_uuids)):
        rows = conn.execute(
            sa.select(v.c.uuid, v.c.commit_id).where(
                v.c.uuid.in_(batch), v.c.commit_id.is_not(None)
            )
        )
        found.update({str(row.uuid): int(row.commit_id) for row in rows})
    return found


@dataclass(frozen=True)
class RunState:
    state: str
    at: datetime


def run_states(conn: Connection, run_id: str) -> list[RunState]:
    """A run's state history, oldest first."""
    t = s.run_states
    rows = conn.execute(
        sa.select(t.c.state, t.c.transitioned_at)
        .where(t.c.run_uuid == run_id.lower())
        .order_by(t.c.transitioned_at, t.c.uuid)
    )
    return [RunState(str(row.state), row.transitioned_at) for row in rows]


def _job_by_fqn(namespace: Any, name: Any) -> sa.Select[Any]:
    """The job a URL names by its FQN; soft-deleted jobs are not found, as in Marquez."""
    j = s.jobs
    return (
        sa.select(j.c.uuid, j.c.namespace, j.c.name)
        .where(j.c.namespace == namespace, j.c.name == name, j.c.is_hidden.is_(False))
        # Two jobs can share an FQN ("a.b", and "b" under "a"): always answer with the same one.
        .order_by(j.c.uuid)
        .limit(1)
    )


def _list_runs_select(job: sa.Select[Any], *, lateral: bool) -> sa.CompoundSelect[Any]:
    """A page of the runs of ``job`` (uuid, namespace, name), their inputs and outputs, and
    the job's run count: one statement.

    Rows are tagged by ``kind``: ``R`` a run, ``I``/``O`` one input/output version of a run,
    ``T`` the job itself with its run count (present whenever the job is, so an empty page
    still has its total and a missing job has no rows).
    """
    the_job = job.cte("job")
    page = _run_page(the_job)
    both = sa.union_all(
        _page_runs(page),
        _page_versions(page, "I", lateral=lateral),
        _page_versions(page, "O", lateral=lateral),
        _job_total(the_job),
    )
    col = both.selected_columns
    # Runs in page order; each run's versions by dataset name, as runs_by_uuid lists them.
    return both.order_by(
        col.kind, col.at.desc(), col.run_uuid.desc(), col.namespace, col.name, col.version
    )


_PAGE_RUN_COLS = [
    s.runs.c.job_version_uuid,
    s.runs.c.parent_run_uuid,
    s.runs.c.state,
    s.runs.c.updated_at,
    s.runs.c.nominal_start_time,
    s.runs.c.nominal_end_time,
    s.runs.c.started_at,
    s.runs.c.ended_at,
    s.runs.c.facets,
    s.runs.c.io_facets,
]


def _nulls(n: int) -> list[sa.ColumnElement[Any]]:
    return [sa.literal_column("NULL") for _ in range(n)]


def _run_page(the_job: sa.CTE) -> sa.CTE:
    """The keys of the page's runs, newest first (``limit``, ``offset`` bound at execution)."""
    r = s.runs
    # Only the keys, so ix_runs_job_created (job_uuid, created_at, uuid) answers the page by
    # itself, newest first. With the other run columns here the planner may walk
    # ix_runs_created and filter by job instead, reading every later run of every other job.
    # LIMIT and OFFSET are written into the SQL: with them as parameters PostgreSQL's generic
    # plan assumes a tenth of the job's runs, always costs more than a plan for the values,
    # and so is never reused; with them in the text the plan is made once per connection.
    return (
        sa.select(r.c.uuid, r.c.created_at)
        .where(r.c.job_uuid == sa.select(the_job.c.uuid).scalar_subquery())
        .order_by(r.c.created_at.desc(), r.c.uuid.desc())
        .limit(sa.bindparam("limit", type_=sa.Integer(), literal_execute=True))
        .offset(sa.bindparam("offset", type_=sa.Integer(), literal_execute=True))
        .cte("page")
    )


def _page_runs(page: sa.CTE) -> sa.Select[Any]:
    """``R`` rows: each run of the page with its columns; this branch types the union."""
    r = s.runs

    def typed_null(t: sa.types.TypeEngine[Any], name: str) -> sa.Label[Any]:
        # Typed in the first branch: PostgreSQL types a UNION column from left to right.
        return sa.cast(sa.null(), t).label(name)

    return sa.select(
        sa.literal_column("'R'").label("kind"),
        page.c.created_at.label("at"),
        page.c.uuid.label("run_uuid"),
        *_PAGE_RUN_COLS,
        typed_null(sa.String(), "namespace"),
        typed_null(sa.String(), "name"),
        typed_null(sa.String(), "version"),
        typed_null(sa.BigInteger(), "total"),
    ).join_from(page, r, r.c.uuid == page.c.uuid)


def _page_versions(page: sa.CTE, kind: Literal["I", "O"], *, lateral: bool) -> sa.Select[Any]:
    """``I`` or ``O`` rows: one input or output version of a run of the page."""
    ri, dv, d = s.run_inputs, s.dataset_versions, s.datasets
    # Versions carry no time, so none is converted: they sort by run, then dataset name.
    if kind == "I":
        versions = sa.select(d.c.namespace, d.c.name, dv.c.uuid).select_from(
            ri.join(dv, dv.c.uuid == ri.c.dataset_version_uuid).join(
                d, d.c.uuid == dv.c.dataset_uuid
            )
        )
        run_uuid = ri.c.run_uuid
    else:
        versions = sa.select(d.c.namespace, d.c.name, dv.c.uuid).select_from(
            dv.join(d, d.c.uuid == dv.c.dataset_uuid)
        )
        run_uuid = dv.c.run_uuid
    if lateral:
        # Looked up run by run through the indexes. Joined as sets, PostgreSQL may plan a
        # page of a few runs as a scan of every run's inputs and outputs while its
        # statistics lag behind a store that grew a moment ago (seen after an ingest:
        # 1.1 of a read's 2.9 ms). SQLite has no LATERAL, and always looks up by index.
        # OFFSET 0 keeps the subquery from being pulled up into a join of sets again.
        found: Any = (
            versions.where(run_uuid == page.c.uuid)
            .offset(sa.literal_column("0"))
            .lateral(kind.lower())
        )
        source = page.join(found, sa.true())
    else:
        found = versions.add_columns(run_uuid.label("run_uuid")).subquery(kind.lower())
        source = page.join(found, found.c.run_uuid == page.c.uuid)
    return sa.select(
        sa.literal_column(f"'{kind}'"),
        *_nulls(1),
        page.c.uuid,
        *_nulls(len(_PAGE_RUN_COLS)),
        found.c.namespace,
        found.c.name,
        found.c.uuid,
        *_nulls(1),
    ).select_from(source)


def _job_total(the_job: sa.CTE) -> sa.Select[Any]:
    """The ``T`` row: the job with its run count."""
    c = s.job_run_counts
    # The total is kept per job by triggers on ``runs``: counting a busy job's runs would
    # read every one of its index entries.
    return sa.select(
        sa.literal_column("'T'"),
        *_nulls(2 + len(_PAGE_RUN_COLS)),
        the_job.c.namespace,
        the_job.c.name,
        the_job.c.uuid,
        c.c.run_count,
    ).select_from(the_job.outerjoin(c, c.c.job_uuid == the_job.c.uuid))


_JOB_BY_UUID = sa.select(s.jobs.c.uuid, s.jobs.c.namespace, s.jobs.c.name).where(
    s.jobs.c.uuid == sa.bindparam("job", type_=sa.String())
)
_BY_FQN = _job_by_fqn(
    sa.bindparam("namespace", type_=sa.String()), sa.bindparam("name", type_=sa.String())
)
# By whether the dialect has LATERAL (PostgreSQL does, SQLite does not).
_LIST_RUNS = {
    lateral: _list_runs_select(_JOB_BY_UUID, lateral=lateral) for lateral in (True, False)
}
_LIST_RUNS_BY_FQN = {
    lateral: _list_runs_select(_BY_FQN, lateral=lateral) for lateral in (True, False)
}


def list_runs(conn: Connection, job_uuid: str, limit: int, offset: int) -> Page[Run]:
    params = {"job": job_uuid, "limit": limit, "offset": offset}
    page = _runs_page(conn.execute(_LIST_RUNS[_lateral(conn)], params).all())
    return page if page is not None else Page([], 0)


def list_partition_runs(
    conn: Connection, job_uuid: str, key: Mapping[str, Sequence[str]], limit: int, offset: int
) -> Page[Run]:
    """The runs of a partitioned transform's job for the partitions matching ``key`` (each
    column named has one of its values), newest first."""
    r = s.runs
    # Keys are `col=value` joined by `/`, and no value holds `/` or `=`: a component
    # found between slashes is that column's value, compared exactly on both backends.
    find = sa.func.strpos if conn.dialect.name == "postgresql" else sa.func.instr
    padded = sa.literal("/") + r.c.partition_key + sa.literal("/")
    where = [r.c.job_uuid == job_uuid, r.c.partition_key.is_not(None)]
    where += [
        sa.or_(*[find(padded, f"/{col}={value}/") > 0 for value in values])
        for col, values in key.items()
    ]
    total = conn.execute(sa.select(sa.func.count()).select_from(r).where(*where)).scalar_one()
    ordered: list[str] = list(
        conn.execute(
            sa.select(r.c.uuid)
            .where(*where)
            .order_by(r.c.created_at.desc(), r.c.uuid.desc())
            .limit(limit)
            .offset(offset)
        ).scalars()
    )
    found = runs_by_uuid(conn, ordered)
    return Page([found[u] for u in ordered if u in found], int(total))


def job_partition_columns(conn: Connection, job_uuid: str) -> list[str]:
    """The partition columns of a partitioned transform's job, from its latest partition
    run's key (none for any other job)."""
    r = s.runs
    key = conn.execute(
        sa.select(r.c.partition_key)
        .where(r.c.job_uuid == job_uuid, r.c.partition_key.is_not(None))
        .order_by(r.c.created_at.desc(), r.c.uuid.desc())
        .limit(1)
    ).scalar()
    return [part.split("=", 1)[0] for part in key.split("/")] if key else []


@dataclass(frozen=True)
class PartitionRun:
    """A partitioned transform's latest run of one partition."""

    partition: str
    run_uuid: str
    state: str | None
    started_at: datetime | None
    ended_at: datetime | None


def latest_partition_runs(conn: Connection, job_uuid: str) -> list[PartitionRun]:
    """The latest run of each partition of a partitioned transform's job (none for any
    other job), by key."""
    r = s.runs
    ranked = (
        sa.select(
            r.c.partition_key,
            r.c.uuid,
            r.c.state,
            r.c.started_at,
            r.c.ended_at,
            sa.func.row_number()
            .over(partition_by=r.c.partition_key, order_by=(r.c.created_at.desc(), r.c.uuid.desc()))
            .label("n"),
        )
        .where(r.c.job_uuid == job_uuid, r.c.partition_key.is_not(None))
        .subquery()
    )
    rows = conn.execute(
        sa.select(ranked).where(ranked.c.n == 1).order_by(ranked.c.partition_key)
    ).all()
    return [PartitionRun(x[0], x[1], x[2], x[3], x[4]) for x in rows]


def list_job_runs(
    conn: Connection, namespace: str, name: str, limit: int, offset: int
) -> Page[Run] | None:
    """The runs of the job whose FQN is ``name``; ``None`` if no job has it (see resolve_job)."""
    params = {"namespace": namespace, "name": name, "limit": limit, "offset": offset}
    return _runs_page(conn.execute(_LIST_RUNS_BY_FQN[_lateral(conn)], params).all())


def _lateral(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def _runs_page(rows: Iterable[Sequence[Any]]) -> Page[Run] | None:
    inputs: dict[str, list[DatasetVersionRef]] = defaultdict(list)
    outputs: dict[str, list[DatasetVersionRef]] = defaultdict(list)
    page: list[Sequence[Any]] = []
    job: Sequence[Any] | None = None
    # By position: SQLAlchemy's by-name row access costs more than the rest of this loop.
    for x in rows:
        kind = x[0]
        if kind == "R":
            page.append(x)
        elif kind == "T":
            job = x
        else:
            into = inputs if kind == "I" else outputs
            into[x[2]].append(DatasetVersionRef(x[13], x[14], x[15]))
    if job is None:
        return None
    job_namespace, job_name, job_uuid, total = job[13:17]
    runs = [
        Run(
            uuid,
            job_uuid,
            job_namespace,
            job_name,
            job_version_uuid,
            parent_run_uuid,
            state,
            created_at,
            updated_at,
            nominal_start_time,
            nominal_end_time,
            started_at,
            ended_at,
            dict(facets or {}),
            inputs.get(uuid, []),
            outputs.get(uuid, []),
            dict(io_facets or {}),
        )
        for (
            _,
            created_at,
            uuid,
            job_version_uuid,
            parent_run_uuid,
            state,
            updated_at,
            nominal_start_time,
            nominal_end_time,
            started_at,
            ended_at,
            facets,
            io_facets,
            *_,
        ) in page
    ]
    return Page(runs, int(total or 0))


def run_job_facets(conn: Connection, run_id: str) -> dict[str, Any]:
    """The job facets the run's own events sent, a later event's (by event time) over an
    earlier one's, as Marquez answers ``?type=job``: a past run keeps the SQL it ran,
    whatever the job's later edits. A run no event sent job facets for has none."""
    get_run(conn, run_id)  # NotFound for an unknown run
    e = s.lineage_events
    rows = conn.execute(
        sa.select(e.c.payload).where(e.c.run_uuid == run_id).order_by(e.c.event_time, e.c.uuid)
    ).all()
    out: dict[str, Any] = {}
    for (payload,) in rows:
        job = payload.get("job") if isinstance(payload, dict) else None
        facets = job.get("facets") if isinstance(job, dict) else None
        if isinstance(facets, dict):
            out.update(facets)
    return out


# --- jobs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    uuid: str
    namespace: str
    name: str
    simple_name: str
    parent_job_uuid: str | None
    parent_job_name: str | None
    type: str
    location: str | None
    description: str | None
    facets: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    current_version: str | None
    inputs: list[DatasetRef]
    outputs: list[DatasetRef]
    tags: list[str]
    latest_run: Run | None


def _io_by_version(
    conn: Connection, version_uuids: Iterable[str]
) -> dict[str, tuple[list[DatasetRef], list[DatasetRef]]]:
    out: dict[str, tuple[list[DatasetRef], list[DatasetRef]]] = defaultdict(lambda: ([], []))
    io, d = s.job_version_io, s.datasets
    for batch in chunks(set(version_uuids)):
        for x in conn.execute(
            sa.select(io.c.job_version_uuid, io.c.io_type, d.c.namespace, d.c.name)
            .join(d, d.c.uuid == io.c.dataset_uuid)
            .where(io.c.job_version_uuid.in_(batch))
            .order_by(d.c.namespace, d.c.name)
        ).all():
            pair = out[x.job_version_uuid]
            (pair[0] if x.io_type == "INPUT" else pair[1]).append(DatasetRef(x.namespace, x.name))
    return out


def _latest_runs(
    conn: Connection, rows: Sequence[sa.Row[Any]], fallback: bool = True
) -> dict[str, Run]:
    """job uuid -> latest run: the current version's latest run, else the newest run."""
    jv = s.job_versions
    latest: dict[str, str] = {}
    cur = {r.current_version_uuid: r.uuid for r in rows if r.current_version_uuid}
    for batch in chunks(cur):
        for x in conn.execute(
            sa.select(jv.c.uuid, jv.c.latest_run_uuid).where(jv.c.uuid.in_(batch))
        ).all():
            if x.latest_run_uuid:
                latest[cur[x.uuid]] = x.latest_run_uuid
    r = s.runs
    # One indexed LIMIT 1 per job without a recorded latest run: fine for a page, not a graph.
    for row in rows if fallback else ():
        if row.uuid not in latest:
            rid = conn.execute(
                sa.select(r.c.uuid)
                .where(r.c.job_uuid == row.uuid)
                .order_by(r.c.created_at.desc(), r.c.uuid.desc())
                .limit(1)
            ).scalar()
            if rid is not None:
                latest[row.uuid] = rid
    runs = runs_by_uuid(conn, latest.values())
    return {job: runs[rid] for job, rid in latest.items() if rid in runs}


def jobs_from_rows(
    conn: Connection,
    rows: Sequence[sa.Row[Any]],
    with_latest_run: bool = True,
    latest_fallback: bool = True,
    with_io: bool = True,
) -> list[Job]:
    io = (
        _io_by_version(conn, [r.current_version_uuid for r in rows if r.current_version_uuid])
        if with_io
        else {}
    )
    parents: dict[str, str] = {}
    j = s.jobs
    for batch in chunks({r.parent_job_uuid for r in rows if r.parent_job_uuid}):
        for x in conn.execute(sa.select(j.c.uuid, j.c.name).where(j.c.uuid.in_(batch))).all():
            parents[x.uuid] = x.name
    tags: dict[str, list[str]] = defaultdict(list)
    jt = s.job_tags
    for batch in chunks([r.uuid for r in rows]):
        for x in conn.execute(
            sa.select(jt.c.job_uuid, jt.c.tag_name).where(jt.c.job_uuid.in_(batch))
        ).all():
            tags[x.job_uuid].append(x.tag_name)
    latest = _latest_runs(conn, rows, latest_fallback) if with_latest_run else {}
    out = []
    for r in rows:
        ins, outs = io.get(r.current_version_uuid, ([], [])) if r.current_version_uuid else ([], [])
        out.append(
            Job(
                uuid=r.uuid,
                namespace=r.namespace,
                name=r.name,
                simple_name=r.simple_name,
                parent_job_uuid=r.parent_job_uuid,
                parent_job_name=parents.get(r.parent_job_uuid) if r.parent_job_uuid else None,
                type=r.type,
                location=r.location,
                description=r.description,
                facets=dict(r.facets or {}),
                created_at=r.created_at,
                updated_at=r.updated_at,
                current_version=r.current_version_uuid,
                inputs=ins,
                outputs=outs,
                tags=sorted(tags.get(r.uuid, [])),
                latest_run=latest.get(r.uuid),
            )
        )
    return out


def jobs_by_uuid(
    conn: Connection,
    uuids: Iterable[str],
    with_latest_run: bool = True,
    latest_fallback: bool = True,
    with_io: bool = True,
) -> dict[str, Job]:
    rows: list[sa.Row[Any]] = []
    for batch in chunks(set(uuids)):
        rows.extend(conn.execute(_JOBS.where(s.jobs.c.uuid.in_(batch))).all())
    return {
        j.uuid: j for j in jobs_from_rows(conn, rows, with_latest_run, latest_fallback, with_io)
    }


def get_job(conn: Connection, job_uuid: str) -> Job:
    job = jobs_by_uuid(conn, [job_uuid]).get(job_uuid)
    if job is None:
        raise NotFound(f"job {job_uuid!r} not found", job=job_uuid)
    return job


def child_jobs(conn: Connection, job_uuid: str, limit: int = 1000) -> list[tuple[str, str]]:
    """The visible jobs whose parent is this one, (namespace, name) by name."""
    j = s.jobs
    rows = conn.execute(
        sa.select(j.c.namespace, j.c.name)
        .where(j.c.parent_job_uuid == job_uuid, j.c.is_hidden.is_(False))
        .order_by(j.c.namespace, j.c.name)
        .limit(limit)
    )
    return [(str(r.namespace), str(r.name)) for r in rows]


def list_jobs(
    conn: Connection,
    namespace: str | None,
    limit: int,
    offset: int,
    last_run_states: Sequence[str] = (),
) -> Page[Job]:
    """The visible jobs of ``namespace`` (None: of every namespace) by name; with
    ``last_run_states``, only those whose latest run is in one of them or that have no
    run (as Marquez filters). The total counts them all, as Marquez's does."""
    j, r = s.jobs, s.runs
    where: sa.ColumnElement[bool] = j.c.is_hidden.is_(False)
    if namespace is not None:
        get_namespace(conn, namespace)
        where = sa.and_(where, j.c.namespace == namespace)
    page = sa.select(j).where(where)
    if last_run_states:
        latest = (
            sa.select(r.c.state)
            .where(r.c.job_uuid == j.c.uuid)
            .order_by(r.c.created_at.desc(), r.c.uuid.desc())
            .limit(1)
            .scalar_subquery()
        )
        page = page.where(sa.or_(latest.in_(list(last_run_states)), latest.is_(None)))
    rows = conn.execute(page.order_by(j.c.namespace, j.c.name).limit(limit).offset(offset)).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(j).where(where)).scalar_one()
    return Page(jobs_from_rows(conn, rows), total)


@dataclass(frozen=True)
class ProgramMoved:
    """A dataset whose current version was written by an older version of its job than
    the job's newest (a run with a new program started, or failed, since)."""

    namespace: str
    name: str
    job_namespace: str
    job_name: str
    written_by: str  # the run that wrote the current version
    old: JobVersionRef
    new: JobVersionRef
    newest_run: tuple[str, str]  # (run id, state) of the job's newest run: not completed


@dataclass(frozen=True)
class JobVersionRef:
    uuid: str
    fingerprint: str
    program_facets: list[str] | None
    created_at: datetime


def programs_moved_on(conn: Connection, lake_namespace: str) -> list[ProgramMoved]:
    """Every visible dataset outside the lake whose current version's run used another
    job version than the job's current one, where the current version's newest run has
    not completed (jobs Strata builds left out: the build service judges those).

    Found from the runs not completed (``ix_runs_unfinished``), so the cost follows the
    jobs that lag, not the size of the store."""
    lagging = _lagging_jobs(conn, lake_namespace)
    d, dv, r, j = s.datasets, s.dataset_versions, s.runs, s.jobs
    old, new = s.job_versions.alias("old"), s.job_versions.alias("new")
    rows: list[Any] = []
    for chunk in chunks(sorted(lagging)):
        rows += conn.execute(
            sa.select(
                d.c.namespace,
                d.c.name,
                j.c.uuid.label("job_uuid"),
                j.c.namespace.label("jns"),
                j.c.name.label("jname"),
                r.c.uuid.label("run"),
                *[c.label(f"old_{c.name}") for c in _ref_columns(old)],
                *[c.label(f"new_{c.name}") for c in _ref_columns(new)],
            )
            .select_from(r)
            .join(j, j.c.uuid == r.c.job_uuid)
            .join(dv, dv.c.run_uuid == r.c.uuid)
            .join(d, sa.and_(d.c.uuid == dv.c.dataset_uuid, d.c.current_version_uuid == dv.c.uuid))
            .join(old, old.c.uuid == r.c.job_version_uuid)
            .join(new, new.c.uuid == j.c.current_version_uuid)
            .where(
                r.c.job_uuid.in_(chunk),
                d.c.is_lake.is_(False),
                d.c.is_hidden.is_(False),
                r.c.job_version_uuid != j.c.current_version_uuid,
            )
        ).all()
    rows.sort(key=lambda x: (x.namespace, x.name))
    return [
        ProgramMoved(
            x.namespace,
            x.name,
            x.jns,
            x.jname,
            str(x.run),
            _ref(x, "old_"),
            _ref(x, "new_"),
            lagging[str(x.job_uuid)],
        )
        for x in rows
    ]


def _lagging_jobs(conn: Connection, lake_namespace: str) -> dict[str, tuple[str, str]]:
    """The visible jobs outside the lake whose current version's newest run (the job's
    newest) has not completed, with that run's id and state: driven by the partial index
    of such runs (a literal, not a parameter, so that its predicate is seen to hold)."""
    r, j, cur = s.runs, s.jobs, s.job_versions
    found = conn.execute(
        sa.select(j.c.uuid, r.c.uuid, r.c.state)
        .select_from(r)
        .join(j, j.c.uuid == r.c.job_uuid)
        .join(cur, cur.c.uuid == j.c.current_version_uuid)
        .where(
            r.c.state != sa.literal_column("'COMPLETED'"),
            cur.c.latest_run_uuid == r.c.uuid,
            j.c.namespace != lake_namespace,
            j.c.is_hidden.is_(False),
        )
    )
    return {str(job): (str(run), str(state)) for job, run, state in found}


def _ref_columns(jv: Any) -> list[Any]:
    return [jv.c.uuid, jv.c.version, jv.c.program_facets, jv.c.created_at]


def _ref(row: Any, prefix: str) -> JobVersionRef:
    return JobVersionRef(
        str(row._mapping[f"{prefix}uuid"]),
        row._mapping[f"{prefix}version"],
        row._mapping[f"{prefix}program_facets"],
        row._mapping[f"{prefix}created_at"],
    )


def namespaces_of_job(conn: Connection, name: str) -> list[str]:
    """The namespaces where a visible job is called ``name``."""
    j = s.jobs
    found = conn.execute(
        sa.select(j.c.namespace).where(j.c.name == name, j.c.is_hidden.is_(False)).distinct()
    )
    return sorted(found.scalars())


@dataclass(frozen=True)
class JobResolution:
    """How a ``(namespace, name)`` in a URL maps to jobs."""

    kind: Literal["found", "moved", "ambiguous"]
    job_uuid: str | None = None
    namespace: str | None = None
    name: str | None = None
    candidates: list[tuple[str, str]] = field(default_factory=list)


def resolve_job(conn: Connection, namespace: str, name: str) -> JobResolution:
    """Find a job by its FQN, else by an old name or its simple name (to redirect)."""
    j, a = s.jobs, s.job_aliases
    visible = j.c.is_hidden.is_(False)  # soft-deleted jobs answer 404, as in Marquez
    hit = conn.execute(_job_by_fqn(namespace, name)).first()
    if hit is not None:
        return JobResolution("found", hit.uuid, namespace, name)
    found = conn.execute(
        sa.select(j.c.uuid, j.c.namespace, j.c.name)
        .join(a, a.c.job_uuid == j.c.uuid)
        .where(a.c.namespace == namespace, a.c.name == name, visible)
    ).all()
    if not found:
        found = conn.execute(
            sa.select(j.c.uuid, j.c.namespace, j.c.name)
            .where(j.c.namespace == namespace, j.c.simple_name == name, visible)
            .order_by(j.c.name)
            .limit(50)
        ).all()
    unique = sorted({(f.namespace, f.name, f.uuid) for f in found})
    if len(unique) == 1:
        ns, fqn, uuid = unique[0]
        return JobResolution("moved", uuid, ns, fqn)
    if len(unique) > 1:
        return JobResolution("ambiguous", candidates=[(ns, fqn) for ns, fqn, _ in unique])
    raise NotFound(
        f"job {name!r} not found in namespace {namespace!r}", namespace=namespace, job=name
    )


@dataclass(frozen=True)
class JobVersion:
    uuid: str
    version: str
    job_namespace: str
    job_name: str
    location: str | None
    source_code: str | None
    created_at: datetime
    updated_at: datetime
    inputs: list[DatasetRef]
    outputs: list[DatasetRef]
    latest_run: Run | None
    program_facets: list[str] | None  # None: recorded before Strata kept it


def _job_versions_from_rows(
    conn: Connection, job: Job, rows: Sequence[sa.Row[Any]]
) -> list[JobVersion]:
    io = _io_by_version(conn, [r.uuid for r in rows])
    runs = runs_by_uuid(conn, [r.latest_run_uuid for r in rows if r.latest_run_uuid])
    return [
        JobVersion(
            uuid=r.uuid,
            version=r.version,
            job_namespace=job.namespace,
            job_name=job.name,
            location=r.location,
            source_code=r.source_code,
            created_at=r.created_at,
            updated_at=r.updated_at,
            inputs=io.get(r.uuid, ([], []))[0],
            outputs=io.get(r.uuid, ([], []))[1],
            latest_run=runs.get(r.latest_run_uuid) if r.latest_run_uuid else None,
            program_facets=r.program_facets,
        )
        for r in rows
    ]


def list_job_versions(conn: Connection, job_uuid: str, limit: int, offset: int) -> Page[JobVersion]:
    job = get_job(conn, job_uuid)
    jv = s.job_versions
    rows = conn.execute(
        sa.select(jv)
        .where(jv.c.job_uuid == job_uuid)
        .order_by(jv.c.created_at.desc(), jv.c.uuid.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    total = conn.execute(
        sa.select(sa.func.count()).select_from(jv).where(jv.c.job_uuid == job_uuid)
    ).scalar_one()
    return Page(_job_versions_from_rows(conn, job, rows), total)


def get_job_version(conn: Connection, job_uuid: str, version: str) -> JobVersion:
    """A job version by its id or by its fingerprint."""
    job = get_job(conn, job_uuid)
    jv = s.job_versions
    row = conn.execute(
        sa.select(jv).where(
            jv.c.job_uuid == job_uuid, sa.or_(jv.c.uuid == version.lower(), jv.c.version == version)
        )
    ).first()
    if row is None:
        raise NotFound(
            f"version {version!r} of job {job.name!r} not found",
            namespace=job.namespace,
            job=job.name,
            version=version,
        )
    return _job_versions_from_rows(conn, job, [row])[0]


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
        d = s.datasets
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
        j = s.jobs
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
    e = s.lineage_events
    conds: list[sa.ColumnElement[bool]] = [e.c.run_uuid.is_not(None)]
    if before is not None:
        conds.append(e.c.event_time <= before)
    if after is not None:
        conds.append(e.c.event_time >= after)
    if before is not None and after is not None and after > before:
        raise InvalidArgument(
            "'after' is later than 'before'; swap them", before=str(before), after=str(after)
        )
    order = [e.c.event_time, e.c.uuid] if ascending else [e.c.event_time.desc(), e.c.uuid.desc()]
    rows = conn.execute(
        sa.select(e.c.payload).where(*conds).order_by(*order).limit(limit).offset(offset)
    ).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(e).where(*conds)).scalar_one()
    return Page([dict(r.payload) for r in rows], total)
