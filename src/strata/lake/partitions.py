"""Partition keys: which columns partition a dataset, and the key of each container.

A partitioned dataset lays its containers out as ``<txn>/_<col>=<value>/…`` and the
catalog records each container's key as text, ``region=JP/local_day=2026-11-01``, in the
dataset's partition column order. Values are the text Spark puts in a partition folder
(a date as ``2026-11-01``, a boolean as ``true``); a value cannot hold ``/``, ``=`` or
NUL, so the text form needs no escaping and splits back unambiguously. Null and empty
values are refused rather than sent to a default partition: a null key is most often
a bug upstream, and a named default partition would hide it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from strata.errors import InvalidArgument

if TYPE_CHECKING:
    import pyarrow as pa

Key = dict[str, str]
FOLDER_PREFIX = "_"  # folders are `_region=JP`: the column itself stays in each file
_FORBIDDEN = ("/", "=", "\x00")
_SPARK_NULL = "__HIVE_DEFAULT_PARTITION__"
_ARROW_KINDS = ("string", "large_string", "int8", "int16", "int32", "int64", "date32", "bool")
_SPARK_KINDS = ("string", "tinyint", "smallint", "int", "bigint", "date", "boolean")
DEFAULT_LIMIT = 10_000


def normalise_by(dataset: str, by: object) -> list[str] | None:
    """``partition_by`` as a list of distinct column names (None: not partitioned)."""
    if by is None:
        return None
    if isinstance(by, str) or not isinstance(by, list | tuple):
        raise InvalidArgument(
            f"partition_by of {dataset!r} must be a list of column names, got {by!r}",
            dataset=dataset,
        )
    names = list(by)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise InvalidArgument(
            f"partition_by of {dataset!r} must name one or more columns, got {by!r}",
            dataset=dataset,
        )
    if len(set(names)) != len(names):
        raise InvalidArgument(
            f"partition_by of {dataset!r} names a column twice: {names}", dataset=dataset
        )
    return names


def plan(
    dataset: str,
    type: str,
    current: list[str] | None,
    has_data: bool,
    by: object,
    replace: object,
) -> tuple[list[str] | None, list[Key] | None]:
    """The partitioning a transaction writes and the partitions its SNAPSHOT replaces.

    A partitioned dataset keeps its columns unless a whole SNAPSHOT names new ones (a
    repartition); an unpartitioned dataset with data is partitioned the same way.
    """
    wanted = normalise_by(dataset, by)
    whole_snapshot = type == "SNAPSHOT" and replace is None
    if wanted is not None and wanted != current and has_data and not whole_snapshot:
        now = f"partitioned by {current}" if current else "not partitioned"
        raise InvalidArgument(
            f"{dataset!r} is {now}, not by {wanted}; write it as it is partitioned, or "
            "SNAPSHOT it whole with the new partition_by to repartition it",
            dataset=dataset,
            partition_by=wanted,
        )
    effective = wanted if wanted is not None else current
    if replace is None:
        return effective, None
    if type != "SNAPSHOT":
        raise InvalidArgument(
            f"only a SNAPSHOT replaces partitions; this transaction on {dataset!r} is "
            f"{type}: make it a SNAPSHOT or drop partitions",
            dataset=dataset,
        )
    if (
        not isinstance(replace, list)
        or not replace
        or not all(isinstance(r, dict) and r for r in replace)
    ):
        raise InvalidArgument(
            f"partitions= of {dataset!r} must be a non-empty list of keys such as "
            f"[{{'region': 'JP'}}], got {replace!r}",
            dataset=dataset,
        )
    return effective, [check_filter(dataset, effective, r) for r in replace]


def key_text(by: Sequence[str], key: Mapping[str, str]) -> str:
    """The catalog's text of a full key, in ``by``'s order."""
    return "/".join(f"{c}={key[c]}" for c in by)


def parse_text(text: str) -> Key:
    """A key's text back as a mapping."""
    return dict(part.split("=", 1) for part in text.split("/")) if text else {}


