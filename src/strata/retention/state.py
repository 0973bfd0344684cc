"""Every statement retention makes: version facts, what protects a version, marks, pins,
purges, the files a purge listed for deletion, and passes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.retention.pending import LAKE, Pending, list_deletes
from strata.retention.selection import FileSpan, VersionFacts
from strata.store.bulk import chunks
from strata.store.owners import branches as stored_branches
from strata.store.owners import partition_builds
from strata.store.owners.branches import MAIN
from strata.store.owners.datasets import files as files_of
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import transactions as txns
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.runs import inputs as bound
from strata.store.schema import retention_marks, retention_passes, version_pins

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()

_DV, _M, _P = _VERSIONS.c, retention_marks.c, version_pins.c
_F = files_of.relation().c


@dataclass(frozen=True, slots=True)
class Mark:
    """A version a policy selected, waiting out its grace before the purge."""

    dataset: str
    commit_id: int
    policy: str
    marked_at: datetime
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "version": self.commit_id,
            "policy": self.policy,
            "marked_at": self.marked_at.isoformat(),
            "bytes": self.bytes,
        }


def version_facts(conn: Connection, dataset_uuid: str) -> list[VersionFacts]:
    """Every committed version of one lake dataset, oldest first."""
    t = txns.relation()
    rows = conn.execute(
        sa.select(
            _DV.commit_id,
            _DV.created_at,
            sa.func.coalesce(t.c.type, "EXTERNAL"),
            _M.marked_at,
            _DV.purged_at,
        )
        .select_from(
            _VERSIONS.outerjoin(t, t.c.uuid == _DV.transaction_uuid).outerjoin(
                retention_marks,
                sa.and_(_M.dataset_uuid == _DV.dataset_uuid, _M.commit_id == _DV.commit_id),
            )
        )
        .where(
            _DV.dataset_uuid == dataset_uuid,
            _DV.commit_id.is_not(None),
            # Retention judges main's history; a branch's versions are kept.
            _DV.branch_id == MAIN,
        )
        .order_by(_DV.commit_id)
    ).all()
    return [VersionFacts(int(r[0]), r[1], r[2], r[3] is not None, r[4] is not None) for r in rows]


def mark_times(conn: Connection, dataset_uuid: str) -> dict[int, datetime]:
    rows = conn.execute(
        sa.select(_M.commit_id, _M.marked_at).where(_M.dataset_uuid == dataset_uuid)
    ).all()
    return {int(r.commit_id): r.marked_at for r in rows}


def file_spans(conn: Connection, dataset_uuid: str) -> list[FileSpan]:
    """The containers older versions alone read (removed since) and not purged yet."""
    rows = conn.execute(
        sa.select(
            _F.path, _F.bytes, _F.added_commit_id, _F.removed_commit_id, _F.archive_uri
        ).where(
            _F.dataset_uuid == dataset_uuid,
            _F.branch_id == MAIN,
            _F.removed_commit_id.is_not(None),
            _F.purged_at.is_(None),
            ~files_of.held_elsewhere(_F, stored_branches.live_ids()),
        )
    ).all()
    return [
        FileSpan(
            r.path, int(r.bytes), int(r.added_commit_id), int(r.removed_commit_id), r.archive_uri
        )
        for r in rows
    ]


def deleted_branch_versions(
    conn: Connection, dataset_uuid: str, deleted_before: datetime
) -> dict[int, str]:
    """``commit id -> branch id`` of the versions still holding data that branches deleted
    before ``deleted_before`` made (never merged: a merged version belongs to its target)."""
    b = stored_branches.relation()
    rows = conn.execute(
        sa.select(_DV.commit_id, _DV.branch_id)
        .select_from(_VERSIONS.join(b, b.c.id == _DV.branch_id))
        .where(
            _DV.dataset_uuid == dataset_uuid,
            _DV.commit_id.is_not(None),
            _DV.purged_at.is_(None),
            b.c.deleted_at.is_not(None),
            b.c.deleted_at <= deleted_before,
        )
    ).all()
    return {int(r.commit_id): str(r.branch_id) for r in rows}


def deleted_branch_files(
    conn: Connection, dataset_uuid: str, branch_ids: Collection[str]
) -> list[FileSpan]:
    """The containers rows of ``branch_ids`` (deleted branches) name that no live branch
    (``main`` included) names too, not purged yet."""
    if not branch_ids:
        return []
    rows = conn.execute(
        sa.select(
            _F.path, _F.bytes, _F.added_commit_id, _F.removed_commit_id, _F.archive_uri
        ).where(
            _F.dataset_uuid == dataset_uuid,
            _F.branch_id.in_(sorted(branch_ids)),
            _F.purged_at.is_(None),
            ~files_of.held_elsewhere(_F, stored_branches.live_ids()),
        )
    ).all()
    by_path = {
        r.path: FileSpan(
            r.path,
            int(r.bytes),
            int(r.added_commit_id),
            int(r.removed_commit_id) if r.removed_commit_id is not None else None,
            r.archive_uri,
        )
        for r in rows
    }
    return [by_path[p] for p in sorted(by_path)]


def pinned(conn: Connection, dataset_uuid: str) -> set[int]:
    rows = conn.execute(sa.select(_P.commit_id).where(_P.dataset_uuid == dataset_uuid))
    return {int(r.commit_id) for r in rows}


def inputs_in_use(conn: Connection) -> dict[str, set[int]]:
    """``dataset uuid -> commit ids`` that a current version of any dataset (or a current
    partition of one) was built from."""
    iv = stored_versions.relation("iv")
    cv = stored_versions.relation("cv")
    read, by = bound.join_read(
        sa.select(iv.c.dataset_uuid, iv.c.commit_id).select_from(iv), version=iv.c.uuid
    )
    of_current = read.join(cv, cv.c.run_uuid == by.run).join(
        _DATASETS, _DATASETS.c.current_version_uuid == cv.c.uuid
    )
    of_partitions = partition_builds.join_built_by(read, by.run)
    out: dict[str, set[int]] = defaultdict(set)
    for r in conn.execute(sa.union(of_current, of_partitions)):
        if r.commit_id is not None:
            out[r.dataset_uuid].add(int(r.commit_id))
    return dict(out)


def marks(conn: Connection, dataset_uuid: str | None = None) -> list[Mark]:
    q = (
        sa.select(_DATASETS.c.name, _M.commit_id, _M.policy, _M.marked_at, _M.bytes)
        .join(_DATASETS, _DATASETS.c.uuid == _M.dataset_uuid)
        .order_by(_DATASETS.c.name, _M.commit_id)
    )
    if dataset_uuid is not None:
        q = q.where(_M.dataset_uuid == dataset_uuid)
    return [
        Mark(r.name, int(r.commit_id), r.policy, r.marked_at, int(r.bytes)) for r in conn.execute(q)
    ]


def add_marks(
    conn: Connection, dataset_uuid: str, marked: Mapping[int, tuple[str, int]], at: datetime
) -> None:
    """Mark ``commit id -> (policy, bytes its purge would free)``."""
    if marked:
        conn.execute(
            retention_marks.insert(),
            [
                {
                    "dataset_uuid": dataset_uuid,
                    "commit_id": c,
                    "policy": p,
                    "marked_at": at,
                    "bytes": b,
                }
                for c, (p, b) in marked.items()
            ],
        )


def drop_marks(conn: Connection, dataset_uuid: str, commit_ids: Collection[int]) -> int:
    count = 0
    for part in chunks(sorted(commit_ids), 500):
        count += conn.execute(
            retention_marks.delete().where(_M.dataset_uuid == dataset_uuid, _M.commit_id.in_(part))
        ).rowcount
    return count


def purge(
    conn: Connection,
    dataset_uuid: str,
    policies: Mapping[int, str],
    files: Iterable[FileSpan],
    at: datetime,
) -> list[Pending]:
    """Purge versions ``commit id -> policy`` and list ``files`` for deletion, in the
    caller's SQL transaction: the versions read as purged from the moment it commits,
    and a pass killed before the files are gone leaves them listed for the next."""
    by_policy: dict[str, list[int]] = defaultdict(list)
    for cid, policy in policies.items():
        by_policy[policy].append(cid)
    for policy, cids in by_policy.items():
        stored_versions.mark_purged(conn, dataset_uuid, cids, at, policy)
    drop_marks(conn, dataset_uuid, list(policies))
    gone = sorted(files, key=lambda f: f.path)
    files_of.mark_purged(conn, dataset_uuid, [f.path for f in gone], at)
    listed = [Pending(f.archive or LAKE, f.path) for f in gone]
    list_deletes(conn, listed, at)
    return listed


def pins(conn: Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        sa.select(_DATASETS.c.name, _P.commit_id, _P.pinned_at, _P.note)
        .join(_DATASETS, _DATASETS.c.uuid == _P.dataset_uuid)
        .order_by(_DATASETS.c.name, _P.commit_id)
    )
    return [
        {
            "dataset": r.name,
            "version": int(r.commit_id),
            "pinned_at": r.pinned_at.isoformat(),
            "note": r.note,
        }
        for r in rows
    ]


def add_pin(
    conn: Connection, dataset_uuid: str, commit_id: int, at: datetime, note: str | None
) -> bool:
    """Pin a version; False when it was pinned already."""
    if commit_id in pinned(conn, dataset_uuid):
        return False
    conn.execute(
        version_pins.insert().values(
            dataset_uuid=dataset_uuid, commit_id=commit_id, pinned_at=at, note=note
        )
    )
    return True


def drop_pin(conn: Connection, dataset_uuid: str, commit_id: int) -> bool:
    gone = conn.execute(
        version_pins.delete().where(_P.dataset_uuid == dataset_uuid, _P.commit_id == commit_id)
    )
    return bool(gone.rowcount)


def record_pass(conn: Connection, row: Mapping[str, Any]) -> None:
    conn.execute(retention_passes.insert().values(**row))


def passes(conn: Connection, limit: int) -> list[dict[str, Any]]:
    """The last ``limit`` passes of every kind (retention, archive, restore, lineage)."""
    rp = retention_passes.c
    rows = conn.execute(
        sa.select(retention_passes).order_by(rp.ended_at.desc(), rp.id.desc()).limit(limit)
    ).mappings()
    return [
        {
            **{k: v for k, v in r.items() if k not in ("id", "started_at", "ended_at")},
            "started_at": r["started_at"].isoformat(),
            "ended_at": r["ended_at"].isoformat(),
        }
        for r in rows
    ]


def last_pass_end(conn: Connection, kind: str = "retention") -> datetime | None:
    rp = retention_passes.c
    value: datetime | None = conn.execute(
        sa.select(sa.func.max(rp.ended_at)).where(rp.kind == kind)
    ).scalar()
    return value
