"""Column lineage: the dataset fields a field is derived from (and, asked, those derived
from it), from the ``columnLineage`` facets of dataset versions.

A walk starts at the current version of the node, or at the version its id names
(``datasetField:ns:name:field#version``, ``dataset:ns:name#version``); each input field
names the version of its dataset that the producing run read, and the walk goes on from
that version, so the answer is the exact provenance of what was written. With a version
in the start node, every node id carries its version (``…#version``), as in Marquez.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import NotFound
from strata.lineage.query import common, jobs
from strata.lineage.query import datasets as dataset_reads
from strata.lineage.query.nodes import NodeRef, check_depth, find_dataset, parse_node_id
from strata.store.owners.datasets import columns as edges_of
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.runs import inputs as bound

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()

# A field of one version of a dataset: (dataset uuid, version uuid, field).
Key = tuple[str, str, str]
# An edge's input: (input key, transformation type, transformation description).
Edge = tuple[Key, str | None, str | None]


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


def field_node_id(ns: str, ds: str, fld: str, version: str | None = None) -> str:
    return f"datasetField:{ns}:{ds}:{fld}" + (f"#{version}" if version else "")


def column_lineage(
    conn: Connection,
    node_id: str,
    depth: int = 20,
    with_downstream: bool = False,
    *,
    with_upstream: bool = True,
) -> list[FieldNode]:
    """Field-level lineage upstream (and downstream) of a node (see the module).

    Fields of hidden (soft-deleted) datasets are left out with their edges, as Marquez joins
    the walk's fields to a view without hidden datasets; the walk still goes through them.
    """
    check_depth(depth)
    start = parse_node_id(conn, node_id)
    seeds = _seeds(conn, start)
    if not seeds:
        raise NotFound(f"node {node_id!r} has no fields", node_id=node_id)
    edges: dict[Key, set[Edge]] = defaultdict(set)
    seen = set(seeds)
    up = set(seeds) if with_upstream else set()
    down = set(seeds) if with_downstream else set()
    # Without a version asked for, a version that recorded no lineage for a field has the
    # lineage of the newest earlier version that did (Marquez answers the latest edges).
    inherit = start.version is None
    for _ in range(depth):
        nxt_up: set[Key] = set()
        for out_key, rows in _upstream_edges(conn, up, inherit).items():
            edges[out_key] |= rows
            nxt_up |= {r[0] for r in rows}
        nxt_down: set[Key] = set()
        for out_key, row in _downstream_edges(conn, down, inherit):
            edges[out_key].add(row)
            nxt_down.add(out_key)
        up = nxt_up - seen
        down = nxt_down - seen
        seen |= up | down
        if not up and not down:
            break
    return _field_nodes(conn, seeds, edges, versioned=start.version is not None)


def _seeds(conn: Connection, start: NodeRef) -> set[Key]:
    """The fields a walk starts from: of the node's version (named, else current)."""
    if start.type == "JOB":
        job = jobs.jobs_by_uuid(conn, [start.uuid], with_latest_run=False)[start.uuid]
        outputs = [find_dataset(conn, ref.namespace, ref.name) for ref in job.outputs]
        current = _current_versions(conn, [u for u in outputs if u])
        return {(d, v, f) for d, v in current.items() if v for f in edges_of.output_fields(conn, v)}
    version = _version_of(conn, start)
    if version is None:
        return set()
    if start.type == "DATASET_FIELD":
        assert start.field is not None
        return {(start.uuid, version, start.field)}
    fields = dataset_reads.dataset_fields(_schema(conn, version), {})
    named = {x.name for x in fields} | edges_of.output_fields(conn, version)
    return {(start.uuid, version, f) for f in named}


