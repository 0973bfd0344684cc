"""Provenance of a dataset version: the run, program version and exact inputs that made it.

The answer is a tree, walked breadth-first with batched queries per level. A version that
appears twice (a diamond in the graph) is expanded once; later occurrences say ``repeated``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import NotFound
from strata.lineage.query import common, datasets
from strata.lineage.query import runs as run_reads
from strata.lineage.query.nodes import check_depth
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.jobs import versions as versions_of
from strata.store.owners.runs import inputs as bound
from strata.store.owners.runs import rows as stored_runs


@dataclass(frozen=True)
class ProducingRun:
    id: str
    state: str
    started_at: datetime | None
    ended_at: datetime | None
    job_namespace: str
    job_name: str
    job_version: str | None
    program_version: str | None


@dataclass
class ProvenanceNode:
    namespace: str
    name: str
    version: str
    commit_id: int | None
    created_at: datetime
    run: ProducingRun | None = None
    inputs: list[ProvenanceNode] = field(default_factory=list)
    truncated: bool = False
    repeated: bool = False


def provenance(
    conn: Connection, namespace: str, name: str, version: str | None = None, depth: int = 10
) -> ProvenanceNode:
    """The provenance tree of a version (uuid or commit id; default the current one)."""
    check_depth(depth)
    ds = datasets.dataset_row(conn, namespace, name)
    row = datasets.version_row(conn, ds.uuid, version)
    if row is None:
        what = f"version {version!r}" if version else "a current version"
        raise NotFound(
            f"dataset {name!r} in namespace {namespace!r} has no {what}",
            namespace=namespace,
            dataset=name,
            version=version,
        )
    root = ProvenanceNode(namespace, name, row.uuid, row.commit_id, row.created_at)
    expanded: set[str] = set()
    level = [(root, row.run_uuid)]
    for d in range(depth + 1):
        todo = [(n, r) for n, r in level if not n.repeated]
        runs = _runs(conn, {r for _, r in todo if r})
        inputs = _inputs(conn, list(runs)) if d < depth else {}
        deeper = _with_inputs(conn, list(runs)) if d == depth else set()
        nxt: list[tuple[ProvenanceNode, str | None]] = []
        for node, run_id in todo:
            if node.version in expanded:  # met twice on one level: a diamond
                node.repeated = True
                continue
            expanded.add(node.version)
            if not run_id:
                continue
            node.run = runs.get(run_id)
            if d == depth:
                node.truncated = run_id in deeper
                continue
            for template, producer in inputs.get(run_id, []):
                # A node of its own per parent: two parents may have read one version.
                inp = ProvenanceNode(
                    template.namespace,
                    template.name,
                    template.version,
                    template.commit_id,
                    template.created_at,
                )
                inp.repeated = inp.version in expanded
                node.inputs.append(inp)
                nxt.append((inp, producer))
        level = nxt
        if not level:
            break
    return root


def _runs(conn: Connection, run_ids: set[str]) -> dict[str, ProducingRun]:
    r, j, jv = stored_runs.relation(), job_rows.relation(), versions_of.relation()
    out: dict[str, ProducingRun] = {}
    for batch in common.chunks(run_ids):
        for x in conn.execute(
            sa.select(
                r.c.uuid,
                r.c.state,
                r.c.started_at,
                r.c.ended_at,
                r.c.job_version_uuid,
                j.c.namespace,
                j.c.name,
                jv.c.version,
            )
            .join(j, j.c.uuid == r.c.job_uuid)
            .outerjoin(jv, jv.c.uuid == r.c.job_version_uuid)
            .where(r.c.uuid.in_(batch))
        ):
            out[x.uuid] = ProducingRun(
                x.uuid,
                x.state,
                x.started_at,
                x.ended_at,
                x.namespace,
                x.name,
                x.job_version_uuid,
                x.version,
            )
    return out


def _inputs(
    conn: Connection, run_ids: list[str]
) -> dict[str, list[tuple[ProvenanceNode, str | None]]]:
    out: dict[str, list[tuple[ProvenanceNode, str | None]]] = defaultdict(list)
    for x in run_reads.run_io(conn, run_ids):
        if x.read:
            node = ProvenanceNode(x.namespace, x.name, x.version, x.commit_id, x.created_at)
            out[x.run].append((node, x.producer))
    return out


def _with_inputs(conn: Connection, run_ids: list[str]) -> set[str]:
    """Runs (of those given) that read anything: their trees go on past the depth limit."""
    return bound.readers_among(conn, run_ids)
