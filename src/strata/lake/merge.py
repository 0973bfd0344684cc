"""Merging a branch: every dataset it wrote fast-forwards the target, all or nothing.

A dataset fast-forwards when the target still holds the version the branch forked from:
the target's current version becomes the branch's (no data copied; the version keeps its
catalog entry and moves to the target). When the target moved since the fork, the
dataset is a conflict and nothing merges. A version whose FAIL checks failed is refused
(write, audit, then publish).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.errors import BranchRefused, MergeConflict
from strata.lake import branches
from strata.lake.branches import MAIN, Branch
from strata.lake.registry import Version, latest_version, version_by_uuid
from strata.store.engine import read_tx, write_tx
from strata.store.owners import branches as stored
from strata.store.owners import check_results
from strata.store.owners.datasets import files as files_of
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions

_DATASETS = dataset_rows.relation()


@dataclass(frozen=True)
class Step:
    """One dataset of a merge: what the target held, what it takes, and why not."""

    dataset: str
    branch_version: int
    target_version: int | None  # the target's current version before the merge
    fork_version: int | None  # the target's version when the branch forked
    outcome: str  # fast-forward | up-to-date | conflict | failed-checks

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class MergeReport:
    source: str
    target: str
    dry_run: bool
    steps: list[Step] = field(default_factory=list)

    @property
    def merged(self) -> list[Step]:
        return [s for s in self.steps if s.outcome == "fast-forward"]

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "merged": len(self.merged),
            "datasets": [s.to_dict() for s in self.steps],
        }


def merge(
    engine: Engine, source: str, into: str | None = None, dry_run: bool = False
) -> MergeReport:
    """Merge branch ``source`` into ``into`` (its parent by default) in one SQL
    transaction; :class:`MergeConflict` (and nothing merged) when any dataset cannot
    fast-forward."""
    with write_tx(engine) as conn:
        report, planned = _planned(conn, source, into, dry_run)
        _refuse_conflicts(report)
        if dry_run:
            return report
        now = datetime.now(UTC)
        target = branches.require(conn, report.target)
        for step, head, theirs in planned:
            if step.outcome == "fast-forward":
                assert theirs is not None
                _fast_forward(conn, head, theirs, target, now)
    return report


def preview(engine: Engine, source: str, into: str | None = None) -> MergeReport:
    """What :func:`merge` would do, conflicts and all, changing nothing."""
    with read_tx(engine) as conn:
        return _planned(conn, source, into, True, lock=False)[0]


_Planned = list[tuple[Step, stored.Head, Version | None]]


def _planned(
    conn: Connection, source: str, into: str | None, dry_run: bool, lock: bool = True
) -> tuple[MergeReport, _Planned]:
    """Each dataset's step, judged under the datasets' commit locks (``lock``)."""
    branch = branches.require(conn, source)
    target = _target(conn, branch, into)
    heads = stored.heads_of(conn, branch.id)
    if lock:
        # The locks every commit takes, in one order: a commit racing the merge lands
        # before it (and the merge sees it) or after it.
        dataset_rows.lock(conn, [h.dataset_uuid for h in heads])
    names = _names(conn, [h.dataset_uuid for h in heads])
    planned = sorted(
        (_plan(conn, h, names[h.dataset_uuid], target) for h in heads),
        key=lambda step: step[0].dataset,
    )
    return MergeReport(branch.name, target.name, dry_run, [s for s, _, _ in planned]), planned


def _target(conn: Connection, branch: Branch, into: str | None) -> Branch:
    """The branch to merge into: never the branch itself or one made from it."""
    if into is None:
        if branch.parent_id is None:
            raise BranchRefused(
                "main has no parent to merge into; name a branch with --into", branch=MAIN
            )
        return stored.by_ids(conn, [branch.parent_id])[branch.parent_id]
    target = branches.require(conn, into)
    if branch.id in stored.chain(conn, target.id):
        what = "itself" if target.id == branch.id else f"{target.name!r}, a branch made from it"
        raise BranchRefused(
            f"branch {branch.name!r} cannot be merged into {what}; merge into its parent "
            "or another branch",
            branch=branch.name,
            into=target.name,
        )
    return target


def _names(conn: Connection, uuids: list[str]) -> dict[str, str]:
    q = sa.select(_DATASETS.c.uuid, _DATASETS.c.name).where(_DATASETS.c.uuid.in_(uuids or [""]))
    return {str(r.uuid): r.name for r in conn.execute(q)}


def _plan(
    conn: Connection, head: stored.Head, name: str, target: Branch
) -> tuple[Step, stored.Head, Version | None]:
    """What merging ``head`` into ``target`` does, judged under the datasets' locks."""
    theirs = version_by_uuid(conn, name, head.version_uuid)
    now = latest_version(conn, name, head.dataset_uuid, target.id)
    fork = version_by_uuid(conn, name, head.fork_version_uuid) if head.fork_version_uuid else None
    assert theirs is not None
    at = now.commit_id if now else None
    step = Step(name, theirs.commit_id, at, fork.commit_id if fork else None, "")
    if (now is not None and now.uuid == theirs.uuid) or theirs.uuid == head.fork_version_uuid:
        outcome = "up-to-date"  # merged already, or not written since the last merge
    elif (now.uuid if now else None) != head.fork_version_uuid:
        outcome = "conflict"
    elif _failed_checks(conn, theirs):
        outcome = "failed-checks"
    else:
        outcome = "fast-forward"
    return replace(step, outcome=outcome), head, theirs


def _failed_checks(conn: Connection, v: Version) -> bool:
    return any(
        r.outcome == "failed" and r.on_error == "FAIL"
        for r in check_results.of_version(conn, v.dataset_uuid, v.commit_id)
    )


def _refuse_conflicts(report: MergeReport) -> None:
    bad = [s for s in report.steps if s.outcome in ("conflict", "failed-checks")]
    if not bad:
        return
    lines = []
    for s in bad:
        if s.outcome == "conflict":
            lines.append(
                f"{s.dataset}: {report.target} moved to version {s.target_version} since "
                f"{report.source} forked at {s.fork_version} (its version {s.branch_version})"
            )
        else:
            lines.append(f"{s.dataset}: version {s.branch_version} failed a FAIL check")
    raise MergeConflict(
        f"nothing merged from {report.source!r} into {report.target!r}: "
        + "; ".join(lines)
        + f". Rebuild those datasets on {report.source} (a SNAPSHOT forks again from "
        f"{report.target}'s current version), then merge again",
        source=report.source,
        target=report.target,
        conflicts=[s.to_dict() for s in bad],
    )


def _fast_forward(
    conn: Connection, head: stored.Head, theirs: Version, target: Branch, now: datetime
) -> None:
    """``target``'s current version of the dataset becomes ``theirs``."""
    source = (stored_versions.branch_of(conn, theirs.uuid), theirs.commit_id)
    files_of.adopt(conn, head.dataset_uuid, source, target.id, closed_by=theirs.commit_id)
    stored_versions.move_to_branch(conn, theirs.uuid, target.id, now)
    if target.id == MAIN:
        dataset_rows.make_current(conn, head.dataset_uuid, theirs.uuid, now)
    else:
        held = stored.heads(conn, head.dataset_uuid, [target.id]).get(target.id)
        fork = held.fork_version_uuid if held is not None else head.fork_version_uuid
        stored.set_head(conn, stored.Head(target.id, head.dataset_uuid, theirs.uuid, fork), now)
    # Both now hold the same version: the branch forks from it from here on.
    forked = stored.Head(head.branch_id, head.dataset_uuid, theirs.uuid, theirs.uuid)
    stored.set_head(conn, forked, now)
