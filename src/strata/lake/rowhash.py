"""Data fingerprints: a hash of a version's rows alone, whatever their files or order.

Each row is hashed (columns taken by name, so column order does not count); a version's
row hash is the sum of its rows' hashes modulo 2**64 with the row count, an
order-independent multiset hash, so an APPEND's is its parent's plus what it added.
Spark computes it from exactly what it writes, in the same pass: its Parquet writer sums
the hash (:mod:`strata.lake.spark_hashed`) or the write observes it (``observe``), one
xxhash64 per row (a second independent hash cost a third of a plain write); Arrow and
pandas writes hash with pandas, twice with two keys. The two engines hash rows differently, so a
fingerprint names its algorithm and versions written by different engines never compare
equal.

A fingerprint may be unknown (None: a version that removed files, or mixed engines in
one write). A comparison with an unknown fingerprint must count as "different": it only
costs a rebuild that early cutoff could have saved, never a wrong "same".
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

_MOD = 1 << 64
SPARK = "spark-xxh64/1"
ARROW = "arrow-pandas"
_KEYS = ("strata-rows-key1", "strata-rows-key2")  # pandas wants 16 characters
_SALT = 0x9E3779B97F4A7C15


@dataclass(frozen=True)
class RowHash:
    """Sums of per-row hashes and the row count; ``algo`` None while empty.

    ``s2`` is the second hash's sum where the algorithm has one (0 for Spark's).
    """

    algo: str | None
    count: int
    s1: int
    s2: int

    def combine(self, other: RowHash) -> RowHash | None:
        """The hash of both row sets together; None when their algorithms differ."""
        if self.algo and other.algo and self.algo != other.algo:
            return None
        return RowHash(
            self.algo or other.algo,
            self.count + other.count,
            (self.s1 + other.s1) % _MOD,
            (self.s2 + other.s2) % _MOD,
        )

    def without(self, part: RowHash) -> RowHash | None:
        """The hash of these rows less ``part`` (rows they hold): what an APPEND added
        to its parent. None when the algorithms differ."""
        if self.algo and part.algo and self.algo != part.algo:
            return None
        return RowHash(
            self.algo or part.algo,
            self.count - part.count,
            (self.s1 - part.s1) % _MOD,
            (self.s2 - part.s2) % _MOD,
        )

    def encode(self) -> str:
        """The stored form: ``algo:count:s1s2`` in hex (at most 64 characters)."""
        return f"{self.algo or ''}:{self.count:x}:{self.s1:016x}{self.s2:016x}"

    @classmethod
    def decode(cls, text: str) -> RowHash:
        algo, count, sums = text.split(":")
        return cls(algo or None, int(count, 16), int(sums[:16], 16), int(sums[16:], 16))


EMPTY = RowHash(None, 0, 0, 0)


def sum_hashes(hashes: Iterable[RowHash | None]) -> RowHash | None:
    """The hash of all those rows together; None when any is unknown or algorithms mix."""
    total: RowHash | None = EMPTY
    for h in hashes:
        if total is None or h is None:
            return None
        total = total.combine(h)
    return total


def fingerprint(schema_fields: list[dict[str, Any]], rows: RowHash) -> str:
    """The data fingerprint of a version: its rows' hash, count and schema (by name)."""
    columns = sorted((str(f.get("name")), str(f.get("type"))) for f in schema_fields)
    doc = {"algo": rows.algo, "rows": rows.encode(), "columns": columns}
    return hashlib.sha256(json.dumps(doc, separators=(",", ":")).encode()).hexdigest()


def arrow_row_hash(table: pa.Table, written: pa.Schema | None = None) -> RowHash:
    """Hash the rows of an Arrow table (through pandas' vectorised row hash).

    ``written`` is the schema the table was stored with (from the Parquet footer): columns
    are hashed as stored (e.g. timestamps at the microseconds the lake keeps), so tables that
    store the same rows hash alike. Integers, floats and booleans with nulls are hashed as
    nullable pandas columns (a null is neither 0.0 nor NaN, and a large integer is not
    rounded to a float); nested values by their exact Python ``repr``.
    """
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    from pandas.util import hash_pandas_object

    if table.num_rows == 0:
        return EMPTY
    names = table.column_names
    stored = list(written.types) if written is not None and len(written) == len(names) else None
    columns = [
        _hashable(table.column(i), stored[i] if stored else None)
        for i in sorted(range(len(names)), key=lambda i: names[i])
    ]
    nullable = {
        pa.bool_(): pd.BooleanDtype(),
        pa.float32(): pd.Float32Dtype(),
        pa.float64(): pd.Float64Dtype(),
        pa.int8(): pd.Int8Dtype(),
        pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.uint8(): pd.UInt8Dtype(),
        pa.uint16(): pd.UInt16Dtype(),
        pa.uint32(): pd.UInt32Dtype(),
        pa.uint64(): pd.UInt64Dtype(),
    }
    # Column names are not hashed (the fingerprint carries them), only their order.
    frame = pa.table(columns, names=[str(i) for i in range(len(columns))]).to_pandas(
        types_mapper=nullable.get
    )

    def total(key: str) -> int:
        hashes = hash_pandas_object(frame, index=False, hash_key=key)
        return int(hashes.to_numpy().sum(dtype="uint64")) % _MOD  # numpy wraps: mod 2**64

    s1 = total(_KEYS[0])
    # pandas hashes numbers without the key: a leading constant column makes the second row
    # hash another function of them as well.
    frame.insert(0, "salt", np.full(len(frame), _SALT, dtype="uint64"))
    return RowHash(ARROW, table.num_rows, s1, total(_KEYS[1]))


