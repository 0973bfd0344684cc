"""Files listed for deletion (``pending_deletes``): a purge lists what it frees, and a
move (to the archive or back) lists the copy it leaves behind, in the SQL transaction
that records it; the file is deleted after that transaction commits, then unlisted. A
process killed in between leaves the list for the next one to finish.

A purged file goes at once (its version's mark waited out the policy's grace). A copy a
move left behind waits ``gc_grace_seconds``, as an orphan does for gc: a read that
listed the file where it was before the move still finds it there."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store.bulk import chunks
from strata.store.owners.datasets import files as files_of
from strata.store.schema import pending_deletes

LAKE = ""  # the root of a file listed on the lake itself
_F, _D = files_of.relation().c, pending_deletes.c


@dataclass(frozen=True, slots=True, order=True)
class Pending:
    """One file to delete: its root (``LAKE`` or an archive URI) and its path there."""

    root: str
    path: str
    listed_at: datetime = field(default=datetime.max.replace(tzinfo=UTC), compare=False)

    @property
    def dataset_uuid(self) -> str:
        return self.path.split("/", 1)[0]


def list_deletes(conn: Connection, items: Sequence[Pending], at: datetime) -> None:
    if items:
        conn.execute(
            pending_deletes.insert(),
            [{"root": p.root, "path": p.path, "listed_at": at} for p in items],
        )


def pending(conn: Connection) -> list[Pending]:
    rows = conn.execute(sa.select(_D.root, _D.path, _D.listed_at).order_by(_D.path, _D.root))
    return [Pending(r.root, r.path, r.listed_at) for r in rows]


def forget(conn: Connection, items: Collection[Pending]) -> None:
    for root in {p.root for p in items}:
        paths = sorted(p.path for p in items if p.root == root)
        for part in chunks(paths, 500):
            conn.execute(pending_deletes.delete().where(_D.root == root, _D.path.in_(part)))


def settle(
    conn: Connection, dataset_uuid: str, items: Sequence[Pending], moved_before: datetime
) -> tuple[list[Pending], list[Pending]]:
    """Of ``items`` (files of one dataset): those to delete now, and those to unlist
    without deleting. A purged file is deleted; a copy a move left behind is deleted
    once listed before ``moved_before`` (until then it stays listed); a copy the catalog
    reads where it lies (a move undone since) is never deleted, only unlisted."""
    rows = {
        r.path: r
        for part in chunks(sorted({p.path for p in items}), 500)
        for r in conn.execute(
            sa.select(_F.path, _F.purged_at, _F.archive_uri).where(
                _F.dataset_uuid == dataset_uuid, _F.path.in_(part)
            )
        )
    }
    delete, unlist = [], []
    for p in items:
        row = rows.get(p.path)
        if row is None or row.purged_at is not None:
            delete.append(p)
        elif (row.archive_uri or LAKE) == p.root:
            unlist.append(p)
        elif p.listed_at <= moved_before:
            delete.append(p)
    return delete, unlist