def _version_of(conn: Connection, start: NodeRef) -> str | None:
    """The version a dataset node names (``#<uuid>``, or a lake commit id), else its
    current one; NotFound for a version the dataset does not have."""
    if start.version is None:
        return _current_versions(conn, [start.uuid]).get(start.uuid)
    dv = _VERSIONS
    label = start.version
    found = conn.execute(
        sa.select(dv.c.uuid).where(
            dv.c.dataset_uuid == start.uuid,
            dv.c.commit_id == int(label) if label.isdigit() else dv.c.uuid == label,
        )
    ).scalar()
    if found is None:
        raise NotFound(
            f"dataset {start.namespace}:{start.name} has no version {label!r}",
            version=label,
        )
    return str(found)


def _schema(conn: Connection, version: str) -> object:
    dv = _VERSIONS
    return conn.execute(sa.select(dv.c.schema_fields).where(dv.c.uuid == version)).scalar()


def commit_ids(conn: Connection, versions: Iterable[str]) -> dict[str, int | None]:
    """Version uuid -> its lake commit id (None for a version declared by events)."""
    dv = _VERSIONS
    out: dict[str, int | None] = {}
    for batch in common.chunks(set(versions)):
        rows = conn.execute(sa.select(dv.c.uuid, dv.c.commit_id).where(dv.c.uuid.in_(batch)))
        out |= {str(r.uuid): r.commit_id for r in rows}
    return out


