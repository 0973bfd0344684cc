"""The one settings object.

Precedence, highest first: explicit arguments, ``STRATA_*`` environment
variables, ``strata.toml`` (in the working directory, or the file named by
``STRATA_CONFIG``), then defaults. The embedded default needs no server:
SQLite (WAL) at ``./.strata/meta.db`` and a lake folder at ``./.strata/lake``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

from strata.errors import ConfigError

ENV_PREFIX = "STRATA_"
CONFIG_FILE = "strata.toml"


@dataclass(frozen=True)
class Settings:
    """Resolved configuration. Build it with :meth:`Settings.load`."""

    home: Path = Path(".strata")
    database_url: str = ""
    lake_uri: str = ""
    namespace: str = "strata"
    # The branch commands read and write (`--branch`, STRATA_BRANCH).
    branch: str = "main"
    spark_master: str = "local[2]"
    # Options for the driver's JVM, after spark-defaults.conf's (-XX:..., -D...).
    spark_java_options: str = ""
    # Start Spark's JVM from the class cache `strata spark-cache` made, where there is one.
    spark_class_cache: bool = True
    gc_grace_seconds: float = 3600.0
    api_host: str = "127.0.0.1"
    api_port: int = 5000
    read_tokens: tuple[str, ...] = ()
    write_tokens: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    lineage_fold: str = "process"
    pipelines: tuple[str, ...] = ()
    build_lease_seconds: float = 300.0
    partition_limit: int = 10_000
    # ``[[schedule]]`` tables of strata.toml, as written: checked by
    # strata.builds.workers.schedules.
    schedules: tuple[dict[str, Any], ...] = ()
    # ``[[retention]]`` tables of strata.toml, as written: checked by strata.retention.
    retention: tuple[dict[str, Any], ...] = ()
    # ``[[archive]]`` tables of strata.toml, as written: checked by strata.retention.
    archive: tuple[dict[str, Any], ...] = ()
    # ``[lineage_retention] days = 90``: runs, their events and facets older than this go
    # (strata.lineage.record.prune); None keeps every run.
    lineage_retention_days: float | None = None
    verbose: bool = False
    # `status` lists datasets of jobs Strata does not build whose program moved on.
    foreign_status: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        home = Path(self.home).expanduser()
        object.__setattr__(self, "home", home)
        if not self.database_url:
            object.__setattr__(self, "database_url", f"sqlite:///{home.resolve() / 'meta.db'}")
        if not self.lake_uri:
            object.__setattr__(self, "lake_uri", (home.resolve() / "lake").as_uri())
        elif "://" not in self.lake_uri:
            # A bare path means this machine's file system to pyarrow, but the cluster's
            # default file system (often HDFS) to Spark: say which one, once, here.
            local = Path(self.lake_uri).expanduser().resolve()
            object.__setattr__(self, "lake_uri", local.as_uri())
        for origin in self.allowed_origins:
            if not _is_origin(origin):
                raise ConfigError(
                    f"allowed_origins holds {origin!r}, which is not an origin; give each as "
                    "scheme://host[:port] with no path (http://localhost:3000) in "
                    "STRATA_ALLOWED_ORIGINS, separated by commas"
                )
        if self.lineage_fold not in ("process", "thread"):
            raise ConfigError(
                f"lineage_fold must be 'process' or 'thread', got {self.lineage_fold!r}; "
                "set STRATA_LINEAGE_FOLD to one of them"
            )
        _check_java_options(self.spark_java_options)
        if self.partition_limit < 1:
            raise ConfigError(
                f"partition_limit must be 1 or more, got {self.partition_limit}; set "
                "STRATA_PARTITION_LIMIT to the most partitions one write or build may touch"
            )
        if self.build_lease_seconds <= 0:
            raise ConfigError(
                f"build_lease_seconds must be more than 0, got {self.build_lease_seconds}; "
                "set STRATA_BUILD_LEASE_SECONDS to a number of seconds"
            )

    @property
    def is_embedded(self) -> bool:
        """True when the metadata store is the embedded SQLite file."""
        return self.database_url.startswith("sqlite")

    @classmethod
    def load(cls, config_file: str | Path | None = None, **explicit: Any) -> Settings:
        """Resolve settings from explicit args, environment, ``strata.toml`` and defaults."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(explicit) - names
        if unknown:
            raise ConfigError(
                f"unknown setting(s) {sorted(unknown)}; known settings are {sorted(names)}"
            )
        merged: dict[str, Any] = {}
        merged.update(_from_toml(config_file, names))
        merged.update(_from_env(names))
        merged.update({k: v for k, v in explicit.items() if v is not None})
        return cls(**{k: _coerce(k, v) for k, v in merged.items()})


# Arrays of tables in strata.toml: each key's setting, and an example for its error.
_ARRAYS = {
    "schedule": ("schedules", 'name = "hourly", cron = "5 * * * *", build = ["metrics/*"]'),
    "retention": ("retention", 'datasets = ["raw/*"], keep_days = 30, grace = "7d"'),
    "archive": ("archive", 'datasets = ["raw/*"], older_than = "90d", uri = "file:///cold"'),
}


