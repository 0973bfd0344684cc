"""Schedules: builds that run on a cron, declared in ``strata.toml`` or beside a transform.

::

    [[schedule]]
    name = "hourly"
    cron = "5 * * * *"
    build = ["metrics/*"]       # dataset names or globs
    timezone = "Europe/London"  # default UTC
    catch_up = "latest"         # runs missed while no worker ran: latest, all or none
    force = false
    branch = "dev"              # the branch it builds; default main

or ``@transform_df(Output("report/daily"), ..., schedule="0 6 * * *")``, a schedule named
after the transform that builds its outputs. A firing builds what is out of date among
its targets, as ``strata build`` does (everything, with ``force``), on the schedule's
branch; only a worker watching that branch fires it (a transform's own schedule builds
``main``). Cron expressions and time zones are read by croniter and the standard
``zoneinfo``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from strata.builds.programs.discovery import Pipelines
from strata.errors import ConfigError, InvalidName
from strata.lake.branches import MAIN, validate

CATCH_UP = ("latest", "all", "none")
# A firing due longer ago than this was missed (no worker was running at the time).
MISSED_AFTER = timedelta(seconds=60)
_KEYS = {"name", "cron", "build", "timezone", "catch_up", "force", "branch"}


@dataclass(frozen=True)
class Schedule:
    """A cron, the datasets it builds, and how it treats firings it missed."""

    name: str
    cron: str
    targets: tuple[str, ...]  # dataset names or globs
    timezone: str = "UTC"
    catch_up: str = "latest"
    force: bool = False
    declared_in: str = "strata.toml"
    branch: str = MAIN

    def due_after(self, after: datetime, now: datetime) -> list[datetime]:
        """The firings due in ``(after, now]``, oldest first (at most 1,000: a long
        outage with ``catch_up = "all"`` is caught up a thousand at a time)."""
        zone = ZoneInfo(self.timezone)
        it = croniter(self.cron, after.astimezone(zone))
        out: list[datetime] = []
        while len(out) < 1000:
            at: datetime = it.get_next(datetime)
            if at > now:
                break
            out.append(at)
        return out

    def next_after(self, after: datetime) -> datetime:
        it = croniter(self.cron, after.astimezone(ZoneInfo(self.timezone)))
        found: datetime = it.get_next(datetime)
        return found

    def latest_due(self, now: datetime) -> datetime:
        """The last firing due at or before ``now`` (croniter's previous is strictly
        before its start, and a start a second on could name one due after ``now``)."""
        before: datetime = croniter(self.cron, now.astimezone(ZoneInfo(self.timezone))).get_prev(
            datetime
        )
        at: datetime = croniter(self.cron, before).get_next(datetime)
        return at if at <= now else before

    def to_fire(self, after: datetime, now: datetime) -> list[datetime]:
        """What to fire of the firings due in ``(after, now]``, as ``catch_up`` says:
        each of them, only the latest, or only one due this minute (none missed)."""
        if self.catch_up == "all":
            return self.due_after(after, now)
        latest = self.latest_due(now)
        if latest <= after or latest > now:
            return []
        if self.catch_up == "none" and now - latest > MISSED_AFTER:
            return []
        return [latest]

    def datasets(self, pipelines: Pipelines) -> list[str]:
        """The datasets its targets name among the pipelines' outputs."""
        outputs = sorted(pipelines.graph.producer)
        return [o for o in outputs if any(fnmatch.fnmatchcase(o, t) for t in self.targets)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cron": self.cron,
            "build": list(self.targets),
            "timezone": self.timezone,
            "catch_up": self.catch_up,
            "force": self.force,
            "branch": self.branch,
            "declared_in": self.declared_in,
        }


def _bad(where: str, what: str) -> ConfigError:
    return ConfigError(f"schedule {where}: {what}")


def parse(entry: Mapping[str, Any], declared_in: str = "strata.toml") -> Schedule:
    """One ``[[schedule]]`` table, checked: a clear error for each bad value."""
    name = entry.get("name")
    where = f"{name!r} in {declared_in}" if name else f"#{entry!r} in {declared_in}"
    if not isinstance(name, str) or not name.strip():
        raise _bad(where, 'needs a name, such as name = "hourly"')
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise _bad(where, f"unknown key(s) {unknown}; known keys are {sorted(_KEYS)}")
    cron = entry.get("cron")
    if not isinstance(cron, str) or not croniter.is_valid(cron):
        raise _bad(
            where,
            f"cron = {cron!r} is not a cron expression; write five fields such as "
            '"5 * * * *" (minute, hour, day of month, month, day of week)',
        )
    targets = entry.get("build")
    if isinstance(targets, str):
        targets = [targets]
    if (
        not isinstance(targets, list)
        or not targets
        or not all(isinstance(t, str) and t for t in targets)
    ):
        raise _bad(where, f'build = {targets!r} must list datasets or globs, such as ["metrics/*"]')
    zone = entry.get("timezone", "UTC")
    try:
        ZoneInfo(str(zone))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        what = f"timezone = {zone!r} is not a known time zone; use e.g. Europe/London"
        raise _bad(where, what) from exc
    catch_up = entry.get("catch_up", "latest")
    if catch_up not in CATCH_UP:
        raise _bad(where, f"catch_up = {catch_up!r} must be one of {', '.join(CATCH_UP)}")
    force = entry.get("force", False)
    if not isinstance(force, bool):
        raise _bad(where, f"force = {force!r} must be true or false")
    try:
        branch = validate(entry.get("branch", MAIN))
    except InvalidName as exc:
        raise _bad(where, f"branch = {exc.message}") from exc
    return Schedule(name, cron, tuple(targets), str(zone), catch_up, force, declared_in, branch)


def gather(entries: Sequence[Mapping[str, Any]], pipelines: Pipelines | None) -> list[Schedule]:
    """Every schedule: ``strata.toml``'s, then those declared beside transforms; each
    checked, names unique, and each target naming at least one dataset."""
    found = [parse(e) for e in entries]
    if pipelines is not None:
        for item in pipelines.transforms.values():
            cron = item.transform.schedule
            if cron is not None:
                entry = {"name": item.fqn, "cron": cron, "build": list(item.output_names)}
                found.append(parse(entry, f"transform {item.fqn} ({item.where})"))
    seen: dict[tuple[str, str], Schedule] = {}
    for s in found:
        if (s.branch, s.name) in seen:
            raise _bad(
                f"{s.name!r} in {s.declared_in}",
                f"the name is already used in {seen[s.branch, s.name].declared_in}; "
                "give it another",
            )
        seen[s.branch, s.name] = s
        if pipelines is not None:
            empty = [t for t in s.targets if not fnmatch.filter(pipelines.graph.producer, t)]
            if empty:
                raise _bad(
                    f"{s.name!r} in {s.declared_in}",
                    f"build names {empty}, which no transform writes; name derived datasets",
                )
    return found
