"""Marquez's lineage graph: the jobs and datasets around a node, current or as of a time.

The walk (:mod:`~strata.lineage.query.graph_walk`) finds the jobs and edges; their rows
are then read with one query per kind of node (:mod:`~strata.lineage.query.graph_rows`)
and assembled into nodes with their edges.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import InvalidArgument, NotFound
from strata.lineage.query import common, graph_rows
from strata.lineage.query import jobs as job_reads
from strata.lineage.query import runs as run_reads
from strata.lineage.query.graph_walk import (
    CurrentEdges,
    EdgesAt,
    Walker,
    walk_levels,
    walk_recursive,
)
from strata.lineage.query.nodes import NodeRef, NodeType, check_depth, parse_node_id
from strata.store import bulk, jsoncodec
from strata.store.owners import tags
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.jobs import rows as job_rows

_DATASETS = dataset_rows.relation()


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
    at = None if as_of is None else EdgesAt(conn, as_of)
    walker: Walker = CurrentEdges(conn) if at is None else at
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
        table = job_rows.relation() if start.type == "JOB" else _DATASETS
        born = conn.execute(
            sa.select(table.c.created_at).where(table.c.uuid == start.uuid)
        ).scalar()
        if born is None or born > as_of:
            raise NotFound(f"node {node_id!r} did not exist at {as_of.isoformat()}")
    if pg and as_of is None:
        jobs, edges = walk_recursive(conn, start, depth)
    else:
        jobs, edges = walk_levels(walker, start, depth)
    job_ids = set(jobs)
    if start.type == "JOB":
        job_ids.add(start.uuid)
    return _build_graph(conn, at, start, job_ids, jobs, edges)


def _build_graph(
    conn: Connection,
    at: EdgesAt | None,
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
    datasets = graph_rows.datasets(conn, dataset_ids, version_of)
    job_tags = tags.of_jobs(conn, [r[0] for r in job_rows if r[graph_rows.JOB_COLS - 1]])
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
    refs = {u: common.DatasetRef(d.namespace, d.name) for u, d in datasets.items()}

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
    job_rows = bulk.rows_by_ids(conn, graph_rows.jobs_select(pg, current), job_ids)
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
    at: EdgesAt | None,
    job_rows: list[Sequence[Any]],
    versions: dict[str, str],
) -> tuple[dict[str, str], dict[str, run_reads.Run]]:
    """job -> its latest run's id (in force at ``as_of``), and those runs by id."""
    if at is None:
        latest = {
            r[0]: r[graph_rows.JOB_COLS] for r in job_rows if r[graph_rows.JOB_COLS] is not None
        }
        return latest, graph_rows.runs(conn, [r[graph_rows.JOB_COLS :] for r in job_rows])
    shown = {r[0] for r in job_rows}
    latest = at.latest_runs({j: v for j, v in versions.items() if j in shown})
    return latest, graph_rows.runs(
        conn, bulk.rows_by_ids(conn, graph_rows.runs_select(pg), set(latest.values()))
    )


def _job_of_row(
    row: Sequence[Any],
    current_version: str | None,
    inputs: list[common.DatasetRef],
    outputs: list[common.DatasetRef],
    tags: list[str],
    latest_run: run_reads.Run | None,
) -> job_reads.Job:
    """A job of the graph from its row of :func:`graph_rows.jobs_select`."""
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
    return job_reads.Job(
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
