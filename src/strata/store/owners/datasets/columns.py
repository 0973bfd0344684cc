"""The owner of ``column_lineage``: the input fields each output field of a dataset
version was written from, as its ``columnLineage`` facet said.

The fold replaces a version's edges whole (:func:`replace`); lineage retention deletes
them with the versions it prunes (:func:`delete_of_versions`). Reads of the edges alone
are typed functions; a walk or a page that joins them to datasets and versions selects
from :func:`relation`, so it stays one statement.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store.bulk import cached, chunks, delete_in, execute_many
from strata.store.schema import column_lineage

_CL = column_lineage


def relation(name: str = "column_lineage") -> NamedFromClause:
    """The edges under ``name``, to read in a statement that joins them to another
    family's tables (an alias: it can be selected from, not written)."""
    return _CL.alias(name)


def replace(conn: Connection, versions: Collection[str], edges: Sequence[dict[str, Any]]) -> None:
    """Drop the edges of ``versions`` and keep ``edges`` (each a mapping of the table's
    columns), so a version's edges are those of the run that wrote it last."""
    delete_in(conn, _CL, "dataset_version_uuid", list(versions))
    if edges:
        execute_many(conn, cached(("cl-insert",), _CL.insert), list(edges))


def delete_of_versions(conn: Connection, versions: Collection[str]) -> None:
    for part in chunks(sorted(versions), 500):
        conn.execute(_CL.delete().where(_CL.c.dataset_version_uuid.in_(part)))


def output_fields(conn: Connection, version: str) -> set[str]:
    """The fields of ``version`` that recorded where they came from."""
    q = sa.select(_CL.c.output_field).where(_CL.c.dataset_version_uuid == version).distinct()
    return set(conn.execute(q).scalars())


def with_lineage(conn: Connection, versions: Sequence[str]) -> set[str]:
    """Those of ``versions`` (one slice: the caller chunks) that recorded column lineage."""
    q = sa.select(_CL.c.dataset_version_uuid).where(_CL.c.dataset_version_uuid.in_(versions))
    return {str(r.dataset_version_uuid) for r in conn.execute(q)}


def recorded_for(version: Any) -> sa.Exists:
    """True where the version in column ``version`` recorded column lineage."""
    return sa.exists().where(_CL.c.dataset_version_uuid == version)
