"""Data fingerprints: a hash of a version's rows alone, whatever their files or order.

Each row is hashed (columns taken by name, so column order does not count) by two
independent 64-bit hashes; a version's row hash is their sums modulo 2**64 with the row
count, an order-independent multiset hash, so an APPEND's is its parent's plus what it
added. Spark computes it from exactly what it writes, in the same pass (``observe``);
Arrow and pandas writes hash with pandas. The two engines hash rows differently, so a
fingerprint names its algorithm and versions written by different engines never compare
equal; nor does an unknown fingerprint (a version that removed files), which only costs
a rebuild that early cutoff could have saved.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

_MOD = 1 << 64
SPARK = "spark-xxh64"
ARROW = "arrow-pandas"
_KEYS = ("strata-rows-key1", "strata-rows-key2")  # pandas wants 16 characters


@dataclass(frozen=True)
class RowHash:
    """Two sums of per-row hashes and the row count; ``algo`` None while empty."""

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

    def encode(self) -> str:
        """The stored form: ``algo:count:s1s2`` in hex (at most 64 characters)."""
        return f"{self.algo or ''}:{self.count:x}:{self.s1:016x}{self.s2:016x}"

    @classmethod
    def decode(cls, text: str) -> RowHash:
        algo, count, sums = text.split(":")
        return cls(algo or None, int(count, 16), int(sums[:16], 16), int(sums[16:], 16))


EMPTY = RowHash(None, 0, 0, 0)


def fingerprint(schema_fields: list[dict[str, Any]], rows: RowHash) -> str:
    """The data fingerprint of a version: its rows' hash, count and schema (by name)."""
    columns = sorted((str(f.get("name")), str(f.get("type"))) for f in schema_fields)
    doc = {"algo": rows.algo, "rows": rows.encode(), "columns": columns}
    return hashlib.sha256(json.dumps(doc, separators=(",", ":")).encode()).hexdigest()


def arrow_row_hash(table: pa.Table) -> RowHash:
    """Hash the rows of an Arrow table (through pandas' vectorised row hash)."""
    from pandas.util import hash_pandas_object

    if table.num_rows == 0:
        return EMPTY
    frame = table.select(sorted(table.column_names)).to_pandas()
    sums = []
    for key in _KEYS:
        hashes = hash_pandas_object(frame, index=False, hash_key=key)
        sums.append(int(hashes.to_numpy().sum(dtype="uint64")))
    return RowHash(ARROW, table.num_rows, sums[0] % _MOD, sums[1] % _MOD)


def _spark_columns(df: DataFrame) -> list[Any]:
    """Per-row hash inputs: every column by name, plus which of them are null (xxhash64
    skips nulls, so without it (null, 1) and (1, null) would hash alike)."""
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.types import MapType

    cols: list[Any] = []
    nulls: Any = F.lit(0)
    for i, field in enumerate(sorted(df.schema.fields, key=lambda f: f.name)):
        col = F.col(f"`{field.name}`")
        # Spark cannot hash maps; their JSON text stands for them.
        cols.append(F.to_json(col) if isinstance(field.dataType, MapType) else col)
        nulls = nulls + F.when(col.isNull(), F.lit(1 << (i % 62))).otherwise(F.lit(0))
    return [nulls, *cols]


def observed(df: DataFrame) -> tuple[DataFrame, Any]:
    """``df`` with its row hash observed: write it, then :func:`observed_hash`."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F  # noqa: N812

    cols = _spark_columns(df)
    obs = Observation("strata_row_hash")
    as_decimal = "decimal(38,0)"  # sums of longs overflow a long (and ANSI mode raises)
    watched = df.observe(
        obs,
        F.count(F.lit(1)).alias("n"),
        F.sum(F.xxhash64(*cols).cast(as_decimal)).alias("s1"),
        F.sum(F.xxhash64(F.lit(_KEYS[1]), *cols).cast(as_decimal)).alias("s2"),
    )
    return watched, obs


def observed_hash(obs: Any) -> RowHash:
    """The row hash an Observation saw during the action that ran."""
    got = obs.get
    count = int(got.get("n") or 0)
    if count == 0:
        return EMPTY
    return RowHash(SPARK, count, int(got["s1"] or 0) % _MOD, int(got["s2"] or 0) % _MOD)


def dataframe_row_hash(df: DataFrame) -> RowHash:
    """The Spark row hash of a DataFrame, computed without writing files."""
    watched, obs = observed(df)
    watched.write.format("noop").mode("overwrite").save()
    return observed_hash(obs)
