"""The SQL of the archive tier: which files may move, where each file lives, and how
much of each version is archived."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.retention.pending import LAKE, Pending, list_deletes
from strata.retention.state import pinned
from strata.store.owners import branches as stored_branches
from strata.store.owners.branches import MAIN
from strata.store.owners.datasets import files as files_of
from strata.store.owners.datasets import versions as stored_versions

_VERSIONS = stored_versions.relation()

_F, _DV = files_of.relation().c, _VERSIONS.c


@dataclass(frozen=True, slots=True)
class Placed:
    """A container, the versions that read it (``added <= N < removed``), and its tier."""

    path: str
    bytes: int
    added: int
    removed: int | None
    archive: str | None  # the archive root; None: the lake


def movable(conn: Connection, dataset_uuid: str, cutoff: datetime) -> list[Placed]:
    """Lake files that only versions committed before ``cutoff`` read, none of them
    pinned: the current view's files stay, and so do a pinned version's."""
    newest_reader = sa.and_(
        _DV.dataset_uuid == _F.dataset_uuid, _DV.commit_id == _F.removed_commit_id - 1
    )
    rows = conn.execute(
        sa.select(_F.path, _F.bytes, _F.added_commit_id, _F.removed_commit_id)
        .join(_VERSIONS, newest_reader)
        .where(
            _F.dataset_uuid == dataset_uuid,
            _F.branch_id == MAIN,
            _F.removed_commit_id.is_not(None),
            _F.purged_at.is_(None),
            _F.archive_uri.is_(None),
            ~files_of.held_elsewhere(_F, stored_branches.live_ids()),
            _DV.created_at < cutoff,
        )
        .order_by(_F.added_commit_id, _F.path)
    ).all()
    pins = sorted(pinned(conn, dataset_uuid))
    return [
        Placed(r.path, int(r.bytes), int(r.added_commit_id), int(r.removed_commit_id), None)
        for r in rows
        if not any(r.added_commit_id <= c < r.removed_commit_id for c in pins)
    ]


def archived_of(conn: Connection, dataset_uuid: str, commit_id: int) -> list[Placed]:
    """The files of version ``commit_id`` that lie in an archive."""
    rows = conn.execute(
        sa.select(_F.path, _F.bytes, _F.added_commit_id, _F.removed_commit_id, _F.archive_uri)
        .where(
            _F.dataset_uuid == dataset_uuid,
            _F.branch_id == stored_versions.branch_at(dataset_uuid, commit_id),
            _F.added_commit_id <= commit_id,
            sa.or_(_F.removed_commit_id.is_(None), _F.removed_commit_id > commit_id),
            _F.archive_uri.is_not(None),
            _F.purged_at.is_(None),
        )
        .order_by(_F.added_commit_id, _F.path)
    ).all()
    return [
        Placed(r.path, int(r.bytes), int(r.added_commit_id), r.removed_commit_id, r.archive_uri)
        for r in rows
    ]


def record_moves(
    conn: Connection, dataset_uuid: str, files: Sequence[Placed], to: str | None, at: datetime
) -> list[Placed]:
    """Record ``files`` at ``to`` (an archive root; None: the lake) and list each old
    copy for deletion. A file whose place changed since it was chosen (another move got
    there first) is left alone; the ones recorded are returned."""
    done = []
    for f in files:
        if files_of.move(conn, dataset_uuid, f.path, f.archive, to):
            done.append(f)
    list_deletes(conn, [Pending(f.archive or LAKE, f.path) for f in done], at)
    return done


def archived_counts(conn: Connection, dataset_uuid: str) -> dict[int, tuple[int, int]]:
    """Per version that has archived files: (its archived files, all its files)."""
    rows = conn.execute(
        sa.select(_F.added_commit_id, _F.removed_commit_id, _F.archive_uri).where(
            _F.dataset_uuid == dataset_uuid, _F.branch_id == MAIN, _F.purged_at.is_(None)
        )
    ).all()
    if not any(r.archive_uri for r in rows):
        return {}
    newest = int(
        conn.execute(
            sa.select(sa.func.max(_DV.commit_id)).where(_DV.dataset_uuid == dataset_uuid)
        ).scalar()
        or 0
    )
    # A file counts for every version of its span: sum differences along commit ids.
    total, archived = [0] * (newest + 2), [0] * (newest + 2)
    for r in rows:
        end = int(r.removed_commit_id) if r.removed_commit_id is not None else newest + 1
        for counts in (total, archived) if r.archive_uri else (total,):
            counts[int(r.added_commit_id)] += 1
            counts[end] -= 1
    out, t, a = {}, 0, 0
    for commit_id in range(1, newest + 1):
        t, a = t + total[commit_id], a + archived[commit_id]
        if a:
            out[commit_id] = (a, t)
    return out


def archived_totals(conn: Connection) -> list[dict[str, object]]:
    """Per archive root: how many files and bytes lie there."""
    rows = conn.execute(
        sa.select(_F.archive_uri, sa.func.count(), sa.func.sum(_F.bytes))
        .where(_F.archive_uri.is_not(None), _F.purged_at.is_(None))
        .group_by(_F.archive_uri)
        .order_by(_F.archive_uri)
    ).all()
    return [{"uri": r[0], "files": int(r[1]), "bytes": int(r[2] or 0)} for r in rows]
