"""Lineage graphs: dataset/job graph (current or as of a time), column lineage, run upstream.

Every traversal is a breadth-first walk that issues a fixed number of batched ``IN``
queries per level, so cost grows with the size of the answer, not the number of nodes
visited one by one; the current dataset/job graph on PostgreSQL is walked by one recursive
query instead. Edges come from ``job_version_io`` (both directions are indexed: by job
version and by dataset).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import datetime
from typing import Any, Literal, Protocol

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from strata.errors import InvalidArgument, NotFound
from strata.lineage.query import queries as q
from strata.store import jsoncodec
from strata.store import schema as s

NodeType = Literal["DATASET", "JOB", "DATASET_FIELD"]
MAX_DEPTH = 100


@dataclass(frozen=True)
class NodeRef:
    """A parsed ``nodeId`` resolved against the store."""

    type: NodeType
    uuid: str
    namespace: str
    name: str
    field: str | None = None
    version: str | None = None


def _splits(text: str) -> list[tuple[str, str]]:
    """Every ``a:b`` split of ``text``; namespaces (``s3://b``) may hold colons themselves."""
    return [(text[:i], text[i + 1 :]) for i, ch in enumerate(text) if ch == ":"]


def parse_node_id(conn: Connection, node_id: str) -> NodeRef:
    """Resolve ``dataset:ns:name``, ``job:ns:name`` or ``datasetField:ns:name:field``.

    A hidden (soft-deleted) dataset or job is not found, as for every other read of it.
    """
    kind, sep, rest = node_id.partition(":")
    if not sep or not rest:
        raise InvalidArgument(
            f"nodeId {node_id!r} is malformed; use dataset:<namespace>:<name>, "
            "job:<namespace>:<name> or datasetField:<namespace>:<dataset>:<field>",
            field="nodeId",
        )
    version: str | None = None
    if "#" in rest:
        # Marquez appends '#<version>' to name a version of the node.
        rest, version = rest.rsplit("#", 1)
    if kind == "dataset":
        for ns, name in _splits(rest):
            row = _dataset(conn, ns, name, visible=True)
            if row is not None:
                return NodeRef("DATASET", row, ns, name, version=version)
    elif kind == "job":
        for ns, name in _splits(rest):
            j = s.jobs
            uuid = conn.execute(
                sa.select(j.c.uuid).where(
                    j.c.namespace == ns, j.c.name == name, j.c.is_hidden.is_(False)
                )
            ).scalar()
            if uuid is not None:
                return NodeRef("JOB", uuid, ns, name, version=version)
    elif kind == "datasetField":
        for head, fld in reversed(_splits(rest)):
            for ns, name in _splits(head):
                row = _dataset(conn, ns, name, visible=True)
                if row is not None and fld:
                    return NodeRef("DATASET_FIELD", row, ns, name, fld, version)
    else:
        raise InvalidArgument(
            f"nodeId {node_id!r} has unknown type {kind!r}; use dataset, job or datasetField",
            field="nodeId",
        )
    raise NotFound(f"node {node_id!r} not found", node_id=node_id)


def _dataset(conn: Connection, ns: str, name: str, visible: bool = False) -> str | None:
    """The dataset's uuid; ``visible``, None for a hidden one."""
    d = s.datasets
    stmt = sa.select(d.c.uuid).where(d.c.namespace == ns, d.c.name == name)
    if visible:
        stmt = stmt.where(d.c.is_hidden.is_(False))
    return conn.execute(stmt).scalar()


def check_depth(depth: int) -> int:
    if depth < 0 or depth > MAX_DEPTH:
        raise InvalidArgument(
            f"depth {depth} is out of range; use 0 to {MAX_DEPTH}", field="depth", depth=depth
        )
    return depth


# --- dataset/job graph --------------------------------------------------------------------


@dataclass
class GraphNode:
    id: str
    type: NodeType
    data: Any
    in_edges: list[tuple[str, str]] = dc_field(default_factory=list)
    out_edges: list[tuple[str, str]] = dc_field(default_factory=list)


def dataset_node_id(ns: str, name: str) -> str:
    return f"dataset:{ns}:{name}"


def job_node_id(ns: str, name: str) -> str:
    return f"job:{ns}:{name}"


def _expand_select() -> sa.Select[Any]:
    """Edges of the jobs whose current version touches any of ``:datasets`` (built once)."""
    a, b, j = s.job_version_io, s.job_version_io.alias("other"), s.jobs
    return (
        sa.select(b.c.job_uuid, b.c.job_version_uuid, b.c.dataset_uuid, b.c.io_type)
        .select_from(a)
        # Through the job's primary key; current_version_uuid alone has no index.
        .join(
            j,
            sa.and_(j.c.uuid == a.c.job_uuid, j.c.current_version_uuid == a.c.job_version_uuid),
        )
        .join(b, b.c.job_version_uuid == a.c.job_version_uuid)
        .where(a.c.dataset_uuid.in_(sa.bindparam("datasets", expanding=True)))
    )


_EXPAND = _expand_select()


class _Walker(Protocol):
    """What the breadth-first walk asks of a graph's edges."""

    def versions(self, job_uuids: Iterable[str]) -> dict[str, str]: ...

    def io(self, versions: dict[str, str]) -> list[tuple[str, str, str]]: ...

    def expand(
        self, dataset_uuids: Iterable[str], known: Iterable[str]
    ) -> tuple[dict[str, str], list[tuple[str, str, str]]]: ...


def _io_of(conn: Connection, versions: dict[str, str]) -> list[tuple[str, str, str]]:
    """(job, dataset, INPUT|OUTPUT) for the given job versions (primary-key lookups)."""
    by_version = {v: j for j, v in versions.items()}
    io = s.job_version_io
    out = []
    for batch in q.chunks(by_version):
        for r in conn.execute(
            sa.select(io.c.job_version_uuid, io.c.dataset_uuid, io.c.io_type).where(
                io.c.job_version_uuid.in_(batch)
            )
        ).all():
            out.append((by_version[r.job_version_uuid], r.dataset_uuid, r.io_type))
    return out


class _CurrentEdges:
    """Job/dataset edges of the current graph: each job at its current version."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def versions(self, job_uuids: Iterable[str]) -> dict[str, str]:
        """job -> its current version."""
        j = s.jobs
        out: dict[str, str] = {}
        for batch in q.chunks(list(job_uuids)):
            for r in self.conn.execute(
                sa.select(j.c.uuid, j.c.current_version_uuid).where(j.c.uuid.in_(batch))
            ).all():
                if r.current_version_uuid:
                    out[r.uuid] = r.current_version_uuid
        return out

    def io(self, versions: dict[str, str]) -> list[tuple[str, str, str]]:
        return _io_of(self.conn, versions)

    def expand(
        self, dataset_uuids: Iterable[str], known: Iterable[str]
    ) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
        """Jobs (not in ``known``) whose current version touches the datasets, with their edges.

        One query per batch: the touching edges, the job's current version and that
        version's other edges, joined in the database.
        """
        seen = set(known)
        out: dict[str, str] = {}
        edges: set[tuple[str, str, str]] = set()
        for batch in q.chunks(set(dataset_uuids)):
            for r in self.conn.execute(_EXPAND, {"datasets": batch}).all():
                if r.job_uuid not in seen:
                    out[r.job_uuid] = r.job_version_uuid
                    edges.add((r.job_uuid, r.dataset_uuid, r.io_type))
        return out, sorted(edges)


class _EdgesAt:
    """Job/dataset edges of the graph in force at ``as_of``: each job at the version of its
    last run by then, datasets created by then."""

    def __init__(self, conn: Connection, as_of: datetime) -> None:
        self.conn = conn
        self.as_of = as_of

    def versions(self, job_uuids: Iterable[str]) -> dict[str, str]:
        """job -> the version of its last run at ``as_of`` (or its last version then)."""
        jobs = list(job_uuids)
        out = self._latest_at(s.runs, jobs, s.runs.c.job_version_uuid)
        missing = [j for j in jobs if j not in out]
        if missing:
            out.update(self._latest_at(s.job_versions, missing, s.job_versions.c.uuid))
        return out

    def _latest_at(self, table: sa.Table, jobs: list[str], value: sa.Column[Any]) -> dict[str, str]:
        out: dict[str, str] = {}
        for batch in q.chunks(jobs):
            rn = (
                sa.func.row_number()
                .over(
                    partition_by=table.c.job_uuid,
                    order_by=(table.c.created_at.desc(), table.c.uuid.desc()),
                )
                .label("rn")
            )
            inner = (
                sa.select(table.c.job_uuid, value.label("v"), rn)
                .where(
                    table.c.job_uuid.in_(batch),
                    table.c.created_at <= self.as_of,
                    value.is_not(None),
                )
                .subquery()
            )
            for r in self.conn.execute(
                sa.select(inner.c.job_uuid, inner.c.v).where(inner.c.rn == 1)
            ).all():
                out[r.job_uuid] = r.v
        return out

    def io(self, versions: dict[str, str]) -> list[tuple[str, str, str]]:
        """The versions' edges to datasets created by ``as_of``."""
        out = _io_of(self.conn, versions)
        born = self._datasets_born([d for _, d, _ in out])
        return [e for e in out if e[1] in born]

    def _datasets_born(self, uuids: list[str]) -> set[str]:
        d = s.datasets
        born: set[str] = set()
        for batch in q.chunks(set(uuids)):
            born.update(
                self.conn.execute(
                    sa.select(d.c.uuid).where(d.c.uuid.in_(batch), d.c.created_at <= self.as_of)
                ).scalars()
            )
        return born

    def expand(
        self, dataset_uuids: Iterable[str], known: Iterable[str]
    ) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
        """Jobs (not in ``known``) whose version in force touches the datasets, with their edges."""
        seen = set(known)
        touching = self._jobs_touching(dataset_uuids)
        new = {jb: v for jb, v in touching.items() if jb not in seen}
        return new, self.io(new)

    def _jobs_touching(self, dataset_uuids: Iterable[str]) -> dict[str, str]:
        """job -> version for jobs whose version in force reads or writes any dataset."""
        io = s.job_version_io
        pairs: set[tuple[str, str]] = set()
        for batch in q.chunks(set(dataset_uuids)):
            stmt = sa.select(io.c.job_uuid, io.c.job_version_uuid).where(
                io.c.dataset_uuid.in_(batch)
            )
            pairs.update((r.job_uuid, r.job_version_uuid) for r in self.conn.execute(stmt).all())
        if not pairs:
            return {}
        in_force = self.versions({jb for jb, _ in pairs})
        return {jb: v for jb, v in in_force.items() if (jb, v) in pairs}

    def dataset_versions(self, dataset_uuids: Iterable[str]) -> dict[str, str | None]:
        """dataset -> its version at ``as_of`` (the latest created at or before it)."""
        dv = s.dataset_versions
        out: dict[str, str | None] = dict.fromkeys(dataset_uuids)
        for batch in q.chunks(list(out)):
            rn = (
                sa.func.row_number()
                .over(
                    partition_by=dv.c.dataset_uuid,
                    order_by=(dv.c.created_at.desc(), dv.c.uuid.desc()),
                )
                .label("rn")
            )
            inner = (
                sa.select(dv.c.dataset_uuid, dv.c.uuid, rn)
                .where(dv.c.dataset_uuid.in_(batch), dv.c.created_at <= self.as_of)
                .subquery()
            )
            for r in self.conn.execute(
                sa.select(inner.c.dataset_uuid, inner.c.uuid).where(inner.c.rn == 1)
            ).all():
                out[r.dataset_uuid] = r.uuid
        return out

    def latest_runs(self, versions: dict[str, str]) -> dict[str, str]:
        """job -> the id of its latest run at ``as_of``."""
        return self._latest_at(s.runs, list(versions), s.runs.c.uuid)


def lineage_graph(
    conn: Connection, node_id: str, depth: int = 20, as_of: datetime | None = None
) -> list[GraphNode]:
    """Marquez's lineage graph around a node: jobs sharing datasets, ``depth`` job hops away.

    With ``as_of`` the graph is the one in force then: each job at the version of its last
    run at or before that time, datasets created by then, at their version of then.

    Hidden (soft-deleted) jobs and datasets are left out with their edges, as Marquez reads
    the walk's nodes through views without them; the walk itself still goes through them
    (Marquez walks ``job_versions_io_mapping`` unfiltered). A dataset shows when a visible
    job of the graph reads or writes it; a start dataset no such job touches stands alone.
    """
    check_depth(depth)
    start = parse_node_id(conn, node_id)
    if start.type == "DATASET_FIELD":
        raise InvalidArgument("use /api/v1/column-lineage for dataset fields", field="nodeId")
    at = None if as_of is None else _EdgesAt(conn, as_of)
    walker: _Walker = _CurrentEdges(conn) if at is None else at
    pg = conn.dialect.name == "postgresql"
    if pg:
        # Many small indexed lookups: starting parallel workers for them costs more than
        # it saves (and competes with other requests). The current graph's statements are
        # key lookups whose generic plans are their custom plans, so they keep the default
        # plan cache mode; the ``asOf`` walk's time ranges are planned for their values.
        # Both reset when the transaction ends.
        conn.exec_driver_sql(
            "SET LOCAL max_parallel_workers_per_gather = 0"
            + ("; SET LOCAL plan_cache_mode = force_custom_plan" if as_of is not None else "")
        )
    if as_of is not None:
        table = s.jobs if start.type == "JOB" else s.datasets
        born = conn.execute(
            sa.select(table.c.created_at).where(table.c.uuid == start.uuid)
        ).scalar()
        if born is None or born > as_of:
            raise NotFound(f"node {node_id!r} did not exist at {as_of.isoformat()}")
    if pg and as_of is None:
        jobs, edges = _walk_recursive(conn, start, depth)
    else:
        jobs, edges = _walk_levels(walker, start, depth)
    job_ids = set(jobs)
    if start.type == "JOB":
        job_ids.add(start.uuid)
    return _build_graph(conn, at, start, job_ids, jobs, edges)


Walk = tuple[dict[str, str], set[tuple[str, str, str]]]
"""Jobs reached (job -> version in force) and their (job, dataset, INPUT|OUTPUT) edges."""


def _walk_levels(walker: _Walker, start: NodeRef, depth: int) -> Walk:
    """Breadth first, one batch of queries per job hop: each level's jobs and their edges."""
    if start.type == "JOB":
        new = walker.versions([start.uuid])
        level_edges = walker.io(new)
    else:
        new, level_edges = walker.expand([start.uuid], ())
    jobs: dict[str, str] = {}
    edges: set[tuple[str, str, str]] = set()
    seen_ds: set[str] = set()
    for level in range(depth + 1):
        if not new:
            break
        jobs.update(new)
        edges.update(level_edges)
        new_ds = {d for _, d, _ in level_edges} - seen_ds
        seen_ds |= new_ds
        if level == depth or not new_ds:
            break
        new, level_edges = walker.expand(new_ds, jobs)
    return jobs, edges


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


def _walk_recursive(conn: Connection, start: NodeRef, depth: int) -> Walk:
    """The current graph's walk as one recursive query (PostgreSQL): the same jobs and edges
    as :func:`_walk_levels`, without a round trip per hop."""
    stmt = _WALK_FROM_JOB if start.type == "JOB" else _WALK_FROM_DATASET
    jobs: dict[str, str] = {}
    edges: set[tuple[str, str, str]] = set()
    rows: Sequence[Sequence[Any]] = conn.execute(stmt, {"start": start.uuid, "depth": depth}).all()
    for version, job, dataset, io_type in rows:
        if job is None:
            # Versions are reached through their edges, so only the start job's version
            # can have none.
            jobs[start.uuid] = version
            continue
        jobs[job] = version
        edges.add((job, dataset, io_type))
    return jobs, edges


# --- reading the graph's nodes ------------------------------------------------------------
#
# One query per kind of node. Rows are unpacked as tuples in the order of their SELECT:
# reading a SQLAlchemy row by attribute costs ten times as much as unpacking it, and a
# graph has a few thousand values to read.

_IDS_ARRAY = sa.bindparam("ids", type_=postgresql.ARRAY(sa.String()))
_IDS_LIST: sa.BindParameter[str] = sa.bindparam("ids", expanding=True)


def _in_ids(col: sa.ColumnElement[Any], pg: bool) -> sa.ColumnElement[bool]:
    """``col IN :ids``. On PostgreSQL one array parameter: the statement text is the same
    whatever the count, so it is rendered and prepared once."""
    return col == sa.any_(_IDS_ARRAY) if pg else col.in_(_IDS_LIST)


def _by_ids(conn: Connection, stmt: sa.Select[Any], ids: Collection[str]) -> list[Sequence[Any]]:
    if not ids:
        return []
    if conn.dialect.name == "postgresql":
        return list(conn.execute(stmt, {"ids": list(ids)}).all())
    rows: list[Sequence[Any]] = []
    for batch in q.chunks(ids):
        rows.extend(conn.execute(stmt, {"ids": batch}).all())
    return rows


def _json_text(col: sa.ColumnElement[Any], name: str) -> sa.Label[str]:
    """A JSON column read as its text, for :func:`_json`."""
    return sa.cast(col, sa.Text).label(name)


def _version_cols(v: sa.FromClause) -> list[sa.ColumnElement[Any]]:
    return [
        v.c.uuid.label("v_uuid"),
        v.c.created_at.label("v_created_at"),
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
    d, v, t = s.datasets, s.dataset_versions, s.dataset_tags
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
        sa.exists().where(t.c.dataset_uuid == d.c.uuid).label("tagged"),
    ).where(_in_ids(d.c.uuid, pg), d.c.is_hidden.is_(False))
    if not with_current:
        return stmt
    return stmt.add_columns(*_version_cols(v)).outerjoin(v, v.c.uuid == d.c.current_version_uuid)


@functools.cache
def _versions_select(pg: bool) -> sa.Select[Any]:
    v = s.dataset_versions
    return sa.select(*_version_cols(v)).where(_in_ids(v.c.uuid, pg))


@functools.cache
def _dataset_tags_select(pg: bool) -> sa.Select[Any]:
    t = s.dataset_tags
    return sa.select(t.c.dataset_uuid, t.c.field_name, t.c.tag_name).where(
        _in_ids(t.c.dataset_uuid, pg)
    )


def _datasets(
    conn: Connection, uuids: Collection[str], version_of: dict[str, str | None] | None
) -> dict[str, q.Dataset]:
    """Visible datasets at their current version, or at ``version_of``'s; as
    ``q.datasets_by_uuid``."""
    pg = conn.dialect.name == "postgresql"
    rows = _by_ids(conn, _datasets_select(pg, version_of is None), uuids)
    versions: dict[str, Sequence[Any]] = {}
    if version_of is None:
        versions = {r[0]: r[_DATASET_COLS:] for r in rows if r[_DATASET_COLS] is not None}
    else:
        wanted = {v for v in version_of.values() if v}
        by_uuid = {v[0]: v for v in _by_ids(conn, _versions_select(pg), wanted)}
        versions = {d: by_uuid[v] for d, v in version_of.items() if v in by_uuid}
    tags: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    tagged = [r[0] for r in rows if r[_DATASET_COLS - 1]]
    for uuid, field_name, tag in _by_ids(conn, _dataset_tags_select(pg), tagged):
        tags[uuid][field_name].append(tag)
    out: dict[str, q.Dataset] = {}
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
        version = versions.get(uuid)
        modified_at = lifecycle = commit_id = schema = None
        if version is not None:
            _, modified_at, lifecycle, commit_id, schema_text, v_facets_text = version
            schema = jsoncodec.loads(schema_text)
            v_facets = jsoncodec.loads(v_facets_text)
            if isinstance(v_facets, dict):
                facets.update(v_facets)
        dtags = tags.get(uuid, {})
        out[uuid] = q.Dataset(
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
            fields=q._fields(schema, dtags),
            tags=sorted(dtags.get("", [])),
            facets=facets,
            commit_id=commit_id,
        )
    return out


def _run_cols(r: sa.FromClause, j: sa.FromClause) -> list[sa.ColumnElement[Any]]:
    """What a ``q.Run`` needs, for :func:`_runs`."""
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


_JOB_COLS = 14  # before the run columns of _jobs_select; "tagged" is the last


@functools.cache
def _jobs_select(pg: bool, with_run: bool) -> sa.Select[Any]:
    """Visible jobs by uuid with their parent's name and whether they carry tags;
    ``with_run``, also the latest run of their current version (:func:`_run_cols`)."""
    j, parent, t = s.jobs, s.jobs.alias("parent"), s.job_tags
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
            sa.exists().where(t.c.job_uuid == j.c.uuid).label("tagged"),
        )
        .select_from(j.outerjoin(parent, parent.c.uuid == j.c.parent_job_uuid))
        .where(_in_ids(j.c.uuid, pg), j.c.is_hidden.is_(False))
    )
    if not with_run:
        return stmt
    jv, r, rj = s.job_versions, s.runs, s.jobs.alias("run_job")
    return (
        stmt.add_columns(*_run_cols(r, rj))
        .outerjoin(jv, jv.c.uuid == j.c.current_version_uuid)
        .outerjoin(r, r.c.uuid == jv.c.latest_run_uuid)
        .outerjoin(rj, rj.c.uuid == r.c.job_uuid)
    )


