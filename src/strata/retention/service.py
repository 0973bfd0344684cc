"""Retention passes, marks and pins over one lake: the facade the CLI, the API and the
worker use.

A pass, per dataset, in one SQL transaction that holds the dataset against commits:
marks what its policy selects, unmarks what it no longer selects (a pin, a changed
policy), and purges each mark older than its grace: the version row stays, marked
purged, and the files no kept version reads are listed for deletion. Only after that
transaction commits are those files deleted, and unlisted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy.engine import Connection

from strata.errors import InvalidArgument, InvalidName, NotFound
from strata.lake import registry
from strata.lake.service import Lake
from strata.retention import pending as pend
from strata.retention import policies as pol
from strata.retention import selection, state, tiers
from strata.retention.pending import Pending
from strata.retention.policies import Policy
from strata.store.engine import read_tx, write_tx
from strata.store.owners.datasets import rows as dataset_rows

R_co = TypeVar("R_co", covariant=True)
# The worker runs a pass when the last one ended this long ago.
DAILY = timedelta(days=1)
_LONG_AGO = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Touched:
    """A version a pass marked, unmarked or purged."""

    dataset: str
    version: int
    action: str  # marked | unmarked | purged
    policy: str | None
    bytes: int = 0  # what its purge frees (files no kept version reads)
    files: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "version": self.version,
            "action": self.action,
            "policy": self.policy,
            "bytes": self.bytes,
            "files": self.files,
        }


@dataclass
class RetentionReport:
    """What one pass did (or, dry, would do)."""

    dry_run: bool
    started_at: datetime
    ended_at: datetime | None = None
    touched: list[Touched] = field(default_factory=list)
    finished_files: int = 0  # files a killed pass had listed, deleted now
    datasets: list[str] | None = None  # a pass over these only (None: every dataset)

    def count(self, action: str) -> int:
        return sum(1 for t in self.touched if t.action == action)

    @property
    def freed_bytes(self) -> int:
        return sum(t.bytes for t in self.touched if t.action == "purged")

    @property
    def freed_files(self) -> int:
        return sum(t.files for t in self.touched if t.action == "purged")

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "marked": self.count("marked"),
            "unmarked": self.count("unmarked"),
            "purged": self.count("purged"),
            "files": self.freed_files,
            "bytes": self.freed_bytes,
            "finished_files": self.finished_files,
            "datasets": self.datasets,
            "versions": [t.to_dict() for t in self.touched],
        }


class Retention:
    """Retention of one lake's data, by the policies of its settings."""

    def __init__(self, lake: Lake, policies: Sequence[Policy] | None = None) -> None:
        self.lake = lake
        self.policies = (
            list(policies) if policies is not None else pol.load(lake.settings.retention)
        )

    def run(
        self,
        *,
        dry_run: bool = False,
        grace_seconds: float | None = None,
        trigger: str = "cli",
        now: datetime | None = None,
        datasets: Sequence[str] | None = None,
    ) -> RetentionReport:
        """One pass over every lake dataset, or those ``datasets`` (names or globs) match
        (``grace_seconds`` overrides the policies'). A pass over some datasets is not the
        store's pass: it is left out of the passes listed, and the daily one still runs."""
        report = RetentionReport(dry_run, now or datetime.now(UTC))
        with read_tx(self.lake.engine) as conn:
            found = registry.list_datasets(conn, self.lake.namespace)
            if datasets is not None:
                report.datasets = pol.scoped([d.name for d in found], datasets)
                found = [d for d in found if d.name in report.datasets]
            in_use = state.inputs_in_use(conn)
            marked = {m.dataset for m in state.marks(conn)}
        if not dry_run:
            report.finished_files = self.finish_pending()
        for ds in found:
            policy = pol.policy_for(self.policies, ds.name)
            if policy is None and ds.name not in marked:
                continue
            one = _DatasetPass(ds.name, ds.uuid, policy, in_use.get(ds.uuid, set()), grace_seconds)
            report.touched += self._pass(one, report.started_at, dry_run)
        report.ended_at = datetime.now(UTC)
        if not dry_run and report.datasets is None:
            with write_tx(self.lake.engine) as conn:
                state.record_pass(conn, _pass_row(report, trigger))
        return report

    def _pass(self, p: _DatasetPass, now: datetime, dry_run: bool) -> list[Touched]:
        listed: list[Pending] = []
        with write_tx(self.lake.engine) as conn:
            dataset_rows.lock(conn, [p.uuid])
            versions = state.version_facts(conn, p.uuid)
            times = state.mark_times(conn, p.uuid)
            protected = state.pinned(conn, p.uuid)
            if p.policy is not None and p.policy.protect_inputs:
                protected |= p.in_use
            chosen = selection.selected(p.policy, versions, protected, now) if p.policy else []
            spans = state.file_spans(conn, p.uuid)
            plan = _plan(p, versions, times, chosen, spans, now)
            orphans = _deleted_branches_plan(conn, p, protected, now)
            if not dry_run:
                state.drop_marks(conn, p.uuid, plan.unmark)
                state.add_marks(conn, p.uuid, plan.mark, now)
                listed = state.purge(conn, p.uuid, plan.purge, plan.freed, now)
                listed += state.purge(conn, p.uuid, orphans.purge, orphans.freed, now)
        tiers.finish_deletes(self.lake, listed)
        return plan.touched(p) + orphans.touched(p)

    def finish_pending(self) -> int:
        """Delete the files an earlier pass listed but did not get to (it was killed), and
        the copies moves left behind once their grace has passed; how many went."""
        return tiers.finish_pending(self.lake)

    def due(self, now: datetime) -> bool:
        """Whether a daily pass is due: a policy exists and no pass ended in a day."""
        if not self.policies:
            return False
        with read_tx(self.lake.engine) as conn:
            last = state.last_pass_end(conn)
        return last is None or last <= now - DAILY

    # -- marks and pins ---------------------------------------------------------------

    def unmark(self, dataset: str, version: int) -> Touched:
        """Undo a mark before its sweep (a later pass marks the version again while its
        policy selects it: pin a version to keep it)."""
        uuid, _ = self._version(dataset, version)
        with write_tx(self.lake.engine) as conn:
            found = [m for m in state.marks(conn, uuid) if m.commit_id == version]
            if not found:
                raise NotFound(
                    f"{dataset}@{version} is not marked for purging; list marks with "
                    "`strata retention --dry-run` or GET /api/v1/strata/retention",
                    dataset=dataset,
                    version=version,
                )
            state.drop_marks(conn, uuid, [version])
        return Touched(dataset, version, "unmarked", found[0].policy)

    def pin(self, dataset: str, version: int, note: str | None = None) -> dict[str, Any]:
        """Keep a version from every policy (its mark, if any, goes)."""
        uuid, v = self._version(dataset, version)
        if v.purged_at is not None:
            raise InvalidArgument(
                f"{dataset}@{version} was purged on {v.purged_at.isoformat(timespec='seconds')} "
                f"by retention policy {v.purged_by}: there is no data left to keep",
                dataset=dataset,
                version=version,
            )
        with write_tx(self.lake.engine) as conn:
            added = state.add_pin(conn, uuid, version, datetime.now(UTC), note)
            unmarked = state.drop_marks(conn, uuid, [version])
        return {
            "dataset": dataset,
            "version": version,
            "pinned": True,
            "changed": added,
            "unmarked": bool(unmarked),
        }

    def unpin(self, dataset: str, version: int) -> dict[str, Any]:
        uuid, _ = self._version(dataset, version)
        with write_tx(self.lake.engine) as conn:
            if not state.drop_pin(conn, uuid, version):
                raise NotFound(
                    f"{dataset}@{version} is not pinned; list pins with GET "
                    "/api/v1/strata/retention",
                    dataset=dataset,
                    version=version,
                )
        return {"dataset": dataset, "version": version, "pinned": False, "changed": True}

    def _version(self, dataset: str, version: int) -> tuple[str, registry.Version]:
        try:
            v = self.lake.version(dataset, version)
        except InvalidName as exc:  # a name that cannot exist names no version
            raise NotFound(f"no dataset {dataset!r} in the lake: {exc}", dataset=dataset) from exc
        return v.dataset_uuid, v

    def overview(self, passes: int = 10) -> dict[str, Any]:
        """Policies, marks, pins and the last passes."""
        with read_tx(self.lake.engine) as conn:
            return {
                "policies": [p.to_dict() for p in self.policies],
                "marks": [m.to_dict() for m in state.marks(conn)],
                "pins": state.pins(conn),
                "passes": state.passes(conn, passes),
                "pending_files": len(pend.pending(conn)),
            }