def check_value(dataset: str, column: str, value: str | None) -> str:
    """A partition value as stored; null, empty and unstorable values are refused."""
    if value is None or value in ("", _SPARK_NULL):
        raise InvalidArgument(
            f"a row of {dataset!r} has a null or empty partition value in column {column!r}; "
            f"partitions need a value: fill it (e.g. coalesce({column}, 'unknown')) or filter "
            "those rows out",
            dataset=dataset,
            column=column,
        )
    bad = next((c for c in _FORBIDDEN if c in value), None)
    if bad is not None:
        raise InvalidArgument(
            f"partition value {value!r} of column {column!r} in {dataset!r} contains "
            f"{bad!r}; partition values cannot hold '/', '=' or NUL: map them to other "
            "characters first",
            dataset=dataset,
            column=column,
            value=value,
        )
    size = len(f"{FOLDER_PREFIX}{_escaped(column)}={_escaped(value)}".encode())
    if size > MAX_FOLDER_BYTES:
        raise InvalidArgument(
            f"partition value {value[:40]!r}… of column {column!r} in {dataset!r} is too "
            f"long: its folder name takes {size:,} bytes, and a file system takes at most "
            f"{MAX_FOLDER_BYTES}; partition by a shorter value (a prefix, or a hash of it)",
            dataset=dataset,
            column=column,
        )
    return value


# A partition is a folder named `_col=value`, and file systems cap a name at 255 bytes.
MAX_FOLDER_BYTES = 255
# What Spark escapes as %XX in a folder name (ExternalCatalogUtils.escapePathName).
_SPARK_ESCAPED = frozenset("\"#%'*/:=?\\{[]^\x7f" + "".join(chr(c) for c in range(1, 32)))


def _escaped(name: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _SPARK_ESCAPED else c for c in name)


# What the API takes for a partition filter: col=value pairs, comma-separated.
FILTER_PATTERN = "^[^,=/\\x00]+=[^,=/\\x00]+(,[^,=/\\x00]+=[^,=/\\x00]+)*$"
Alternatives = dict[str, list[str]]


# Each term becomes a condition of a query: enough for any real choice of partitions,
# few enough that no request can make one query the database cannot plan.
MAX_FILTER_TERMS = 64


def parse_alternatives(text: str) -> Alternatives:
    """``region=JP,region=UK,day=2026-11-01``: each column's wanted values (a column named
    twice takes either value; different columns must all match), at most
    :data:`MAX_FILTER_TERMS` pairs."""
    out: Alternatives = {}
    pairs = text.split(",")
    if len(pairs) > MAX_FILTER_TERMS:
        raise InvalidArgument(
            f"partition filter has {len(pairs)} col=value pairs, more than the "
            f"{MAX_FILTER_TERMS} one request may name; ask for fewer partitions at a time",
            partition=text[:200],
        )
    for pair in pairs:
        col, sep, value = pair.strip().partition("=")
        if not sep or not col or not value:
            raise InvalidArgument(
                f"cannot read partition {text!r}: write it as col=value[,col=value…], e.g. "
                "region=JP,local_day=2026-11-01",
                partition=text,
            )
        out.setdefault(col, []).append(value)
    return out


def parse_filter(text: str) -> Key:
    """``region=JP,local_day=2026-11-01`` (a comma-separated list of col=value) as a key."""
    out: Key = {}
    for col, values in parse_alternatives(text).items():
        if len(values) > 1:
            raise InvalidArgument(f"partition {text!r} names {col!r} twice", partition=text)
        out[col] = values[0]
    return out


class Chosen:
    """Keys whose every named column has one of the wanted values."""

    def __init__(self, dataset: str, by: Sequence[str] | None, wanted: Alternatives) -> None:
        check_filter(dataset, by, dict.fromkeys(wanted, ""))
        self.wanted = {c: set(vs) for c, vs in wanted.items()}

    def holds(self, text: str) -> bool:
        key = parse_text(text)
        return all(key.get(c) in vs for c, vs in self.wanted.items())


def check_filter(dataset: str, by: Sequence[str] | None, wanted: Mapping[str, Any]) -> Key:
    """A filter's columns must partition ``dataset``; values are compared as text."""
    if not by:
        raise InvalidArgument(
            f"{dataset!r} is not partitioned; read it whole or write it with partition_by",
            dataset=dataset,
        )
    unknown = sorted(set(wanted) - set(by))
    if unknown:
        raise InvalidArgument(
            f"{dataset!r} is partitioned by {list(by)}, not by {unknown}; name only those columns",
            dataset=dataset,
            columns=unknown,
        )
    return {c: value_text(v) for c, v in wanted.items()}