@functools.cache
def _job_tags_select(pg: bool) -> sa.Select[Any]:
    t = s.job_tags
    return sa.select(t.c.job_uuid, t.c.tag_name).where(_in_ids(t.c.job_uuid, pg))


@functools.cache
def _runs_select(pg: bool) -> sa.Select[Any]:
    r, j = s.runs, s.jobs
    return (
        sa.select(*_run_cols(r, j)).join(j, j.c.uuid == r.c.job_uuid).where(_in_ids(r.c.uuid, pg))
    )


@functools.cache
def _run_io_select(pg: bool) -> sa.Select[Any]:
    """Versions the runs read (I) and wrote (O), in ``q.runs_by_uuid``'s order."""
    ri, dv, d = s.run_inputs, s.dataset_versions, s.datasets
    ins = (
        sa.select(
            sa.literal_column("'I'").label("kind"),
            ri.c.run_uuid,
            d.c.namespace,
            d.c.name,
            dv.c.uuid,
        )
        .join(dv, dv.c.uuid == ri.c.dataset_version_uuid)
        .join(d, d.c.uuid == dv.c.dataset_uuid)
        .where(_in_ids(ri.c.run_uuid, pg))
    )
    outs = (
        sa.select(
            sa.literal_column("'O'").label("kind"),
            dv.c.run_uuid,
            d.c.namespace,
            d.c.name,
            dv.c.uuid,
        )
        .join(d, d.c.uuid == dv.c.dataset_uuid)
        .where(_in_ids(dv.c.run_uuid, pg))
    )
    both = sa.union_all(ins, outs).subquery()
    return sa.select(both).order_by(both.c.namespace, both.c.name, both.c.uuid)


