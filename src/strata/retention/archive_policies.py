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
from strata.retention.policies import (
    checked_globs,
    parse_duration,
    policy_for,
    policy_name,
    refuse_twice,
)

__all__ = ["ArchivePolicy", "load", "policy_for"]

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


def load(tables: Sequence[Mapping[str, Any]], lake_uri: str) -> list[ArchivePolicy]:
    """The policies of ``[[archive]]`` tables, each checked, in order."""
    out = [_policy(i, table, lake_uri) for i, table in enumerate(tables, start=1)]
    refuse_twice("archive", [p.name for p in out])
    return out


def _policy(index: int, table: Mapping[str, Any], lake_uri: str) -> ArchivePolicy:
    where = f"[[archive]] number {index}"
    globs = checked_globs(table, _KEYS, where)
    if "older_than" not in table:
        raise ConfigError(f'{where} needs older_than = "90d": how old a version is when it moves')
    return ArchivePolicy(
        name=policy_name(table.get("name"), globs, where),
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