class Filters:
    """A set of keys, full or partial, to test key texts against: full keys by one set
    lookup, so a build's ten thousand partitions cost no more than one."""

    def __init__(self, by: Sequence[str], filters: Iterable[Mapping[str, str]]) -> None:
        self.full: set[str] = set()
        self.partial: list[Mapping[str, str]] = []
        for f in filters:
            if set(f) == set(by):
                self.full.add(key_text(by, f))
            else:
                self.partial.append(f)

    def holds(self, text: str) -> bool:
        return text in self.full or (bool(self.partial) and matches(parse_text(text), self.partial))


def matches(key: Mapping[str, str], filters: Iterable[Mapping[str, str]]) -> bool:
    """Whether ``key`` lies in any of ``filters`` (each a partial key)."""
    return any(all(key.get(c) == v for c, v in f.items()) for f in filters)


def value_text(value: object) -> str:
    """A Python or Arrow value as Spark writes it in a partition folder."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return str(value)


def folder_of(by: Sequence[str], key: Mapping[str, str]) -> str:
    return "/".join(f"{FOLDER_PREFIX}{c}={key[c]}" for c in by)


def key_of_path(dataset: str, by: Sequence[str], rel: str) -> str:
    """The key text of a container from its folders (Spark escapes folder names)."""
    found: Key = {}
    for part in rel.split("/")[:-1]:
        name, sep, raw = part.partition("=")
        if sep and name.startswith(FOLDER_PREFIX):
            col = unquote(name[len(FOLDER_PREFIX) :])
            if col in by:
                found[col] = check_value(dataset, col, unquote(raw))
    missing = [c for c in by if c not in found]
    if missing:
        raise InvalidArgument(
            f"container {rel!r} of {dataset!r} has no partition folder for {missing}",
            dataset=dataset,
        )
    return key_text(by, found)


def require_columns(
    dataset: str, by: Sequence[str], fields: Mapping[str, str], spark: bool
) -> None:
    """Each partition column must be in the frame and of a type with one text form."""
    kinds = _SPARK_KINDS if spark else _ARROW_KINDS
    for col in by:
        if col not in fields:
            raise InvalidArgument(
                f"the frame written to {dataset!r} has no column {col!r}, which partitions "
                f"it (partition_by={list(by)}); its columns are {sorted(fields)}",
                dataset=dataset,
                column=col,
            )
        if fields[col] in ("null", "void"):
            raise InvalidArgument(
                f"partition column {col!r} of the frame written to {dataset!r} holds only "
                "nulls; partitions need a value: fill it or filter those rows out",
                dataset=dataset,
                column=col,
            )
        if fields[col] not in kinds:
            raise InvalidArgument(
                f"partition column {col!r} of {dataset!r} is {fields[col]}; partition by a "
                "string, integer, date or boolean column (for an hour, a string such as "
                "date_format(ts, \"yyyy-MM-dd'T'HH\"))",
                dataset=dataset,
                column=col,
            )


def limit_keys(dataset: str, keys: Sequence[str], limit: int) -> None:
    if len(keys) > limit:
        raise InvalidArgument(
            f"this write to {dataset!r} makes {len(keys):,} partitions, more than the limit "
            f"of {limit:,}; partition by coarser columns or raise partition_limit",
            dataset=dataset,
            partitions=len(keys),
        )


def split_arrow(dataset: str, by: Sequence[str], table: pa.Table) -> list[tuple[str, pa.Table]]:
    """``table``'s rows grouped by partition key (each group one key's rows)."""
    import pyarrow.compute as pc

    fields = {f.name: str(f.type).split("[")[0] for f in table.schema}
    require_columns(dataset, by, fields, spark=False)
    if table.num_rows == 0:
        return []
    order = pc.sort_indices(table, sort_keys=[(c, "ascending") for c in by])
    ordered = table.take(order)
    texts = [
        [check_value(dataset, c, None if v is None else value_text(v)) for v in col.to_pylist()]
        for c in by
        for col in [ordered.column(c)]
    ]
    groups: list[tuple[str, pa.Table]] = []
    start = 0
    for i in range(1, ordered.num_rows + 1):
        if i == ordered.num_rows or any(t[i] != t[start] for t in texts):
            key = {c: texts[j][start] for j, c in enumerate(by)}
            groups.append((key_text(by, key), ordered.slice(start, i - start)))
            start = i
    return groups
