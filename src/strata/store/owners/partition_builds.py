"""The owner of ``partition_builds``, the build catalog of partitioned outputs: per
partition, what last built it. The builder writes it; retention reads which runs built a
current partition (:func:`join_built_by`), check results which runs committed
(:func:`builders`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store.bulk import execute_many, upsert
from strata.store.fetch import plain_rows
from strata.store.jsoncodec import loads
from strata.store.schema import partition_builds


class PartitionBuild(NamedTuple):
    """One output partition's catalog entry: the version and run that last built it, the
    program, and each input's version that run read. (A named tuple: a status reads
    100,000 of them, and a tuple is made at half a frozen dataclass's cost.)"""

    key: str
    commit_id: int
    run: str
    program: str
    inputs: dict[str, int]


def join_built_by(q: sa.Select[Any], run: Any) -> sa.Select[Any]:
    """``q`` joined to the partitions the run in column ``run`` last built: only rows of
    runs that built a partition that is current."""
    return q.join(partition_builds, partition_builds.c.run_uuid == run)


def builders(dataset_uuid: str) -> sa.Select[Any]:
    """The runs that last built a partition of the dataset (a subquery's select)."""
    pb = partition_builds.c
    return sa.select(pb.run_uuid).where(pb.dataset_uuid == dataset_uuid)


def records(conn: Connection, dataset_uuid: str) -> dict[str, PartitionBuild]:
    """What last built each partition of a dataset, by key text. Read by the driver: a
    dataset may hold 100,000 partitions, most built from the same input versions (their
    ``inputs`` text decoded once, the mapping shared: read it, never change it)."""
    p = partition_builds.c
    stmt = sa.select(
        p.partition_key, p.commit_id, p.run_uuid, p.program, sa.cast(p.inputs, sa.Text)
    ).where(p.dataset_uuid == dataset_uuid)
    decoded: dict[str, dict[str, int]] = {}
    out: dict[str, PartitionBuild] = {}
    make = tuple.__new__  # the named tuple's own __new__ is a Python call per row
    for key, commit_id, run, program, text in plain_rows(conn, stmt):
        inputs = decoded.get(text)
        if inputs is None:
            inputs = decoded[text] = dict(loads(text) or {})
        out[key] = make(PartitionBuild, (key, commit_id, run, program, inputs))
    return out


def forget(conn: Connection, dataset_uuid: str) -> None:
    conn.execute(partition_builds.delete().where(partition_builds.c.dataset_uuid == dataset_uuid))


def record(
    conn: Connection, dataset_uuid: str, built: Sequence[PartitionBuild], now: datetime
) -> None:
    rows: list[dict[str, Any]] = [
        {
            "dataset_uuid": dataset_uuid,
            "partition_key": b.key,
            "commit_id": b.commit_id,
            "run_uuid": b.run,
            "program": b.program,
            "inputs": b.inputs,
            "built_at": now,
        }
        for b in built
    ]
    if rows:
        stmt = upsert(conn, partition_builds, list(rows[0]), ["dataset_uuid", "partition_key"])
        execute_many(conn, stmt, rows)