# Tables in strata.toml whose keys are settings of their own: [lineage_retention] days
# is lineage_retention_days (STRATA_LINEAGE_RETENTION_DAYS).
_TABLES = {"lineage_retention": ("days",)}


def _flattened(key: str, value: Any, path: Path) -> dict[str, Any]:
    if value is None:
        return {}
    known = _TABLES[key]
    if not isinstance(value, dict) or set(value) - set(known):
        raise ConfigError(
            f"[{key}] in {str(path)!r} must be a table of {list(known)}, such as "
            f"[{key}] {known[0]} = 90; it holds {value!r}"
        )
    return {f"{key}_{k}": v for k, v in value.items()}


def _from_toml(config_file: str | Path | None, names: set[str]) -> dict[str, Any]:
    path = Path(config_file or os.environ.get(f"{ENV_PREFIX}CONFIG") or CONFIG_FILE)
    if not path.exists():
        if config_file is not None:
            raise ConfigError(
                f"config file {str(path)!r} does not exist; create it or drop the argument"
            )
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot parse {str(path)!r}: {exc}; fix the TOML syntax") from exc
    arrays = {key: data.pop(key, None) for key in _ARRAYS}
    tables = {key: data.pop(key, None) for key in _TABLES}
    table = data.get("strata", data)
    if not isinstance(table, dict):
        raise ConfigError(f"[strata] in {str(path)!r} must be a table")
    for key, value in tables.items():
        table.update(_flattened(key, table.pop(key, value), path))
    for key, (setting, example) in _ARRAYS.items():
        tables = table.pop(key, arrays[key])
        if tables is None:
            continue
        if not isinstance(tables, list) or not all(isinstance(x, dict) for x in tables):
            raise ConfigError(
                f"{key} in {str(path)!r} must be tables: write [[{key}]] then {example}"
            )
        table[setting] = tables
    unknown = set(table) - names
    if unknown:
        raise ConfigError(
            f"unknown key(s) {sorted(unknown)} in {str(path)!r}; known keys are {sorted(names)}"
        )
    if isinstance(table.get("home"), str) and not Path(table["home"]).is_absolute():
        # Relative paths in a config file are relative to that file, as users expect.
        table["home"] = str(path.parent / table["home"])
    lake = table.get("lake_uri")
    if isinstance(lake, str) and lake and "://" not in lake and not Path(lake).is_absolute():
        table["lake_uri"] = str(path.parent / lake)
    if isinstance(table.get("pipelines"), list):
        table["pipelines"] = [
            p if not isinstance(p, str) or Path(p).is_absolute() else str(path.parent / p)
            for p in table["pipelines"]
        ]
    return dict(table)


def _from_env(names: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names - {"extra", *(setting for setting, _ in _ARRAYS.values())}:
        value = os.environ.get(ENV_PREFIX + name.upper())
        if value is not None and value != "":
            out[name] = value
    return out


_ORIGIN = re.compile(r"https?://[^/\s?#@]+")


def _check_java_options(options: str) -> None:
    """Refuse what the JVM's command line would take as a class to run, not an option."""
    try:
        words = shlex.split(options)
    except ValueError as exc:
        raise ConfigError(
            f"spark_java_options {options!r} cannot be split into words ({exc}); close its "
            "quotes in STRATA_SPARK_JAVA_OPTIONS or strata.toml"
        ) from exc
    for word in words:
        if not word.startswith("-"):
            raise ConfigError(
                f"spark_java_options holds {word!r}, which is not a JVM option; give options "
                "starting with - (such as -XX:+UseSerialGC) in STRATA_SPARK_JAVA_OPTIONS"
            )


def _is_origin(value: str) -> bool:
    return _ORIGIN.fullmatch(value) is not None


_HINTS = get_type_hints(Settings)


def _coerce(name: str, value: Any) -> Any:
    hint = _HINTS[name]
    try:
        if isinstance(value, bool) and hint is not bool:
            raise TypeError(f"expected {getattr(hint, '__name__', hint)}, got a boolean")
        if hint is bool:
            return _boolean(value)
        if hint is Path:
            return Path(value)
        if hint is int:
            return int(value)
        if hint is float:
            return float(value)
        if hint == float | None:
            return _days(value)
        if hint == tuple[dict[str, Any], ...]:
            if not isinstance(value, list | tuple):
                raise TypeError("expected [[...]] tables")
            return tuple(dict(x) for x in value)
        if hint == tuple[str, ...]:
            if isinstance(value, str):
                return tuple(t.strip() for t in value.split(",") if t.strip())
            return tuple(str(t) for t in value)
        if hint is str:
            if not isinstance(value, str):
                raise TypeError(f"expected a string, got {type(value).__name__}")
            return value
    except (TypeError, ValueError) as exc:
        env = ENV_PREFIX + name.upper()
        raise ConfigError(
            f"setting {name!r} has bad value {value!r} ({exc}); fix {env} or strata.toml"
        ) from exc
    return value


def _days(value: Any) -> float:
    days = float(value)
    if not 0 < days <= 365_000:
        raise ValueError("give a number of days, more than 0")
    return days


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError(f"expected one of {', '.join(_TRUE + _FALSE)}")
