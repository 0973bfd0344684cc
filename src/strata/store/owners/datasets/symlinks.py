"""Datasets' other names: the symlinks their ``symlinks`` facets gave them.

The only module that reads or writes ``dataset_symlinks``. Every symlink a dataset was
ever given is kept, as Marquez does (none is removed), so that a lookup by it finds the
dataset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.schema import dataset_symlinks

_S = dataset_symlinks

Symlink = tuple[str, str, str]  # (dataset uuid, the symlink's namespace, its name)


def add_symlinks(conn: Connection, links: Mapping[Symlink, str | None]) -> None:
    """Record each symlink with its ``type`` (one statement); where events disagree on a
    type the largest stays, so any order of events gives the same rows."""
    rows = [
        {"dataset_uuid": u, "namespace": ns, "name": name, "type": kind}
        for (u, ns, name), kind in sorted(links.items())
    ]
    if rows:
        index = ["dataset_uuid", "namespace", "name"]
        bulk.execute_many(conn, bulk.largest_upsert(conn, _S, index, "type"), rows)


def symlinked(namespace: Any, name: Any) -> sa.Select[Any]:
    """The datasets ``namespace``/``name`` is a symlink of: an expression of dataset
    uuids for a query on datasets to compose (``datasets.c.uuid.in_(symlinked(...))``)."""
    return sa.select(_S.c.dataset_uuid).where(_S.c.namespace == namespace, _S.c.name == name)


def of_dataset(conn: Connection, dataset_uuid: str) -> dict[tuple[str, str], str | None]:
    """(namespace, name) -> type of every symlink the dataset was given."""
    rows = conn.execute(
        sa.select(_S.c.namespace, _S.c.name, _S.c.type).where(_S.c.dataset_uuid == dataset_uuid)
    )
    return {(str(r.namespace), str(r.name)): r.type for r in rows}