def _current_versions(conn: Connection, dataset_uuids: Iterable[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for batch in common.chunks(set(dataset_uuids)):
        for r in conn.execute(_CURRENT, {"d": batch}).all():
            out[r.uuid] = r.current_version_uuid
    return out


# The walk runs these once per step: built once, so a step pays only for the round trip.
_CURRENT = sa.select(_DATASETS.c.uuid, _DATASETS.c.current_version_uuid).where(
    _DATASETS.c.uuid.in_(sa.bindparam("d", expanding=True))
)


_CL = edges_of.relation("cl")
_EDGE_COLS = [
    _CL.c[name]
    for name in (
        "dataset_version_uuid",
        "output_field",
        "input_dataset_uuid",
        "input_field",
        "transformation_type",
        "transformation_description",
    )
]


_EDGES = sa.select(*_EDGE_COLS).where(
    _CL.c.dataset_version_uuid.in_(sa.bindparam("v", expanding=True)),
    _CL.c.output_field.in_(sa.bindparam("f", expanding=True)),
)


def _upstream_edges(conn: Connection, keys: set[Key], inherit: bool) -> dict[Key, set[Edge]]:
    """For each key, the input fields its version was written from (with ``inherit``,
    those of the newest version up to it that recorded any for the field), each at the
    version of its dataset that the writing run read (else that dataset's current one)."""
    out: dict[Key, set[Edge]] = defaultdict(set)
    if not keys:
        return out
    rows: list[sa.Row[Any]] = []
    names = sorted({f for _, _, f in keys})
    for batch in common.chunks({v for _, v, _ in keys}):
        rows += conn.execute(_EDGES, {"v": batch, "f": names}).all()
    by_version = {v: d for d, v, _ in keys}
    keyed = [
        (k, r)
        for r in rows
        if (k := (by_version[r.dataset_version_uuid], r.dataset_version_uuid, r.output_field))
        in keys
    ]
    if inherit:
        keyed += _inherited(conn, keys - {k for k, _ in keyed})
    read = _versions_read(conn, {r.dataset_version_uuid for _, r in keyed})
    unread = {
        r.input_dataset_uuid
        for _, r in keyed
        if (r.dataset_version_uuid, r.input_dataset_uuid) not in read
    }
    current = _current_versions(conn, unread) if unread else {}
    for key, r in keyed:
        version = read.get((r.dataset_version_uuid, r.input_dataset_uuid))
        version = version or current.get(r.input_dataset_uuid)
        if version is None:
            continue  # an input with no version at all: nothing to walk to
        source = (r.input_dataset_uuid, version, r.input_field)
        out[key].add((source, r.transformation_type, r.transformation_description))
    return out


def _inherited(conn: Connection, keys: set[Key]) -> list[tuple[Key, sa.Row[Any]]]:
    """For each key whose version recorded no column lineage at all: the rows of its field
    in the newest version of its dataset, no later than that version, that recorded some."""
    cl, dv = _CL, _VERSIONS
    bare = {v for _, v, _ in keys} - _with_lineage(conn, {v for _, v, _ in keys})
    if not bare:
        return []
    made = _created(conn, bare)
    recorded: dict[str, list[tuple[Any, str]]] = defaultdict(list)
    for batch in common.chunks({d for d, v, _ in keys if v in bare}):
        for r in conn.execute(
            sa.select(dv.c.dataset_uuid, dv.c.uuid, dv.c.created_at).where(
                dv.c.dataset_uuid.in_(batch), edges_of.recorded_for(dv.c.uuid)
            )
        ).all():
            recorded[str(r.dataset_uuid)].append((r.created_at, str(r.uuid)))
    chosen: dict[str, str] = {}
    for dataset, version, _ in keys:
        earlier = [
            x for x in recorded.get(dataset, ()) if version in bare and x[0] <= made[version]
        ]
        if earlier:
            chosen[version] = max(earlier)[1]
    rows: list[sa.Row[Any]] = []
    for batch in common.chunks(set(chosen.values())):
        rows += conn.execute(
            sa.select(*_EDGE_COLS).where(cl.c.dataset_version_uuid.in_(batch))
        ).all()
    by_version: dict[tuple[str, str], list[sa.Row[Any]]] = defaultdict(list)
    for r in rows:
        by_version[(r.dataset_version_uuid, r.output_field)].append(r)
    return [
        (key, r)
        for key in keys
        if key[1] in chosen
        for r in by_version.get((chosen[key[1]], key[2]), ())
    ]


def _with_lineage(conn: Connection, versions: set[str]) -> set[str]:
    """Those of ``versions`` that recorded column lineage."""
    out: set[str] = set()
    for batch in common.chunks(versions):
        out |= edges_of.with_lineage(conn, batch)
    return out


def _created(conn: Connection, versions: set[str]) -> dict[str, Any]:
    dv = _VERSIONS
    out: dict[str, Any] = {}
    for batch in common.chunks(versions):
        rows = conn.execute(sa.select(dv.c.uuid, dv.c.created_at).where(dv.c.uuid.in_(batch)))
        out |= {str(r.uuid): r.created_at for r in rows}
    return out


def _versions_read(conn: Connection, outputs: set[str]) -> dict[tuple[str, str], str]:
    """(output version, input dataset) -> the version of that dataset the run that wrote
    the output version read."""
    out: dict[tuple[str, str], str] = {}
    for batch in common.chunks(outputs):
        for written, dataset, version in conn.execute(_READ, {"v": batch}).all():
            out[(str(written), str(dataset))] = str(version)
    return out


def _read_select() -> sa.Select[Any]:
    """(output version, input dataset, input version) of the outputs ``:v``."""
    written, read_version = _VERSIONS, stored_versions.relation("read")
    q = sa.select(written.c.uuid, read_version.c.dataset_uuid, read_version.c.uuid)
    q, read = bound.join_read(q.select_from(written), run=written.c.run_uuid)
    return q.join(read_version, read_version.c.uuid == read.version).where(
        written.c.uuid.in_(sa.bindparam("v", expanding=True))
    )


_READ = _read_select()


def _downstream_edges(conn: Connection, keys: set[Key], inherit: bool) -> list[tuple[Key, Edge]]:
    """Fields of datasets' current versions written from one of ``keys``'s fields (with
    ``inherit``, a current version that recorded no column lineage has that of the
    newest version that did)."""
    out: list[tuple[Key, Edge]] = []
    if not keys:
        return out
    by_field = {(k[0], k[2]): k for k in keys}
    fields = sorted({f for _, _, f in keys})
    rows: list[sa.Row[Any]] = []
    for batch in common.chunks({ds for ds, _, _ in keys}):
        rows += conn.execute(_DOWN, {"d": batch, "f": fields}).all()
        if inherit:
            rows += _inherited_downstream(conn, batch, fields)
    for r in rows:
        source = by_field.get((r.input_dataset_uuid, r.input_field))
        if source is not None:
            written = (r.out_dataset, r.dataset_version_uuid, r.output_field)
            out.append((written, (source, r.transformation_type, r.transformation_description)))
    return out


_DOWN = (
    sa.select(*_EDGE_COLS, _DATASETS.c.uuid.label("out_dataset"))
    .join(_DATASETS, _DATASETS.c.current_version_uuid == _CL.c.dataset_version_uuid)
    .where(
        _CL.c.input_dataset_uuid.in_(sa.bindparam("d", expanding=True)),
        _CL.c.input_field.in_(sa.bindparam("f", expanding=True)),
    )
)


def _inherited_downstream(conn: Connection, inputs: list[str], fields: list[str]) -> list[Any]:
    """Lineage rows reading ``inputs``'s ``fields`` of the newest version that recorded
    column lineage of each dataset whose current version recorded none."""
    cl, d, dv = _CL, _DATASETS, _VERSIONS
    older = conn.execute(
        sa.select(*_EDGE_COLS, dv.c.dataset_uuid.label("out_dataset"), dv.c.created_at)
        .join(dv, dv.c.uuid == cl.c.dataset_version_uuid)
        .join(d, d.c.uuid == dv.c.dataset_uuid)
        .where(
            cl.c.input_dataset_uuid.in_(inputs),
            cl.c.input_field.in_(fields),
            d.c.current_version_uuid != cl.c.dataset_version_uuid,
        )
    ).all()
    if not older:
        return []
    bare: set[str] = set(
        conn.execute(
            sa.select(d.c.uuid).where(
                d.c.uuid.in_({r.out_dataset for r in older}),
                ~edges_of.recorded_for(d.c.current_version_uuid),
            )
        ).scalars()
    )
    newest = _newest_with_lineage(conn, {str(u) for u in bare})
    return [r for r in older if r.out_dataset in bare and newest.get(r.out_dataset) == r.created_at]


def _newest_with_lineage(conn: Connection, datasets: set[str]) -> dict[str, Any]:
    """Dataset -> when its newest version that recorded column lineage was made."""
    dv = _VERSIONS
    has_lineage = edges_of.recorded_for(dv.c.uuid)
    out: dict[str, Any] = {}
    for batch in common.chunks(datasets):
        rows = conn.execute(
            sa.select(dv.c.dataset_uuid, sa.func.max(dv.c.created_at).label("at"))
            .where(dv.c.dataset_uuid.in_(batch), has_lineage)
            .group_by(dv.c.dataset_uuid)
        )
        out |= {str(r.dataset_uuid): r.at for r in rows}
    return out


def _types(conn: Connection, shown: set[Key]) -> dict[tuple[str, str], str | None]:
    """(version, field) -> the field's type in that version's schema, for ``shown``."""
    dv = _VERSIONS
    wanted: dict[str, set[str]] = defaultdict(set)
    for _, version, name in shown:
        wanted[version].add(name)
    out: dict[tuple[str, str], str | None] = {}
    for batch in common.chunks(set(wanted)):
        for uuid, schema in conn.execute(
            sa.select(dv.c.uuid, dv.c.schema_fields).where(dv.c.uuid.in_(batch))
        ).all():
            names = wanted[str(uuid)]
            for f in schema if isinstance(schema, list) else ():
                if isinstance(f, dict) and f.get("name") in names:
                    kind = f.get("type")
                    out[(str(uuid), f["name"])] = kind if isinstance(kind, str) else None
    return out


def _visible(conn: Connection, uuids: set[str]) -> dict[str, tuple[str, str]]:
    """Dataset uuid -> (namespace, name), of those not hidden."""
    d = _DATASETS
    out: dict[str, tuple[str, str]] = {}
    for batch in common.chunks(uuids):
        rows = conn.execute(
            sa.select(d.c.uuid, d.c.namespace, d.c.name).where(
                d.c.uuid.in_(batch), d.c.is_hidden.is_(False)
            )
        )
        out |= {str(r.uuid): (r.namespace, r.name) for r in rows}
    return out


def _field_nodes(
    conn: Connection, seeds: set[Key], edges: dict[Key, set[Edge]], *, versioned: bool
) -> list[FieldNode]:
    """The start fields, every field the walk found written and the fields each was
    written from, but those of hidden datasets (as Marquez, whose nodes are the walk's
    output fields of visible datasets and their inputs). Without a version in the start
    node, a field read at several versions is one node (the first version by uuid)."""
    all_keys = set(seeds) | set(edges) | {e[0] for rows in edges.values() for e in rows}
    datasets = _visible(conn, {d for d, _, _ in all_keys})
    shown = {k for k in seeds if k[0] in datasets}
    for out_key, rows in edges.items():
        if out_key[0] in datasets:
            shown.add(out_key)
            shown |= {e[0] for e in rows if e[0][0] in datasets}
    types = _types(conn, shown)
    nodes: dict[Key, FieldNode] = {}
    by_id: dict[str, FieldNode] = {}
    for key in sorted(shown):
        dataset, version, name = key
        namespace, ds_name = datasets[dataset]
        node_id = field_node_id(namespace, ds_name, name, version if versioned else None)
        if node_id not in by_id:
            by_id[node_id] = FieldNode(
                node_id, namespace, ds_name, version, name, types.get((version, name))
            )
        nodes[key] = by_id[node_id]
    for out_key, rows in sorted(edges.items()):
        node = nodes.get(out_key)
        if node is None:
            continue
        for source, t_type, t_desc in sorted(rows, key=lambda e: e[0]):
            src = nodes.get(source)
            if src is None or (node.id, src.id) in node.in_edges:
                continue
            node.input_fields.append(
                InputField(src.namespace, src.dataset, source[1], source[2], t_desc, t_type)
            )
            node.transformation_type = node.transformation_type or t_type
            node.transformation_description = node.transformation_description or t_desc
            # As Marquez: every edge starts at the node that lists it.
            node.in_edges.append((node.id, src.id))
            src.out_edges.append((src.id, node.id))
    for n in by_id.values():
        n.in_edges.sort()
        n.out_edges.sort()
    return sorted(by_id.values(), key=lambda n: n.id)


# One input of an output field, versions aside: (output field, input namespace, input
# dataset, input field, transformation type, transformation description).
FieldEdge = tuple[str, str, str, str, str | None, str | None]


@dataclass(frozen=True)
class VersionColumns:
    """A version's columns and the column lineage recorded with it."""

    columns: list[str]
    edges: frozenset[FieldEdge]


def current_columns(
    conn: Connection, namespace: str, names: Iterable[str]
) -> dict[str, VersionColumns]:
    """Of each of ``names`` in ``namespace``, its current version's columns and recorded
    column lineage (datasets without a current version are left out)."""
    d, dv, cl = _DATASETS, _VERSIONS, _CL
    src = d.alias("src")
    out: dict[str, VersionColumns] = {}
    for chunk in common.chunks(names):
        versions = {
            str(r.uuid): (str(r.name), r.schema_fields)
            for r in conn.execute(
                sa.select(dv.c.uuid, d.c.name, dv.c.schema_fields)
                .join(d, d.c.current_version_uuid == dv.c.uuid)
                .where(d.c.namespace == namespace, d.c.name.in_(chunk))
            )
        }
        edges: dict[str, set[FieldEdge]] = defaultdict(set)
        rows = conn.execute(
            sa.select(
                cl.c.dataset_version_uuid,
                cl.c.output_field,
                src.c.namespace,
                src.c.name,
                cl.c.input_field,
                cl.c.transformation_type,
                cl.c.transformation_description,
            )
            .join(src, src.c.uuid == cl.c.input_dataset_uuid)
            .where(cl.c.dataset_version_uuid.in_(sorted(versions)))
        )
        for version, *edge in rows:
            edges[str(version)].add(tuple(edge))  # type: ignore[arg-type]
        for version, (name, schema) in versions.items():
            cols = [str(f["name"]) for f in schema or () if isinstance(f, dict) and "name" in f]
            out[name] = VersionColumns(cols, frozenset(edges.get(version, ())))
    return out
