"""Retention of the lineage store: the facade over :mod:`strata.lineage.record.prune`
that the CLI, the API and the worker use, with the limit from ``[lineage_retention]
days`` and each pass recorded beside the lake's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from strata.lineage.record import prune
from strata.retention import state
from strata.retention.service import DAILY
from strata.settings import Settings
from strata.store.engine import read_tx, write_tx


@dataclass
class LineageReport:
    """What a pass deleted; with no limit set (``days`` None), nothing."""

    dry_run: bool
    days: float | None
    cutoff: datetime | None
    started_at: datetime
    ended_at: datetime
    pruned: prune.Pruned

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "days": self.days,
            "cutoff": self.cutoff.isoformat() if self.cutoff else None,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat(),
            **self.pruned.to_dict(),
        }


class LineageRetention:
    """Runs older than ``days`` deleted with their events and facets, by the rules of
    :mod:`strata.lineage.record.prune`; with no limit, every run is kept."""

    NO_LIMIT = (
        "no lineage retention limit: set [lineage_retention] days = 90 in strata.toml (or "
        "STRATA_LINEAGE_RETENTION_DAYS) to delete runs and events older than that"
    )

    def __init__(self, engine: Engine, settings: Settings, days: float | None = None) -> None:
        self.engine = engine
        self.days = days if days is not None else settings.lineage_retention_days

    def run(
        self, *, dry_run: bool = False, trigger: str = "cli", now: datetime | None = None
    ) -> LineageReport:
        started = now or datetime.now(UTC)
        if self.days is None:  # nothing is old: as a lake pass with no policy does nothing
            return LineageReport(dry_run, None, None, started, started, prune.Pruned())
        cutoff = started - timedelta(days=self.days)
        pruned = (
            prune.would_expire(self.engine, cutoff)
            if dry_run
            else prune.expire(self.engine, cutoff)
        )
        report = LineageReport(dry_run, self.days, cutoff, started, datetime.now(UTC), pruned)
        if not dry_run:
            with write_tx(self.engine) as conn:
                state.record_pass(conn, _pass_row(report, trigger))
        return report

    def due(self, now: datetime) -> bool:
        """Whether a daily pass is due: a limit is set and no pass ended in a day."""
        if self.days is None:
            return False
        with read_tx(self.engine) as conn:
            last = state.last_pass_end(conn, "lineage")
        return last is None or last <= now - DAILY

    def overview(self) -> dict[str, Any]:
        return {"days": self.days}


def _pass_row(report: LineageReport, trigger: str) -> dict[str, Any]:
    return {
        "started_at": report.started_at,
        "ended_at": report.ended_at,
        "marked": 0,
        "unmarked": 0,
        "purged": 0,
        "files": 0,
        "bytes": 0,
        "trigger": trigger,
        "kind": "lineage",
        "details": report.pruned.to_dict(),
    }
