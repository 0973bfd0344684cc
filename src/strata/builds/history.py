"""History, trace and programs of dataset versions, read from the store alone.

``history`` lists each version with the run and program version that made it and the
exact input versions; ``trace`` is the provenance tree of one version down to raw
datasets (the lineage provenance walk, with program ordinals added), for past versions
as for current ones; ``program_of`` is the stored program version that built one.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.builds.programs import Program, by_uuid
from strata.errors import InvalidArgument, NotFound
from strata.lake import catalog as lake_catalog
from strata.lineage.query.provenance import ProvenanceNode, provenance
from strata.store import schema as s

TRACE_DEPTH = 100


def parse_ref(text: str) -> tuple[str, int | None]:
    """``DATASET`` or ``DATASET@VERSION``."""
    name, at, version = text.rpartition("@")
    if not at:
        return text, None
    if not version.isdigit() or int(version) < 1:
        raise InvalidArgument(
            f"{text!r} names version {version!r}; write DATASET@N with a commit number such as "
            f"{name}@3",
            value=text,
        )
    return name, int(version)


def _program_json(job: str | None, ordinal: int | None, fp: str | None) -> dict[str, Any] | None:
    if fp is None or ordinal is None:
        return None
    return {"transform": job, "ordinal": ordinal, "fingerprint": fp}


def history(conn: Connection, namespace: str, dataset: str) -> dict[str, Any]:
    """Every version of a lake dataset with its catalog entry, oldest first."""
    ds = lake_catalog.require_lake_dataset(conn, namespace, dataset)
    dv, t, r, pv = s.dataset_versions, s.transactions, s.runs, s.program_versions
    producer = sa.func.coalesce(dv.c.run_uuid, t.c.run_uuid)
    rows = conn.execute(
        sa.select(
            dv.c.commit_id,
            dv.c.created_at,
            t.c.type,
            dv.c.row_count,
            dv.c.data_fingerprint,
            producer.label("run"),
            r.c.state,
            pv.c.job_name,
            pv.c.ordinal,
            pv.c.fingerprint,
        )
        .select_from(dv)
        .outerjoin(t, t.c.uuid == dv.c.transaction_uuid)
        .outerjoin(r, r.c.uuid == producer)
        .outerjoin(pv, pv.c.uuid == r.c.job_version_uuid)
        .where(dv.c.dataset_uuid == ds["uuid"], dv.c.commit_id.is_not(None))
        .order_by(dv.c.commit_id)
    ).all()
    inputs = run_inputs(conn, {x.run for x in rows if x.run})
    versions = [
        {
            "version": int(x.commit_id),
            "committed_at": x.created_at.isoformat(),
            "type": x.type,
            "rows": x.row_count,
            "data_fingerprint": x.data_fingerprint,
            "run": x.run,
            "state": x.state,
            "program": _program_json(x.job_name, x.ordinal, x.fingerprint),
            "inputs": inputs.get(x.run, {}) if x.run else {},
        }
        for x in rows
    ]
    return {"dataset": dataset, "versions": versions}


def run_inputs(conn: Connection, runs: set[str]) -> dict[str, dict[str, int | None]]:
    """For each run, the exact versions it read: ``{dataset: commit id}``."""
    if not runs:
        return {}
    ri, iv, d = s.run_inputs, s.dataset_versions, s.datasets
    out: dict[str, dict[str, int | None]] = defaultdict(dict)
    rows = conn.execute(
        sa.select(ri.c.run_uuid, d.c.name, iv.c.commit_id)
        .join(iv, iv.c.uuid == ri.c.dataset_version_uuid)
        .join(d, d.c.uuid == iv.c.dataset_uuid)
        .where(ri.c.run_uuid.in_(sorted(runs)))
        .order_by(d.c.name)
    )
    for x in rows:
        out[x.run_uuid][x.name] = int(x.commit_id) if x.commit_id is not None else None
    return dict(out)


def trace(conn: Connection, namespace: str, dataset: str, version: int | None) -> dict[str, Any]:
    """The provenance tree of ``dataset`` at ``version`` (default: current)."""
    lake_catalog.resolve_version(conn, namespace, dataset, version=version)  # clear errors
    root = provenance(conn, namespace, dataset, str(version) if version else None, TRACE_DEPTH)
    ordinals = _ordinals(conn, _job_versions(root))
    return _node_json(root, ordinals)


def _job_versions(node: ProvenanceNode) -> set[str]:
    found = {node.run.job_version} if node.run and node.run.job_version else set()
    for child in node.inputs:
        found |= _job_versions(child)
    return found


def _ordinals(conn: Connection, uuids: set[str]) -> dict[str, tuple[str, int]]:
    if not uuids:
        return {}
    pv = s.program_versions
    rows = conn.execute(
        sa.select(pv.c.uuid, pv.c.job_name, pv.c.ordinal).where(pv.c.uuid.in_(sorted(uuids)))
    )
    return {x.uuid: (x.job_name, int(x.ordinal)) for x in rows}


def _node_json(
    node: ProvenanceNode,
    ordinals: dict[str, tuple[str, int]],
    runs: dict[str, ProvenanceNode] | None = None,
) -> dict[str, Any]:
    """A trace node; a version met again (a diamond) says ``repeated`` and is not
    expanded twice, but names its run and program all the same."""
    runs = _expanded(node, {}) if runs is None else runs
    made = runs.get(node.version, node)
    run = made.run
    program = None
    if run is not None and run.job_version in ordinals:
        job, ordinal = ordinals[run.job_version]
        program = {"transform": job, "ordinal": ordinal, "fingerprint": run.program_version}
    out: dict[str, Any] = {
        "dataset": node.name,
        "version": node.commit_id,
        "run": run.id if run else None,
        "state": run.state if run else None,
        "program": program,
        "inputs": [_node_json(child, ordinals, runs) for child in node.inputs],
    }
    if node.repeated:
        out["repeated"] = True
    return out


def _expanded(node: ProvenanceNode, into: dict[str, ProvenanceNode]) -> dict[str, ProvenanceNode]:
    if not node.repeated:
        into.setdefault(node.version, node)
    for child in node.inputs:
        _expanded(child, into)
    return into


@dataclass(frozen=True)
class Entry:
    """The catalog entry of one built version."""

    dataset: str
    version: int
    data_fingerprint: str | None
    run: str
    program: Program
    inputs: dict[str, int | None]


def entry(conn: Connection, namespace: str, dataset: str, version: int | None) -> Entry:
    """The run, program version and inputs that built ``dataset`` at ``version``."""
    v = lake_catalog.resolve_version(conn, namespace, dataset, version=version)
    t = s.transactions
    run = (
        v.run_uuid
        or conn.execute(sa.select(t.c.run_uuid).where(t.c.uuid == v.transaction_uuid)).scalar()
    )
    job_version = (
        conn.execute(sa.select(s.runs.c.job_version_uuid).where(s.runs.c.uuid == run)).scalar()
        if run
        else None
    )
    program = by_uuid(conn, job_version) if job_version else None
    if run is None or program is None:
        raise NotFound(
            f"{dataset}@{v.commit_id} was not built by a transform (it was written by hand); "
            "only built versions have a program",
            dataset=dataset,
            version=v.commit_id,
        )
    fp = conn.execute(
        sa.select(s.dataset_versions.c.data_fingerprint).where(s.dataset_versions.c.uuid == v.uuid)
    ).scalar()
    inputs = run_inputs(conn, {run}).get(run, {})
    return Entry(dataset, v.commit_id, fp, run, program, inputs)
