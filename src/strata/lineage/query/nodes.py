"""Node ids of the lineage API: ``dataset:ns:name``, ``job:ns:name``,
``datasetField:ns:name:field``, resolved against the store, and the depth a walk may take."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import InvalidArgument, NotFound
from strata.lineage.query.datasets import symlink_target
from strata.lineage.query.jobs import resolve_job
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.jobs import rows as job_rows

_DATASETS = dataset_rows.relation()

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
            row = find_dataset(conn, ns, name, visible=True)
            if row is not None:
                return NodeRef("DATASET", row, ns, name, version=version)
        for ns, name in _splits(rest):
            target = symlink_target(conn, ns, name)
            if target is not None:
                return NodeRef("DATASET", str(target.uuid), *target_name(target), version=version)
    elif kind == "job":
        for ns, name in _splits(rest):
            j = job_rows.relation()
            uuid = conn.execute(
                sa.select(j.c.uuid).where(
                    j.c.namespace == ns, j.c.name == name, j.c.is_hidden.is_(False)
                )
            ).scalar()
            if uuid is not None:
                return NodeRef("JOB", uuid, ns, name, version=version)
        moved = _moved_job(conn, rest)
        if moved is not None:
            return NodeRef("JOB", *moved, version=version)
    elif kind == "datasetField":
        for head, fld in reversed(_splits(rest)):
            for ns, name in _splits(head):
                row = find_dataset(conn, ns, name, visible=True)
                if row is not None and fld:
                    return NodeRef("DATASET_FIELD", row, ns, name, fld, version)
        for head, fld in reversed(_splits(rest)):
            for ns, name in _splits(head):
                target = symlink_target(conn, ns, name)
                if target is not None and fld:
                    ref = (str(target.uuid), *target_name(target), fld, version)
                    return NodeRef("DATASET_FIELD", *ref)
    else:
        raise InvalidArgument(
            f"nodeId {node_id!r} has unknown type {kind!r}; use dataset, job or datasetField",
            field="nodeId",
        )
    raise NotFound(f"node {node_id!r} not found", node_id=node_id)


def _moved_job(conn: Connection, rest: str) -> tuple[str, str, str] | None:
    """(uuid, namespace, name) of the one job an old name or a child's simple name stands
    for, by the rule that redirects ``/namespaces/{ns}/jobs/{name}``
    (:func:`queries.resolve_job`)."""
    for ns, name in _splits(rest):
        try:
            found = resolve_job(conn, ns, name)
        except NotFound:
            continue
        if found.kind == "moved" and found.job_uuid and found.namespace and found.name:
            return found.job_uuid, found.namespace, found.name
    return None


def target_name(row: sa.Row[Any]) -> tuple[str, str]:
    """A symlink's target dataset by its own namespace and name."""
    return str(row.namespace), str(row.name)


def find_dataset(conn: Connection, ns: str, name: str, visible: bool = False) -> str | None:
    """The dataset's uuid; ``visible``, None for a hidden one."""
    d = _DATASETS
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
