"""Run-level upstream lineage: the runs that produced a run's inputs, and theirs, breadth
first with batched queries per level.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.lineage.query import common
from strata.lineage.query import runs as run_reads
from strata.lineage.query.nodes import check_depth
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.runs import inputs as bound

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()


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
    root = run_reads.get_run(conn, run_id)
    out: list[UpstreamRun] = []
    seen = {root.uuid}
    level = [root.uuid]
    for _ in range(depth + 1):
        if not level:
            break
        runs = run_reads.runs_by_uuid(conn, level)
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
    dv, d = _VERSIONS, _DATASETS
    q = sa.select(dv.c.uuid, dv.c.run_uuid.label("producer"), d.c.namespace, d.c.name)
    q = q.select_from(dv).join(d, d.c.uuid == dv.c.dataset_uuid)
    q, read = bound.join_read(q, version=dv.c.uuid)
    q = q.add_columns(read.run.label("reader")).order_by(d.c.namespace, d.c.name)
    out: dict[str, list[UpstreamInput]] = defaultdict(list)
    for batch in common.chunks(run_ids):
        for x in conn.execute(q.where(read.run.in_(batch))).all():
            out[x.reader].append(UpstreamInput(x.namespace, x.name, x.uuid, x.producer))
    return out