def _runs(conn: Connection, rows: Iterable[Sequence[Any]]) -> dict[str, q.Run]:
    """``q.Run`` (as ``q.runs_by_uuid``) from :func:`_run_cols` values, with the versions
    the runs read and wrote."""
    by_uuid = {r[0]: r for r in rows if r[0] is not None}
    inputs: dict[str, list[q.DatasetVersionRef]] = defaultdict(list)
    outputs: dict[str, list[q.DatasetVersionRef]] = defaultdict(list)
    pg = conn.dialect.name == "postgresql"
    for kind, run, namespace, name, version in _by_ids(conn, _run_io_select(pg), by_uuid):
        into = inputs if kind == "I" else outputs
        into[run].append(q.DatasetVersionRef(namespace, name, version))
    # _run_cols lists q.Run's first fields in order; the facets come as JSON text.
    return {
        uuid: q.Run(
            *[
                *row[:13],
                dict(jsoncodec.loads(row[13]) or {}),
                inputs.get(uuid, []),
                outputs.get(uuid, []),
            ]
        )
        for uuid, row in by_uuid.items()
    }


def _build_graph(
    conn: Connection,
    at: _EdgesAt | None,
    start: NodeRef,
    job_ids: set[str],
    versions: dict[str, str],
    edges: set[tuple[str, str, str]],
) -> list[GraphNode]:
    """The walk's visible jobs and datasets as nodes, each with its edges, sorted by id."""
    pg = conn.dialect.name == "postgresql"
    job_rows, edges, dataset_ids = _visible(conn, pg, at is None, start, job_ids, edges)
    version_of = None if at is None else at.dataset_versions(dataset_ids)
    # Hidden datasets have no row either; edges to them are dropped below.
    datasets = _datasets(conn, dataset_ids, version_of)
    job_tags: dict[str, list[str]] = defaultdict(list)
    tagged = [r[0] for r in job_rows if r[_JOB_COLS - 1]]
    for uuid, tag in _by_ids(conn, _job_tags_select(pg), tagged):
        job_tags[uuid].append(tag)
    latest, runs = _latest_runs(conn, pg, at, job_rows, versions)
    ds_id = {u: dataset_node_id(d.namespace, d.name) for u, d in datasets.items()}
    job_id = {r[0]: job_node_id(r[1], r[2]) for r in job_rows}
    nodes = {ds_id[u]: GraphNode(ds_id[u], "DATASET", d) for u, d in datasets.items()}
    ins: dict[str, list[str]] = defaultdict(list)
    outs: dict[str, list[str]] = defaultdict(list)
    for jb, du, io_type in edges:
        if jb not in job_id or du not in ds_id:
            continue
        if io_type == "INPUT":
            ins[jb].append(du)
            nodes[ds_id[du]].out_edges.append((ds_id[du], job_id[jb]))
        else:
            outs[jb].append(du)
            nodes[ds_id[du]].in_edges.append((job_id[jb], ds_id[du]))
    refs = {u: q.DatasetRef(d.namespace, d.name) for u, d in datasets.items()}

    def by_name(uuids: list[str]) -> list[str]:
        return sorted(uuids, key=lambda u: (refs[u].namespace, refs[u].name))

    for row in job_rows:
        u = row[0]
        rid = latest.get(u)
        inputs, outputs = by_name(ins[u]), by_name(outs[u])
        job = _job_of_row(
            row,
            versions.get(u),
            [refs[d] for d in inputs],
            [refs[d] for d in outputs],
            sorted(job_tags.get(u, [])),
            runs.get(rid) if rid else None,
        )
        node = GraphNode(
            job_id[u],
            "JOB",
            job,
            in_edges=[(ds_id[d], job_id[u]) for d in inputs],
            out_edges=[(job_id[u], ds_id[d]) for d in outputs],
        )
        nodes[node.id] = node
    for n in nodes.values():
        n.in_edges.sort()
        n.out_edges.sort()
    return [nodes[k] for k in sorted(nodes)]


