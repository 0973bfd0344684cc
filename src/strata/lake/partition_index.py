"""The catalog's partition index: which keys a version holds, when each last changed,
and what a commit did to each key it touched."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.lake import partitions
from strata.store.bulk import chunks
from strata.store.fetch import plain_rows
from strata.store.owners.datasets import files as files_of
from strata.store.owners.datasets import rows as dataset_rows

_DATASETS = dataset_rows.relation()

SUMMARY_KINDS = ("added", "appended", "replaced", "removed")


_FILES = files_of.relation()


def partition_by(conn: Connection, dataset_uuid: str) -> list[str] | None:
    value = conn.execute(
        sa.select(_DATASETS.c.partition_by).where(_DATASETS.c.uuid == dataset_uuid)
    ).scalar()
    return list(value) if value else None


def _live_at(at: int | None) -> sa.ColumnElement[bool]:
    f = _FILES.c
    if at is None:
        return f.removed_commit_id.is_(None)
    return sa.and_(
        f.added_commit_id <= at, sa.or_(f.removed_commit_id.is_(None), f.removed_commit_id > at)
    )


def live_counts(
    conn: Connection, dataset_uuid: str, keys: Sequence[str] | None = None, at: int | None = None
) -> Counter[str]:
    """Live containers per key at version ``at`` (None: the latest), for ``keys`` or all."""
    f = _FILES.c
    base = (
        sa.select(f.partition_key, sa.func.count())
        .where(f.dataset_uuid == dataset_uuid, _live_at(at), f.partition_key.is_not(None))
        .group_by(f.partition_key)
    )
    out: Counter[str] = Counter()
    if keys is None or len(keys) > 2_000:
        wanted = None if keys is None else set(keys)
        for row in conn.execute(base).all():
            if wanted is None or row[0] in wanted:
                out[str(row[0])] = int(row[1])
        return out
    for part in chunks(keys, 500):
        for row in conn.execute(base.where(f.partition_key.in_(part))).all():
            out[str(row[0])] = int(row[1])
    return out


def keys_matching(
    conn: Connection, dataset_uuid: str, filters: Iterable[Mapping[str, str]], at: int | None = None
) -> list[str]:
    """The keys version ``at`` holds that lie in any of ``filters``."""
    wanted = list(filters)
    return sorted(
        k
        for k in live_counts(conn, dataset_uuid, at=at)
        if partitions.matches(partitions.parse_text(k), wanted)
    )


def changed_at(
    conn: Connection, dataset_uuid: str, at: int, removed_too: bool = False
) -> dict[str, int]:
    """Each key version ``at`` holds (``removed_too``: and each it held before), with the
    last version up to ``at`` that changed it (added or removed one of its containers):
    a partition's own version."""
    f = _FILES.c
    added = sa.func.max(f.added_commit_id)
    removed = sa.func.max(sa.case((f.removed_commit_id <= at, f.removed_commit_id), else_=0))
    last = sa.case((removed > added, removed), else_=added)
    live = sa.func.sum(
        sa.case((sa.or_(f.removed_commit_id.is_(None), f.removed_commit_id > at), 1), else_=0)
    )
    # A status reads it for every key of a partitioned input (100,000s), removed ones
    # too: then no count of live containers is needed, and the rows are the mapping.
    counted = () if removed_too else (live,)
    rows = plain_rows(
        conn,
        sa.select(f.partition_key, last, *counted)
        .where(f.dataset_uuid == dataset_uuid, f.added_commit_id <= at)
        .where(f.partition_key.is_not(None))
        .group_by(f.partition_key),
    )
    if removed_too:
        return dict(rows)
    return {r[0]: r[1] for r in rows if r[2]}


@dataclass(frozen=True)
class Touched:
    """What one commit did to the keys it touched."""

    before: Mapping[str, int]  # live containers per touched key before the commit
    added: Mapping[str, int]  # containers the commit adds, per key
    removed: Mapping[str, int]  # containers the commit removes, per key

    def summary(self, runs: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The keys by what happened to them (and, for a build, each one's run)."""
        out: dict[str, Any] = {k: [] for k in SUMMARY_KINDS}
        for key in sorted(set(self.added) | set(self.removed)):
            before = self.before.get(key, 0)
            after = before - self.removed.get(key, 0) + self.added.get(key, 0)
            if not self.removed.get(key):
                out["appended" if before else "added"].append(key)
            else:
                out["replaced" if after else "removed"].append(key)
        if runs:
            out["runs"] = {k: r for k, r in sorted(runs.items())}
        return out


def summary_dicts(stored: Mapping[str, Any] | None) -> dict[str, list[dict[str, str]]] | None:
    """A version's stored summary with each key as a mapping, for output."""
    if stored is None:
        return None
    return {k: [partitions.parse_text(t) for t in stored.get(k, [])] for k in SUMMARY_KINDS}


def touched_keys(stored: Mapping[str, Any] | None) -> list[str]:
    """Every key a version's summary names."""
    return [k for kind in SUMMARY_KINDS for k in (stored or {}).get(kind, [])]
