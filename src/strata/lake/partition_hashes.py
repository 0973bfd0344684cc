"""Partition fingerprints: each partition's row hash as of every commit that touched it.

Fingerprints add up (a row hash is a multiset sum): a partition's is the sum of what its
writes added, and a version's is the sum over its partitions. So a commit that rewrites
some partitions knows the version's row hash from its parent's, less the old hashes of
the partitions it touched, plus their new ones, without reading any other partition.
A partition rewritten with the rows it had keeps ``data_commit_id``, the commit whose
rows it holds: what reads it by partition is then not out of date (per-partition early
cutoff). Unknown stays unknown (None) and counts as "different".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.lake.partition_index import Touched
from strata.lake.rowhash import EMPTY, RowHash, fingerprint, sum_hashes
from strata.lake.storage import FileEntry
from strata.store.bulk import chunks
from strata.store.fetch import plain_rows
from strata.store.schema import partition_hashes


@dataclass(frozen=True)
class Held:
    """A partition's rows as of its latest commit: their hash, and the commit whose rows
    they are."""

    row_hash: RowHash | None
    commit_id: int
    data_commit_id: int


def written(adds: Sequence[FileEntry]) -> dict[str, RowHash | None]:
    """The row hash a commit's containers add to each partition (None where unknown)."""
    by_key: dict[str, list[RowHash | None]] = {}
    for e in adds:
        if e.partition is not None:
            by_key.setdefault(e.partition, []).append(e.row_hash)
    return {key: sum_hashes(hashes) for key, hashes in by_key.items()}


def decode(text: str | None) -> RowHash | None:
    if text is None:
        return None
    try:
        return RowHash.decode(text)
    except ValueError:  # not a row hash this version of Strata wrote: unknown
        return None


def latest(
    conn: Connection, dataset_uuid: str, keys: Collection[str] | None = None, at: int | None = None
) -> dict[str, Held]:
    """Each partition's latest row at or before commit ``at`` (None: the newest), for
    ``keys`` or every partition."""
    t = partition_hashes.c
    where: list[Any] = [t.dataset_uuid == dataset_uuid]
    if at is not None:
        where.append(t.commit_id <= at)
    newest = (
        sa.select(t.partition_key, sa.func.max(t.commit_id).label("commit_id"))
        .where(*where)
        .group_by(t.partition_key)
    )
    out: dict[str, Held] = {}
    slices = (
        [newest]
        if keys is None
        else [newest.where(t.partition_key.in_(part)) for part in chunks(sorted(keys), 500)]
    )
    for chosen in slices:
        last = chosen.subquery()
        rows = conn.execute(
            sa.select(t.partition_key, t.row_hash, t.commit_id, t.data_commit_id).join(
                last,
                sa.and_(
                    t.dataset_uuid == dataset_uuid,
                    t.partition_key == last.c.partition_key,
                    t.commit_id == last.c.commit_id,
                ),
            )
        ).all()
        for row in rows:
            out[str(row.partition_key)] = Held(
                decode(row.row_hash), int(row.commit_id), int(row.data_commit_id)
            )
    return out


@dataclass(frozen=True)
class Commit:
    """What :func:`record` needs of one partitioned dataset's commit."""

    dataset_uuid: str
    commit_id: int
    touched: Touched
    adds: Sequence[FileEntry]
    fields_before: list[dict[str, Any]]
    fields_after: list[dict[str, Any]]
    parent: RowHash | None  # the parent version's row hash (EMPTY for a first version)
    replaces_all: bool
    total: RowHash | None  # the rows written, for a commit that replaces every partition


def record(conn: Connection, c: Commit) -> RowHash | None:
    """Record each touched partition's row hash as of ``c``; the version's row hash."""
    adds = written(c.adds)
    keys = sorted(set(c.touched.added) | set(c.touched.removed))
    before = latest(conn, c.dataset_uuid, keys)
    version = c.total if c.replaces_all else c.parent
    rows = []
    for key in keys:
        was = c.touched.before.get(key, 0)
        old = before.get(key) if was else None
        old_hash = EMPTY if not was else old.row_hash if old is not None else None
        new = _partition_after(c.touched, key, old_hash, adds.get(key, EMPTY))
        same = (
            new is not None
            and old is not None
            and old.row_hash is not None
            and fingerprint(c.fields_before, old.row_hash) == fingerprint(c.fields_after, new)
        )
        data_commit = old.data_commit_id if same and old is not None else c.commit_id
        rows.append(
            {
                "dataset_uuid": c.dataset_uuid,
                "partition_key": key,
                "commit_id": c.commit_id,
                "row_hash": new.encode() if new is not None else None,
                "data_commit_id": data_commit,
            }
        )
        if not c.replaces_all:
            version = _moved(version, old_hash, new if _live(c, key) else EMPTY)
    if rows:
        conn.execute(partition_hashes.insert(), rows)
    return version


def _live(c: Commit, key: str) -> bool:
    t = c.touched
    return t.before.get(key, 0) - t.removed.get(key, 0) + t.added.get(key, 0) > 0


def _partition_after(
    touched: Touched, key: str, old: RowHash | None, add: RowHash | None
) -> RowHash | None:
    """A touched partition's row hash after the commit: its old rows plus those added
    (appended), only those added (replaced whole), or unknown (some of its files
    removed, or gone)."""
    was = touched.before.get(key, 0)
    gone = touched.removed.get(key, 0)
    if was - gone + touched.added.get(key, 0) == 0:
        return None
    if gone == 0:
        return old.combine(add) if old is not None and add is not None else None
    return add if gone == was else None


def _moved(version: RowHash | None, old: RowHash | None, new: RowHash | None) -> RowHash | None:
    """A version's row hash with one partition's old rows taken out and its new put in."""
    if version is None or old is None or new is None:
        return None
    less = version.without(old)
    return less.combine(new) if less is not None else None


def fingerprint_of(fields: list[dict[str, Any]], held: Held | None) -> str | None:
    """A partition's data fingerprint in a version of schema ``fields``."""
    if held is None or held.row_hash is None:
        return None
    return fingerprint(fields, held.row_hash)


def data_changed_at(
    conn: Connection, dataset_uuid: str, changed: Mapping[str, int], at: int, after: int = 0
) -> dict[str, int]:
    """``changed`` (each key's last commit up to ``at`` that added or removed a file of
    it) with each key rewritten to the rows it had taken back to the commit of those
    rows: a partition's data version. Status reads it for every partition of every
    partitioned input, so it reads plain rows, the hashes left out.

    A key whose files last changed at ``after`` or before keeps that commit: its data
    version is no later, so it is ``<= after`` either way (a caller that compares only
    with versions ``>= after`` learns the same), and only the hashes of later commits
    are read."""
    t = partition_hashes.c
    rows = plain_rows(
        conn,
        sa.select(t.partition_key, t.commit_id, t.data_commit_id)
        .where(t.dataset_uuid == dataset_uuid, t.commit_id <= at, t.commit_id > after)
        .order_by(t.commit_id),
    )
    newest = {key: (commit_id, data_commit_id) for key, commit_id, data_commit_id in rows}
    out = dict(changed)
    for key, last in changed.items():
        found = newest.get(key)
        if found is not None and found[0] >= last:
            out[key] = int(found[1])
    return out