def _visible(
    conn: Connection,
    pg: bool,
    current: bool,
    start: NodeRef,
    job_ids: set[str],
    edges: set[tuple[str, str, str]],
) -> tuple[list[Sequence[Any]], set[tuple[str, str, str]], set[str]]:
    """The rows of the walk's visible jobs, the edges of those, and the datasets they touch
    (the start dataset alone when no visible job touches it)."""
    # The walk's versions of the current graph are the current ones, so the job rows can
    # carry the latest run of each; as of a time it is that of the version then in force.
    # Hidden jobs have no row; their edges go with them.
    job_rows = _by_ids(conn, _jobs_select(pg, current), job_ids)
    shown = {r[0] for r in job_rows}
    edges = {e for e in edges if e[0] in shown}
    dataset_ids = {d for _, d, _ in edges}
    if start.type == "DATASET" and start.uuid not in dataset_ids:
        # No visible job of the graph touches the start dataset (there are none, or only
        # hidden ones): it stands alone, as in Marquez.
        return [], set(), {start.uuid}
    return job_rows, edges, dataset_ids


def _latest_runs(
    conn: Connection,
    pg: bool,
    at: _EdgesAt | None,
    job_rows: list[Sequence[Any]],
    versions: dict[str, str],
) -> tuple[dict[str, str], dict[str, q.Run]]:
    """job -> its latest run's id (in force at ``as_of``), and those runs by id."""
    if at is None:
        latest = {r[0]: r[_JOB_COLS] for r in job_rows if r[_JOB_COLS] is not None}
        return latest, _runs(conn, [r[_JOB_COLS:] for r in job_rows])
    shown = {r[0] for r in job_rows}
    latest = at.latest_runs({j: v for j, v in versions.items() if j in shown})
    return latest, _runs(conn, _by_ids(conn, _runs_select(pg), set(latest.values())))