class Periodic(Protocol[R_co]):
    """A pass the worker runs daily: a retention pass or an archive pass."""

    def due(self, now: datetime) -> bool: ...

    def run(self, *, trigger: str) -> R_co: ...


@dataclass
class DailyPass(Generic[R_co]):
    """A pass when one is due (a policy exists and none ran for a day), for a worker
    that looks about once a minute."""

    job: Periodic[R_co]
    next_look: datetime = _LONG_AGO

    def run_if_due(self, now: datetime) -> R_co | None:
        if now < self.next_look:
            return None
        self.next_look = now + timedelta(minutes=1)
        if not self.job.due(now):
            return None
        return self.job.run(trigger="worker")


@dataclass
class _DatasetPass:
    name: str
    uuid: str
    policy: Policy | None
    in_use: set[int]
    grace: float | None = None

    def grace_seconds(self) -> float:
        if self.grace is not None:
            return self.grace
        return self.policy.grace_seconds if self.policy is not None else 0.0


@dataclass
class _Plan:
    mark: dict[int, tuple[str, int]]
    unmark: list[int]
    purge: dict[int, str]
    freed: list[selection.FileSpan]
    marked_files: dict[int, list[selection.FileSpan]]

    def touched(self, p: _DatasetPass) -> list[Touched]:
        by_version = selection.attribute(self.freed, sorted(self.purge))
        out = [Touched(p.name, c, "unmarked", None) for c in sorted(self.unmark)]
        out += [
            Touched(p.name, c, "marked", policy, b, len(self.marked_files.get(c, ())))
            for c, (policy, b) in sorted(self.mark.items())
        ]
        out += [
            Touched(
                p.name,
                c,
                "purged",
                policy,
                sum(f.bytes for f in by_version.get(c, ())),
                len(by_version.get(c, ())),
            )
            for c, policy in sorted(self.purge.items())
        ]
        return out


