"""Archive policies, as ``[[archive]]`` tables of ``strata.toml`` declare them::

[[archive]]
datasets = ["raw/*"]               # dataset names or globs; the first policy that matches wins
older_than = "90d"                 # a file moves once every version that reads it is older
uri = "file:///mnt/cold/strata"    # any file system the lake supports (hdfs://, s3a://, ...)
name = "cold"                      # optional: how history and errors name the policy
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from strata.errors import ConfigError
from strata.lake.storage import Storage
from strata.retention.policies import parse_duration

_KEYS = {"name", "datasets", "older_than", "uri"}


@dataclass(frozen=True)
class ArchivePolicy:
    """Which datasets' old files move to which archive root, and when."""

    name: str
    datasets: tuple[str, ...]
    older_than_seconds: float
    uri: str

    def matches(self, dataset: str) -> bool:
        return any(fnmatch.fnmatchcase(dataset, glob) for glob in self.datasets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "datasets": list(self.datasets),
            "older_than_seconds": self.older_than_seconds,
            "uri": self.uri,
        }


def policy_for(policies: Sequence[ArchivePolicy], dataset: str) -> ArchivePolicy | None:
    """The policy that governs ``dataset``: the first whose globs match it."""
    return next((p for p in policies if p.matches(dataset)), None)


def load(tables: Sequence[Mapping[str, Any]], lake_uri: str) -> list[ArchivePolicy]:
    """The policies of ``[[archive]]`` tables, each checked, in order."""
    out = [_policy(i, table, lake_uri) for i, table in enumerate(tables, start=1)]
    names = [p.name for p in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(
            f"two [[archive]] policies are named {twice[0]!r}; give each its own name = ..."
        )
    return out


def _policy(index: int, table: Mapping[str, Any], lake_uri: str) -> ArchivePolicy:
    where = f"[[archive]] number {index}"
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{where} has unknown key(s) {unknown}; known keys are {sorted(_KEYS)}")
    globs = table.get("datasets")
    if isinstance(globs, str):
        globs = [globs]
    if not globs or not all(isinstance(g, str) and g for g in globs):
        raise ConfigError(
            f'{where} needs datasets = ["raw/*"]: the dataset names or globs it applies to'
        )
    if "older_than" not in table:
        raise ConfigError(f'{where} needs older_than = "90d": how old a version is when it moves')
    name = table.get("name", ",".join(globs))
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f'{where} name is {name!r}; give a short text such as "cold"')
    return ArchivePolicy(
        name=name,
        datasets=tuple(globs),
        older_than_seconds=parse_duration(table["older_than"], f"{where} older_than"),
        uri=_uri(table.get("uri"), where, lake_uri),
    )


def _uri(value: Any, where: str, lake_uri: str) -> str:
    if not isinstance(value, str) or "://" not in value:
        raise ConfigError(
            f"{where} uri is {value!r}; give the archive root as a URI, such as "
            '"file:///mnt/cold/strata", "hdfs://…" or "s3a://bucket/strata"'
        )
    uri = value.rstrip("/")
    # Either root inside the other (or the same): a file's two places would collide.
    if (
        Storage(lake_uri).relative(uri + "/x") is not None
        or Storage(uri).relative(lake_uri.rstrip("/") + "/x") is not None
    ):
        raise ConfigError(
            f"{where} uri {value!r} overlaps the lake ({lake_uri}); give a root outside it"
        )
    return uri