def _job_of_row(
    row: Sequence[Any],
    current_version: str | None,
    inputs: list[q.DatasetRef],
    outputs: list[q.DatasetRef],
    tags: list[str],
    latest_run: q.Run | None,
) -> q.Job:
    """A job of the graph from its row of :func:`_jobs_select`."""
    (
        u,
        namespace,
        name,
        simple_name,
        parent_uuid,
        parent_name,
        type_,
        location,
        description,
        facets,
        created_at,
        updated_at,
        *_,
    ) = row
    return q.Job(
        uuid=u,
        namespace=namespace,
        name=name,
        simple_name=simple_name,
        parent_job_uuid=parent_uuid,
        parent_job_name=parent_name if parent_uuid else None,
        type=type_,
        location=location,
        description=description,
        facets=dict(jsoncodec.loads(facets) or {}),
        created_at=created_at,
        updated_at=updated_at,
        current_version=current_version,
        inputs=inputs,
        outputs=outputs,
        tags=tags,
        latest_run=latest_run,
    )


# --- column lineage -----------------------------------------------------------------------


@dataclass(frozen=True)
class InputField:
    namespace: str
    dataset: str
    dataset_version: str | None
    field: str
    transformation_description: str | None
    transformation_type: str | None


@dataclass
class FieldNode:
    id: str
    namespace: str
    dataset: str
    dataset_version: str | None
    field: str
    field_type: str | None
    transformation_description: str | None = None
    transformation_type: str | None = None
    input_fields: list[InputField] = dc_field(default_factory=list)
    in_edges: list[tuple[str, str]] = dc_field(default_factory=list)
    out_edges: list[tuple[str, str]] = dc_field(default_factory=list)


