"""The owner of ``dataset_files``: the lake's interval index, each container (file) of a
dataset with the commit that added it and the one that removed it, where it lies (the
lake, or an archive root) and when retention purged it.

The commit adds containers (:func:`add`) and marks the ones it replaces
(:func:`live` to see them first, :func:`mark_removed`); retention moves containers to
an archive and back (:func:`move`) and purges them (:func:`mark_purged`). Reads of a
version's containers compose their own conditions on :func:`relation`, one alias per
reading module, so the conditions of several helpers meet in one statement.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store.bulk import chunks
from strata.store.schema import dataset_files

_T = dataset_files
_F = dataset_files.c


def relation(name: str = "dataset_files") -> NamedFromClause:
    """The containers under ``name``, read-only, to select from or join."""
    return _T.alias(name)


def add(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Index new containers, each a mapping of the table's columns."""
    if rows:
        conn.execute(_T.insert(), list(rows))


def _live(
    dataset_uuid: str, branch: str, keys: Collection[str] | None, paths: Collection[str] | None
) -> Any:
    live = sa.and_(
        _F.dataset_uuid == dataset_uuid, _F.branch_id == branch, _F.removed_commit_id.is_(None)
    )
    if keys is not None:
        return sa.and_(live, _F.partition_key.in_(sorted(keys) or [""]))
    if paths is not None:
        return sa.and_(live, _F.path.in_(list(paths)))
    return live


def live(
    conn: Connection,
    dataset_uuid: str,
    *,
    branch: str = "main",
    keys: Collection[str] | None = None,
    paths: Collection[str] | None = None,
) -> list[Any]:
    """The containers of ``branch``'s latest version (path, bytes, rows, partition_key):
    those of partition ``keys``, or those at ``paths``, or (neither) all of them."""
    q = sa.select(_F.path, _F.bytes, _F.rows, _F.partition_key).where(
        _live(dataset_uuid, branch, keys, paths)
    )
    return list(conn.execute(q).all())


def mark_removed(
    conn: Connection,
    dataset_uuid: str,
    commit_id: int,
    *,
    branch: str = "main",
    keys: Collection[str] | None = None,
    paths: Collection[str] | None = None,
) -> None:
    """Mark the containers :func:`live` selects as removed by ``commit_id``."""
    where = _live(dataset_uuid, branch, keys, paths)
    conn.execute(_T.update().where(where).values(removed_commit_id=commit_id))


_COPIED = (
    *("dataset_uuid", "path", "bytes", "rows", "added_commit_id"),
    *("purged_at", "archive_uri", "partition_key"),
)


def _held_at(dataset_uuid: str, branch: str, at: int) -> Any:
    """The rows of ``branch`` that its version ``at`` reads."""
    return sa.and_(
        _F.dataset_uuid == dataset_uuid,
        _F.branch_id == branch,
        _F.added_commit_id <= at,
        sa.or_(_F.removed_commit_id.is_(None), _F.removed_commit_id > at),
    )


def adopt(
    conn: Connection, dataset_uuid: str, source: tuple[str, int], target: str, closed_by: int
) -> None:
    """Make ``target``'s live rows those version ``source`` = (branch, commit id) reads:
    its live rows that version does not read are closed by ``closed_by``, and the rows it
    reads that ``target`` lacks are copied (each keeps the commit that added it, so the
    rows a span of versions added stay findable)."""
    branch, at = source
    held = _held_at(dataset_uuid, branch, at)
    theirs = sa.select(_F.path).where(held)
    conn.execute(
        _T.update()
        .where(
            _live(dataset_uuid, target, None, None),
            _F.path.not_in(theirs.scalar_subquery()),
        )
        .values(removed_commit_id=closed_by)
    )
    mine = relation("mine")
    copied = [_F[c] for c in _COPIED]
    rows = sa.select(*copied, sa.literal(target, sa.String(36))).where(
        held,
        ~sa.exists().where(
            mine.c.dataset_uuid == dataset_uuid,
            mine.c.branch_id == target,
            mine.c.path == _F.path,
        ),
    )
    conn.execute(_T.insert().from_select([*_COPIED, "branch_id"], rows))


def move(conn: Connection, dataset_uuid: str, path: str, held: str | None, to: str | None) -> bool:
    """Record the container at ``path`` as lying at ``to`` (an archive root; None: the
    lake), if it still lies at ``held`` and is not purged: whether it moved."""
    where = [_F.dataset_uuid == dataset_uuid, _F.path == path, _F.purged_at.is_(None)]
    where.append(_F.archive_uri.is_(None) if held is None else _F.archive_uri == held)
    return bool(conn.execute(_T.update().where(*where).values(archive_uri=to)).rowcount)


def mark_purged(conn: Connection, dataset_uuid: str, paths: Sequence[str], at: datetime) -> None:
    """Retention deleted (or listed for deletion) the containers at ``paths``."""
    for names in chunks(sorted(paths), 500):
        conn.execute(
            _T.update()
            .where(_F.dataset_uuid == dataset_uuid, _F.path.in_(names))
            .values(purged_at=at)
        )


def held_elsewhere(f: Any, branch_ids: Any) -> Any:
    """Whether the container of row ``f`` (columns of a :func:`relation`) is also named
    by a row of another branch among ``branch_ids`` (a subquery): retention and the
    archive judge main's rows, and leave a file such a branch may still read."""
    other = relation("other").c
    return sa.exists().where(
        other.dataset_uuid == f.dataset_uuid,
        other.path == f.path,
        other.branch_id != f.branch_id,
        other.branch_id.in_(branch_ids),
    )
