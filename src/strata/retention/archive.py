"""The archive tier over one lake: moving old files to cheaper storage and back; the
facade the CLI, the API and the worker use.

A file moves once every version that reads it is older than its dataset's policy (so
the current view's files, which the newest version reads, never move), unless one of
those versions is pinned. Reads of an archived version work as before, from wherever
each file lies. ``restore`` brings a version's files back and pins it, so that the next
pass leaves it in the lake (``strata unpin`` lets it go again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from strata.errors import InvalidName, NotFound
from strata.lake import registry
from strata.lake.service import Lake
from strata.retention import archive_policies as apol
from strata.retention import archive_state as astate
from strata.retention import pending as pend
from strata.retention import state, tiers
from strata.retention.archive_policies import ArchivePolicy
from strata.retention.archive_state import Placed
from strata.retention.service import DAILY
from strata.store.engine import read_tx, write_tx
from strata.store.owners.datasets import rows as dataset_rows

_BATCH = 200  # files copied, then recorded in one SQL transaction
RESTORED_NOTE = "restored from the archive"


@dataclass(frozen=True, slots=True)
class Moved:
    """What a pass moved (or, dry, would move) of one dataset."""

    dataset: str
    policy: str
    uri: str
    files: int
    bytes: int
    first_version: int  # the versions whose files moved: first_version to last_version
    last_version: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "policy": self.policy,
            "uri": self.uri,
            "files": self.files,
            "bytes": self.bytes,
            "versions": [self.first_version, self.last_version],
        }


@dataclass
class ArchiveReport:
    dry_run: bool
    started_at: datetime
    ended_at: datetime | None = None
    moved: list[Moved] = field(default_factory=list)
    finished_files: int = 0  # copies earlier moves had left, deleted now
    waiting_files: int = 0  # copies left behind that wait out gc_grace_seconds

    @property
    def files(self) -> int:
        return sum(m.files for m in self.moved)

    @property
    def bytes(self) -> int:
        return sum(m.bytes for m in self.moved)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "files": self.files,
            "bytes": self.bytes,
            "finished_files": self.finished_files,
            "waiting_files": self.waiting_files,
            "datasets": [m.to_dict() for m in self.moved],
        }


class Archive:
    """The archive tier of one lake, by the ``[[archive]]`` policies of its settings."""

    def __init__(self, lake: Lake, policies: Sequence[ArchivePolicy] | None = None) -> None:
        self.lake = lake
        self.policies = (
            list(policies)
            if policies is not None
            else apol.load(lake.settings.archive, lake.settings.lake_uri)
        )

    def run(
        self, *, dry_run: bool = False, trigger: str = "cli", now: datetime | None = None
    ) -> ArchiveReport:
        """One pass: every governed dataset's movable files go to its policy's archive."""
        report = ArchiveReport(dry_run, now or datetime.now(UTC))
        if not dry_run:
            report.finished_files = self.finish_pending(report.started_at)
        with read_tx(self.lake.engine) as conn:
            found = registry.list_datasets(conn, self.lake.namespace)
        for ds in found:
            policy = apol.policy_for(self.policies, ds.name)
            if policy is None:
                continue
            cutoff = report.started_at - timedelta(seconds=policy.older_than_seconds)
            with read_tx(self.lake.engine) as conn:
                files = astate.movable(conn, ds.uuid, cutoff)
            if not dry_run:
                files = self._move(ds.uuid, files, policy.uri)
            if files:
                report.moved.append(_moved(ds.name, policy, files))
        report.ended_at = datetime.now(UTC)
        with read_tx(self.lake.engine) as conn:
            report.waiting_files = len(pend.pending(conn))
        if not dry_run:
            self._record_pass(
                report.started_at, report.ended_at, report.files, report.bytes, trigger, "archive"
            )
        return report

    def restore(self, dataset: str, version: int, trigger: str = "cli") -> dict[str, Any]:
        """Bring version ``dataset@version``'s archived files back to the lake and pin it."""
        started = datetime.now(UTC)
        v = self._version(dataset, version)
        registry.refuse_purged(v)
        self.finish_pending()
        with write_tx(self.lake.engine) as conn:
            pinned = state.add_pin(conn, v.dataset_uuid, version, started, RESTORED_NOTE)
        with read_tx(self.lake.engine) as conn:
            files = astate.archived_of(conn, v.dataset_uuid, version)
        done = self._move(v.dataset_uuid, files, None)
        self._record_pass(
            started, datetime.now(UTC), len(done), sum(f.bytes for f in done), trigger, "restore"
        )
        return {
            "dataset": dataset,
            "version": version,
            "files": len(done),
            "bytes": sum(f.bytes for f in done),
            "pinned": True,
            "newly_pinned": pinned,
        }

    def finish_pending(self, now: datetime | None = None) -> int:
        """Delete the old copies whose grace has passed (and any a killed move left);
        how many were deleted."""
        return tiers.finish_pending(self.lake, now)

    def due(self, now: datetime) -> bool:
        """Whether a daily pass is due: a policy exists and no pass ended in a day."""
        if not self.policies:
            return False
        with read_tx(self.lake.engine) as conn:
            last = state.last_pass_end(conn, "archive")
        return last is None or last <= now - DAILY

    def _move(self, dataset_uuid: str, files: Sequence[Placed], to: str | None) -> list[Placed]:
        """Copy, verify, record, delete, in batches; the files recorded at ``to``."""
        target = self.lake.tier(to)
        done: list[Placed] = []
        for start in range(0, len(files), _BATCH):
            batch = files[start : start + _BATCH]
            for f in batch:
                tiers.copy_verified(self.lake.tier(f.archive), target, f.path, f.bytes)
            at = datetime.now(UTC)
            with write_tx(self.lake.engine) as conn:
                dataset_rows.lock(conn, [dataset_uuid])
                # Held now, the copies cannot go: record those still whole.
                whole = [f for f in batch if tiers.has_copy(target, f.path, f.bytes)]
                recorded = astate.record_moves(conn, dataset_uuid, whole, to, at)
            tiers.finish_deletes(self.lake, [_old_copy(f, at) for f in recorded])
            done += recorded
        return done

    def _record_pass(
        self, started: datetime, ended: datetime, files: int, size: int, trigger: str, kind: str
    ) -> None:
        row = {
            "started_at": started,
            "ended_at": ended,
            "marked": 0,
            "unmarked": 0,
            "purged": 0,
            "files": files,
            "bytes": size,
            "trigger": trigger,
            "kind": kind,
        }
        with write_tx(self.lake.engine) as conn:
            state.record_pass(conn, row)

    def _version(self, dataset: str, version: int) -> registry.Version:
        try:
            return self.lake.version(dataset, version)
        except InvalidName as exc:  # a name that cannot exist names no version
            raise NotFound(f"no dataset {dataset!r} in the lake: {exc}", dataset=dataset) from exc

    def overview(self) -> dict[str, Any]:
        """The policies and how many files lie in each archive."""
        with read_tx(self.lake.engine) as conn:
            placed = astate.archived_totals(conn)
        return {"policies": [p.to_dict() for p in self.policies], "archives": placed}


def _old_copy(f: Placed, at: datetime) -> pend.Pending:
    return pend.Pending(f.archive or pend.LAKE, f.path, at)


def _moved(dataset: str, policy: ArchivePolicy, files: Sequence[Placed]) -> Moved:
    return Moved(
        dataset,
        policy.name,
        policy.uri,
        len(files),
        sum(f.bytes for f in files),
        min(f.added for f in files),
        max((f.removed or f.added + 1) - 1 for f in files),
    )