def field_node_id(ns: str, ds: str, fld: str) -> str:
    return f"datasetField:{ns}:{ds}:{fld}"


def column_lineage(
    conn: Connection, node_id: str, depth: int = 20, with_downstream: bool = False
) -> list[FieldNode]:
    """Field-level lineage of the current dataset versions, upstream (and downstream).

    Fields of hidden (soft-deleted) datasets are left out with their edges, as Marquez joins
    the walk's fields to a view without hidden datasets; the walk still goes through them.
    """
    check_depth(depth)
    start = parse_node_id(conn, node_id)
    if start.type == "DATASET_FIELD":
        assert start.field is not None
        seeds = {(start.uuid, start.field)}
    elif start.type == "DATASET":
        seeds = {
            (start.uuid, f.name) for f in q.datasets_by_uuid(conn, [start.uuid])[start.uuid].fields
        }
        seeds |= {(start.uuid, f) for f in _output_fields(conn, start.uuid)}
    else:
        job = q.jobs_by_uuid(conn, [start.uuid], with_latest_run=False)[start.uuid]
        seeds = set()
        for ref in job.outputs:
            uuid = _dataset(conn, ref.namespace, ref.name)
            if uuid:
                seeds |= {(uuid, f) for f in _output_fields(conn, uuid)}
    if not seeds:
        raise NotFound(f"node {node_id!r} has no fields", node_id=node_id)
    # (out dataset, out field) -> rows of (in dataset, in field, type, description)
    edges: dict[tuple[str, str], set[tuple[str, str, str | None, str | None]]] = defaultdict(set)
    seen = set(seeds)
    up = set(seeds)
    down = set(seeds) if with_downstream else set()
    for _ in range(depth):
        nxt_up: set[tuple[str, str]] = set()
        for out_key, rows in _upstream_edges(conn, up).items():
            edges[out_key] |= rows
            nxt_up |= {(r[0], r[1]) for r in rows}
        nxt_down: set[tuple[str, str]] = set()
        for out_key, row in _downstream_edges(conn, down):
            edges[out_key].add(row)
            nxt_down.add(out_key)
        up = nxt_up - seen
        down = nxt_down - seen
        seen |= up | down
        if not up and not down:
            break
    return _field_nodes(conn, seeds, edges)


