"""Retention policies, as ``[[retention]]`` tables of ``strata.toml`` declare them::

[[retention]]
datasets = ["raw/*"]        # dataset names or globs; the first policy that matches wins
keep_versions = 48          # the newest 48 versions are kept
keep_days = 30              # and every version committed in the last 30 days
grace = "7d"                # a mark waits this long before its version is purged
types = ["SNAPSHOT"]        # optional: only versions these transaction types committed
protect_inputs = true       # a version a current derived version was built from stays
name = "raw"                # optional: how history and errors name the policy
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from strata.errors import ConfigError, NotFound
from strata.lake.transaction import TYPES

DEFAULT_GRACE = "7d"
# Longer than any store will run: a limit that keeps date arithmetic in range.
MAX_DAYS = 365_000
_KEYS = {"name", "datasets", "keep_versions", "keep_days", "grace", "types", "protect_inputs"}
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*")


@dataclass(frozen=True)
class Policy:
    """Which versions of which datasets a retention pass may purge, and when."""

    name: str
    datasets: tuple[str, ...]
    keep_versions: int | None = None
    keep_days: float | None = None
    grace_seconds: float = 7 * 86400.0
    types: tuple[str, ...] | None = None
    protect_inputs: bool = True

    def matches(self, dataset: str) -> bool:
        return any(fnmatch.fnmatchcase(dataset, glob) for glob in self.datasets)

    def keeps(self, newest_rank: int, committed_at: datetime, type: str, now: datetime) -> bool:
        """Whether the policy's own rules keep a version: ``newest_rank`` is 0 for the
        newest version, 1 for the one before, and so on. Either rule keeps it."""
        if self.types is not None and type not in self.types:
            return True
        if self.keep_versions is not None and newest_rank < self.keep_versions:
            return True
        if self.keep_days is not None:
            return committed_at >= now - timedelta(days=self.keep_days)
        return False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "datasets": list(self.datasets),
            "keep_versions": self.keep_versions,
            "keep_days": self.keep_days,
            "grace_seconds": self.grace_seconds,
            "types": list(self.types) if self.types is not None else None,
            "protect_inputs": self.protect_inputs,
        }


def parse_duration(text: Any, what: str) -> float:
    """Seconds in ``"7d"``, ``"12h"``, ``"30m"``, ``"0s"`` or ``"2w"``."""
    found = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        raise ConfigError(
            f"{what} is {text!r}, which is not a duration; write a number and a unit, "
            'such as "7d", "12h", "30m" or "0s"'
        )
    seconds = float(found.group(1)) * _UNITS[found.group(2)]
    if seconds > MAX_DAYS * 86400:
        raise ConfigError(f"{what} is {text!r}, more than {MAX_DAYS:,} days; give a shorter one")
    return seconds


class _Matching(Protocol):
    def matches(self, dataset: str) -> bool: ...


P = TypeVar("P", bound=_Matching)


def policy_for(policies: Sequence[P], dataset: str) -> P | None:
    """The policy that governs ``dataset``: the first whose globs match it."""
    return next((p for p in policies if p.matches(dataset)), None)


def scoped(names: Sequence[str], globs: Sequence[str]) -> list[str]:
    """``names`` that one of ``globs`` (dataset names or globs) matches; a glob that
    matches none of them is :class:`~strata.errors.NotFound`."""
    for glob in globs:
        if not any(fnmatch.fnmatchcase(n, glob) for n in names):
            raise NotFound(
                f"no lake dataset matches {glob!r}; `strata datasets` lists them",
                dataset=glob,
            )
    return [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in globs)]


def load(tables: Sequence[Mapping[str, Any]]) -> list[Policy]:
    """The policies of ``[[retention]]`` tables, each checked, in order."""
    out = [_policy(i, table) for i, table in enumerate(tables, start=1)]
    refuse_twice("retention", [p.name for p in out])
    return out


def refuse_twice(section: str, names: Sequence[str]) -> None:
    """A :class:`ConfigError` when two ``[[section]]`` policies share a name."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(
            f"two [[{section}]] policies are named {twice[0]!r}; give each its own name = ..."
        )


def checked_globs(table: Mapping[str, Any], known: set[str], where: str) -> list[str]:
    """The ``datasets`` globs of a policy table, once its keys are all ``known``."""
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where} has unknown key(s) {unknown}; known keys are {sorted(known)}")
    globs = table.get("datasets")
    if isinstance(globs, str):
        globs = [globs]
    if not globs or not all(isinstance(g, str) and g for g in globs):
        raise ConfigError(
            f'{where} needs datasets = ["raw/*"]: the dataset names or globs it applies to'
        )
    return list(globs)


def _policy(index: int, table: Mapping[str, Any]) -> Policy:
    where = f"[[retention]] number {index}"
    globs = checked_globs(table, _KEYS, where)
    keep_versions = _count(table.get("keep_versions"), f"{where} keep_versions")
    keep_days = _days(table.get("keep_days"), f"{where} keep_days")
    if keep_versions is None and keep_days is None:
        raise ConfigError(
            f"{where} keeps nothing: give keep_versions = N, keep_days = N or both (a "
            "version is kept while either keeps it)"
        )
    return Policy(
        name=policy_name(table.get("name"), globs, where),
        datasets=tuple(globs),
        keep_versions=keep_versions,
        keep_days=keep_days,
        grace_seconds=parse_duration(table.get("grace", DEFAULT_GRACE), f"{where} grace"),
        types=_types(table.get("types"), where),
        protect_inputs=_flag(table.get("protect_inputs", True), f"{where} protect_inputs"),
    )


def policy_name(value: Any, globs: Sequence[str], where: str) -> str:
    """A policy's ``name``, by default its globs."""
    if value is None:
        return ",".join(globs)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f'{where} name is {value!r}; give a short text such as "raw"')
    return value


def _count(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{what} is {value!r}; give a whole number of versions, 1 or more")
    return int(value)


def _days(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_DAYS:
        raise ConfigError(f"{what} is {value!r}; give a number of days, 0 to {MAX_DAYS:,}")
    return float(value)


def _types(value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    wrong = [v for v in value if not isinstance(v, str) or v.upper() not in TYPES]
    if not isinstance(value, list) or not value or wrong:
        raise ConfigError(
            f"{where} types holds {wrong or value!r}; give transaction types among {list(TYPES)}"
        )
    return tuple(v.upper() for v in value)


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{what} is {value!r}; write true or false")
    return value