def _plan(
    p: _DatasetPass,
    versions: Sequence[selection.VersionFacts],
    times: dict[int, datetime],
    chosen: Sequence[int],
    spans: Sequence[selection.FileSpan],
    now: datetime,
) -> _Plan:
    """What a pass does to one dataset: marks, unmarks, purges, and the files freed."""
    picked = set(chosen)
    name = p.policy.name if p.policy is not None else ""
    cutoff = now - timedelta(seconds=p.grace_seconds())
    due = {c: name for c in chosen if times.get(c, now) <= cutoff}
    live = [v.commit_id for v in versions if not v.purged]
    freed = selection.freed(spans, [c for c in live if c not in due])
    # What each new mark's purge would free, with every chosen version gone.
    would = selection.attribute(
        selection.freed(spans, [c for c in live if c not in picked]), sorted(picked)
    )
    mark = {
        c: (name, sum(f.bytes for f in would.get(c, ())))
        for c in chosen
        if c not in times and c not in due
    }
    return _Plan(mark, [c for c in times if c not in picked], due, freed, would)


def _deleted_branches_plan(
    conn: Connection, p: _DatasetPass, protected: set[int], now: datetime
) -> _Plan:
    """The versions of branches deleted longer than the grace ago, purged by the
    dataset's policy (no mark first: deleting the branch was the decision), and the files
    only such branches name."""
    if p.policy is None:
        return _Plan({}, [], {}, [], {})
    cutoff = now - timedelta(seconds=p.grace_seconds())
    found = state.deleted_branch_versions(conn, p.uuid, cutoff)
    due = {c: b for c, b in found.items() if c not in protected}
    kept = [c for c in found if c in protected]  # pinned: their files stay
    files = [
        f
        for f in state.deleted_branch_files(conn, p.uuid, set(due.values()))
        if not any(f.added <= k and (f.removed is None or k < f.removed) for k in kept)
    ]
    return _Plan({}, [], dict.fromkeys(due, p.policy.name), files, {})


def _pass_row(report: RetentionReport, trigger: str) -> dict[str, Any]:
    return {
        "started_at": report.started_at,
        "ended_at": report.ended_at,
        "marked": report.count("marked"),
        "unmarked": report.count("unmarked"),
        "purged": report.count("purged"),
        "files": report.freed_files,
        "bytes": report.freed_bytes,
        "trigger": trigger,
    }