def _output_fields(conn: Connection, dataset_uuid: str) -> set[str]:
    cl, d = s.column_lineage, s.datasets
    return set(
        conn.execute(
            sa.select(cl.c.output_field)
            .join(d, d.c.current_version_uuid == cl.c.dataset_version_uuid)
            .where(d.c.uuid == dataset_uuid)
            .distinct()
        ).scalars()
    )


def _current_versions(conn: Connection, dataset_uuids: Iterable[str]) -> dict[str, str | None]:
    d = s.datasets
    out: dict[str, str | None] = {}
    for batch in q.chunks(set(dataset_uuids)):
        for r in conn.execute(
            sa.select(d.c.uuid, d.c.current_version_uuid).where(d.c.uuid.in_(batch))
        ).all():
            out[r.uuid] = r.current_version_uuid
    return out


def _upstream_edges(
    conn: Connection, keys: set[tuple[str, str]]
) -> dict[tuple[str, str], set[tuple[str, str, str | None, str | None]]]:
    out: dict[tuple[str, str], set[tuple[str, str, str | None, str | None]]] = defaultdict(set)
    if not keys:
        return out
    current = _current_versions(conn, {d for d, _ in keys})
    by_version = {v: d for d, v in current.items() if v}
    cl = s.column_lineage
    for batch in q.chunks(by_version):
        for r in conn.execute(sa.select(cl).where(cl.c.dataset_version_uuid.in_(batch))).all():
            key = (by_version[r.dataset_version_uuid], r.output_field)
            if key in keys:
                out[key].add(
                    (
                        r.input_dataset_uuid,
                        r.input_field,
                        r.transformation_type,
                        r.transformation_description,
                    )
                )
    return out


