"""What a retention pass selects, as pure functions over one dataset's versions and files.

A version is **protected** (never marked, never purged) when it is in the dataset's
current view (the newest SNAPSHOT and every version after it; with no SNAPSHOT, every
version), when it is pinned, or when a current derived version was built from it (unless
the policy says ``protect_inputs = false``). Otherwise its policy decides. A **file** is
freed only when no kept version reads it: a file lives from the commit that added it up
to the one that removed it, so an APPEND chain keeps every file its newest version needs.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from strata.retention.policies import Policy


@dataclass(frozen=True, slots=True)
class VersionFacts:
    """One committed version of a lake dataset, as retention sees it."""

    commit_id: int
    committed_at: datetime
    type: str
    marked: bool = False
    purged: bool = False


@dataclass(frozen=True, slots=True)
class FileSpan:
    """A container and the versions that read it: ``added <= N < removed``."""

    path: str
    bytes: int
    added: int
    removed: int | None  # None: the newest version still reads it
    archive: str | None = None  # the archive root it was moved to; None: in the lake


def view_start(versions: Sequence[VersionFacts]) -> int:
    """The first commit id of the current view: the newest SNAPSHOT's (1 with none)."""
    snapshots = [v.commit_id for v in versions if v.type == "SNAPSHOT"]
    return max(snapshots, default=min((v.commit_id for v in versions), default=1))


def selected(
    policy: Policy, versions: Sequence[VersionFacts], protected: Collection[int], now: datetime
) -> list[int]:
    """Commit ids ``policy`` selects for purging: neither protected nor kept by its rules
    (purged versions are not selected again), oldest first."""
    start = view_start(versions)
    newest_first = sorted(versions, key=lambda v: v.commit_id, reverse=True)
    return sorted(
        v.commit_id
        for rank, v in enumerate(newest_first)
        if not v.purged
        and v.commit_id < start
        and v.commit_id not in protected
        and not policy.keeps(rank, v.committed_at, v.type, now)
    )


def freed(files: Sequence[FileSpan], kept: Sequence[int]) -> list[FileSpan]:
    """The files no version in ``kept`` (sorted commit ids) reads."""
    out = []
    for f in files:
        if f.removed is None:
            continue  # the newest version reads it, and the newest is always kept
        at = bisect.bisect_left(kept, f.added)
        if at == len(kept) or kept[at] >= f.removed:
            out.append(f)
    return out


def attribute(files: Sequence[FileSpan], versions: Sequence[int]) -> dict[int, list[FileSpan]]:
    """Each file under the newest of ``versions`` (sorted commit ids) that reads it: what
    that version's purge frees, as marks and reports count it."""
    out: dict[int, list[FileSpan]] = {}
    for f in files:
        end = bisect.bisect_left(versions, f.removed if f.removed is not None else 2**63)
        if end and versions[end - 1] >= f.added:
            out.setdefault(versions[end - 1], []).append(f)
    return out
