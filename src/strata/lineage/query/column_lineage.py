"""Column lineage: the dataset fields a field is derived from (and, asked, those derived
from it), from the ``columnLineage`` facets of the datasets' current versions.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dc_field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import NotFound
from strata.lineage.query import graph_rows
from strata.lineage.query import queries as q
from strata.lineage.query.nodes import check_depth, find_dataset, parse_node_id
from strata.store import schema as s


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
            uuid = find_dataset(conn, ref.namespace, ref.name)
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
    datasets = graph_rows.datasets(conn, {d for d, _ in all_keys}, None)  # hidden ones have no row
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