def _hashable(column: pa.ChunkedArray[Any], stored: pa.DataType | None) -> pa.ChunkedArray[Any]:
    """One column as pandas should hash it."""
    import pyarrow as pa

    if stored is not None and column.type != stored:
        # When the cast fails, the column is hashed as given: still a function of the rows.
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
            column = column.cast(stored, safe=False)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)  # hashed as its values
    kind = column.type
    if pa.types.is_timestamp(kind):
        # What the lake stores (writes coerce to microseconds), as integers: the same
        # hash whatever unit pandas would convert to.
        return column.cast(pa.timestamp("us", kind.tz), safe=False).cast(pa.int64())
    if pa.types.is_nested(kind):
        # pandas would hash nested values by str(), which rounds floats and elides long
        # arrays; repr of the Python value is exact.
        text = [None if v is None else repr(v) for v in column.to_pylist()]
        return pa.chunked_array([pa.array(text, pa.string())])
    return column


# Spark: xxhash64 skips nulls and cannot hash maps or variants; to_json stands for nested
# values, with every field and full timestamps, whatever the session's settings.
_JSON = {
    "ignoreNullFields": "false",
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "timeZone": "UTC",
}
_MASK_BITS = 62  # null flags per mask column
_CHUNK = 21  # bits per partial sum (see _metrics_sql)


def hash_sql(fields: Sequence[Any]) -> str:
    """Spark SQL for each row's hash: xxhash64 of which columns are null, then of every
    column by name.

    xxhash64 skips nulls, so without the null flags (null, 1) and (1, null) would hash
    alike. A flag is only computed for columns that can be null (the others add 0). Nested
    columns (structs, arrays, maps, variants) are hashed as JSON text: xxhash64 skips nulls
    inside them too, and cannot hash maps or variants at all. The hash is SQL text, not
    column objects, because Spark parses one expression in one call where building it
    from columns costs a call per node.
    """
    ordered = sorted(fields, key=lambda f: f.name)
    masks: list[str] = []
    for start in range(0, max(len(ordered), 1), _MASK_BITS):
        chunk = ordered[start : start + _MASK_BITS]
        flags = [
            f"CASE WHEN {_quoted(field.name)} IS NULL THEN {1 << bit} ELSE 0 END"
            for bit, field in enumerate(chunk)
            if field.nullable
        ]
        # An int while every flag fits one (the type counts: xxhash64 hashes ints and longs
        # differently), whichever columns are nullable.
        kind = "INT" if start == 0 and len(ordered) <= 31 else "BIGINT"
        masks.append(f"CAST({' + '.join(['0', *flags])} AS {kind})")
    cols = [
        f"to_json({_quoted(f.name)}, {_JSON_SQL})" if _is_nested(f.dataType) else _quoted(f.name)
        for f in ordered
    ]
    return f"xxhash64({', '.join([*masks, *cols])})"


def _is_nested(kind: Any) -> bool:
    return isinstance(kind, _nested_types())


@functools.cache
def _nested_types() -> tuple[type, ...]:
    from pyspark.sql.types import ArrayType, MapType, StructType

    nested: tuple[type, ...] = (ArrayType, MapType, StructType)
    try:
        from pyspark.sql.types import VariantType

        nested += (VariantType,)
    except ImportError:  # pragma: no cover - Spark before 4.0
        pass
    return nested


def _sql_text(text: str) -> str:
    """A Spark SQL string expression for ``text``. Quotes and backslashes are spelled
    with ``chr``, so the text reads the same whatever the session's escape settings."""
    parts = re.split(r"(['\\])", text)
    pieces = [f"chr({ord(p)})" if p in ("'", "\\") else f"'{p}'" for p in parts if p]
    return pieces[0] if len(pieces) == 1 else f"concat({', '.join(pieces)})"