def _downstream_edges(
    conn: Connection, keys: set[tuple[str, str]]
) -> list[tuple[tuple[str, str], tuple[str, str, str | None, str | None]]]:
    out: list[tuple[tuple[str, str], tuple[str, str, str | None, str | None]]] = []
    if not keys:
        return out
    cl, d = s.column_lineage, s.datasets
    for batch in q.chunks({ds for ds, _ in keys}):
        for r in conn.execute(
            sa.select(cl, d.c.uuid.label("out_dataset"))
            .join(d, d.c.current_version_uuid == cl.c.dataset_version_uuid)
            .where(cl.c.input_dataset_uuid.in_(batch))
        ).all():
            if (r.input_dataset_uuid, r.input_field) in keys:
                out.append(
                    (
                        (r.out_dataset, r.output_field),
                        (
                            r.input_dataset_uuid,
                            r.input_field,
                            r.transformation_type,
                            r.transformation_description,
                        ),
                    )
                )
    return out


def _field_nodes(
    conn: Connection,
    seeds: set[tuple[str, str]],
    edges: dict[tuple[str, str], set[tuple[str, str, str | None, str | None]]],
) -> list[FieldNode]:
    """The start fields, every field the walk found written and the fields each was
    written from, but those of hidden datasets (as Marquez, whose nodes are the walk's
    output fields of visible datasets and their inputs)."""
    all_keys = set(seeds) | set(edges) | {(r[0], r[1]) for rows in edges.values() for r in rows}
    datasets = _datasets(conn, {d for d, _ in all_keys}, None)  # hidden ones have no row
    shown = {k for k in seeds if k[0] in datasets}
    for out_key, rows in edges.items():
        if out_key[0] in datasets:
            shown.add(out_key)
            shown |= {(r[0], r[1]) for r in rows if r[0] in datasets}
    types = {(u, f.name): f.type for u, d in datasets.items() for f in d.fields}
    nodes: dict[tuple[str, str], FieldNode] = {}
    for key in shown:
        ds = datasets[key[0]]
        nodes[key] = FieldNode(
            field_node_id(ds.namespace, ds.name, key[1]),
            ds.namespace,
            ds.name,
            ds.current_version,
            key[1],
            types.get(key),
        )
    for out_key, rows in edges.items():
        node = nodes.get(out_key)
        if node is None:
            continue
        for in_ds, in_field, t_type, t_desc in sorted(rows, key=lambda r: (r[0], r[1])):
            src = nodes.get((in_ds, in_field))
            if src is None:
                continue
            node.input_fields.append(
                InputField(
                    src.namespace, src.dataset, src.dataset_version, in_field, t_desc, t_type
                )
            )
            node.transformation_type = node.transformation_type or t_type
            node.transformation_description = node.transformation_description or t_desc
            # As Marquez: every edge starts at the node that lists it.
            node.in_edges.append((node.id, src.id))
            src.out_edges.append((src.id, node.id))
    for n in nodes.values():
        n.in_edges.sort()
        n.out_edges.sort()
    return sorted(nodes.values(), key=lambda n: n.id)


# --- run-level upstream lineage -----------------------------------------------------------


@dataclass(frozen=True)
class UpstreamInput:
    namespace: str
    name: str
    version: str
    produced_by_run_id: str | None


@dataclass(frozen=True)
class UpstreamRun:
    job_namespace: str
    job_name: str
    job_version: str | None
    run_id: str
    start: datetime | None
    end: datetime | None
    status: str
    inputs: list[UpstreamInput]


def upstream_runs(conn: Connection, run_id: str, depth: int = 20) -> list[UpstreamRun]:
    """Marquez's run upstream lineage: run -> exact input versions -> runs that wrote them."""
    check_depth(depth)
    root = q.get_run(conn, run_id)
    out: list[UpstreamRun] = []
    seen = {root.uuid}
    level = [root.uuid]
    for _ in range(depth + 1):
        if not level:
            break
        runs = q.runs_by_uuid(conn, level)
        inputs = _run_inputs(conn, level)
        nxt: list[str] = []
        for rid in level:
            run = runs.get(rid)
            if run is None:
                continue
            ins = inputs.get(rid, [])
            out.append(
                UpstreamRun(
                    run.job_namespace,
                    run.job_name,
                    run.job_version_uuid,
                    run.uuid,
                    run.started_at,
                    run.ended_at,
                    run.state,
                    ins,
                )
            )
            for i in ins:
                if i.produced_by_run_id and i.produced_by_run_id not in seen:
                    seen.add(i.produced_by_run_id)
                    nxt.append(i.produced_by_run_id)
        level = nxt
    return out


def _run_inputs(conn: Connection, run_ids: list[str]) -> dict[str, list[UpstreamInput]]:
    ri, dv, d = s.run_inputs, s.dataset_versions, s.datasets
    out: dict[str, list[UpstreamInput]] = defaultdict(list)
    for batch in q.chunks(run_ids):
        for r in conn.execute(
            sa.select(
                ri.c.run_uuid, dv.c.uuid, dv.c.run_uuid.label("producer"), d.c.namespace, d.c.name
            )
            .join(dv, dv.c.uuid == ri.c.dataset_version_uuid)
            .join(d, d.c.uuid == dv.c.dataset_uuid)
            .where(ri.c.run_uuid.in_(batch))
            .order_by(d.c.namespace, d.c.name)
        ).all():
            out[r.run_uuid].append(UpstreamInput(r.namespace, r.name, r.uuid, r.producer))
    return out