_JSON_SQL = f"map({', '.join(_sql_text(x) for kv in _JSON.items() for x in kv)})"


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _column(name: str) -> Any:
    from pyspark.sql import functions as F  # noqa: N812

    return F.col(_quoted(name))


def _metrics_sql(h: str) -> list[str]:
    """The row count, then the sums of the row hash ``h`` in three 21-bit slices,
    ``h = lo + mid * 2**21 + hi * 2**42`` (``hi`` signed), from which
    :func:`from_sums` rebuilds sum(h) exactly.

    Each slice's sum fits a long up to 2**42 rows, so ANSI mode never raises on an
    overflow. Summing ``h`` as decimal(38, 0) gives the same figure at about twice the
    CPU (``bench/data_fingerprint.py``).
    """
    low = (1 << _CHUNK) - 1
    return [
        "count(1)",
        f"sum({h} & {low})",
        f"sum(shiftright({h}, {_CHUNK}) & {low})",
        f"sum(shiftright({h}, {2 * _CHUNK}))",
    ]


def observed(df: DataFrame, extra: Mapping[str, Any] | None = None) -> tuple[DataFrame, Any]:
    """``df`` with its row hash observed: run one action on it (the write), then
    :func:`observed_hash`. The hash is computed by that action, in the same pass, and
    so are the ``extra`` aggregates (name -> Spark column), read back by
    :func:`observed_extra`."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F  # noqa: N812

    obs = Observation()  # an unnamed one gets a unique name: it never clashes
    metrics = _metrics_sql(hash_sql(df.schema.fields))
    named = [F.expr(f"{m} AS strata_h{i}") for i, m in enumerate(metrics)]
    named += [c.alias(f"{_EXTRA}{n}") for n, c in (extra or {}).items()]
    watched = df.observe(obs, *named)
    return watched, obs


_EXTRA = "strata_x_"


def observed_extra(obs: Any, names: Iterable[str]) -> dict[str, int]:
    """The ``extra`` aggregates (whole numbers) an Observation saw, by name."""
    got = obs.get
    return {n: int(got.get(f"{_EXTRA}{n}") or 0) for n in names}


def observed_hash(obs: Any) -> RowHash:
    """The row hash an Observation saw during the action that ran."""
    got = obs.get
    count, lo, mid, hi = (int(got.get(f"strata_h{i}") or 0) for i in range(4))
    return from_sums(count, lo, mid, hi)


def key_row_hashes(df: DataFrame, columns: Sequence[str]) -> dict[tuple[str, ...], RowHash]:
    """The row hash of each key's rows of ``df`` (its ``columns``' values as text, as a
    partition folder spells them): the hash a write of that key's rows alone observes."""
    return {k: h for k, (h, _) in key_sums(df, columns).items()}


def key_sums(
    df: DataFrame, columns: Sequence[str], extra: Mapping[str, Any] | None = None
) -> dict[tuple[str, ...], tuple[RowHash, dict[str, int]]]:
    """Per key, as :func:`key_row_hashes`, the row hash and the ``extra`` aggregates
    (name -> Spark column, whole numbers) of that key's rows, in one pass."""
    from pyspark.sql import functions as F  # noqa: N812

    keys = [_column(c).cast("string").alias(f"strata_k{i}") for i, c in enumerate(columns)]
    metrics = [F.expr(m) for m in _metrics_sql(hash_sql(df.schema.fields))]
    names = list(extra or {})
    metrics += [c.alias(f"{_EXTRA}{n}") for n, c in (extra or {}).items()]
    n, m = len(columns), len(columns) + 4
    return {
        tuple(row[:n]): (
            from_sums(*(int(v or 0) for v in row[n:m])),
            {name: int(v or 0) for name, v in zip(names, row[m:], strict=True)},
        )
        for row in df.groupBy(*keys).agg(*metrics).collect()
    }


def from_sums(count: int, lo: int, mid: int, hi: int) -> RowHash:
    """The row hash of ``count`` rows whose hashes summed to these slices (:func:`_metrics_sql`)."""
    if count == 0:
        return EMPTY
    return RowHash(SPARK, count, (lo + (mid << _CHUNK) + (hi << 2 * _CHUNK)) % _MOD, 0)


def dataframe_row_hash(df: DataFrame) -> RowHash:
    """The Spark row hash of a DataFrame, computed without writing files (a ``noop``
    write), e.g. to compare a re-run with a recorded version."""
    watched, obs = observed(df)
    watched.write.format("noop").mode("overwrite").save()
    return observed_hash(obs)
